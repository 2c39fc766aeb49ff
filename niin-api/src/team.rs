//! Teams on a [`World`]: queries, translation, and the collective splits.
//!
//! The team model (membership, handles, argument rules) is `niin-teams`; what this module
//! adds is the collective part of a split: the members of the parent team agree on the
//! new team's handle — the lowest handle free on every one of them — by publishing their
//! free-handle bitmaps in the world's system area and reading each other's, between two
//! barriers of the parent team. Rounds cover 4096 handles each, so there is no cap.

use niin_teams::{SlotSet, TeamConfig, TeamId};
use niin_transport::{Order, SymAddr, TeamSync, Transport};

use crate::error::{Error, Result};
use crate::world::{SLOT_WORDS, SYS_SLOTS, World};

impl World {
    fn team_err(&self, source: niin_teams::TeamError) -> Error {
        Error::Team {
            pe: self.my_pe(),
            source,
        }
    }

    /// This PE's number in `team`, or -1 if it is not a member or the team is invalid
    /// (`nvshmem_team_my_pe`).
    pub fn team_my_pe(&self, team: TeamId) -> i32 {
        self.teams().team_my_pe(team)
    }

    /// Number of PEs in `team`, or -1 for an invalid team (`nvshmem_team_n_pes`).
    pub fn team_n_pes(&self, team: TeamId) -> i32 {
        self.teams().team_n_pes(team)
    }

    /// The number in `dest` of PE `src_pe` of `src`, or -1 (`nvshmem_team_translate_pe`).
    pub fn team_translate_pe(&self, src: TeamId, src_pe: i32, dest: TeamId) -> i32 {
        self.teams().translate_pe(src, src_pe, dest)
    }

    /// This PE's team table in the form device code reads (entry `k`: the team of handle
    /// `k`; see [`DeviceTeamTable`](crate::DeviceTeamTable)): what `libnvshmem_host` copies
    /// to the GPU after every split and destroy.
    pub fn device_team_table(&self) -> crate::DeviceTeamTable {
        self.teams().device_table()
    }

    /// The configuration `team` was created with (`nvshmem_team_get_config`).
    pub fn team_get_config(&self, team: TeamId) -> Result<TeamConfig> {
        self.teams().get_config(team).map_err(|e| self.team_err(e))
    }

    /// Destroys a user team (`nvshmem_team_destroy`); predefined teams are refused.
    pub fn team_destroy(&self, team: TeamId) -> Result<()> {
        self.check_live()?;
        self.teams().destroy(team).map_err(|e| self.team_err(e))
    }

    /// Collectively creates the team of `size` PEs of `parent` starting at `start` with
    /// `stride` (`nvshmem_team_split_strided`). Every member of `parent` calls it with the
    /// same arguments; members of the new team get its handle, the others
    /// [`TeamId::INVALID`].
    pub fn team_split_strided(
        &self,
        parent: TeamId,
        start: i32,
        stride: i32,
        size: i32,
        config: Option<TeamConfig>,
    ) -> Result<TeamId> {
        self.check_live()?;
        let sync = self.team_sync(parent)?;
        let agreed = self.agree_free_slots(sync, 1)?;
        self.teams()
            .split_strided(parent, start, stride, size, config, agreed)
            .map_err(|e| self.team_err(e))
    }

    /// Collectively splits `parent` into rows of `xrange` PEs and the columns across them
    /// (`nvshmem_team_split_2d`); returns this PE's (x-axis, y-axis) teams.
    pub fn team_split_2d(
        &self,
        parent: TeamId,
        xrange: i32,
        xconfig: Option<TeamConfig>,
        yconfig: Option<TeamConfig>,
    ) -> Result<(TeamId, TeamId)> {
        self.check_live()?;
        let sync = self.team_sync(parent)?;
        let agreed = self.agree_free_slots(sync, 2)?;
        self.teams()
            .split_2d(parent, xrange, xconfig, yconfig, agreed)
            .map_err(|e| self.team_err(e))
    }

    /// The set of user-team handles free on every member of `sync`, holding at least
    /// `needed` handles (collective over `sync`'s members).
    fn agree_free_slots(&self, sync: TeamSync, needed: usize) -> Result<SlotSet> {
        let t = &self.inner.transport;
        let slots = SymAddr(self.inner.sys + SYS_SLOTS);
        let bytes = SLOT_WORDS * 8;
        let mut agreed_words: Vec<u64> = Vec::new();
        for round in 0.. {
            let lo = round * SLOT_WORDS;
            let mine = self.teams().free_slots().to_words(lo + SLOT_WORDS);
            let window = &mine[lo..lo + SLOT_WORDS];
            let me = self.my_pe();
            // SAFETY: `window` is a live local slice of `bytes` bytes; Order::Now completes
            // the copy before the call returns.
            self.transport_result(unsafe {
                t.put(Order::Now, me, slots, window.as_ptr().cast(), bytes)
            })?;
            t.barrier(Order::Now, sync)
                .map_err(|source| Error::Transport { pe: me, source })?;
            let mut acc = vec![u64::MAX; SLOT_WORDS];
            let mut theirs = vec![0u64; SLOT_WORDS];
            for i in 0..sync.size {
                let pe = sync.world_pe(i);
                // SAFETY: `theirs` is a live local buffer of `bytes` bytes written only by
                // this call, which completes before it returns.
                self.transport_result(unsafe {
                    t.get(Order::Now, pe, theirs.as_mut_ptr().cast(), slots, bytes)
                })?;
                acc.iter_mut().zip(&theirs).for_each(|(a, b)| *a &= b);
            }
            // Nobody may overwrite its bitmap before every member has read it.
            t.barrier(Order::Now, sync)
                .map_err(|source| Error::Transport { pe: me, source })?;
            let found: u32 = acc.iter().map(|w| w.count_ones()).sum();
            agreed_words.extend_from_slice(&acc);
            if found as usize >= needed {
                // The set claims handles past the examined windows free too; the split
                // takes its lowest `needed`, which lie inside them, where it is exact.
                return Ok(SlotSet::from_words(&agreed_words));
            }
        }
        unreachable!("the loop only ends by returning")
    }
}
