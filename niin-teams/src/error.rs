//! [`TeamError`]: every way a team operation can be refused, each naming the bad values.

use crate::id::TeamId;

/// Why a team operation was refused.
///
/// Every variant carries the values that made the call invalid, so the message alone says what
/// was wrong. No operation of [`TeamTable`](crate::TeamTable) changes the table when it returns
/// an error.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum TeamError {
    /// The handle is `NVSHMEM_TEAM_INVALID` (or another negative value, which no team can have).
    #[error("team handle {team} is NVSHMEM_TEAM_INVALID (or negative) and names no team")]
    InvalidTeam {
        /// The handle that was passed.
        team: TeamId,
    },

    /// The handle is well formed, but this PE holds no live team under it: the PE is not a
    /// member of the team it would name (a non-member holds `NVSHMEM_TEAM_INVALID` instead), or
    /// the team was destroyed, or it was never created on this PE.
    #[error(
        "PE {pe} holds no live team with handle {team} \
         (not a member, destroyed, or never created on this PE)"
    )]
    NotAMember {
        /// The handle that was passed.
        team: TeamId,
        /// The calling PE, in `NVSHMEM_TEAM_WORLD` numbering.
        pe: i32,
    },

    /// Predefined teams live as long as the library and cannot be destroyed.
    #[error("team {team} is predefined and cannot be destroyed")]
    Predefined {
        /// The predefined handle that was passed.
        team: TeamId,
    },

    /// The `(start, stride, size)` triplet of `nvshmem_team_split_strided` does not select PEs
    /// of the parent team.
    #[error(
        "invalid split triplet <start {start}, stride {stride}, size {size}> of a parent team \
         of {parent_size} PEs: need 0 <= start < {parent_size}, stride >= 1, size >= 1 and \
         start + stride*(size-1) < {parent_size}"
    )]
    BadSplit {
        /// The first parent-team PE of the new team.
        start: i32,
        /// The distance, in parent-team PE numbers, between consecutive new-team PEs.
        stride: i32,
        /// The number of PEs of the new team.
        size: i32,
        /// The number of PEs of the parent team.
        parent_size: i32,
    },

    /// The `xrange` of `nvshmem_team_split_2d` is not positive.
    #[error(
        "invalid xrange {xrange} for a 2D split of a parent team of {parent_size} PEs: \
         xrange must be positive"
    )]
    BadXRange {
        /// The `xrange` that was passed.
        xrange: i32,
        /// The number of PEs of the parent team.
        parent_size: i32,
    },

    /// The world layout cannot be represented (see [`WorldLayout`](crate::WorldLayout)).
    #[error(
        "world layout not representable: n_pes {n_pes}, my_pe {my_pe}, node_size {node_size}; \
         need n_pes >= 1, 0 <= my_pe < n_pes and 1 <= node_size <= n_pes"
    )]
    BadLayout {
        /// The number of PEs in the world.
        n_pes: i32,
        /// This PE's world rank.
        my_pe: i32,
        /// The number of PEs per node (every node but possibly the last).
        node_size: i32,
    },

    /// A team configuration asks for a negative number of contexts.
    #[error("invalid team configuration: num_contexts {num_contexts} is negative")]
    BadConfig {
        /// The `num_contexts` that was passed.
        num_contexts: i32,
    },

    /// The slot picked from `agreed` is already used on this PE, so `agreed` was not the
    /// intersection of the parent members' [`free_slots`](crate::TeamTable::free_slots)
    /// (this PE's included).
    #[error(
        "team slot {team} chosen from the agreed slot set is already used on PE {pe}; \
         `agreed` must be the intersection of all parent members' free_slots()"
    )]
    SlotInUse {
        /// The slot (the handle the new team would have had).
        team: TeamId,
        /// The calling PE, in `NVSHMEM_TEAM_WORLD` numbering.
        pe: i32,
    },

    /// The agreed slot set has no free index that fits an `i32` handle (about two billion
    /// teams live at once).
    #[error("no free team handle: every index representable as an i32 handle is in use")]
    HandlesExhausted,
}
