//! NVSHMEM's team model for niin-rs: predefined teams, strided and 2D splits, PE translation,
//! team handles and their device-side table. GPU-free, no `unsafe`, no I/O.
//!
//! # What and why
//!
//! NVSHMEM team handles are per PE: each PE holds its own table of the teams it belongs to, and
//! a PE outside a team holds `NVSHMEM_TEAM_INVALID` for it. This crate is that table,
//! [`TeamTable`], and the pure computations on it. The collective parts of team creation (the
//! parent team agreeing on a free handle, and synchronizing) are the API layer's job; this
//! crate hands it the data to exchange ([`TeamTable::free_slots`], a [`SlotSet`]) and consumes
//! the agreed result. Keeping it collective-free makes every rule testable in-process by
//! simulating all PEs' tables side by side, which the tests do exhaustively for worlds of 1 to
//! 16 PEs.
//!
//! Every team niin-rs can create is strided in world PE numbers (predefined teams are, and a
//! strided split of a strided team is strided), so a team is a [`Stride`] `(start, stride,
//! size)` plus this PE's number in it, and the device form ([`DeviceTeamTable`]) is a flat
//! array of 16-byte [`DeviceTeam`] entries indexed by handle.
//!
//! # Example: what the API layer does for `nvshmem_team_split_strided`
//!
//! ```
//! use niin_teams::{SlotSet, TeamId, TeamTable, WorldLayout};
//!
//! // Four PEs, two per node; in a real run each table lives in its own process.
//! let mut pes: Vec<TeamTable> =
//!     (0..4).map(|pe| TeamTable::new(WorldLayout::new(4, pe, 2).unwrap())).collect();
//!
//! // The collective part: intersect every parent member's free slots (an allgather).
//! let agreed = SlotSet::intersect_all(&pes.iter().map(|t| t.free_slots()).collect::<Vec<_>>());
//! // The local part, on every parent member: the even PEs form a team.
//! let handles: Vec<TeamId> = pes
//!     .iter_mut()
//!     .map(|t| t.split_strided(TeamId::WORLD, 0, 2, 2, None, agreed.clone()).unwrap())
//!     .collect();
//! assert_eq!(handles, [TeamId(6), TeamId::INVALID, TeamId(6), TeamId::INVALID]);
//! assert_eq!(pes[2].team_my_pe(TeamId(6)), 1);
//! assert_eq!(pes[2].translate_pe(TeamId(6), 0, TeamId::WORLD), 0);
//! assert_eq!(pes[2].device_table().to_bytes().len(), 7 * 16);
//! ```
//!
//! # World layout
//!
//! niin-rs follows NCCL's LSA team model and assumes one PE per GPU and that a node's PEs are
//! contiguous world ranks, `node_size` per node, with possibly a shorter last node
//! ([`WorldLayout`]; `n_pes >= 1`, `0 <= my_pe < n_pes`, `1 <= node_size <= n_pes`, anything
//! else is [`TeamError::BadLayout`]). The predefined teams follow from it
//! ([`WorldLayout::predefined`]): `WORLD` = all PEs; `SHARED` = `NODE` = the PEs of my node;
//! `SAME_MYPE_NODE` = the PEs with my node-local rank, stride `node_size`; `SAME_GPU` = me;
//! `GPU_LEADERS` = all PEs.
//!
//! # NVSHMEM rules followed, and where they come from
//!
//! Read in NVIDIA/nvshmem: `src/host/team/team.cu` (public entry points),
//! `src/host/team/team_internal.cpp` (`nvshmemi_team_init`, `nvshmemi_team_split_strided`,
//! `nvshmemi_team_split_2d`, `nvshmemi_team_translate_pe`, `nvshmemi_team_destroy`,
//! `nvshmemi_team_set_team_idx_v1`), the `nvshmem_team_id_t` enum (`nvshmem_common.cuh` /
//! `device_host/nvshmem_types.h`), and NVSHMEM's "Team Management" API documentation, which
//! follows OpenSHMEM 1.5 §9.4 (also read: the OpenSHMEM `shmem_team_split_2d` man page).
//!
//! * Handles ([`TeamId`]): `nvshmem_team_t` is `int32_t`; `NVSHMEM_TEAM_INVALID` -1,
//!   `NVSHMEM_TEAM_WORLD` 0, `NVSHMEM_TEAM_SHARED` 1, `NVSHMEMX_TEAM_NODE` 2,
//!   `NVSHMEMX_TEAM_SAME_MYPE_NODE` 3, `NVSHMEMI_TEAM_SAME_GPU` 4, `NVSHMEMI_TEAM_GPU_LEADERS`
//!   5, first user index `NVSHMEM_TEAMS_MIN` 6 (NVSHMEM 3.x headers; the newest header in
//!   NVIDIA/nvshmem adds `NVSHMEM_TEAM_MC_SHARED` = 6 and moves `NVSHMEM_TEAMS_MIN` to 7,
//!   which niin-rs does not model).
//! * Predefined membership (`nvshmemi_team_init`): `NODE` is the same-host PEs, `my_pe` =
//!   `mype_node`; `SAME_MYPE_NODE` is `(start mype_node, stride npes_node, size
//!   npes/npes_node)` with `my_pe = mype/npes_node`; `SAME_GPU` is the PEs on my GPU;
//!   `GPU_LEADERS` is `(0, same_gpu.size, npes/same_gpu.size)`, i.e. all PEs with one PE per
//!   GPU; `SHARED` is the PEs `nvshmem_ptr` reaches (the node, under LSA).
//! * `nvshmem_team_my_pe` / `nvshmem_team_n_pes`: -1 for `NVSHMEM_TEAM_INVALID`.
//! * `nvshmem_team_split_strided`: refused (nonzero, `new_team` = INVALID) for an INVALID
//!   parent, and when `start < 0 || start >= parent.size || size <= 0 || size > parent.size ||
//!   stride < 1`; the new team is world `(parent.start + start*parent.stride, parent.stride *
//!   stride, size)`; parent members not in it get `NVSHMEM_TEAM_INVALID` and success; its
//!   handle is the lowest index free on all the PEs that agree on it.
//! * `nvshmem_team_split_2d`: `xrange` larger than the parent acts as the parent's size; x-axis
//!   team `i` is parent PEs `i*xrange ..` (the last possibly short), y-axis team `j` is parent
//!   PEs `j, j+xrange, ...`; `my_pe` in them is the x and y coordinate; INVALID parent refused.
//!   OpenSHMEM 1.5 requires `xrange` to be positive.
//! * `nvshmem_team_translate_pe`: -1 if either team is INVALID, or `src_pe` is not a member of
//!   both teams.
//! * `nvshmem_team_destroy`: `NVSHMEM_TEAM_INVALID` is a no-op; destroying a predefined team is
//!   an error; the team's index becomes free again.
//! * `nvshmem_team_get_config`: INVALID leaves the config untouched; the documented config has
//!   one field, `num_contexts`, default 0, selected by mask bit
//!   `NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS` = 0x1 ([`TeamConfig`]).
//!
//! # Choices where NVSHMEM is silent (or where niin-rs differs)
//!
//! * Triplet bound: NVSHMEM checks the new team's last PE only against the world size, so it
//!   would accept a team reaching past a non-world parent; niin-rs refuses any triplet whose
//!   last PE `start + stride*(size-1)` is not a parent PE, as OpenSHMEM 1.5 defines a valid
//!   triplet ([`TeamError::BadSplit`]).
//! * `xrange <= 0` in `split_2d`: NVSHMEM does not check (it would divide by zero); niin-rs
//!   refuses it ([`TeamError::BadXRange`]).
//! * `translate_pe` range: NVSHMEM tests `src_pe > size` and not negative values; niin-rs
//!   returns -1 for any `src_pe` outside `0..size`.
//! * Handles this PE holds no team under (non-member, destroyed, never created): undefined in
//!   NVSHMEM; here `team_my_pe`, `team_n_pes` and `translate_pe` return -1 and the other
//!   operations return [`TeamError::NotAMember`]. Negative handles other than -1 are treated
//!   as invalid ([`TeamError::InvalidTeam`]).
//! * Handle agreement: NVSHMEM AND-reduces the free-index bitmap over the new team's members;
//!   niin-rs has the API layer intersect [`TeamTable::free_slots`] over all parent members, so
//!   every split of one parent gives one handle on all members. `split_2d` takes the two lowest
//!   agreed slots, x-axis teams the first and y-axis teams the second (disjoint teams share a
//!   handle); NVSHMEM creates each axis team by its own strided split.
//! * No cap on user teams: NVSHMEM limits live teams to `NVSHMEM_MAX_TEAMS`; [`SlotSet`] is
//!   unbounded, short only of `i32` handles ([`TeamError::HandlesExhausted`]).
//! * A slot from `agreed` that is already used on this PE is refused
//!   ([`TeamError::SlotInUse`]) rather than trusted.
//! * Configuration: NVSHMEM stores a NULL config as `num_contexts` = -1 internally; niin-rs
//!   reports the documented default (0) for predefined teams and teams split without one, and
//!   refuses negative `num_contexts` ([`TeamError::BadConfig`]).
//! * Shorter last node: NVSHMEM asserts `npes % npes_node == 0` when building
//!   `SAME_MYPE_NODE`; niin-rs allows a short last node (the team of rank `r` then has one PE
//!   per node that has rank `r`).
//! * Canonical form: a one-PE team has stride 1 (NVSHMEM keeps e.g. `SAME_MYPE_NODE`'s
//!   `npes_node`), so equal memberships have equal [`Stride`]s.

mod config;
mod device;
mod error;
mod id;
mod layout;
mod slots;
mod stride;
mod table;

#[cfg(test)]
mod model_tests;

pub use config::TeamConfig;
pub use device::{DeviceTeam, DeviceTeamTable};
pub use error::TeamError;
pub use id::TeamId;
pub use layout::WorldLayout;
pub use slots::SlotSet;
pub use stride::Stride;
pub use table::TeamTable;
