//! [`TeamId`]: the `nvshmem_team_t` handle and the predefined handle values.

use std::fmt;

/// A team handle, NVSHMEM's `nvshmem_team_t` (an `int32_t`).
///
/// Handles are per PE: a PE that is not a member of a team holds [`TeamId::INVALID`] for it,
/// and the same number may name different (disjoint) teams on different PEs, as the x-axis
/// teams of one [`split_2d`](crate::TeamTable::split_2d) do. The predefined values are those
/// of NVSHMEM's `nvshmem_team_id_t` enum (`NVSHMEM_TEAM_WORLD` = 0 ... `NVSHMEMI_TEAM_GPU_LEADERS`
/// = 5, `NVSHMEM_TEAM_INVALID` = -1); user teams get handles from [`TeamId::FIRST_USER`] (6,
/// NVSHMEM's `NVSHMEM_TEAMS_MIN`) on.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TeamId(pub i32);

impl TeamId {
    /// `NVSHMEM_TEAM_INVALID` (-1): names no team.
    pub const INVALID: TeamId = TeamId(-1);
    /// `NVSHMEM_TEAM_WORLD` (0): all PEs.
    pub const WORLD: TeamId = TeamId(0);
    /// `NVSHMEM_TEAM_SHARED` (1): the PEs whose symmetric heaps this PE can load/store, which
    /// for niin-rs is the PEs of this PE's node (NCCL LSA domain).
    pub const SHARED: TeamId = TeamId(1);
    /// `NVSHMEMX_TEAM_NODE` (2): the PEs of this PE's node.
    pub const NODE: TeamId = TeamId(2);
    /// `NVSHMEMX_TEAM_SAME_MYPE_NODE` (3): the PEs that have this PE's node-local rank, one per
    /// node.
    pub const SAME_MYPE_NODE: TeamId = TeamId(3);
    /// `NVSHMEMI_TEAM_SAME_GPU` (4): the PEs on this PE's GPU; just this PE, since niin-rs runs
    /// one PE per GPU.
    pub const SAME_GPU: TeamId = TeamId(4);
    /// `NVSHMEMI_TEAM_GPU_LEADERS` (5): the first PE of every GPU; every PE, since niin-rs runs
    /// one PE per GPU.
    pub const GPU_LEADERS: TeamId = TeamId(5);
    /// The first handle a user team can get (NVSHMEM's `NVSHMEM_TEAMS_MIN`, 6).
    pub const FIRST_USER: TeamId = TeamId(6);

    /// The predefined handles, in numeric order (index = handle value).
    pub const PREDEFINED: [TeamId; 6] = [
        TeamId::WORLD,
        TeamId::SHARED,
        TeamId::NODE,
        TeamId::SAME_MYPE_NODE,
        TeamId::SAME_GPU,
        TeamId::GPU_LEADERS,
    ];

    /// Whether this is one of the six predefined handles (0 to 5).
    pub const fn is_predefined(self) -> bool {
        self.0 >= 0 && self.0 < Self::FIRST_USER.0
    }

    /// Whether this is a user-team handle (at least [`TeamId::FIRST_USER`]), live or not.
    pub const fn is_user(self) -> bool {
        self.0 >= Self::FIRST_USER.0
    }

    /// Whether this handle is [`TeamId::INVALID`] or any other negative value; no team has a
    /// negative handle.
    pub const fn is_invalid(self) -> bool {
        self.0 < 0
    }

    /// The handle as an index into per-handle tables such as
    /// [`DeviceTeamTable`](crate::DeviceTeamTable); `None` for negative handles.
    pub const fn index(self) -> Option<usize> {
        if self.0 < 0 {
            None
        } else {
            Some(self.0 as usize)
        }
    }

    /// NVSHMEM's name of a predefined handle or of `NVSHMEM_TEAM_INVALID`; `None` otherwise.
    pub const fn name(self) -> Option<&'static str> {
        match self.0 {
            -1 => Some("NVSHMEM_TEAM_INVALID"),
            0 => Some("NVSHMEM_TEAM_WORLD"),
            1 => Some("NVSHMEM_TEAM_SHARED"),
            2 => Some("NVSHMEMX_TEAM_NODE"),
            3 => Some("NVSHMEMX_TEAM_SAME_MYPE_NODE"),
            4 => Some("NVSHMEMI_TEAM_SAME_GPU"),
            5 => Some("NVSHMEMI_TEAM_GPU_LEADERS"),
            _ => None,
        }
    }
}

impl fmt::Display for TeamId {
    /// The number, followed by NVSHMEM's name in parentheses for predefined handles and
    /// `NVSHMEM_TEAM_INVALID`, e.g. `0 (NVSHMEM_TEAM_WORLD)` or `7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

impl From<i32> for TeamId {
    fn from(raw: i32) -> Self {
        TeamId(raw)
    }
}

impl From<TeamId> for i32 {
    fn from(team: TeamId) -> Self {
        team.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_values_match_nvshmem_team_id_enum() {
        assert_eq!(TeamId::INVALID.0, -1);
        assert_eq!(TeamId::WORLD.0, 0);
        assert_eq!(TeamId::SHARED.0, 1);
        assert_eq!(TeamId::NODE.0, 2);
        assert_eq!(TeamId::SAME_MYPE_NODE.0, 3);
        assert_eq!(TeamId::SAME_GPU.0, 4);
        assert_eq!(TeamId::GPU_LEADERS.0, 5);
        assert_eq!(TeamId::FIRST_USER.0, 6);
        for (i, t) in TeamId::PREDEFINED.iter().enumerate() {
            assert_eq!(t.index(), Some(i));
        }
    }

    #[test]
    fn team_id_is_a_transparent_i32() {
        assert_eq!(size_of::<TeamId>(), size_of::<i32>());
        assert_eq!(align_of::<TeamId>(), align_of::<i32>());
        assert_eq!(i32::from(TeamId::from(42)), 42);
    }

    #[test]
    fn classification_of_handles() {
        for t in TeamId::PREDEFINED {
            assert!(t.is_predefined() && !t.is_user() && !t.is_invalid());
        }
        assert!(!TeamId::INVALID.is_predefined() && TeamId::INVALID.is_invalid());
        assert!(TeamId(-7).is_invalid() && TeamId(-7).index().is_none());
        assert!(TeamId::FIRST_USER.is_user() && !TeamId::FIRST_USER.is_predefined());
        assert!(TeamId(i32::MAX).is_user());
    }

    #[test]
    fn display_names_predefined_handles() {
        assert_eq!(TeamId::WORLD.to_string(), "0 (NVSHMEM_TEAM_WORLD)");
        assert_eq!(TeamId::INVALID.to_string(), "-1 (NVSHMEM_TEAM_INVALID)");
        assert_eq!(
            TeamId::GPU_LEADERS.to_string(),
            "5 (NVSHMEMI_TEAM_GPU_LEADERS)"
        );
        assert_eq!(TeamId(17).to_string(), "17");
        assert_eq!(TeamId(-3).name(), None);
    }
}
