//! Starting worlds: SPMD init from the environment (one PE per process), and in-process
//! worlds of N PEs run on N threads.

use crate::config::{TransportKind, WorldConfig};
use crate::error::{Error, Result};
use crate::world::World;

/// Where this process sits in its job, as the launcher says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPlace {
    /// This process's PE.
    pub pe: usize,
    /// Number of PEs in the job.
    pub n_pes: usize,
    /// The job's identity, shared by all its PEs.
    pub job_id: String,
}

impl JobPlace {
    /// Reads `niinrun`'s variables (`NIIN_PE`, `NIIN_NPES`, `NIIN_JOB_ID`) through
    /// `lookup`. None set: a single-PE job. Some but not all set, or malformed: an error
    /// naming the variable and value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<JobPlace> {
        use crate::launch::env;
        let (pe, n, job) = (lookup(env::PE), lookup(env::NPES), lookup(env::JOB_ID));
        match (pe, n, job) {
            (None, None, None) => Ok(JobPlace {
                pe: 0,
                n_pes: 1,
                job_id: format!("single-{}", std::process::id()),
            }),
            (Some(pe), Some(n), Some(job_id)) => {
                let parse = |var: &str, v: &str| {
                    v.trim().parse::<usize>().map_err(|_| {
                        Error::Config(format!("{var}={v:?} is not a non-negative integer"))
                    })
                };
                let (pe, n_pes) = (parse(env::PE, &pe)?, parse(env::NPES, &n)?);
                if n_pes == 0 || pe >= n_pes {
                    return Err(Error::Config(format!(
                        "{}={pe} does not fit {}={n_pes}: need 0 <= PE < NPES",
                        env::PE,
                        env::NPES
                    )));
                }
                Ok(JobPlace { pe, n_pes, job_id })
            }
            (pe, n, job) => Err(Error::Config(format!(
                "incomplete launcher environment: {}={pe:?}, {}={n:?}, {}={job:?}; start the program with niinrun, or set none of them for one PE",
                env::PE,
                env::NPES,
                env::JOB_ID
            ))),
        }
    }
}

impl World {
    /// SPMD init (`nvshmem_init`): reads the configuration and this process's place in
    /// its job from the environment (see [`crate::config`] and [`crate::launch`]), and
    /// joins the job's world. Without launcher variables, a world of one PE.
    pub fn init() -> Result<World> {
        let config = WorldConfig::from_env()?;
        let place = JobPlace::from_lookup(|k| std::env::var(k).ok())?;
        World::init_with(&config, &place)
    }

    /// SPMD init with an explicit configuration and place.
    pub fn init_with(config: &WorldConfig, place: &JobPlace) -> Result<World> {
        match config.transport {
            TransportKind::Mock => World::attach_mock(&place.job_id, place.pe, place.n_pes, config),
            TransportKind::Nccl => Err(Error::TransportUnavailable(
                "NIIN_TRANSPORT=nccl: the NCCL transport is not implemented in this build yet; use NIIN_TRANSPORT=mock to run on the CPU".into(),
            )),
            TransportKind::Auto => Err(auto_unavailable(niin_transport::probe::gpu_stack())),
        }
    }
}

/// The error of `NIIN_TRANSPORT=auto` given what the probe found: with no GPU stack it
/// suggests the mock; with one it says the NCCL transport is not in this build yet.
fn auto_unavailable(found: Option<String>) -> Error {
    Error::TransportUnavailable(match found {
        Some(found) => format!(
            "NIIN_TRANSPORT=auto found {found}, but the NCCL transport is not implemented in this build yet; set NIIN_TRANSPORT=mock to run on the CPU"
        ),
        None => "NIIN_TRANSPORT=auto found no CUDA driver (libcuda.so.1) and NCCL (libnccl.so.2); set NIIN_TRANSPORT=mock to run on the CPU mock transport".into(),
    })
}

/// Runs `f` on every PE of an in-process world of `n_pes` PEs (mock transport), one
/// thread per PE, and returns the PEs' results in PE order. A PE that fails or panics
/// makes the whole call fail with that PE's error (the first in PE order); the others
/// are still joined (a PE stuck in a barrier with a failed peer times out loudly).
pub fn run_in_process<R, F>(n_pes: usize, config: &WorldConfig, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(World) -> Result<R> + Sync,
{
    let worlds = World::in_process(n_pes, config)?;
    let f = &f;
    let results: Vec<Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = worlds
            .into_iter()
            .enumerate()
            .map(|(pe, w)| {
                std::thread::Builder::new()
                    .name(format!("niin-pe-{pe}"))
                    .spawn_scoped(s, move || f(w))
                    .map_err(|e| Error::Config(format!("cannot start the thread of PE {pe}: {e}")))
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(pe, h)| match h {
                Err(e) => Err(e),
                Ok(h) => h.join().unwrap_or_else(|payload| {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "non-string panic payload".into());
                    Err(Error::Panicked { pe, message })
                }),
            })
            .collect()
    });
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn place(pairs: &[(&str, &str)]) -> Result<JobPlace> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        JobPlace::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn no_launcher_is_one_pe() {
        let p = place(&[]).unwrap();
        assert_eq!((p.pe, p.n_pes), (0, 1));
    }

    #[test]
    fn launcher_variables_are_read() {
        let p = place(&[("NIIN_PE", "2"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "j1")]).unwrap();
        assert_eq!(
            p,
            JobPlace {
                pe: 2,
                n_pes: 4,
                job_id: "j1".into()
            }
        );
    }

    #[test]
    fn bad_launcher_variables_are_errors() {
        let e = place(&[("NIIN_PE", "4"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "j")]).unwrap_err();
        assert!(e.to_string().contains("NIIN_PE=4"), "{e}");
        let e = place(&[("NIIN_PE", "x"), ("NIIN_NPES", "4"), ("NIIN_JOB_ID", "j")]).unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
        let e = place(&[("NIIN_PE", "0")]).unwrap_err();
        assert!(e.to_string().contains("incomplete"), "{e}");
    }

    #[test]
    fn nccl_transport_says_not_implemented() {
        let config = WorldConfig {
            transport: TransportKind::Nccl,
            ..WorldConfig::default()
        };
        let e = World::init_with(&config, &place(&[]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("not implemented"), "{e}");
        assert!(e.to_string().contains("NIIN_TRANSPORT=mock"), "{e}");
    }

    #[test]
    fn auto_without_gpu_suggests_mock_and_with_gpu_says_not_implemented() {
        let none = auto_unavailable(None).to_string();
        assert!(
            none.contains("found no CUDA driver") && none.contains("NIIN_TRANSPORT=mock"),
            "{none}"
        );
        let some = auto_unavailable(Some("libcuda.so.1 and libnccl.so.2".into())).to_string();
        assert!(
            some.contains("not implemented") && some.contains("libnccl.so.2"),
            "{some}"
        );
    }

    #[test]
    fn panics_become_errors_naming_the_pe() {
        let e = run_in_process(2, &WorldConfig::default(), |w| {
            if w.my_pe() == 1 {
                panic!("boom");
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            e,
            Error::Panicked {
                pe: 1,
                message: "boom".into()
            }
        );
    }
}
