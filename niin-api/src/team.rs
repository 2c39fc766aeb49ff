//! Teams on a [`World`]: the [`Team`] handle, queries, translation, and the collective
//! splits.
//!
//! Two ways to use a team, the same operations underneath:
//!
//! - [`Team`], the Rust handle: made by [`World::team`] for a team this PE is a member of
//!   (the predefined ones included) and by [`Team::split_strided`] / [`Team::split_2d`];
//!   PE numbers are `usize`, and "not a member" is `None`.
//! - the [`TeamId`] methods of [`World`] ([`World::team_my_pe`],
//!   [`World::team_split_strided`], ...), for code that holds NVSHMEM's raw handles (the C
//!   ABI, device team tables) and for the team collectives ([`World::reduce`], ...), which
//!   take a [`TeamId`] ([`Team::id`]). The same types: `usize` PE numbers, `Option` where
//!   NVSHMEM's C functions return -1 or `NVSHMEM_TEAM_INVALID`.
//!
//! The team model (membership, handles, argument rules) is `niin-teams`; what this module
//! adds is the collective part of a split: the members of the parent team agree on the
//! new team's handle — the lowest handle free on every one of them — by publishing their
//! free-handle bitmaps in the world's system area and reading each other's, between two
//! barriers of the parent team. Rounds cover 4096 handles each, so there is no cap.
//!
//! ```
//! use niin_api::{run_in_process, TeamId, WorldConfig};
//!
//! run_in_process(4, &WorldConfig::default(), |w| {
//!     let world = w.team(TeamId::WORLD)?;
//!     // The even PEs of the world: 0 and 2. The odd PEs get `None`.
//!     let evens = world.split_strided(0, 2, 2, None)?;
//!     match &evens {
//!         Some(t) => {
//!             assert_eq!(t.n_pes(), 2);
//!             assert_eq!(t.my_pe(), w.my_pe() / 2);
//!             assert_eq!(t.world_pe(1), Some(2));
//!             t.barrier()?;
//!         }
//!         None => assert_eq!(w.my_pe() % 2, 1),
//!     }
//!     if let Some(t) = evens {
//!         t.destroy()?;
//!     }
//!     Ok(())
//! })?;
//! # Ok::<(), niin_api::Error>(())
//! ```

use niin_teams::{SlotSet, TeamConfig, TeamId};
use niin_transport::{Order, SymAddr, TeamSplit, TeamSync, Transport};

use crate::check::{CollectiveCall, CollectiveKind};
use crate::error::{Error, Result};
use crate::world::{
    COLL_LL_HEADER_BYTES, COLL_LL_SLOTS, DEVICE_TEAM_SLOTS, SLOT_WORDS, SYS_COLL_LL, SYS_SLOTS,
    SYS_TEAM_SYNC, TEAM_SYNC_SLOT_BYTES, World,
};

/// A team this PE is a member of, with the world it belongs to: NVSHMEM's `nvshmem_team_t`
/// in Rust terms.
///
/// Get one with [`World::team`] (any team this PE holds, the predefined ones included:
/// `w.team(TeamId::WORLD)?`) or from a split ([`Team::split_strided`],
/// [`Team::split_2d`]). Its PE numbers are `usize`; a query about a PE outside the team is
/// `None`. Its number in the team and the team's size are fixed when the handle is made
/// (a team's members never change).
///
/// Dropping a `Team` does not destroy the team (destroying is collective over its members,
/// as freeing a [`SymBuffer`](crate::SymBuffer) is): call [`Team::destroy`]. Destroying the
/// handle's team by its [`TeamId`] ([`World::team_destroy`]) while a `Team` of it is alive
/// leaves that `Team` stale: its calls then fail, or act on a later team given the same
/// handle.
#[derive(Debug)]
pub struct Team {
    world: World,
    id: TeamId,
    my_pe: usize,
    n_pes: usize,
}

impl Team {
    /// The team's handle (`nvshmem_team_t`): what the team collectives
    /// ([`World::reduce`], [`World::broadcast`], ...), [`World::barrier`] and device code take.
    pub fn id(&self) -> TeamId {
        self.id
    }

    /// The world this team belongs to (this PE's handle on it).
    pub fn world(&self) -> &World {
        &self.world
    }

    /// This PE's number in the team, `0..n_pes()` (`nvshmem_team_my_pe`).
    pub fn my_pe(&self) -> usize {
        self.my_pe
    }

    /// Number of PEs in the team (`nvshmem_team_n_pes`).
    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// The number in `dest` of this team's PE `pe` (`nvshmem_team_translate_pe`); `None`
    /// when `pe` is not in `0..n_pes()` or that PE is not a member of `dest`.
    pub fn translate_pe(&self, pe: usize, dest: &Team) -> Option<usize> {
        self.world.team_translate_pe(self.id, pe, dest.id)
    }

    /// The world PE number of this team's PE `pe` (its number in `NVSHMEM_TEAM_WORLD`);
    /// `None` when `pe` is not in `0..n_pes()`.
    pub fn world_pe(&self, pe: usize) -> Option<usize> {
        self.world.team_translate_pe(self.id, pe, TeamId::WORLD)
    }

    /// Completes this PE's earlier operations, then waits for every PE of the team
    /// (`nvshmem_barrier`). Collective over the team.
    pub fn barrier(&self) -> Result<()> {
        self.world.barrier(self.id)
    }

    /// Waits for every PE of the team (`nvshmem_team_sync`). niin-rs completes earlier
    /// operations here too (a barrier is a valid, stronger sync). Collective over the team.
    pub fn sync(&self) -> Result<()> {
        self.world.barrier(self.id)
    }

    /// The configuration the team was created with (`nvshmem_team_get_config`).
    pub fn config(&self) -> Result<TeamConfig> {
        self.world.team_get_config(self.id)
    }

    /// Collectively creates the team of `size` PEs of this team, from its PE `start` on,
    /// every `stride`-th (`nvshmem_team_split_strided`). Every member of this team calls it
    /// with the same arguments; the members of the new team get `Some` of it, the others
    /// `None`. Arguments that select no PEs of this team are an error on every member.
    pub fn split_strided(
        &self,
        start: usize,
        stride: usize,
        size: usize,
        config: Option<TeamConfig>,
    ) -> Result<Option<Team>> {
        self.world
            .team_split_strided(self.id, start, stride, size, config)?
            .map(|id| self.world.team(id))
            .transpose()
    }

    /// Collectively splits this team into rows of `xrange` PEs and the columns across
    /// them (`nvshmem_team_split_2d`): returns this PE's (row, column) teams. Every member
    /// is in one of each. An `xrange` larger than the team acts as the team's size; 0 is an
    /// error on every member.
    pub fn split_2d(
        &self,
        xrange: usize,
        xconfig: Option<TeamConfig>,
        yconfig: Option<TeamConfig>,
    ) -> Result<(Team, Team)> {
        let (x, y) = self
            .world
            .team_split_2d(self.id, xrange, xconfig, yconfig)?;
        Ok((self.world.team(x)?, self.world.team(y)?))
    }

    /// Destroys the team (`nvshmem_team_destroy`; see [`World::team_destroy`]). Predefined
    /// teams are refused.
    pub fn destroy(self) -> Result<()> {
        self.world.team_destroy(self.id)
    }
}

impl World {
    fn team_err(&self, source: niin_teams::TeamError) -> Error {
        Error::Team {
            pe: self.my_pe(),
            source,
        }
    }

    /// The [`Team`] handle of `team`, a team this PE is a member of (a predefined team, or
    /// one a split gave this PE). A handle this PE holds no team under (not a member,
    /// destroyed, [`TeamId::INVALID`]) is an error naming it.
    pub fn team(&self, team: TeamId) -> Result<Team> {
        let teams = self.teams();
        let members = teams.members(team).map_err(|e| self.team_err(e))?;
        let my_pe = usize::try_from(teams.team_my_pe(team)).map_err(|_| {
            self.team_err(niin_teams::TeamError::NotAMember {
                team,
                pe: crate::world::to_i32(self.my_pe()),
            })
        })?;
        Ok(Team {
            world: self.clone(),
            id: team,
            my_pe,
            n_pes: members.size as usize,
        })
    }

    /// This PE's number in `team`; `None` if this PE holds no team under the handle (not a
    /// member, destroyed, [`TeamId::INVALID`]) (`nvshmem_team_my_pe`, whose -1 is `None`).
    pub fn team_my_pe(&self, team: TeamId) -> Option<usize> {
        usize::try_from(self.teams().team_my_pe(team)).ok()
    }

    /// Number of PEs in `team`; `None` for a handle this PE holds no team under
    /// (`nvshmem_team_n_pes`, whose -1 is `None`).
    pub fn team_n_pes(&self, team: TeamId) -> Option<usize> {
        usize::try_from(self.teams().team_n_pes(team)).ok()
    }

    /// The number in `dest` of PE `src_pe` of `src` (`nvshmem_team_translate_pe`, whose -1
    /// is `None`): `None` when either handle names no team on this PE, `src_pe` is not in
    /// `0..n_pes(src)`, or that PE is not a member of `dest`.
    pub fn team_translate_pe(&self, src: TeamId, src_pe: usize, dest: TeamId) -> Option<usize> {
        let src_pe = i32::try_from(src_pe).ok()?;
        usize::try_from(self.teams().translate_pe(src, src_pe, dest)).ok()
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
    ///
    /// Also zeroes this PE's device team-barrier slot of the handle
    /// ([`World::team_sync_offset`]), so that a team made later with the same handle starts
    /// from zero. That is safe without communication: this PE left the team's last barrier
    /// only after every other member's arrival for it had landed here, and a later team of
    /// the handle needs this PE to take part in its split, which comes after this call.
    ///
    /// The handle's LL slot of the device collectives ([`World::coll_ll_offset`]) is zeroed
    /// too, for the same reason: every LL collective has each member wait for what every
    /// other member sent it (a broadcast's root excepted, whose data each other member
    /// waited for), so nothing is still on its way to this PE when it leaves the team.
    pub fn team_destroy(&self, team: TeamId) -> Result<()> {
        let call = CollectiveCall::new(CollectiveKind::TeamDestroy, team, [0; 3]);
        let _busy = self.enter_collective(&call)?;
        self.teams().destroy(team).map_err(|e| self.team_err(e))?;
        self.reset_calls(team);
        self.transport_result(self.inner.transport.team_destroyed(team.0))?;
        let Some(slot) = team.index() else {
            return Ok(());
        };
        if slot < DEVICE_TEAM_SLOTS {
            let at = self.team_sync_offset() + (slot * TEAM_SYNC_SLOT_BYTES) as u64;
            self.transport_result(self.inner.transport.memset_local(
                SymAddr(at),
                0,
                TEAM_SYNC_SLOT_BYTES,
            ))?;
        }
        let ring = self.coll_ll_ring_bytes();
        if slot < COLL_LL_SLOTS && ring > 0 {
            let bytes = COLL_LL_HEADER_BYTES + ring;
            let at = self.coll_ll_offset() + (slot * bytes) as u64;
            self.transport_result(self.inner.transport.memset_local(SymAddr(at), 0, bytes))?;
        }
        Ok(())
    }

    /// Heap offset (the same on every PE) of the device team-barrier words:
    /// [`DEVICE_TEAM_SLOTS`] slots of [`TEAM_SYNC_SLOT_BYTES`] bytes, slot `k` for team
    /// handle `k`. Zero at init (the heap starts zeroed) and again when the team of a handle
    /// is destroyed. Device code's `nvshmem_barrier(team)` / `nvshmem_team_sync(team)` for
    /// teams other than WORLD and the LSA team count arrivals there; `libnvshmem_host` hands
    /// the offset to every CUDA module.
    pub fn team_sync_offset(&self) -> u64 {
        self.inner.sys + SYS_TEAM_SYNC
    }

    /// Heap offset (the same on every PE) of the device collectives' LL slots:
    /// [`COLL_LL_SLOTS`] slots of [`COLL_LL_HEADER_BYTES`] + [`World::coll_ll_ring_bytes`]
    /// bytes, slot `k` for team handle `k`. A small device collective of such a team sends
    /// each member its part as 8-byte words that carry a flag (NCCL's LL protocol) into
    /// the member's ring, and waits once, for what it receives; `device/include/niin/impl/
    /// coll_ll_impl.h` has the protocol. Zero at init and again when the team of a handle is
    /// destroyed. Meaningful only when the ring size is not zero.
    pub fn coll_ll_offset(&self) -> u64 {
        self.inner.sys + SYS_COLL_LL
    }

    /// Bytes of each team's LL ring ([`coll_ll_ring_bytes`](crate::coll_ll_ring_bytes) of the
    /// heap size); 0 when the heap is too small to have rings.
    pub fn coll_ll_ring_bytes(&self) -> usize {
        crate::world::coll_ll_ring_bytes(self.inner.config.heap_size)
    }

    /// Collectively creates the team of `size` PEs of `parent` starting at `start` with
    /// `stride` (`nvshmem_team_split_strided`). Every member of `parent` calls it with the
    /// same arguments; members of the new team get `Some` of its handle, the others `None`
    /// (NVSHMEM's `NVSHMEM_TEAM_INVALID`). Arguments that select no PEs of `parent` are an
    /// error on every member. [`Team::split_strided`] is the same on a [`Team`].
    pub fn team_split_strided(
        &self,
        parent: TeamId,
        start: usize,
        stride: usize,
        size: usize,
        config: Option<TeamConfig>,
    ) -> Result<Option<TeamId>> {
        let args = [start, stride, size].map(|v| v as u64);
        let call = CollectiveCall::new(CollectiveKind::SplitStrided, parent, args);
        let _busy = self.enter_collective(&call)?;
        let sync = self.team_sync(parent)?;
        let agreed = self.agree_free_slots(sync, 1, call)?;
        // After the agreement, so that every member refuses (or accepts) together.
        let [start, stride, size] = self.split_args("team_split_strided", parent, args)?;
        let team = self
            .teams()
            .split_strided(parent, start, stride, size, config, agreed)
            .map_err(|e| self.team_err(e))?;
        self.check_team_capacity("team_split_strided", &[team])?;
        self.announce_split(sync, &[team])?;
        Ok((team != TeamId::INVALID).then_some(team))
    }

    /// `args` as the team model's `i32`s; a value no team's PE number can have is an
    /// error naming it (the model refuses the others that select no PEs).
    fn split_args<const N: usize>(
        &self,
        op: &'static str,
        parent: TeamId,
        args: [u64; N],
    ) -> Result<[i32; N]> {
        let mut out = [0i32; N];
        for (o, &a) in out.iter_mut().zip(&args) {
            *o = i32::try_from(a).map_err(|_| Error::BadArgument {
                pe: self.my_pe(),
                op,
                what: format!(
                    "argument {a} is larger than any PE number or team size (parent team {} \
                     has {} PEs)",
                    parent.0,
                    self.team_n_pes(parent).unwrap_or(0)
                ),
            })?;
        }
        Ok(out)
    }

    /// Refuses new teams whose handles the transport cannot synchronize (the mock's barrier
    /// table, [`niin_transport::mock::MockConfig::max_teams`]), destroying them again here:
    /// every member of the parent agreed on the same handles, so every one refuses.
    fn check_team_capacity(&self, op: &'static str, teams: &[TeamId]) -> Result<()> {
        let over = self.inner.max_teams.and_then(|max| {
            let past = teams.iter().find(|t| t.0 >= 0 && t.0 as usize >= max)?;
            Some((max, *past))
        });
        let Some((max, past)) = over else {
            for &t in teams {
                self.reset_calls(t);
            }
            return Ok(());
        };
        for &made in teams {
            if made != TeamId::INVALID {
                let _ = self.teams().destroy(made);
            }
        }
        Err(Error::BadArgument {
            pe: self.my_pe(),
            op,
            what: format!(
                "the new team would get handle {}, and this world's transport synchronizes \
                 team handles 0..{max} only (the mock's barrier table, MockConfig::max_teams): \
                 at most {max} teams, the predefined ones included, may exist at once; destroy \
                 a team first",
                past.0
            ),
        })
    }

    /// Collectively splits `parent` into rows of `xrange` PEs and the columns across them
    /// (`nvshmem_team_split_2d`); returns this PE's (x-axis, y-axis) teams (every member of
    /// `parent` is in one of each). [`Team::split_2d`] is the same on a [`Team`].
    pub fn team_split_2d(
        &self,
        parent: TeamId,
        xrange: usize,
        xconfig: Option<TeamConfig>,
        yconfig: Option<TeamConfig>,
    ) -> Result<(TeamId, TeamId)> {
        let args = [xrange as u64, 0, 0];
        let call = CollectiveCall::new(CollectiveKind::Split2d, parent, args);
        let _busy = self.enter_collective(&call)?;
        let sync = self.team_sync(parent)?;
        let agreed = self.agree_free_slots(sync, 2, call)?;
        let [xrange] = self.split_args("team_split_2d", parent, [xrange as u64])?;
        let (x, y) = self
            .teams()
            .split_2d(parent, xrange, xconfig, yconfig, agreed)
            .map_err(|e| self.team_err(e))?;
        self.check_team_capacity("team_split_2d", &[x, y])?;
        self.announce_split(sync, &[x, y])?;
        Ok((x, y))
    }

    /// Tells the transport of a split of `parent` that gave this PE `teams` (one per
    /// split: `split_2d` is two, rows then columns; [`TeamId::INVALID`] where it joins
    /// none), in the same order on every member of `parent`
    /// ([`Transport::team_split`]). If the transport fails, the new teams are destroyed
    /// again here and the error returned.
    pub(crate) fn announce_split(&self, parent: TeamSync, teams: &[TeamId]) -> Result<()> {
        for &team in teams {
            let member = (team != TeamId::INVALID)
                .then(|| self.team_sync(team))
                .transpose()?;
            let split = TeamSplit {
                parent,
                team: member,
            };
            if let Err(source) = self.inner.transport.team_split(&split) {
                for &made in teams {
                    if made != TeamId::INVALID {
                        // Best effort: the transport's error is the one to report.
                        let _ = self.teams().destroy(made);
                    }
                }
                return Err(Error::Transport {
                    pe: self.my_pe(),
                    source,
                });
            }
        }
        Ok(())
    }

    /// The set of user-team handles free on every member of `sync`, holding at least
    /// `needed` handles (collective over `sync`'s members). Its first barrier carries
    /// `call` (`crate::check`): on a mismatch every member stops there.
    fn agree_free_slots(
        &self,
        sync: TeamSync,
        needed: usize,
        call: CollectiveCall,
    ) -> Result<SlotSet> {
        let t = &self.inner.transport;
        let slots = SymAddr(self.inner.sys + SYS_SLOTS);
        let bytes = SLOT_WORDS * 8;
        let mut agreed_words: Vec<u64> = Vec::new();
        let mut call = Some(call);
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
            match call.take() {
                Some(mut c) => {
                    let fingerprint = self.publish_call(&mut c)?;
                    self.barrier_carrying(sync, &c, fingerprint)?;
                }
                None => t
                    .barrier(Order::Now, sync)
                    .map_err(|source| Error::Transport { pe: me, source })?,
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WorldConfig, run_in_process};

    /// Reads this PE's two barrier words of `slot`.
    fn slot_words(w: &World, slot: usize) -> [u64; 2] {
        let mut words = [0u64; 2];
        let at = SymAddr(w.team_sync_offset() + (slot * TEAM_SYNC_SLOT_BYTES) as u64);
        // SAFETY: `words` is a live local array of 16 bytes, written only by this call,
        // which completes before it returns (Order::Now).
        unsafe {
            w.inner
                .transport
                .get(Order::Now, w.my_pe(), words.as_mut_ptr().cast(), at, 16)
        }
        .unwrap();
        words
    }

    /// This PE's team events on the mock.
    fn team_events(w: &World) -> Vec<niin_transport::mock::TeamEvent> {
        match &w.inner.transport.implementations()[0] {
            niin_transport::AnyTransport::Mock(m) => m.team_events(),
            other => panic!("not the mock: {other:?}"),
        }
    }

    /// The transport hears of every split, on every member of the parent, in the same
    /// order, with colors and keys that make NCCL's split give each PE its team in team
    /// order (what a GPU world's per-team communicators are made from); and of every
    /// destroy.
    #[test]
    fn splits_and_destroys_reach_the_transport_with_the_teams() {
        use niin_transport::mock::TeamEvent;
        let cfg = WorldConfig {
            mock_node_size: Some(3),
            ..WorldConfig::default()
        };
        let n = 6;
        let per_pe = run_in_process(n, &cfg, |w| {
            let odd = w
                .team_split_strided(TeamId::WORLD, 1, 2, 3, None)?
                .unwrap_or(TeamId::INVALID);
            let (x, y) = w.team_split_2d(TeamId::WORLD, 4, None, None)?;
            // A split of a user team: the odd PEs' first two.
            let sub = if odd == TeamId::INVALID {
                TeamId::INVALID
            } else {
                w.team_split_strided(odd, 0, 1, 2, None)?
                    .unwrap_or(TeamId::INVALID)
            };
            let handles = [odd, x, y, sub];
            for t in handles.into_iter().rev() {
                if t != TeamId::INVALID {
                    w.team_destroy(t)?;
                }
            }
            Ok((handles, team_events(&w)))
        })
        .unwrap();
        // Every PE: the predefined team, the three world splits, the odd PEs one more.
        let splits: Vec<Vec<TeamSplit>> = per_pe
            .iter()
            .map(|(_, events)| {
                events
                    .iter()
                    .filter_map(|e| match e {
                        TeamEvent::Split(s) => Some(*s),
                        TeamEvent::Destroyed(_) => None,
                    })
                    .collect()
            })
            .collect();
        for (pe, s) in splits.iter().enumerate() {
            assert_eq!(s.len(), if pe % 2 == 1 { 5 } else { 4 }, "PE {pe}: {s:?}");
        }
        // Split k of the world (0: SAME_MYPE_NODE, 1: odd, 2: rows, 3: columns) as NCCL
        // makes it: the PEs of one color ordered by key are that color's team.
        for k in 0..4 {
            let kth: Vec<TeamSplit> = splits.iter().map(|s| s[k]).collect();
            for (pe, &mine) in kth.iter().enumerate() {
                assert!(mine.parent.is_world(n), "split {k} on PE {pe}: {mine:?}");
                let Some(color) = mine.color() else {
                    assert_eq!(k, 1, "only the strided split leaves PEs out");
                    assert_eq!(pe % 2, 0);
                    continue;
                };
                let team = mine.team.unwrap();
                let members: Vec<usize> = (0..team.size).map(|i| team.world_pe(i)).collect();
                assert_eq!(
                    TeamSplit::communicator(&kth, color),
                    members,
                    "split {k}, PE {pe}"
                );
            }
        }
        let (handles, _) = &per_pe[1];
        let x = splits[1][2].team.unwrap();
        assert_eq!((x.start, x.stride, x.size), (0, 1, 4), "PE 1's row");
        let y = splits[1][3].team.unwrap();
        assert_eq!((y.start, y.stride, y.size), (1, 4, 2), "PE 1's column");
        assert_eq!(splits[1][2].team.unwrap().team, handles[1].0);
        // The split of the odd team: its parent is the odd team, PEs 1 and 3 join.
        let odd = splits[1][1].team.unwrap();
        assert_eq!((odd.start, odd.stride, odd.size), (1, 2, 3));
        for pe in [1, 3, 5] {
            let s = splits[pe][4];
            assert_eq!(s.parent, odd, "PE {pe}");
            assert_eq!(s.team.is_some(), pe != 5, "PE {pe}");
        }
        // Destroys: every handle this PE had, newest first, after its splits.
        for (pe, (handles, events)) in per_pe.iter().enumerate() {
            let destroyed: Vec<i32> = events
                .iter()
                .filter_map(|e| match e {
                    TeamEvent::Destroyed(t) => Some(*t),
                    TeamEvent::Split(_) => None,
                })
                .collect();
            let expected: Vec<i32> = handles
                .iter()
                .rev()
                .filter(|t| **t != TeamId::INVALID)
                .map(|t| t.0)
                .collect();
            assert_eq!(destroyed, expected, "PE {pe}");
            assert!(matches!(events.last(), Some(TeamEvent::Destroyed(_))));
        }
    }

    #[test]
    fn team_sync_words_lie_in_the_system_area_and_destroy_zeroes_them() {
        let cfg = WorldConfig::default();
        run_in_process(2, &cfg, |w| {
            // The area is inside the system allocation, before any user allocation.
            let user = w.malloc::<u64>(1)?;
            let end = w.team_sync_offset() + (DEVICE_TEAM_SLOTS * TEAM_SYNC_SLOT_BYTES) as u64;
            assert!(
                user.offset() >= end,
                "user block at {} overlaps the area ending at {end}",
                user.offset()
            );
            let team = w.team_split_strided(TeamId::WORLD, 0, 1, 2, None)?.unwrap();
            let slot = team.index().unwrap();
            assert_eq!(
                slot_words(&w, slot),
                [0, 0],
                "a new team's slot starts at zero"
            );
            // What a device barrier would leave: arrivals and this PE's epoch.
            let words = [7u64, 3u64];
            let at = SymAddr(w.team_sync_offset() + (slot * TEAM_SYNC_SLOT_BYTES) as u64);
            // SAFETY: `words` is a live local array of 16 bytes; Order::Now completes the copy.
            unsafe {
                w.inner
                    .transport
                    .put(Order::Now, w.my_pe(), at, words.as_ptr().cast(), 16)
            }
            .unwrap();
            assert_eq!(slot_words(&w, slot), [7, 3]);
            w.team_destroy(team)?;
            assert_eq!(
                slot_words(&w, slot),
                [0, 0],
                "destroy zeroes the slot of handle {slot}"
            );
            w.free(user)?;
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn coll_ll_ring_size_follows_the_heap() {
        use crate::world::{COLL_LL_RING_MAX, coll_ll_ring_bytes};
        assert_eq!(coll_ll_ring_bytes(0), 0);
        assert_eq!(
            coll_ll_ring_bytes(4 << 20),
            0,
            "4 MiB / 2048 = 2 KiB: no rings"
        );
        assert_eq!(coll_ll_ring_bytes(8 << 20), 4096);
        assert_eq!(coll_ll_ring_bytes(16 << 20), 8192);
        assert_eq!(
            coll_ll_ring_bytes((16 << 20) + 4095 * 2048),
            8192,
            "rounded down"
        );
        assert_eq!(coll_ll_ring_bytes(256 << 20), 128 << 10);
        assert_eq!(coll_ll_ring_bytes(1 << 30), 512 << 10);
        assert_eq!(coll_ll_ring_bytes(2 << 30), COLL_LL_RING_MAX);
        assert_eq!(coll_ll_ring_bytes(64 << 30), COLL_LL_RING_MAX, "capped");
        for heap in [8u64 << 20, 16 << 20, 256 << 20, 1 << 30, 64 << 30] {
            let all = (COLL_LL_SLOTS * (COLL_LL_HEADER_BYTES + coll_ll_ring_bytes(heap))) as u64;
            let headers = (COLL_LL_SLOTS * COLL_LL_HEADER_BYTES) as u64;
            assert!(
                all <= heap / 128 + headers,
                "{all} bytes of LL slots for a {heap}-byte heap"
            );
        }
    }

    /// Reads `bytes` of this PE's heap at `at`.
    fn local_bytes(w: &World, at: u64, bytes: usize) -> Vec<u8> {
        let mut v = vec![0u8; bytes];
        // SAFETY: `v` is a live local buffer of `bytes` bytes, written only by this call,
        // which completes before it returns (Order::Now).
        unsafe {
            w.inner.transport.get(
                Order::Now,
                w.my_pe(),
                v.as_mut_ptr().cast(),
                SymAddr(at),
                bytes,
            )
        }
        .unwrap();
        v
    }

    #[test]
    fn coll_ll_slots_lie_in_the_system_area_and_destroy_zeroes_them() {
        let cfg = WorldConfig::default();
        run_in_process(2, &cfg, |w| {
            let ring = w.coll_ll_ring_bytes();
            assert_eq!(ring, 8192, "a 16 MiB heap has 8 KiB rings");
            let slot_bytes = COLL_LL_HEADER_BYTES + ring;
            let start = w.coll_ll_offset();
            assert_eq!(start % 4096, 0, "the slots start 4 KiB aligned");
            let barrier_end =
                w.team_sync_offset() + (DEVICE_TEAM_SLOTS * TEAM_SYNC_SLOT_BYTES) as u64;
            assert!(start >= barrier_end, "LL slots overlap the barrier words");
            let end = start + (COLL_LL_SLOTS * slot_bytes) as u64;
            let user = w.malloc::<u64>(1)?;
            assert!(
                user.offset() >= end,
                "user block at {} overlaps the LL slots ending at {end}",
                user.offset()
            );
            let team = w.team_split_strided(TeamId::WORLD, 0, 1, 2, None)?.unwrap();
            let slot = team.index().unwrap();
            assert!(slot < COLL_LL_SLOTS, "the first user team has an LL slot");
            let at = start + (slot * slot_bytes) as u64;
            assert!(local_bytes(&w, at, slot_bytes).iter().all(|&b| b == 0));
            // What device collectives leave: a header and lines in the ring.
            let junk: Vec<u8> = (0..slot_bytes).map(|i| (i % 251 + 1) as u8).collect();
            // SAFETY: `junk` is a live local buffer of slot_bytes; Order::Now completes it.
            unsafe {
                w.inner.transport.put(
                    Order::Now,
                    w.my_pe(),
                    SymAddr(at),
                    junk.as_ptr().cast(),
                    slot_bytes,
                )
            }
            .unwrap();
            let next = local_bytes(&w, at + slot_bytes as u64, 16);
            w.team_destroy(team)?;
            assert!(
                local_bytes(&w, at, slot_bytes).iter().all(|&b| b == 0),
                "destroy zeroes the LL slot of handle {slot}"
            );
            assert_eq!(
                local_bytes(&w, at + slot_bytes as u64, 16),
                next,
                "and nothing past it"
            );
            w.free(user)?;
            Ok(())
        })
        .unwrap();
    }
}
