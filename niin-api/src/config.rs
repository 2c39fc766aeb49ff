//! How a world is configured: the transport, the heap size, timeouts, checks.
//!
//! Environment variables (read by [`WorldConfig::from_env`] and by SPMD init):
//!
//! | variable | values | default |
//! | --- | --- | --- |
//! | `NIIN_TRANSPORT` | `mock`, `nccl`, `auto` | `auto` |
//! | `NVSHMEM_SYMMETRIC_SIZE` | bytes, or K/M/G/T (powers of 1024) | 256 MiB |
//! | `NIIN_TIMEOUT` | seconds a wait or barrier may take before it is an error | 60 |
//! | `NIIN_CHECK_SYMMETRY` | `0`/`1`: compare allocation fingerprints across PEs at every collective allocation | `1` in debug builds, `0` in release |
//! | `NIIN_MOCK_NODE_SIZE` | PEs per simulated node in the mock (PEs of one node are LSA peers) | all PEs on one node |
//! | `NIIN_CHECK_COLLECTIVES` | `0`, `barriers` or `1`: which blocking collective calls are compared across their PEs ([`CollectiveChecks`], [`crate::check`]) | all on the mock, `barriers` on NCCL |
//!
//! A malformed value is an error that names the variable and the value; nothing falls
//! back to a default silently.

use std::time::Duration;

use crate::error::{Error, Result};

/// Which transport moves the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// Host memory on the CPU: N PEs as threads or processes (`NIIN_TRANSPORT=mock`).
    Mock,
    /// NCCL on GPUs (`NIIN_TRANSPORT=nccl`).
    Nccl,
    /// NCCL when a CUDA driver and NCCL are found, else an error that suggests `mock`.
    Auto,
}

impl TransportKind {
    /// The variable that selects the transport.
    pub const VAR: &'static str = "NIIN_TRANSPORT";

    /// Parses a `NIIN_TRANSPORT` value; `None` (unset) is `Auto`.
    pub fn parse(value: Option<&str>) -> Result<TransportKind> {
        match value.map(str::trim) {
            None | Some("auto") => Ok(TransportKind::Auto),
            Some("mock") => Ok(TransportKind::Mock),
            Some("nccl") => Ok(TransportKind::Nccl),
            Some(_) => Err(Error::Config(format!(
                "{}={:?} is not a transport: expected mock, nccl or auto",
                Self::VAR,
                value.unwrap_or_default()
            ))),
        }
    }
}

/// Configuration of a world. Build it with [`WorldConfig::default`] (fixed defaults, no
/// environment: for in-process worlds and tests) or [`WorldConfig::from_env`] (the
/// environment, checked: what SPMD init uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldConfig {
    /// The transport to use.
    pub transport: TransportKind,
    /// Bytes of symmetric heap per PE.
    pub heap_size: u64,
    /// How long a wait or barrier may take before it fails with a timeout error.
    pub timeout: Duration,
    /// Compare allocation fingerprints across PEs at every collective allocation and
    /// free, so an asymmetric (non-collective) use fails at the call that caused it.
    pub check_symmetry: bool,
    /// Mock only: PEs per simulated node (PEs of one node are LSA peers). `None`: one node.
    pub mock_node_size: Option<usize>,
    /// Compare every blocking collective call (heap calls, barriers, splits, team
    /// collectives) across its PEs, so that PEs calling different collectives, or the same
    /// one with other arguments, get an error naming both calls instead of corrupt memory
    /// or a hang ([`Error::CollectiveMismatch`]). `None` (the default): every call on the
    /// mock ([`CollectiveChecks::All`]); on NCCL [`CollectiveChecks::Barriers`], the heap
    /// calls and barriers of all PEs, whose central barrier compares the calls'
    /// fingerprints itself at no extra cost unless they differ (team collectives, splits
    /// and sub-team barriers would cost a few small device copies each there, so they are
    /// compared only with [`CollectiveChecks::All`]).
    pub check_collectives: Option<CollectiveChecks>,
}

/// Which blocking collective calls a world compares across their PEs
/// ([`WorldConfig::check_collectives`], `NIIN_CHECK_COLLECTIVES`; see [`crate::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectiveChecks {
    /// None (`0`).
    Off,
    /// Heap calls and barriers whose barrier compares the calls' fingerprints itself (the
    /// mock's barriers, and a GPU world's barriers of all PEs), at no extra cost unless they
    /// differ; team collectives, splits and, on NCCL, sub-team barriers are not compared
    /// (`barriers`; the default on NCCL).
    Barriers,
    /// Every blocking collective call: heap calls, barriers, splits, team collectives (`1`;
    /// the default on the mock).
    All,
}

impl Default for WorldConfig {
    /// Mock transport, 16 MiB heaps, 60 s timeout, symmetry checks in debug builds,
    /// collective checks by transport. Pure defaults: no environment variable is read
    /// (`NIIN_TIMEOUT`, `NVSHMEM_SYMMETRIC_SIZE`, ... are [`WorldConfig::from_env`]'s), so
    /// a test or an in-process world behaves the same whatever the shell has set.
    fn default() -> Self {
        WorldConfig {
            transport: TransportKind::Mock,
            heap_size: 16 << 20,
            timeout: Duration::from_secs(60),
            check_symmetry: cfg!(debug_assertions),
            mock_node_size: None,
            check_collectives: None,
        }
    }
}

/// Names of the environment variables [`WorldConfig::from_env`] reads.
pub mod vars {
    /// Seconds a wait or barrier may take.
    pub const TIMEOUT: &str = "NIIN_TIMEOUT";
    /// Fingerprint comparison at collective allocations.
    pub const CHECK_SYMMETRY: &str = "NIIN_CHECK_SYMMETRY";
    /// PEs per simulated node (mock).
    pub const MOCK_NODE_SIZE: &str = "NIIN_MOCK_NODE_SIZE";
    /// Comparison of collective calls across PEs.
    pub const CHECK_COLLECTIVES: &str = "NIIN_CHECK_COLLECTIVES";
}

impl WorldConfig {
    /// Reads the configuration from the process environment: the variables of the
    /// [`config`](crate::config) table (`NIIN_TRANSPORT`, `NVSHMEM_SYMMETRIC_SIZE`,
    /// `NIIN_TIMEOUT`, `NIIN_CHECK_SYMMETRY`, `NIIN_MOCK_NODE_SIZE`,
    /// `NIIN_CHECK_COLLECTIVES`), the same that [`World::init`](crate::World::init) and the
    /// C ABI's `nvshmem_init` read. An unset variable takes its default; a malformed value
    /// (`NIIN_TIMEOUT=abc`, not UTF-8, ...) is an [`Error::Config`] or
    /// [`Error::HeapSize`] naming the variable and the value, never a silent default.
    pub fn from_env() -> Result<WorldConfig> {
        Self::from_lookup(env_lossy)
    }

    /// As [`WorldConfig::from_env`], reading variables through `lookup` (for tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<WorldConfig> {
        let defaults = WorldConfig::default();
        let transport = TransportKind::parse(lookup(TransportKind::VAR).as_deref())?;
        let heap_size = match lookup(niin_heap::SYMMETRIC_SIZE_VAR) {
            None => niin_heap::DEFAULT_SYMMETRIC_SIZE,
            Some(v) => {
                let size = niin_heap::parse_symmetric_size(&v)?;
                crate::world::check_heap_size(size).map_err(|e| {
                    Error::Config(format!(
                        "{}={v:?} is {size} bytes: {}",
                        niin_heap::SYMMETRIC_SIZE_VAR,
                        config_message(e)
                    ))
                })?;
                size
            }
        };
        let timeout = match lookup(vars::TIMEOUT) {
            None => defaults.timeout,
            Some(v) => parse_seconds(vars::TIMEOUT, &v)?,
        };
        let check_symmetry = match lookup(vars::CHECK_SYMMETRY) {
            None => defaults.check_symmetry,
            Some(v) => parse_bool(vars::CHECK_SYMMETRY, &v)?,
        };
        let mock_node_size = match lookup(vars::MOCK_NODE_SIZE) {
            None => None,
            Some(v) => Some(parse_count(vars::MOCK_NODE_SIZE, &v)?),
        };
        let check_collectives = match lookup(vars::CHECK_COLLECTIVES) {
            None => None,
            Some(v) => Some(parse_checks(vars::CHECK_COLLECTIVES, &v)?),
        };
        let config = WorldConfig {
            transport,
            heap_size,
            timeout,
            check_symmetry,
            mock_node_size,
            check_collectives,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks what the variables' parsers check, for a configuration built in code: a
    /// timeout above zero (as `NIIN_TIMEOUT`), a heap that holds niin-rs's system area
    /// ([`crate::min_heap_size`]) and a node size of at least 1. World creation calls it;
    /// the error names the field and the value.
    pub fn validate(&self) -> Result<()> {
        if self.timeout.is_zero() {
            return Err(Error::Config(format!(
                "WorldConfig::timeout {:?} is not a positive duration (as {}=0 is not): \
                 waits and barriers would fail at once",
                self.timeout,
                vars::TIMEOUT
            )));
        }
        crate::world::check_heap_size(self.heap_size)?;
        if self.mock_node_size == Some(0) {
            return Err(Error::Config(format!(
                "WorldConfig::mock_node_size Some(0) is not a count of at least 1 (as {}=0 is not)",
                vars::MOCK_NODE_SIZE
            )));
        }
        Ok(())
    }
}

/// The value of the process environment's variable `name`; a value that is not UTF-8 is
/// read lossily (so a reader reports it as malformed instead of taking it for unset).
pub(crate) fn env_lossy(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// The text of a configuration error, without its `configuration: ` prefix.
fn config_message(e: Error) -> String {
    match e {
        Error::Config(text) => text,
        other => other.to_string(),
    }
}

/// Parses a positive number of seconds (fractions allowed; at least a nanosecond).
fn parse_seconds(var: &str, value: &str) -> Result<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::Config(format!(
                "{var}={value:?} is not a positive number of seconds"
            ))
        })
}

/// Parses `0`/`1`/`true`/`false`/`yes`/`no`/`on`/`off`.
fn parse_bool(var: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Error::Config(format!(
            "{var}={value:?} is not a boolean: expected 0 or 1"
        ))),
    }
}

/// Parses a [`CollectiveChecks`]: a boolean (off, all) or `barriers`.
fn parse_checks(var: &str, value: &str) -> Result<CollectiveChecks> {
    match value.trim().to_ascii_lowercase().as_str() {
        "barriers" => Ok(CollectiveChecks::Barriers),
        "all" => Ok(CollectiveChecks::All),
        _ => match parse_bool(var, value) {
            Ok(true) => Ok(CollectiveChecks::All),
            Ok(false) => Ok(CollectiveChecks::Off),
            Err(_) => Err(Error::Config(format!(
                "{var}={value:?} is not 0, barriers or 1 (or all)"
            ))),
        },
    }
}

/// Parses a count of at least 1.
fn parse_count(var: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| Error::Config(format!("{var}={value:?} is not a count of at least 1")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn collective_checks_parse_the_three_levels_and_name_a_bad_value() {
        let v = vars::CHECK_COLLECTIVES;
        for (text, want) in [
            ("0", CollectiveChecks::Off),
            ("off", CollectiveChecks::Off),
            (" barriers ", CollectiveChecks::Barriers),
            ("BARRIERS", CollectiveChecks::Barriers),
            ("1", CollectiveChecks::All),
            ("all", CollectiveChecks::All),
            ("true", CollectiveChecks::All),
        ] {
            assert_eq!(parse_checks(v, text).unwrap(), want, "{text:?}");
        }
        let e = parse_checks(v, "barrier").unwrap_err().to_string();
        assert!(
            e.contains(v) && e.contains("\"barrier\"") && e.contains("barriers"),
            "{e}"
        );
    }

    fn cfg(pairs: &[(&str, &str)]) -> Result<WorldConfig> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        WorldConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn empty_environment_gives_auto_and_nvshmem_default_heap() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.transport, TransportKind::Auto);
        assert_eq!(c.heap_size, 256 << 20);
        assert_eq!(c.timeout, Duration::from_secs(60));
    }

    #[test]
    fn each_variable_is_read() {
        let c = cfg(&[
            ("NIIN_TRANSPORT", "mock"),
            ("NVSHMEM_SYMMETRIC_SIZE", "64M"),
            ("NIIN_TIMEOUT", "2.5"),
            ("NIIN_CHECK_SYMMETRY", "1"),
            ("NIIN_MOCK_NODE_SIZE", "2"),
        ])
        .unwrap();
        assert_eq!(c.transport, TransportKind::Mock);
        assert_eq!(c.heap_size, 64 << 20);
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert!(c.check_symmetry);
        assert_eq!(c.mock_node_size, Some(2));
    }

    #[test]
    fn a_zero_timeout_in_code_is_refused_as_the_variable_refuses_it() {
        let var = cfg(&[("NIIN_TIMEOUT", "0")]).unwrap_err().to_string();
        assert!(var.contains("NIIN_TIMEOUT=\"0\""), "{var}");
        let config = WorldConfig {
            timeout: Duration::ZERO,
            ..WorldConfig::default()
        };
        let code = config.validate().unwrap_err().to_string();
        assert!(code.contains("WorldConfig::timeout 0ns"), "{code}");
        assert!(code.contains("NIIN_TIMEOUT"), "{code}");
        // World creation refuses it too.
        let made = crate::World::in_process(2, &config)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(made.to_string(), code);
        assert!(WorldConfig::default().validate().is_ok());
    }

    #[test]
    fn a_heap_too_small_for_the_system_area_is_refused_with_the_minimum() {
        let min = crate::min_heap_size();
        assert!(min > 1024 && min < (1 << 20), "minimum {min}");
        for value in ["1K", "1024"] {
            let e = cfg(&[("NVSHMEM_SYMMETRIC_SIZE", value)])
                .unwrap_err()
                .to_string();
            assert!(e.contains("NVSHMEM_SYMMETRIC_SIZE"), "{e}");
            assert!(e.contains(&format!("at least {min} bytes")), "{e}");
        }
        let small = WorldConfig {
            heap_size: min - 1,
            ..WorldConfig::default()
        };
        let e = crate::World::in_process(2, &small)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} bytes", min - 1)) && e.contains(&min.to_string()),
            "{e}"
        );
        // The minimum itself works: the application gets its granule.
        let fits = WorldConfig {
            heap_size: min,
            ..WorldConfig::default()
        };
        crate::run_in_process(2, &fits, |w| {
            let b = w.malloc::<u8>(256)?;
            w.free(b)
        })
        .unwrap();
    }

    /// Every variable: a good value sets its field, a malformed one is an error naming the
    /// variable and the value, and unset leaves the default (as `WorldConfig::default`
    /// where the two agree; the heap's default is NVSHMEM's 256 MiB).
    #[test]
    fn each_variable_good_bad_and_unset() {
        type Check = fn(&WorldConfig) -> bool;
        let d = WorldConfig::default();
        let cases: [(&str, &str, Check, &str, Check); 6] = [
            (
                "NIIN_TRANSPORT",
                "nccl",
                |c| c.transport == TransportKind::Nccl,
                "gpu",
                |c| c.transport == TransportKind::Auto,
            ),
            (
                "NVSHMEM_SYMMETRIC_SIZE",
                "32M",
                |c| c.heap_size == 32 << 20,
                "lots",
                |c| c.heap_size == niin_heap::DEFAULT_SYMMETRIC_SIZE,
            ),
            (
                "NIIN_TIMEOUT",
                "0.25",
                |c| c.timeout == Duration::from_millis(250),
                "abc",
                |c| c.timeout == Duration::from_secs(60),
            ),
            (
                "NIIN_CHECK_SYMMETRY",
                "off",
                |c| !c.check_symmetry,
                "2",
                |c| c.check_symmetry == cfg!(debug_assertions),
            ),
            (
                "NIIN_MOCK_NODE_SIZE",
                "3",
                |c| c.mock_node_size == Some(3),
                "-3",
                |c| c.mock_node_size.is_none(),
            ),
            (
                "NIIN_CHECK_COLLECTIVES",
                "0",
                |c| c.check_collectives == Some(CollectiveChecks::Off),
                "yes please",
                |c| c.check_collectives.is_none(),
            ),
        ];
        for (var, good, set, bad, unset) in cases {
            let c = cfg(&[(var, good)]).unwrap_or_else(|e| panic!("{var}={good}: {e}"));
            assert!(set(&c), "{var}={good} gives {c:?}");
            let e = cfg(&[(var, bad)]).unwrap_err();
            assert!(
                matches!(e, Error::Config(_) | Error::HeapSize(_)),
                "{var}={bad}: {e:#?}"
            );
            let msg = e.to_string();
            assert!(msg.contains(var) && msg.contains(bad), "{var}={bad}: {msg}");
            let c = cfg(&[]).unwrap();
            assert!(unset(&c), "{var} unset gives {c:?}");
        }
        // Unset, the fields WorldConfig::default also fixes agree with it.
        let c = cfg(&[]).unwrap();
        assert_eq!(
            (
                c.timeout,
                c.check_symmetry,
                c.mock_node_size,
                c.check_collectives
            ),
            (
                d.timeout,
                d.check_symmetry,
                d.mock_node_size,
                d.check_collectives
            )
        );
    }

    #[test]
    fn bad_values_name_variable_and_value() {
        for (var, value) in [
            ("NIIN_TRANSPORT", "gpu"),
            ("NIIN_TIMEOUT", "-1"),
            ("NIIN_TIMEOUT", "soon"),
            ("NIIN_CHECK_SYMMETRY", "maybe"),
            ("NIIN_MOCK_NODE_SIZE", "0"),
            ("NVSHMEM_SYMMETRIC_SIZE", "12Q"),
            ("NIIN_CHECK_COLLECTIVES", "sometimes"),
        ] {
            let msg = cfg(&[(var, value)]).unwrap_err().to_string();
            assert!(msg.contains(var), "{msg} names {var}");
            assert!(msg.contains(value), "{msg} names {value}");
        }
    }
}
