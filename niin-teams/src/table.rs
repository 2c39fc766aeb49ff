//! [`TeamTable`]: one PE's teams, the local half of NVSHMEM's team routines.

use crate::config::TeamConfig;
use crate::device::{DeviceTeam, DeviceTeamTable};
use crate::error::TeamError;
use crate::id::TeamId;
use crate::layout::WorldLayout;
use crate::slots::SlotSet;
use crate::stride::Stride;

/// A live team as this PE holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    members: Stride,
    my_pe: i32,
    config: TeamConfig,
}

/// One PE's team table: the predefined teams plus the user teams this PE is a member of,
/// indexed by handle.
///
/// This is the per-PE state behind `nvshmem_team_*`. The collective parts (agreeing on a free
/// handle, synchronizing the parent team) belong to the API layer: it gathers
/// [`free_slots`](TeamTable::free_slots) from every parent member, intersects them, and passes
/// the result as `agreed` to [`split_strided`](TeamTable::split_strided) or
/// [`split_2d`](TeamTable::split_2d) on every parent member. Since every member then takes the
/// same lowest slot, every member of a new team gets the same handle.
///
/// Handles are stable: a team keeps its handle until it is destroyed, whatever else is created
/// or destroyed; a destroyed team's handle becomes free for reuse. There is no cap on the
/// number of user teams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamTable {
    layout: WorldLayout,
    /// Indexed by handle; `0..6` always `Some`; no trailing `None`.
    slots: Vec<Option<Entry>>,
    /// User slots not used here.
    free: SlotSet,
}

impl TeamTable {
    /// The table of a PE of `layout`, holding the predefined teams.
    ///
    /// # Panics
    ///
    /// If `layout` is invalid (see [`WorldLayout::validate`]); [`TeamTable::try_new`] returns
    /// the error instead. Layouts from [`WorldLayout::new`] are valid.
    pub fn new(layout: WorldLayout) -> Self {
        match Self::try_new(layout) {
            Ok(table) => table,
            Err(e) => panic!("TeamTable::new: {e}"),
        }
    }

    /// The table of a PE of `layout`, holding the predefined teams; refuses an invalid layout.
    pub fn try_new(layout: WorldLayout) -> Result<Self, TeamError> {
        layout.validate()?;
        let slots = TeamId::PREDEFINED
            .iter()
            .map(|&team| {
                let members = layout.predefined(team)?;
                let my_pe = members.index_of(layout.my_pe)?;
                Some(Entry {
                    members,
                    my_pe,
                    config: TeamConfig::default(),
                })
            })
            .collect::<Vec<_>>();
        debug_assert!(
            slots.iter().all(Option::is_some),
            "this PE is in every predefined team"
        );
        Ok(TeamTable {
            layout,
            slots,
            free: SlotSet::all(),
        })
    }

    /// The world layout this table was built from.
    pub fn layout(&self) -> WorldLayout {
        self.layout
    }

    fn entry(&self, team: TeamId) -> Result<&Entry, TeamError> {
        let Some(index) = team.index() else {
            return Err(TeamError::InvalidTeam { team });
        };
        match self.slots.get(index) {
            Some(Some(entry)) => Ok(entry),
            _ => Err(TeamError::NotAMember {
                team,
                pe: self.layout.my_pe,
            }),
        }
    }

    /// Whether this PE holds a live team under `team`.
    pub fn contains(&self, team: TeamId) -> bool {
        self.entry(team).is_ok()
    }

    /// This PE's number in `team` (`nvshmem_team_my_pe`); -1 for `NVSHMEM_TEAM_INVALID` (as
    /// NVSHMEM) and for any handle this PE holds no team under (NVSHMEM: undefined).
    pub fn team_my_pe(&self, team: TeamId) -> i32 {
        self.entry(team).map_or(-1, |e| e.my_pe)
    }

    /// Number of PEs of `team` (`nvshmem_team_n_pes`); -1 for `NVSHMEM_TEAM_INVALID` (as
    /// NVSHMEM) and for any handle this PE holds no team under (NVSHMEM: undefined).
    pub fn team_n_pes(&self, team: TeamId) -> i32 {
        self.entry(team).map_or(-1, |e| e.members.size)
    }

    /// Members of `team` in world PE numbers.
    pub fn members(&self, team: TeamId) -> Result<Stride, TeamError> {
        self.entry(team).map(|e| e.members)
    }

    /// The configuration of `team` (`nvshmem_team_get_config`): the one it was split with, or
    /// the default for predefined teams and teams split without one. NVSHMEM leaves `config`
    /// untouched for `NVSHMEM_TEAM_INVALID`; here that is [`TeamError::InvalidTeam`], and a
    /// handle this PE holds no team under is [`TeamError::NotAMember`].
    pub fn get_config(&self, team: TeamId) -> Result<TeamConfig, TeamError> {
        self.entry(team).map(|e| e.config)
    }

    /// `src_pe` of `src` as a PE number of `dest` (`nvshmem_team_translate_pe`).
    ///
    /// -1 when either handle is `NVSHMEM_TEAM_INVALID` or names no team on this PE, when
    /// `src_pe` is not in `0..n_pes(src)`, or when that PE is not a member of `dest`.
    /// (NVSHMEM's implementation tests `src_pe > size`, not `>=`, and does not test negative
    /// `src_pe`; niin-rs follows the documented rule.)
    pub fn translate_pe(&self, src: TeamId, src_pe: i32, dest: TeamId) -> i32 {
        let (Ok(src), Ok(dest)) = (self.entry(src), self.entry(dest)) else {
            return -1;
        };
        src.members
            .world_pe(src_pe)
            .and_then(|world| dest.members.index_of(world))
            .unwrap_or(-1)
    }

    /// The user-team handles not used on this PE (all handles from
    /// [`TeamId::FIRST_USER`] on, minus the live user teams).
    pub fn free_slots(&self) -> SlotSet {
        self.free.clone()
    }

    /// The live teams, predefined first, in handle order, with their members.
    pub fn teams(&self) -> impl Iterator<Item = (TeamId, Stride)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, e)| {
            let e = e.as_ref()?;
            Some((TeamId(i32::try_from(i).ok()?), e.members))
        })
    }

    /// Validates `agreed` for a new team on this PE and returns the `n` handles to use.
    fn take_agreed(&self, agreed: &SlotSet, n: usize) -> Result<Vec<TeamId>, TeamError> {
        let ids = agreed.lowest_n(n);
        if ids.len() < n {
            return Err(TeamError::HandlesExhausted);
        }
        if let Some(&team) = ids.iter().find(|&&t| !self.free.contains(t)) {
            return Err(TeamError::SlotInUse {
                team,
                pe: self.layout.my_pe,
            });
        }
        Ok(ids)
    }

    fn insert(&mut self, team: TeamId, members: Stride, config: TeamConfig) {
        let my_pe = members.index_of(self.layout.my_pe).unwrap_or(-1);
        debug_assert!(my_pe >= 0, "only members insert a team");
        let index = team.index().unwrap_or_default();
        if self.slots.len() <= index {
            self.slots.resize(index + 1, None);
        }
        debug_assert!(self.slots[index].is_none());
        self.slots[index] = Some(Entry {
            members,
            my_pe,
            config,
        });
        self.free.remove(team);
    }

    /// `nvshmem_team_split_strided` on this PE: the team of parent PEs `start, start+stride,
    /// ..., start+stride*(size-1)`.
    ///
    /// Call it on every member of `parent` with the same arguments and with `agreed` = the
    /// intersection of every parent member's [`free_slots`](TeamTable::free_slots). Returns the
    /// new team's handle, `agreed.lowest()`, on members of the new team, and `Ok(INVALID)` on
    /// the other parent members (which take no slot).
    ///
    /// Errors, on every parent member alike, leaving the table unchanged:
    /// [`TeamError::InvalidTeam`] for an `INVALID` parent (NVSHMEM returns nonzero);
    /// [`TeamError::NotAMember`] when this PE holds no team under `parent`;
    /// [`TeamError::BadSplit`] for a triplet NVSHMEM refuses (see [`Stride::sub_team`]). Only
    /// on members of the new team (the others ignore `config` and `agreed`):
    /// [`TeamError::BadConfig`] for a negative `num_contexts`, [`TeamError::SlotInUse`] when
    /// `agreed.lowest()` is used here (so `agreed` was not the intersection) and
    /// [`TeamError::HandlesExhausted`].
    pub fn split_strided(
        &mut self,
        parent: TeamId,
        start: i32,
        stride: i32,
        size: i32,
        config: Option<TeamConfig>,
        agreed: SlotSet,
    ) -> Result<TeamId, TeamError> {
        let members = self.entry(parent)?.members.sub_team(start, stride, size)?;
        if !members.contains(self.layout.my_pe) {
            return Ok(TeamId::INVALID);
        }
        let config = config.unwrap_or_default();
        config.validate()?;
        let team = self.take_agreed(&agreed, 1)?[0];
        self.insert(team, members, config);
        Ok(team)
    }

    /// `nvshmem_team_split_2d` on this PE: returns `(x-axis team, y-axis team)`.
    ///
    /// The parent's PEs form a grid `xrange` wide: parent PE `p` is at `(x, y) = (p % xrange,
    /// p / xrange)`; its x-axis team is its row (parent PEs `y*xrange ..`, at most `xrange`),
    /// its y-axis team its column (parent PEs `x, x+xrange, ...`), and its numbers in them are
    /// `x` and `y`. An `xrange` larger than the parent acts as the parent's size (OpenSHMEM
    /// 1.5, NVSHMEM). Every parent member is in exactly one x- and one y-axis team, so both
    /// handles are always valid on success.
    ///
    /// Call it on every member of `parent` with `agreed` = the intersection of every parent
    /// member's [`free_slots`](TeamTable::free_slots). Slots: the x-axis teams all take
    /// `agreed.lowest_n(2)[0]`, the y-axis teams all take `agreed.lowest_n(2)[1]`; the x-axis
    /// teams are disjoint, so they can share one handle, as can the y-axis teams.
    ///
    /// Errors leave the table unchanged (no half-made pair): as
    /// [`split_strided`](TeamTable::split_strided), with [`TeamError::BadXRange`] for
    /// `xrange <= 0` in place of `BadSplit`.
    pub fn split_2d(
        &mut self,
        parent: TeamId,
        xrange: i32,
        xconfig: Option<TeamConfig>,
        yconfig: Option<TeamConfig>,
        agreed: SlotSet,
    ) -> Result<(TeamId, TeamId), TeamError> {
        let parent = *self.entry(parent)?;
        let n = parent.members.size;
        if xrange <= 0 {
            return Err(TeamError::BadXRange {
                xrange,
                parent_size: n,
            });
        }
        let xr = xrange.min(n);
        let (x, y) = (parent.my_pe % xr, parent.my_pe / xr);
        let row_start = y * xr;
        let xteam = parent
            .members
            .sub_team(row_start, 1, xr.min(n - row_start))?;
        let yteam = parent.members.sub_team(x, xr, (n - x - 1) / xr + 1)?;
        let (xconfig, yconfig) = (xconfig.unwrap_or_default(), yconfig.unwrap_or_default());
        xconfig.validate()?;
        yconfig.validate()?;
        let ids = self.take_agreed(&agreed, 2)?;
        self.insert(ids[0], xteam, xconfig);
        self.insert(ids[1], yteam, yconfig);
        debug_assert_eq!((self.team_my_pe(ids[0]), self.team_my_pe(ids[1])), (x, y));
        Ok((ids[0], ids[1]))
    }

    /// `nvshmem_team_destroy` on this PE: frees the team's handle for reuse.
    ///
    /// `NVSHMEM_TEAM_INVALID` is a no-op, as NVSHMEM documents. Errors:
    /// [`TeamError::Predefined`] for a predefined team (NVSHMEM: undefined, and its
    /// implementation reports an error); [`TeamError::InvalidTeam`] for other negative handles;
    /// [`TeamError::NotAMember`] for a handle this PE holds no team under (never created here,
    /// or already destroyed).
    pub fn destroy(&mut self, team: TeamId) -> Result<(), TeamError> {
        if team == TeamId::INVALID {
            return Ok(());
        }
        if team.is_predefined() {
            return Err(TeamError::Predefined { team });
        }
        self.entry(team)?;
        let index = team.index().unwrap_or_default();
        self.slots[index] = None;
        while self.slots.last() == Some(&None) {
            self.slots.pop();
        }
        self.free.insert(team);
        Ok(())
    }

    /// The table in device form (see [`DeviceTeamTable`]): entry `k` is the team under handle
    /// `k`, or [`DeviceTeam::UNUSED`].
    pub fn device_table(&self) -> DeviceTeamTable {
        let teams = self
            .slots
            .iter()
            .map(|slot| match slot {
                Some(e) => DeviceTeam {
                    start: e.members.start,
                    stride: e.members.stride,
                    size: e.members.size,
                    my_pe: e.my_pe,
                },
                None => DeviceTeam::UNUSED,
            })
            .collect();
        DeviceTeamTable { teams }
    }
}

#[cfg(test)]
mod tests;
