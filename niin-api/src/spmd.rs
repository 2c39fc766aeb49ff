//! Starting worlds: SPMD init from the environment (one PE per process), and in-process
//! worlds of N PEs run on N threads.

use crate::bootstrap::{self, Placement};
use crate::config::{TransportKind, WorldConfig};
use crate::error::{Error, Result};
use crate::gpu::{self, UidSource};
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
    /// Works out this process's place from its launcher's variables (niinrun, Open MPI,
    /// Slurm, MVAPICH, PMI, PMIx, torchrun: see [`crate::bootstrap`]) read through
    /// `lookup`. No launcher: a single-PE job (its id from `NIIN_JOB_ID`, else made up).
    /// A multi-PE job whose launcher gives no job id needs `NIIN_JOB_ID`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<JobPlace> {
        let placement = bootstrap::detect(&lookup)?;
        JobPlace::from_placement(placement.as_ref(), &lookup)
    }

    fn from_placement(
        placement: Option<&Placement>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<JobPlace> {
        let job_env = lookup(crate::launch::env::JOB_ID);
        match placement {
            None => Ok(JobPlace {
                pe: 0,
                n_pes: 1,
                job_id: job_env.unwrap_or_else(|| format!("single-{}", std::process::id())),
            }),
            Some(p) => {
                let job_id = match (p.job_id.clone().or(job_env), p.size) {
                    (Some(id), _) => id,
                    (None, 1) => format!("single-{}", std::process::id()),
                    (None, _) => {
                        return Err(Error::Config(format!(
                            "{} gives no job id for its {} PEs: set {} to one value shared by the job's PEs",
                            p.source,
                            p.size,
                            crate::launch::env::JOB_ID
                        )));
                    }
                };
                Ok(JobPlace {
                    pe: p.rank,
                    n_pes: p.size,
                    job_id,
                })
            }
        }
    }
}

impl World {
    /// SPMD init (`nvshmem_init`): reads the configuration ([`crate::config`]) and this
    /// process's place in its job ([`crate::bootstrap`]) from the environment and joins
    /// the job's world. Without a launcher, a world of one PE.
    pub fn init() -> Result<World> {
        World::init_with_config(&WorldConfig::from_env()?)
    }

    /// As [`World::init`], with the configuration given rather than read from the
    /// environment (the place in the job still comes from the launcher's variables).
    pub fn init_with_config(config: &WorldConfig) -> Result<World> {
        let config = config.clone();
        let lookup = crate::config::env_lossy;
        let placement = bootstrap::detect(lookup)?;
        match config.transport {
            TransportKind::Mock => {
                let place = JobPlace::from_placement(placement.as_ref(), &lookup)?;
                World::init_with(&config, &place)
            }
            TransportKind::Nccl => World::init_nccl(&config, placement.as_ref()),
            TransportKind::Auto => match niin_transport::probe::gpu_stack() {
                Some(_) => World::init_nccl(&config, placement.as_ref()),
                None => Err(auto_unavailable(None)),
            },
        }
    }

    /// SPMD init on the mock transport with an explicit configuration and place. The
    /// NCCL transport needs the launcher's environment (local rank, rendezvous): use
    /// [`World::init`] or [`World::init_unique_id`] for it.
    pub fn init_with(config: &WorldConfig, place: &JobPlace) -> Result<World> {
        match config.transport {
            TransportKind::Mock => World::attach_mock(&place.job_id, place.pe, place.n_pes, config),
            TransportKind::Nccl | TransportKind::Auto => Err(Error::Config(format!(
                "World::init_with takes the mock transport only (NIIN_TRANSPORT is {:?}); the NCCL transport starts with World::init or World::init_unique_id",
                config.transport
            ))),
        }
    }

    fn init_nccl(config: &WorldConfig, placement: Option<&Placement>) -> Result<World> {
        match placement {
            Some(p) if p.size > 1 => gpu::nccl_world(
                config,
                p.rank,
                p.size,
                p.local_rank,
                UidSource::Rendezvous(p),
            ),
            _ => {
                let uid = gpu::new_unique_id()?;
                let local = placement.and_then(|p| p.local_rank);
                gpu::nccl_world(config, 0, 1, local, UidSource::Given(&uid))
            }
        }
    }

    /// A fresh unique id for NVSHMEM's unique-id init (`nvshmemx_get_uniqueid`): NCCL's on
    /// the NCCL transport; on the mock, 16 random bytes that name the job (the rest zero).
    pub fn new_unique_id(config: &WorldConfig) -> Result<[u8; 128]> {
        match config.transport {
            TransportKind::Mock => {
                let mut id = [0u8; 128];
                let mut f = std::fs::File::open("/dev/urandom").map_err(|e| {
                    Error::Config(format!("reading /dev/urandom for a unique id: {e}"))
                })?;
                std::io::Read::read_exact(&mut f, &mut id[..16]).map_err(|e| {
                    Error::Config(format!("reading /dev/urandom for a unique id: {e}"))
                })?;
                Ok(id)
            }
            TransportKind::Nccl | TransportKind::Auto => gpu::new_unique_id(),
        }
    }

    /// NVSHMEM's unique-id init (`nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, ...)`):
    /// this process is PE `rank` of `n_pes`, and every PE passes the same `uid` (made by
    /// one of them with [`World::new_unique_id`] and distributed by the application).
    pub fn init_unique_id(
        config: &WorldConfig,
        rank: usize,
        n_pes: usize,
        uid: &[u8; 128],
    ) -> Result<World> {
        if n_pes == 0 || rank >= n_pes {
            return Err(Error::Config(format!(
                "unique-id init: rank {rank} does not fit {n_pes} PEs"
            )));
        }
        match config.transport {
            TransportKind::Mock => {
                let job_id: String = uid[..16].iter().map(|b| format!("{b:02x}")).collect();
                World::attach_mock(&format!("uid-{job_id}"), rank, n_pes, config)
            }
            TransportKind::Nccl | TransportKind::Auto => {
                // The local rank still comes from the launcher, when there is one.
                let local = bootstrap::detect_from_env()
                    .ok()
                    .flatten()
                    .and_then(|p| p.local_rank);
                gpu::nccl_world(config, rank, n_pes, local, UidSource::Given(uid))
            }
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
/// makes the whole call fail with the error of the PE whose failure is the cause: the
/// first to fail (or panic) in time among the PEs whose error is their own, not a report
/// of another PE's failure ("PE 2 panicked; barrier cannot complete"); only when every
/// error is such a report, the first of those. The others are still joined (a PE stuck
/// in a wait with a failed peer ends when it notices, or times out loudly).
pub fn run_in_process<R, F>(n_pes: usize, config: &WorldConfig, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(World) -> Result<R> + Sync,
{
    let worlds = World::in_process(n_pes, config)?;
    let f = &f;
    // The order in which PEs failed.
    let clock = std::sync::atomic::AtomicUsize::new(0);
    let clock = &clock;
    let tick = || clock.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let results: Vec<(Result<R>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = worlds
            .into_iter()
            .enumerate()
            .map(|(pe, w)| {
                std::thread::Builder::new()
                    .name(format!("niin-pe-{pe}"))
                    .spawn_scoped(s, move || {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(w)));
                        let r = r.unwrap_or_else(|payload| {
                            let message = payload
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| payload.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "non-string panic payload".into());
                            Err(Error::Panicked { pe, message })
                        });
                        let at = if r.is_err() { tick() } else { usize::MAX };
                        (r, at)
                    })
                    .map_err(|e| Error::Config(format!("cannot start the thread of PE {pe}: {e}")))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Err(e) => (Err(e), tick()),
                // The closure catches panics; a join error cannot happen.
                Ok(h) => h.join().unwrap_or_else(|_| {
                    (Err(Error::Config("a PE thread panicked".into())), tick())
                }),
            })
            .collect()
    });
    let cause = results
        .iter()
        .filter_map(|(r, at)| r.as_ref().err().map(|e| (is_consequence(e), *at)))
        .min();
    let Some(cause) = cause else {
        return Ok(results.into_iter().filter_map(|(r, _)| r.ok()).collect());
    };
    let (r, _) = results
        .into_iter()
        .find(|(r, at)| {
            r.as_ref()
                .err()
                .is_some_and(|e| (is_consequence(e), *at) == cause)
        })
        .expect("the cause is one of the results");
    match r {
        Err(e) => Err(e),
        Ok(_) => unreachable!("the cause is an error"),
    }
}

/// Whether `e` only reports another PE's failure.
fn is_consequence(e: &Error) -> bool {
    matches!(e, Error::Transport { source, .. } if source.is_consequence())
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
        assert!(e.to_string().contains("NIIN_NPES"), "{e}");
    }

    #[test]
    fn init_with_refuses_the_nccl_transport_and_says_what_to_use() {
        let config = WorldConfig {
            transport: TransportKind::Nccl,
            ..WorldConfig::default()
        };
        let e = World::init_with(&config, &place(&[]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("World::init"), "{e}");
    }

    #[test]
    fn other_launchers_give_the_place_and_a_missing_job_id_is_an_error() {
        let p = place(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "77"),
        ])
        .unwrap();
        assert_eq!(
            p,
            JobPlace {
                pe: 1,
                n_pes: 2,
                job_id: "77".into()
            }
        );
        let e = place(&[("MV2_COMM_WORLD_RANK", "0"), ("MV2_COMM_WORLD_SIZE", "2")]).unwrap_err();
        assert!(e.to_string().contains("NIIN_JOB_ID"), "{e}");
        let p = place(&[
            ("MV2_COMM_WORLD_RANK", "0"),
            ("MV2_COMM_WORLD_SIZE", "2"),
            ("NIIN_JOB_ID", "j"),
        ])
        .unwrap();
        assert_eq!(p.job_id, "j");
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

    #[test]
    fn the_failing_pe_is_blamed_not_a_pe_that_reports_it() {
        // PE 1 fails at once; PEs 0 and 2 then find it gone in their barrier.
        let e = run_in_process(3, &WorldConfig::default(), |w| {
            if w.my_pe() == 1 {
                return Err(Error::Config("PE 1's own error".into()));
            }
            w.barrier_all()
        })
        .unwrap_err();
        assert_eq!(e, Error::Config("PE 1's own error".into()));
        let e = run_in_process(3, &WorldConfig::default(), |w| {
            if w.my_pe() == 2 {
                panic!("PE 2 panics");
            }
            w.barrier_all()
        })
        .unwrap_err();
        assert_eq!(
            e,
            Error::Panicked {
                pe: 2,
                message: "PE 2 panics".into()
            }
        );
    }

    /// The root cause wins even when a consequence is first in time: PE 1 leaves the world
    /// at once, PE 0's barrier reports "PE 1 has finalized" and ends, and only later does
    /// PE 1 return its own error (or panic). The result is PE 1's.
    #[test]
    fn the_root_cause_wins_over_an_earlier_report_of_it() {
        let delay = std::time::Duration::from_millis(300);
        let seen = std::sync::Mutex::new(None);
        let e = run_in_process(2, &WorldConfig::default(), |w| {
            if w.my_pe() == 1 {
                drop(w);
                std::thread::sleep(delay);
                return Err(Error::Config("PE 1's own error".into()));
            }
            let r = w.barrier_all();
            *seen.lock().unwrap() = r.as_ref().err().map(|e| e.to_string());
            r
        })
        .unwrap_err();
        assert_eq!(e, Error::Config("PE 1's own error".into()));
        let report = seen.into_inner().unwrap().expect("PE 0's barrier failed");
        assert!(
            report.contains("PE 1 has finalized") && report.starts_with("PE 0: PE 1"),
            "PE 0 reported {report}"
        );

        let e = run_in_process(3, &WorldConfig::default(), |w| {
            if w.my_pe() == 1 {
                drop(w);
                std::thread::sleep(delay);
                panic!("PE 1 panics late");
            }
            w.barrier_all()
        })
        .unwrap_err();
        assert_eq!(
            e,
            Error::Panicked {
                pe: 1,
                message: "PE 1 panics late".into()
            }
        );
    }

    #[test]
    fn the_survivors_name_a_panicked_pe() {
        let config = WorldConfig::default();
        let mut worlds = World::in_process(2, &config).unwrap();
        let doomed = worlds.pop().unwrap();
        assert!(
            std::thread::spawn(move || {
                let _w = doomed;
                panic!("PE 1 panics");
            })
            .join()
            .is_err()
        );
        let e = worlds[0].barrier_all().unwrap_err().to_string();
        assert_eq!(e, "PE 0: PE 1 panicked; barrier cannot complete");
    }
}
