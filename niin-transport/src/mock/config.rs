//! [`MockConfig`]: heap size, simulated node size, timeout and barrier slots of a mock
//! world, and the `NIIN_TIMEOUT` parsing behind [`MockConfig::from_env`].

use std::time::Duration;

use crate::error::{Result, TransportError};

/// The environment variable that sets the mock's timeout, in seconds.
pub const TIMEOUT_VAR: &str = "NIIN_TIMEOUT";

/// The timeout when `NIIN_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default per-PE heap size: 16 MiB.
pub const DEFAULT_HEAP_SIZE: u64 = 16 << 20;

/// The default number of barrier slots (team handles `0..1024`).
pub const DEFAULT_MAX_TEAMS: usize = 1024;

/// The largest `max_teams` a mock world takes: team handles are `i32`s.
pub const MAX_MAX_TEAMS: usize = 1 << 20;

/// How a mock world is shaped. Every PE of a job must use the same values (a
/// multi-process job checks `heap_size`, `node_size` and `max_teams` at attach).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MockConfig {
    /// Bytes of each PE's symmetric heap (at least 1). Heaps start on 64 KiB boundaries.
    pub heap_size: u64,
    /// PEs per simulated node: PEs `k*node_size .. (k+1)*node_size` are one node and
    /// LSA peers of each other (non-null `peer_ptr`); PEs of other nodes are reached
    /// only through the mock's "network" (every operation still works, `peer_ptr` is
    /// null, `is_lsa_peer` is false). `usize::MAX` (the default): one node.
    pub node_size: usize,
    /// How long a wait, a barrier or an attach may take before it fails with
    /// [`TransportError::Timeout`]: on a GPU it would hang.
    pub timeout: Duration,
    /// Number of barrier slots per PE: team handles must lie in `0..max_teams`
    /// (at most [`MAX_MAX_TEAMS`]).
    pub max_teams: usize,
}

impl Default for MockConfig {
    /// 16 MiB heaps, one node, a 60 s timeout, 1024 team slots. The environment is not
    /// read: use [`MockConfig::from_env`] for `NIIN_TIMEOUT`.
    fn default() -> Self {
        MockConfig {
            heap_size: DEFAULT_HEAP_SIZE,
            node_size: usize::MAX,
            timeout: DEFAULT_TIMEOUT,
            max_teams: DEFAULT_MAX_TEAMS,
        }
    }
}

impl MockConfig {
    /// The defaults, with the timeout from `NIIN_TIMEOUT` (seconds) when it is set. A
    /// malformed value is an error naming the variable and the value.
    pub fn from_env() -> Result<MockConfig> {
        let raw = crate::env::text(TIMEOUT_VAR)?;
        Ok(MockConfig {
            timeout: parse_timeout(raw.as_deref())?,
            ..MockConfig::default()
        })
    }

    /// Checks the values: a non-zero heap and node size, `1..=MAX_MAX_TEAMS` teams.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| {
            Err(TransportError::BadArgument {
                op: "mock config",
                what,
            })
        };
        if self.heap_size == 0 {
            return bad("heap_size is 0: each PE needs a heap of at least 1 byte".into());
        }
        if self.node_size == 0 {
            return bad("node_size is 0: a simulated node holds at least one PE".into());
        }
        if self.max_teams == 0 || self.max_teams > MAX_MAX_TEAMS {
            return bad(format!(
                "max_teams = {} is outside 1..={MAX_MAX_TEAMS}",
                self.max_teams
            ));
        }
        Ok(())
    }
}

/// Parses a timeout in seconds as `NIIN_TIMEOUT` gives it: `None` (unset) is the default
/// 60 s; otherwise a positive decimal number of seconds (`"30"`, `"0.5"`), surrounding
/// spaces ignored. Anything else is an error naming the variable and the value.
pub fn parse_timeout(value: Option<&str>) -> Result<Duration> {
    let Some(raw) = value else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let bad = |why: &str| TransportError::BadArgument {
        op: TIMEOUT_VAR,
        what: format!("{TIMEOUT_VAR}={raw:?} is not a timeout: {why}"),
    };
    let text = raw.trim();
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad(
            "expected a positive number of seconds such as 30 or 0.5",
        ));
    }
    let secs: f64 = text
        .parse()
        .map_err(|_| bad("expected a positive number of seconds such as 30 or 0.5"))?;
    if secs <= 0.0 {
        return Err(bad("it must be more than 0 seconds"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad("it is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_unset_is_sixty_seconds() {
        assert_eq!(parse_timeout(None).unwrap(), Duration::from_secs(60));
    }

    #[test]
    fn timeout_parses_whole_and_fractional_seconds() {
        assert_eq!(parse_timeout(Some("30")).unwrap(), Duration::from_secs(30));
        assert_eq!(
            parse_timeout(Some(" 0.5 ")).unwrap(),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn timeout_errors_name_variable_and_value() {
        for raw in [
            "",
            "abc",
            "-1",
            "0",
            "1e3",
            "1.2.3",
            "99999999999999999999999",
        ] {
            let e = parse_timeout(Some(raw)).unwrap_err().to_string();
            assert!(e.contains("NIIN_TIMEOUT"), "{raw:?}: {e}");
            assert!(e.contains(&format!("{raw:?}")), "{raw:?}: {e}");
        }
    }

    #[test]
    fn default_config_is_valid_and_validate_rejects_zeros() {
        let c = MockConfig::default();
        assert_eq!(c.heap_size, 16 << 20);
        assert_eq!(c.node_size, usize::MAX);
        assert_eq!(c.timeout, Duration::from_secs(60));
        c.validate().unwrap();
        assert!(MockConfig { heap_size: 0, ..c }.validate().is_err());
        assert!(MockConfig { node_size: 0, ..c }.validate().is_err());
        assert!(MockConfig { max_teams: 0, ..c }.validate().is_err());
        assert!(
            MockConfig {
                max_teams: MAX_MAX_TEAMS + 1,
                ..c
            }
            .validate()
            .is_err()
        );
    }
}
