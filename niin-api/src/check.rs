//! Collective calls as the PEs compare them: mismatch detection and the
//! one-collective-at-a-time guard.
//!
//! **Mismatches.** Every blocking collective call (`malloc`, `calloc`, `align`, `free`,
//! `barrier`, `sync`, team splits, the team collectives) is described by a
//! [`CollectiveCall`]: its kind, its team, its arguments and its number among this PE's
//! calls on that team. Before the call's first synchronization each PE writes its
//! description (32 bytes) into its own slot of the world's system area (a local write).
//! Where that synchronization is a barrier (heap calls, barriers, splits), the barrier
//! also carries a 64-bit fingerprint of the description: the mock compares the members'
//! fingerprints in the barrier's own arrival words and tells every member whether they
//! differ ([`Transport::barrier_with_fingerprint`]), so a matching call reads nothing of
//! the other members'. Only when they differ, or where the transport does not compare
//! fingerprints (NCCL) and after the team collectives, does each PE read the other
//! members' slots and compare descriptions. No extra synchronization either way. A
//! difference is [`Error::CollectiveMismatch`] on every PE that sees it, naming both
//! sides. The slots of a team alternate by call parity: a member can only write its slot
//! of call `k + 2` after the synchronization of call `k + 1`, which needs every member to
//! have finished reading call `k`'s.
//!
//! Heap calls, barriers and splits compare at their first synchronization and, on a
//! mismatch, stop there on every PE (an allocation is undone), so the PEs stay in step and
//! the world stays usable. The team collectives synchronize inside the transport, so they
//! compare after it; a mismatch in which a team collective takes part on either side leaves
//! the PEs' synchronizations out of step, and every later collective call on this PE then
//! fails with [`Error::OutOfStep`], which names the mismatch (finalize still runs).
//!
//! On NCCL the default compares less: only heap calls and barriers of all PEs, whose
//! central barrier compares fingerprints in its own arrival kernel
//! (`niin_barrier_arrive`); a PE writes its description only when they differ, then a
//! plain barrier lets every member read the others'. A match costs one 4-byte copy of the
//! verdict. `NIIN_CHECK_COLLECTIVES=1` compares every call as on the mock.
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
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use niin_teams::TeamId;
use niin_transport::{
    CollKind, Collective, Elem, Fingerprints, Order, ReduceOp, SymAddr, TeamSync, Transport,
};

use crate::config::CollectiveChecks;
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

    /// Its fingerprint ([`fingerprint_of`]).
    #[cfg(test)]
    pub(crate) fn fingerprint(&self) -> u64 {
        fingerprint_of(self.team, self.encode())
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
                self.team, a, b, c
            ),
            CollectiveKind::Split2d => {
                format!("nvshmem_team_split_2d(parent {}, xrange {})", self.team, a)
            }
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

/// The fingerprint of the call of team `team` whose slot holds the four words: a 64-bit
/// hash, never 0, that a barrier carries so that the members compare their calls without
/// reading each other's slots. The same on every PE and process for the same call.
///
/// One multiply per word (independent, odd constants: distinct calls give distinct
/// sums unless their differences are huge), then one non-linear mix, so that a sum of
/// several members' fingerprints (how the mock compares them) has no structure: three
/// mallocs of 256, 512 and 0 bytes do not sum like three of 256.
fn fingerprint_of(team: i32, [w0, a, b, c]: [u64; 4]) -> u64 {
    let linear = w0
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(a.wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
        .wrapping_add(b.wrapping_mul(0x1656_67b1_9e37_79f9))
        .wrapping_add(c.wrapping_mul(0x85eb_ca77_c2b2_ae63))
        .wrapping_add(u64::from(team as u32).wrapping_mul(0x27d4_eb2f_1656_67c5));
    mix(linear).max(1)
}

/// The splitmix64 finalizer: every input bit moves about half the output bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a PE's collective calls need between calls: each checked team's call count, and
/// whether a mismatch left the PEs out of step.
/// Atomics, not a lock: they are on the path of every barrier.
#[derive(Debug)]
pub(crate) struct CallLog {
    /// Calls compared so far on each team handle below [`CHECKED_TEAMS`] (only the thread
    /// inside a collective changes them).
    seq: Vec<AtomicU32>,
    /// Where this PE stores its call descriptions itself (its slots in the system area,
    /// in a mock world's host mapping); null: through the transport's `put`.
    local_slots: AtomicPtr<u8>,
    /// Whether a mismatch left the PEs out of step.
    out_of_step: AtomicBool,
    /// That mismatch.
    cause: Mutex<String>,
}

impl CallLog {
    /// A log whose descriptions go to `local_slots` (see the field; null: through `put`).
    pub(crate) fn new(local_slots: *mut u8) -> Self {
        CallLog {
            seq: (0..CHECKED_TEAMS).map(|_| AtomicU32::new(0)).collect(),
            local_slots: AtomicPtr::new(local_slots),
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

    /// Whether every call on `team` is compared ([`CollectiveChecks::All`]).
    fn compares(&self, team: i32) -> bool {
        self.inner.check_mode == CollectiveChecks::All && (team as u32 as usize) < CHECKED_TEAMS
    }

    /// Numbers `call` (in place: the next call on its team) and returns its fingerprint
    /// ([`fingerprint_of`]).
    fn number_call(&self, call: &mut CollectiveCall) -> u64 {
        let seq = &self.inner.calls.seq[call.team as usize];
        call.seq = seq.load(Ordering::Relaxed).wrapping_add(1).max(1);
        seq.store(call.seq, Ordering::Relaxed);
        fingerprint_of(call.team, call.encode())
    }

    /// Numbers `call` (in place) and writes it into this PE's slot for it; returns its
    /// fingerprint ([`fingerprint_of`]), or `None` when calls on its team are not compared.
    /// (By reference and a word back: this is on the path of every barrier.)
    pub(crate) fn publish_call(&self, call: &mut CollectiveCall) -> Result<Option<u64>> {
        if !self.compares(call.team) {
            return Ok(None);
        }
        let fingerprint = self.number_call(call);
        self.write_call(call)?;
        Ok(Some(fingerprint))
    }

    /// Writes numbered `call` into this PE's slot for it.
    fn write_call(&self, call: &CollectiveCall) -> Result<()> {
        let words = call.encode();
        let local = self.inner.calls.local_slots.load(Ordering::Relaxed);
        if !local.is_null() {
            // SAFETY: `local` is this PE's call area in the mock's mapping
            // (`World::assemble_with`), which the transport keeps mapped while this
            // world lives, and the slot of a compared call lies inside the area.
            let slot = unsafe { local.add(slot_index(call) * CALL_SLOT_BYTES) };
            // SAFETY: `slot` is 32 writable bytes (above) that only this PE writes, while
            // no member reads them (the parity rule of the module docs); `words` is local.
            unsafe {
                std::ptr::copy_nonoverlapping(words.as_ptr().cast::<u8>(), slot, CALL_SLOT_BYTES)
            };
            return Ok(());
        }
        let me = self.my_pe();
        // SAFETY: `words` is a live local array of 32 bytes; Order::Now completes the copy
        // before the call returns.
        self.transport_result(unsafe {
            self.inner.transport.put(
                Order::Now,
                me,
                slot_addr(self.inner.sys, call),
                words.as_ptr().cast(),
                CALL_SLOT_BYTES,
            )
        })
    }

    /// After a synchronization of `sync` that followed [`World::publish_call`] on every
    /// member: compares `mine` with every other member's call. A difference is
    /// [`Error::CollectiveMismatch`] (and, if a team collective takes part, leaves this PE
    /// out of step).
    pub(crate) fn compare_calls(&self, sync: &TeamSync, mine: &CollectiveCall) -> Result<()> {
        match self.first_difference(sync, mine, Lockstep::Synchronized)? {
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
        let difference = match self.first_difference(sync, mine, Lockstep::Loose) {
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

    /// The first other member of `sync` whose published call is not `mine`, with its slot,
    /// leaving out the members that `lockstep` says are not at this call (see [`Lockstep`]).
    fn first_difference(
        &self,
        sync: &TeamSync,
        mine: &CollectiveCall,
        lockstep: Lockstep,
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
            if theirs != expected
                && !lockstep.elsewhere(mine, CollectiveCall::decode(mine.team, theirs))
            {
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
                // Quoted inside this PE's OutOfStep message: without its own `PE n: `.
                *cause = crate::error::without_pe(self.my_pe(), &error.to_string()).to_owned();
                log.out_of_step.store(true, Ordering::Release);
            }
        }
        error
    }

    /// A barrier of `sync` that carries `call` ([`World::publish_call`], then
    /// [`World::barrier_carrying`]); a plain barrier when calls on its team are not
    /// compared.
    pub(crate) fn checked_barrier(&self, sync: TeamSync, mut call: CollectiveCall) -> Result<()> {
        if self.inner.check_mode == CollectiveChecks::Barriers {
            return self.barrier_comparing_in_place(sync, call);
        }
        let fingerprint = self.publish_call(&mut call)?;
        self.barrier_carrying(sync, &call, fingerprint)
    }

    /// [`CollectiveChecks::Barriers`]: `call` is compared only where the transport compares
    /// fingerprints in the barrier itself, and its description is written only when they
    /// differ: then every member (all got the same verdict) writes its own, a plain
    /// barrier makes them visible, and each compares. A match costs the fingerprint's
    /// ride in the barrier and nothing else.
    fn barrier_comparing_in_place(&self, sync: TeamSync, mut call: CollectiveCall) -> Result<()> {
        let transport = &self.inner.transport;
        if (call.team as u32 as usize) >= CHECKED_TEAMS || !transport.compares_fingerprints(&sync) {
            return self.transport_result(transport.barrier(Order::Now, sync));
        }
        let fingerprint = self.number_call(&mut call);
        match self.transport_result(transport.barrier_with_fingerprint(sync, fingerprint))? {
            Fingerprints::Same => Ok(()),
            Fingerprints::Differ | Fingerprints::NotCompared => {
                self.write_call(&call)?;
                self.transport_result(transport.barrier(Order::Now, sync))?;
                self.compare_calls(&sync, &call)
            }
        }
    }

    /// A barrier of `sync` that carries `mine`, published by [`World::publish_call`] on
    /// every member with the `fingerprint` it returned, and compares it: by fingerprint in
    /// the barrier itself where the transport can, reading the other members' slots only
    /// when the fingerprints differ (to name both sides) or were not compared. A plain
    /// barrier when `fingerprint` is `None` (calls on the team are not compared).
    pub(crate) fn barrier_carrying(
        &self,
        sync: TeamSync,
        mine: &CollectiveCall,
        fingerprint: Option<u64>,
    ) -> Result<()> {
        let transport = &self.inner.transport;
        let Some(fingerprint) = fingerprint else {
            return self.transport_result(transport.barrier(Order::Now, sync));
        };
        let found = self.transport_result(transport.barrier_with_fingerprint(sync, fingerprint))?;
        match found {
            Fingerprints::Same => Ok(()),
            // A member that carried no fingerprint (a plain barrier) differs too; its slot
            // says what it called last. Slots that agree after all (fingerprints that
            // differ can only come from a call that differs, or from none) pass.
            Fingerprints::Differ | Fingerprints::NotCompared => self.compare_calls(&sync, mine),
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

/// Index of the slot of `call` in the call area (its team, its parity).
/// How far the synchronization a comparison follows keeps the members together, which says
/// whether a member whose slot holds another call of the team is at a different call or
/// merely elsewhere in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lockstep {
    /// After a barrier every member has published this call: a member showing a later call
    /// of the team has gone past it (it compared this PE's slot already, and its slot of the
    /// same parity now holds its next call); an earlier one, or none, differs.
    Synchronized,
    /// After a team collective, which need not make every member wait for every other (on
    /// NCCL a broadcast's root returns once its data is sent, and a member may read before
    /// another has even entered): only a member showing this very call number is compared.
    /// A mismatch then shows at the members that read in time, and at the next barrier,
    /// whose call numbers then differ.
    Loose,
}

impl Lockstep {
    /// Whether the member whose slot holds `theirs` is at another call than `mine` in a way
    /// that is no evidence of a mismatch.
    fn elsewhere(self, mine: &CollectiveCall, theirs: Option<CollectiveCall>) -> bool {
        match (self, theirs) {
            // a later call (call numbers wrap around: compared as a signed distance)
            (Lockstep::Synchronized, Some(t)) => (t.seq.wrapping_sub(mine.seq) as i32) > 0,
            (Lockstep::Synchronized, None) => false,
            (Lockstep::Loose, Some(t)) => t.seq != mine.seq,
            (Lockstep::Loose, None) => true,
        }
    }
}

fn slot_index(call: &CollectiveCall) -> usize {
    call.team as usize * 2 + (call.seq % 2) as usize
}

/// Heap offset of the slot of `call`.
fn slot_addr(sys: u64, call: &CollectiveCall) -> SymAddr {
    SymAddr(sys + SYS_CALLS + (slot_index(call) * CALL_SLOT_BYTES) as u64)
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
    fn fingerprints_tell_calls_apart_and_are_never_zero() {
        let base = CollectiveCall {
            kind: CollectiveKind::Malloc,
            team: 0,
            seq: 2,
            args: [256, 0, 0],
        };
        let variants = [
            base,
            CollectiveCall {
                kind: CollectiveKind::Calloc,
                ..base
            },
            CollectiveCall { team: 1, ..base },
            CollectiveCall { seq: 3, ..base },
            CollectiveCall {
                args: [512, 0, 0],
                ..base
            },
            CollectiveCall {
                args: [256, 1, 0],
                ..base
            },
            CollectiveCall {
                args: [256, 0, 1],
                ..base
            },
        ];
        let prints: Vec<u64> = variants.iter().map(CollectiveCall::fingerprint).collect();
        for (i, a) in prints.iter().enumerate() {
            assert_ne!(*a, 0);
            for (j, b) in prints.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {}", variants[i], variants[j]);
            }
        }
        // The mock sums the members' fingerprints: arguments whose mean is the last
        // arriver's must not sum like its own.
        let malloc = |bytes| CollectiveCall {
            args: [bytes, 0, 0],
            ..base
        };
        let sum = [0, 256, 512].map(|b| malloc(b).fingerprint());
        let sum = sum.iter().fold(0u64, |a, f| a.wrapping_add(*f));
        assert_ne!(sum, malloc(256).fingerprint().wrapping_mul(3));
        // Processes of a job compare them: the value is fixed, not seeded per process.
        assert_eq!(base.fingerprint(), 0x9631_2664_1e84_6d85);
    }

    #[test]
    fn the_barriers_fingerprints_catch_a_mismatch_and_it_names_both_sides() {
        let cfg = crate::WorldConfig {
            timeout: std::time::Duration::from_secs(20),
            ..crate::WorldConfig::default()
        };
        let out = crate::run_in_process(2, &cfg, |w| {
            let me = w.my_pe();
            let bytes = if me == 0 { 256 } else { 512 };
            let call = |bytes| CollectiveCall {
                kind: CollectiveKind::Malloc,
                team: 0,
                seq: 1,
                args: [bytes, 0, 0],
            };
            let sync = w.team_sync(TeamId::WORLD)?;
            // The world's transport compares what its barrier carries, on every member.
            let t = &w.inner.transport;
            let differ = t.barrier_with_fingerprint(sync, call(bytes).fingerprint());
            let same = t.barrier_with_fingerprint(sync, call(256).fingerprint());
            // The malloc's own barrier: its fingerprints differ, then the slots name both.
            let message = match w.malloc::<u8>(bytes as usize) {
                Err(e @ Error::CollectiveMismatch { .. }) => e.to_string(),
                other => panic!("PE {me}: {other:?}"),
            };
            // And the world goes on, its calls matching again.
            let b = w.malloc::<u8>(64)?;
            w.free(b)?;
            Ok((differ, same, message))
        })
        .unwrap();
        for (pe, (differ, same, message)) in out.iter().enumerate() {
            assert_eq!(*differ, Ok(Fingerprints::Differ), "PE {pe}");
            assert_eq!(*same, Ok(Fingerprints::Same), "PE {pe}");
            let (mine, theirs) = if pe == 0 { (256, 512) } else { (512, 256) };
            let other = 1 - pe;
            let expected = format!(
                "PE {pe} called nvshmem_malloc({mine}) [call #1], \
                 PE {other} called nvshmem_malloc({theirs}) [call #1]"
            );
            assert!(message.contains(&expected), "PE {pe}: {message}");
        }
    }

    #[test]
    fn only_members_at_another_call_in_time_are_left_out() {
        let at = |seq: u32| CollectiveCall {
            kind: CollectiveKind::Barrier,
            team: 0,
            seq,
            args: [0; 3],
        };
        let mine = at(10);
        // after a barrier: a member past this call is elsewhere; one behind, or with no
        // call published, differs
        assert!(Lockstep::Synchronized.elsewhere(&mine, Some(at(12))));
        assert!(!Lockstep::Synchronized.elsewhere(&mine, Some(at(8))));
        assert!(!Lockstep::Synchronized.elsewhere(&mine, Some(at(10))));
        assert!(!Lockstep::Synchronized.elsewhere(&mine, None));
        // across the wrap of the call numbers
        assert!(Lockstep::Synchronized.elsewhere(&at(u32::MAX), Some(at(1))));
        assert!(!Lockstep::Synchronized.elsewhere(&at(1), Some(at(u32::MAX))));
        // after a team collective only the same call number is compared
        assert!(Lockstep::Loose.elsewhere(&mine, Some(at(8))));
        assert!(Lockstep::Loose.elsewhere(&mine, Some(at(12))));
        assert!(Lockstep::Loose.elsewhere(&mine, None));
        assert!(!Lockstep::Loose.elsewhere(&mine, Some(at(10))));
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
            args: [1, 2, 3],
        };
        assert_eq!(
            split.signature(),
            "nvshmem_team_split_strided(parent 0, start 1, stride 2, size 3)"
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
