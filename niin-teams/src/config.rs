//! [`TeamConfig`]: the team configuration (`nvshmem_team_config_t`) and its mask bits.

use crate::error::TeamError;

/// A team's configuration, the part of NVSHMEM's `nvshmem_team_config_t` that niin-rs keeps.
///
/// NVSHMEM documents a single field, `num_contexts` ("reserved for future use", default 0);
/// its `version` and `uniqueid` fields serve `nvshmemx_team_init`, which niin-rs does not
/// offer. The default (`num_contexts = 0`) is the documented default, and it is what
/// [`TeamTable::get_config`](crate::TeamTable::get_config) reports for predefined teams and for
/// teams split without a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TeamConfig {
    /// Number of contexts the team expects to create (`num_contexts`); must not be negative.
    pub num_contexts: i32,
}

impl TeamConfig {
    /// The `config_mask` bit that selects `num_contexts`: NVSHMEM's
    /// `NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS` (OpenSHMEM's `SHMEM_TEAM_NUM_CONTEXTS`), `0x1`.
    pub const MASK_NUM_CONTEXTS: i64 = 0x1;

    /// A configuration of `num_contexts` contexts.
    pub const fn new(num_contexts: i32) -> Self {
        TeamConfig { num_contexts }
    }

    /// The configuration a split actually uses given `config_mask`: fields whose mask bit is
    /// set come from `self`, the others take their defaults (OpenSHMEM: "any configuration
    /// parameter value that is not indicated in the mask will be ignored"). Unknown mask bits
    /// are ignored.
    pub const fn masked(self, config_mask: i64) -> Self {
        if config_mask & Self::MASK_NUM_CONTEXTS != 0 {
            self
        } else {
            TeamConfig { num_contexts: 0 }
        }
    }

    /// Refuses a negative `num_contexts` with [`TeamError::BadConfig`] (NVSHMEM does not check;
    /// a negative count has no meaning).
    pub const fn validate(&self) -> Result<(), TeamError> {
        if self.num_contexts < 0 {
            return Err(TeamError::BadConfig {
                num_contexts: self.num_contexts,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_has_zero_contexts() {
        assert_eq!(TeamConfig::default(), TeamConfig::new(0));
        assert_eq!(TeamConfig::MASK_NUM_CONTEXTS, 1);
    }

    #[test]
    fn mask_selects_fields() {
        let c = TeamConfig::new(5);
        assert_eq!(c.masked(0), TeamConfig::default());
        assert_eq!(c.masked(TeamConfig::MASK_NUM_CONTEXTS), c);
        assert_eq!(c.masked(0b10), TeamConfig::default());
        assert_eq!(c.masked(-1), c);
    }

    #[test]
    fn negative_contexts_are_refused() {
        assert_eq!(
            TeamConfig::new(-1).validate(),
            Err(TeamError::BadConfig { num_contexts: -1 })
        );
        assert_eq!(TeamConfig::new(0).validate(), Ok(()));
        assert_eq!(TeamConfig::new(3).validate(), Ok(()));
    }
}
