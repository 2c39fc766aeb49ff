//! Collective calls as the PEs compare them: mismatch detection and the
//! one-collective-at-a-time guard.
//!
//! **Mismatches.** Every blocking collective call (`malloc`, `calloc`, `align`, `free`,
//! `barrier`, `sync`, team splits, the team collectives) is described by a
//! [`CollectiveCall`]: its kind, its team, its arguments and its number among this PE's
//! calls on that team. Before the call's first synchronization each PE writes its
//! description (32 bytes) into its slot of the world's system area; after it, each reads
//! the other members' slots and compares: no extra synchronization, one small write and one
//! small read per member. A difference is [`Error::CollectiveMismatch`] on every PE that
//! sees it, naming both sides. The slots of a team alternate by call parity: a member can
//! only write its slot of call `k + 2` after the synchronization of call `k + 1`, which
//! needs every member to have finished reading call `k`'s.
//!
//! Heap calls, barriers and splits compare at their first synchronization and, on a
//! mismatch, stop there on every PE (an allocation is undone), so the PEs stay in step and
//! the world stays usable. The team collectives synchronize inside the transport, so they
//! compare after it; a mismatch in which a team collective takes part on either side leaves
//! the PEs' synchronizations out of step, and every later collective call on this PE then
//! fails with [`Error::OutOfStep`], which names the mismatch (finalize still runs).
//!
//! Not compared: stream-ordered collectives (their synchronization happens on the stream,
//! after the call returns), `team_destroy` (it does not synchronize) and teams whose handle
//! is [`CHECKED_TEAMS`] or above. [`WorldConfig::check_collectives`] turns the comparison
//! off; `NIIN_CHECK_COLLECTIVES=0` does from the environment.
//!
//! **Threads.** A PE's collectives must be entered by one thread at a time (NVSHMEM's
//! `NVSHMEM_THREAD_SERIALIZED` at most for collectives): two threads in `barrier_all` at
//! once would each count as an arrival. A collective entered while another thread of the
//! same PE is inside one fails at once with [`Error::ConcurrentCollective`] naming both
//! (whether or not the comparison is on).
//!
//! [`WorldConfig::check_collectives`]: crate::WorldConfig::check_collectives

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use niin_teams::TeamId;
use niin_transport::{CollKind, Collective, Elem, Order, ReduceOp, SymAddr, TeamSync, Transport};

use crate::error::{Error, Result};
use crate::world::{DEVICE_TEAM_SLOTS, SYS_CALLS, World};

/// Teams whose collectives are compared: handles `0..CHECKED_TEAMS` (each has two slots of
/// 32 bytes in the system area). Larger handles work, unchecked.
pub const CHECKED_TEAMS: usize = DEVICE_TEAM_SLOTS;

/// Bytes of one published call description.
pub(crate) const CALL_SLOT_BYTES: usize = 32;

/// Bytes of the system area that holds the call descriptions.
pub(crate) const CALL_AREA_BYTES: u64 = (CHECKED_TEAMS * 2 * CALL_SLOT_BYTES) as u64;

/// What kind of collective call a [`CollectiveCall`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveKind {
    /// `nvshmem_malloc(bytes)`.
    Malloc,
    /// `nvshmem_calloc(count, size)`.
    Calloc,
    /// `nvshmem_align(alignment, bytes)`.
    Align,
    /// `nvshmem_free(ptr)`.
    Free,
    /// `nvshmem_barrier(team)` / `nvshmem_barrier_all` and the syncs.
    Barrier,
    /// `nvshmem_team_split_strided(parent, start, stride, size)`.
    SplitStrided,
    /// `nvshmem_team_split_2d(parent, xrange)`.
    Split2d,
    /// `nvshmem_team_destroy(team)` (guarded, not compared: it does not synchronize).
    TeamDestroy,
    /// A team collective (`reduce`, `reducescatter`, `broadcast`, `fcollect`, `alltoall`),
    /// compared after it ran.
    Collective(CollKind, Elem),
    /// [`World::check_symmetry`].
    CheckSymmetry,
    /// `nvshmem_finalize` (guarded, not compared).
    Finalize,
    /// `nvshmemx_buffer_register_symmetric` / `unregister` (guarded, not compared).
    Register,
}

impl CollectiveKind {
    /// Whether the PEs of a mismatch involving this kind stay in step (the call compares at
    /// its first synchronization and stops there).
    fn stops_at_first_sync(self) -> bool {
        !matches!(self, CollectiveKind::Collective(..))
    }

    /// One byte for [`CollectiveKind`] and 24 bits of detail (operator, type, root).
    fn code(self) -> (u8, u32) {
        match self {
            CollectiveKind::Malloc => (1, 0),
            CollectiveKind::Calloc => (2, 0),
            CollectiveKind::Align => (3, 0),
            CollectiveKind::Free => (4, 0),
            CollectiveKind::Barrier => (5, 0),
            CollectiveKind::SplitStrided => (6, 0),
            CollectiveKind::Split2d => (7, 0),
            CollectiveKind::TeamDestroy => (8, 0),
            CollectiveKind::CheckSymmetry => (9, 0),
            CollectiveKind::Finalize => (10, 0),
            CollectiveKind::Register => (11, 0),
            CollectiveKind::Collective(kind, elem) => {
                let e = elem_code(elem);
                match kind {
                    CollKind::Reduce(op) => (20, e | (op_code(op) << 4)),
                    CollKind::ReduceScatter(op) => (21, e | (op_code(op) << 4)),
                    CollKind::Broadcast { root } => (22, e | ((root.min(0xf_ffff) as u32) << 4)),
                    CollKind::Fcollect => (23, e),
                    CollKind::Alltoall => (24, e),
                }
            }
        }
    }

    /// The kind of a [`CollectiveKind::code`], if it is one.
    fn from_code(kind: u8, detail: u32) -> Option<CollectiveKind> {
        let elem = || Elem::ALL.get((detail & 0xf) as usize).copied();
        let op = || ReduceOp::ALL.get(((detail >> 4) & 0xf) as usize).copied();
        Some(match kind {
            1 => CollectiveKind::Malloc,
            2 => CollectiveKind::Calloc,
            3 => CollectiveKind::Align,
            4 => CollectiveKind::Free,
            5 => CollectiveKind::Barrier,
            6 => CollectiveKind::SplitStrided,
            7 => CollectiveKind::Split2d,
            8 => CollectiveKind::TeamDestroy,
            9 => CollectiveKind::CheckSymmetry,
            10 => CollectiveKind::Finalize,
            11 => CollectiveKind::Register,
            20 => CollectiveKind::Collective(CollKind::Reduce(op()?), elem()?),
            21 => CollectiveKind::Collective(CollKind::ReduceScatter(op()?), elem()?),
            22 => CollectiveKind::Collective(
                CollKind::Broadcast {
                    root: (detail >> 4) as usize,
                },
                elem()?,
            ),
            23 => CollectiveKind::Collective(CollKind::Fcollect, elem()?),
            24 => CollectiveKind::Collective(CollKind::Alltoall, elem()?),
            _ => return None,
        })
    }
}

fn elem_code(elem: Elem) -> u32 {
    Elem::ALL.iter().position(|e| *e == elem).unwrap_or(0) as u32
}

fn op_code(op: ReduceOp) -> u32 {
    ReduceOp::ALL.iter().position(|o| *o == op).unwrap_or(0) as u32
}

/// One collective call of one PE, as the PEs compare it: what, over which team, with which
/// arguments, and which of this PE's calls on the team it is (`seq`, from 1; 0 in a call
/// not yet numbered). `Display` prints it in NVSHMEM's words:
/// `nvshmem_malloc(256) [call #7]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CollectiveCall {
    /// The kind of call.
    pub kind: CollectiveKind,
    /// The team it synchronizes (the parent of a split; the world for heap calls).
    pub team: i32,
    /// This PE's number for the call among its compared calls on `team`, from 1.
    pub seq: u32,
    /// The arguments (meaning by kind; unused ones 0).
    pub args: [u64; 3],
}

impl CollectiveCall {
    /// A call of `kind` on `team` with `args`, not yet numbered.
    pub(crate) fn new(kind: CollectiveKind, team: TeamId, args: [u64; 3]) -> Self {
        CollectiveCall {
            kind,
            team: team.0,
            seq: 0,
            args,
        }
    }

    /// The call of a team collective `c`.
    pub(crate) fn collective(team: TeamId, c: &Collective) -> Self {
        CollectiveCall::new(
            CollectiveKind::Collective(c.kind, c.elem),
            team,
            [c.nelems as u64, c.dst.0, c.src.0],
        )
    }

    /// The four words of its slot.
    fn encode(&self) -> [u64; 4] {
        let (kind, detail) = self.kind.code();
        let w0 =
            u64::from(kind) | (u64::from(detail & 0xff_ffff) << 8) | (u64::from(self.seq) << 32);
        [w0, self.args[0], self.args[1], self.args[2]]
    }

    /// The call in a slot of team `team`; `None` for a slot never written.
    fn decode(team: i32, words: [u64; 4]) -> Option<Self> {
        let kind = CollectiveKind::from_code(words[0] as u8, ((words[0] >> 8) & 0xff_ffff) as u32)?;
        Some(CollectiveCall {
            kind,
            team,
            seq: (words[0] >> 32) as u32,
            args: [words[1], words[2], words[3]],
        })
    }

    /// The call without its number: `nvshmem_malloc(256)`.
    pub fn signature(&self) -> String {
        let [a, b, c] = self.args;
        let team = if self.team == TeamId::WORLD.0 {
            String::new()
        } else {
            format!("team {}, ", self.team)
        };
        let i = |v: u64| v as i64;
        match self.kind {
            CollectiveKind::Malloc => format!("nvshmem_malloc({a})"),
            CollectiveKind::Calloc => format!("nvshmem_calloc({a}, {b})"),
            CollectiveKind::Align => format!("nvshmem_align({a}, {b})"),
            CollectiveKind::Free if a == 0 => "nvshmem_free(NULL)".to_string(),
            CollectiveKind::Free => format!("nvshmem_free(heap offset {a:#x})"),
            CollectiveKind::Barrier if self.team == TeamId::WORLD.0 => {
                "nvshmem_barrier_all()".to_string()
            }
            CollectiveKind::Barrier => format!("nvshmem_barrier(team {})", self.team),
            CollectiveKind::SplitStrided => format!(
                "nvshmem_team_split_strided(parent {}, start {}, stride {}, size {})",
                self.team,
                i(a),
                i(b),
                i(c)
            ),
            CollectiveKind::Split2d => format!(
                "nvshmem_team_split_2d(parent {}, xrange {})",
                self.team,
                i(a)
            ),
            CollectiveKind::TeamDestroy => format!("nvshmem_team_destroy(team {})", self.team),
            CollectiveKind::CheckSymmetry => "check_symmetry()".to_string(),
            CollectiveKind::Finalize => "nvshmem_finalize()".to_string(),
            CollectiveKind::Register => "nvshmemx_buffer_register_symmetric()".to_string(),
            CollectiveKind::Collective(kind, elem) => {
                let what = match kind {
                    CollKind::Reduce(op) => format!("{:?}_{}_reduce", elem, op.name()),
                    CollKind::ReduceScatter(op) => {
                        format!("{:?}_{}_reducescatter", elem, op.name())
                    }
                    CollKind::Broadcast { root } => format!("broadcastmem(root {root}"),
                    CollKind::Fcollect => "fcollectmem(".to_string(),
                    CollKind::Alltoall => "alltoallmem(".to_string(),
                };
                let (name, count) = match kind {
                    CollKind::Reduce(_) | CollKind::ReduceScatter(_) => (
                        format!("nvshmem_{}(", what.to_lowercase()),
                        format!("{a} elements"),
                    ),
                    CollKind::Broadcast { .. } => {
                        (format!("nvshmem_{what}, "), format!("{a} bytes"))
                    }
                    _ => (format!("nvshmem_{what}"), format!("{a} bytes")),
                };
                format!("{name}{team}{count}, dest {b:#x}, source {c:#x})")
            }
        }
    }
}

impl fmt::Display for CollectiveCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [call #{}", self.signature(), self.seq)?;
        if self.team != TeamId::WORLD.0 {
            write!(f, " on team {}", self.team)?;
        }
        write!(f, "]")
    }
}

/// What a PE's collective calls need between calls: each checked team's call count, and
/// whether a mismatch left the PEs out of step.
/// Atomics, not a lock: they are on the path of every barrier.
#[derive(Debug)]
pub(crate) struct CallLog {
    /// Calls compared so far on each team handle below [`CHECKED_TEAMS`] (only the thread
    /// inside a collective changes them).
    seq: Vec<AtomicU32>,
    /// Whether a mismatch left the PEs out of step.
    out_of_step: AtomicBool,
    /// That mismatch.
    cause: Mutex<String>,
}

impl CallLog {
    pub(crate) fn new() -> Self {
        CallLog {
            seq: (0..CHECKED_TEAMS).map(|_| AtomicU32::new(0)).collect(),
            out_of_step: AtomicBool::new(false),
            cause: Mutex::new(String::new()),
        }
    }

    /// The mismatch that left the PEs out of step, if one did.
    fn out_of_step(&self) -> Option<String> {
        if !self.out_of_step.load(Ordering::Acquire) {
            return None;
        }
        Some(self.cause.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// Held while this PE is inside a collective call; clears the PE's busy word when dropped.
pub(crate) struct InCollective<'a> {
    busy: &'a AtomicU64,
}

impl Drop for InCollective<'_> {
    fn drop(&mut self) {
        self.busy.store(0, Ordering::Release);
    }
}

/// The busy word of a call: its kind code and team (never 0).
fn busy_word(call: &CollectiveCall) -> u64 {
    let (kind, detail) = call.kind.code();
    u64::from(kind) | (u64::from(detail & 0xff_ffff) << 8) | (u64::from(call.team as u32) << 32)
}

fn from_busy_word(word: u64) -> String {
    let team = (word >> 32) as u32 as i32;
    match CollectiveKind::from_code(word as u8, ((word >> 8) & 0xff_ffff) as u32) {
        Some(kind) => {
            let call = CollectiveCall {
                kind,
                team,
                seq: 0,
                args: [0; 3],
            };
            // The arguments are not kept: name the operation and its team.
            let sig = call.signature();
            match sig.find('(') {
                Some(p) if team == TeamId::WORLD.0 => sig[..p].to_string(),
                Some(p) => format!("{} on team {team}", &sig[..p]),
                None => sig,
            }
        }
        None => format!("a collective call (code {word:#x})"),
    }
}

impl World {
    /// Marks this PE as inside the collective `call` until the returned guard drops; fails
    /// if another thread of this PE is inside one, or (for calls other than finalize) if an
    /// earlier mismatch left the PEs out of step.
    pub(crate) fn enter_collective(&self, call: &CollectiveCall) -> Result<InCollective<'_>> {
        self.check_live()?;
        let busy = &self.inner.busy;
        if let Err(running) =
            busy.compare_exchange(0, busy_word(call), Ordering::Acquire, Ordering::Acquire)
        {
            return Err(Error::ConcurrentCollective {
                pe: self.my_pe(),
                entering: call.signature(),
                running: from_busy_word(running),
            });
        }
        let guard = InCollective { busy };
        if call.kind != CollectiveKind::Finalize
            && let Some(cause) = self.inner.calls.out_of_step()
        {
            return Err(Error::OutOfStep {
                pe: self.my_pe(),
                cause,
            });
        }
        Ok(guard)
    }

    /// Whether calls on `team` are compared.
    fn compares(&self, team: i32) -> bool {
        self.inner.check_calls && (team as u32 as usize) < CHECKED_TEAMS
    }

    /// Numbers `call` and writes it into this PE's slot for it; returns the numbered call,
    /// or `None` when calls on its team are not compared.
    pub(crate) fn publish_call(&self, call: CollectiveCall) -> Result<Option<CollectiveCall>> {
        if !self.compares(call.team) {
            return Ok(None);
        }
        let mut call = call;
        let seq = &self.inner.calls.seq[call.team as usize];
        call.seq = seq.load(Ordering::Relaxed).wrapping_add(1).max(1);
        seq.store(call.seq, Ordering::Relaxed);
        let words = call.encode();
        let me = self.my_pe();
        // SAFETY: `words` is a live local array of 32 bytes; Order::Now completes the copy
        // before the call returns.
        self.transport_result(unsafe {
            self.inner.transport.put(
                Order::Now,
                me,
                slot_addr(self.inner.sys, &call),
                words.as_ptr().cast(),
                CALL_SLOT_BYTES,
            )
        })?;
        Ok(Some(call))
    }

    /// After a synchronization of `sync` that followed [`World::publish_call`] on every
    /// member: compares `mine` with every other member's call. A difference is
    /// [`Error::CollectiveMismatch`] (and, if a team collective takes part, leaves this PE
    /// out of step).
    pub(crate) fn compare_calls(&self, sync: &TeamSync, mine: &CollectiveCall) -> Result<()> {
        match self.first_difference(sync, mine)? {
            None => Ok(()),
            Some((pe, words)) => {
                Err(self.mismatch(mine, pe, CollectiveCall::decode(mine.team, words)))
            }
        }
    }

    /// [`World::compare_calls`] after a team collective that returned `ran`. If it failed
    /// (a timeout, say), a member that has not published this call is not a mismatch
    /// (it did not get here): the collective's own error is the one to report.
    pub(crate) fn compare_after(
        &self,
        sync: &TeamSync,
        mine: &CollectiveCall,
        ran: Result<()>,
    ) -> Result<()> {
        let difference = match self.first_difference(sync, mine) {
            Ok(d) => d,
            Err(e) => return ran.and(Err(e)),
        };
        match difference {
            None => ran,
            Some((pe, words)) => {
                let theirs = CollectiveCall::decode(mine.team, words);
                if ran.is_err() && theirs.is_none_or(|t| t.seq != mine.seq) {
                    return ran;
                }
                Err(self.mismatch(mine, pe, theirs))
            }
        }
    }

    /// The first other member of `sync` whose published call is not `mine`, with its slot.
    fn first_difference(
        &self,
        sync: &TeamSync,
        mine: &CollectiveCall,
    ) -> Result<Option<(usize, [u64; 4])>> {
        let expected = mine.encode();
        let at = slot_addr(self.inner.sys, mine);
        let me = self.my_pe();
        for i in 0..sync.size {
            let pe = sync.world_pe(i);
            if pe == me {
                continue;
            }
            let mut theirs = [0u64; 4];
            // SAFETY: `theirs` is a live local array of 32 bytes, written only by this
            // call, which completes before it returns (Order::Now).
            self.transport_result(unsafe {
                self.inner.transport.get(
                    Order::Now,
                    pe,
                    theirs.as_mut_ptr().cast(),
                    at,
                    CALL_SLOT_BYTES,
                )
            })?;
            if theirs != expected {
                return Ok(Some((pe, theirs)));
            }
        }
        Ok(None)
    }

    /// The error for a mismatch with `other`'s call `theirs` (`None`: it never published
    /// one on this team); records the PEs as out of step where they are.
    fn mismatch(
        &self,
        mine: &CollectiveCall,
        other: usize,
        theirs: Option<CollectiveCall>,
    ) -> Error {
        let in_step =
            mine.kind.stops_at_first_sync() && theirs.is_none_or(|t| t.kind.stops_at_first_sync());
        let theirs_text = match theirs {
            Some(t) => t.to_string(),
            None => format!("no compared collective on team {} yet", mine.team),
        };
        let error = Error::CollectiveMismatch {
            pe: self.my_pe(),
            mine: mine.to_string(),
            other,
            theirs: theirs_text,
            in_step,
        };
        if !in_step {
            let log = &self.inner.calls;
            let mut cause = log.cause.lock().unwrap_or_else(|e| e.into_inner());
            if !log.out_of_step.load(Ordering::Acquire) {
                *cause = error.to_string();
                log.out_of_step.store(true, Ordering::Release);
            }
        }
        error
    }

    /// A barrier of `sync` that carries `call` ([`World::publish_call`], the barrier,
    /// [`World::compare_calls`]); a plain barrier when calls on its team are not compared.
    pub(crate) fn checked_barrier(&self, sync: TeamSync, call: CollectiveCall) -> Result<()> {
        let published = self.publish_call(call)?;
        self.transport_result(self.inner.transport.barrier(Order::Now, sync))?;
        match published {
            Some(mine) => self.compare_calls(&sync, &mine),
            None => Ok(()),
        }
    }

    /// Forgets the calls counted on `team`'s handle (a new team of the handle starts at
    /// call 1 on every member).
    pub(crate) fn reset_calls(&self, team: TeamId) {
        if let Some(slot) = self.inner.calls.seq.get(team.0 as u32 as usize) {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

/// Heap offset of the slot of `call` (its team, its parity).
fn slot_addr(sys: u64, call: &CollectiveCall) -> SymAddr {
    let index = call.team as usize * 2 + (call.seq % 2) as usize;
    SymAddr(sys + SYS_CALLS + (index * CALL_SLOT_BYTES) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_slot() {
        let mut kinds = vec![
            CollectiveKind::Malloc,
            CollectiveKind::Calloc,
            CollectiveKind::Align,
            CollectiveKind::Free,
            CollectiveKind::Barrier,
            CollectiveKind::SplitStrided,
            CollectiveKind::Split2d,
            CollectiveKind::TeamDestroy,
            CollectiveKind::CheckSymmetry,
            CollectiveKind::Finalize,
            CollectiveKind::Register,
        ];
        for elem in Elem::ALL {
            for op in ReduceOp::ALL {
                kinds.push(CollectiveKind::Collective(CollKind::Reduce(op), elem));
                kinds.push(CollectiveKind::Collective(
                    CollKind::ReduceScatter(op),
                    elem,
                ));
            }
            kinds.push(CollectiveKind::Collective(
                CollKind::Broadcast { root: 5 },
                elem,
            ));
            kinds.push(CollectiveKind::Collective(CollKind::Fcollect, elem));
            kinds.push(CollectiveKind::Collective(CollKind::Alltoall, elem));
        }
        for kind in kinds {
            let call = CollectiveCall {
                kind,
                team: 3,
                seq: 7,
                args: [1, 2, 3],
            };
            assert_eq!(
                CollectiveCall::decode(3, call.encode()),
                Some(call),
                "{kind:?}"
            );
        }
        assert_eq!(CollectiveCall::decode(0, [0; 4]), None, "an unwritten slot");
    }

    #[test]
    fn calls_print_in_nvshmem_words() {
        let malloc = CollectiveCall {
            kind: CollectiveKind::Malloc,
            team: 0,
            seq: 7,
            args: [256, 0, 0],
        };
        assert_eq!(malloc.to_string(), "nvshmem_malloc(256) [call #7]");
        let barrier = CollectiveCall {
            kind: CollectiveKind::Barrier,
            team: 4,
            seq: 2,
            args: [0; 3],
        };
        assert_eq!(
            barrier.to_string(),
            "nvshmem_barrier(team 4) [call #2 on team 4]"
        );
        let reduce = CollectiveCall {
            kind: CollectiveKind::Collective(CollKind::Reduce(ReduceOp::Sum), Elem::I32),
            team: 0,
            seq: 1,
            args: [16, 0x1000, 0x2000],
        };
        assert_eq!(
            reduce.to_string(),
            "nvshmem_i32_sum_reduce(16 elements, dest 0x1000, source 0x2000) [call #1]"
        );
        let split = CollectiveCall {
            kind: CollectiveKind::SplitStrided,
            team: 0,
            seq: 3,
            args: [1, 2, (-1i64) as u64],
        };
        assert_eq!(
            split.signature(),
            "nvshmem_team_split_strided(parent 0, start 1, stride 2, size -1)"
        );
        assert_eq!(
            from_busy_word(busy_word(&split)),
            "nvshmem_team_split_strided"
        );
        assert_eq!(
            from_busy_word(busy_word(&barrier)),
            "nvshmem_barrier on team 4"
        );
    }
}
