//! Polling: the [`Backoff`] every wait, barrier and attach uses, the [`poll`] loop with
//! its timeout and peer checks, and the point-to-point waits ([`WaitSet`]:
//! `wait_until`, `wait_until_all`, `wait_until_all_vector`).
//!
//! A wait loads each word with an acquire load of its width, so once it sees the value
//! it also sees what the writer wrote before its release (a signal, or a `p` after a
//! fence). Backoff: a few spins, then `yield_now`, then sleeps growing to 1 ms (more in
//! jobs of many PEs per core, see [`Pacing`]) — the machines that run the tests have 2
//! cores and 4–1024 PEs, so waiters must get out of the writers' way. Barriers and the
//! attach sleep on their word with a futex instead, and are woken when it changes. A wait
//! that does not finish within the timeout fails with `Timeout` (on a GPU it would hang);
//! every [`Pacing::check_every`] it also checks whether the PEs it needs are gone and
//! fails with `PeerGone` if so.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::atomics;
use super::futex;
use super::peers;
use super::region::Region;
use crate::error::{Departure, Result, TransportError};
use crate::ops::{Cmp, DeferredWait, SymAddr, WaitKind};

/// How often a waiter checks for gone peers in a job of up to 32 PEs.
pub(crate) const GONE_CHECK_EVERY: Duration = Duration::from_millis(20);

/// How often a waiter checks for gone peers, at most (the largest jobs).
const GONE_CHECK_MAX: Duration = Duration::from_secs(1);

/// Longest sleep between polls in a job with few PEs per core.
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Longest sleep between polls in any job.
const MAX_SLEEP_CAP: Duration = Duration::from_millis(10);

/// How a wait paces itself in a job of `n_pes` PEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pacing {
    /// Interval of the checks for gone peers: 20 ms per 32 PEs (each check reads every
    /// PE's block), at most 1 s, so checks cost the job O(N) reads per interval, not N².
    pub(crate) check_every: Duration,
    /// Longest sleep between polls: 1 ms, up to 10 ms with more than 8 PEs per core.
    pub(crate) max_sleep: Duration,
}

impl Pacing {
    /// The pacing of a job of `n_pes` PEs on this machine.
    pub(crate) fn for_pes(n_pes: usize) -> Pacing {
        static CORES: OnceLock<usize> = OnceLock::new();
        let cores = *CORES.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()));
        let per_core = (n_pes / (8 * cores)).max(1) as u32;
        Pacing {
            check_every: (GONE_CHECK_EVERY * (n_pes / 32).max(1) as u32).min(GONE_CHECK_MAX),
            max_sleep: (MAX_SLEEP * per_core).min(MAX_SLEEP_CAP),
        }
    }
}

/// Escalating pauses between polls: spins, then yields, then sleeps (10 µs doubling up
/// to the pacing's longest sleep).
#[derive(Debug)]
pub(crate) struct Backoff {
    step: u32,
    max_sleep: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(MAX_SLEEP)
    }
}

impl Backoff {
    /// A backoff whose sleeps grow to `max_sleep`.
    pub(crate) fn new(max_sleep: Duration) -> Backoff {
        Backoff { step: 0, max_sleep }
    }

    /// Whether the next pause is a sleep (past the spins and yields).
    fn sleeping(&self) -> bool {
        self.step >= 16
    }

    /// The next sleep (once [`Backoff::sleeping`]).
    fn next_sleep(&mut self) -> Duration {
        let s = self.step.max(16);
        self.step = self.step.saturating_add(1);
        Duration::from_micros(10u64 << (s - 16).min(10)).min(self.max_sleep)
    }

    /// Pauses once, a little longer than last time.
    pub(crate) fn snooze(&mut self) {
        match self.step {
            0..8 => {
                for _ in 0..(1u32 << self.step) {
                    std::hint::spin_loop();
                }
            }
            8..16 => thread::yield_now(),
            _ => {
                let sleep = self.next_sleep();
                thread::sleep(sleep);
                return;
            }
        }
        self.step = self.step.saturating_add(1);
    }
}

/// A 64-bit control word whose change (in its low 32 bits) ends a [`poll`]; the poll
/// sleeps on those bits with a futex, and whoever changes them wakes the sleepers
/// ([`FutexWord::wake`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FutexWord<'a> {
    /// The word.
    pub(crate) word: &'a AtomicU64,
}

impl FutexWord<'_> {
    fn ptr(&self) -> *const u32 {
        let high_first = cfg!(target_endian = "big");
        self.word
            .as_ptr()
            .cast::<u32>()
            .wrapping_add(usize::from(high_first))
    }

    fn current(&self) -> u32 {
        self.word.load(Ordering::Acquire) as u32
    }

    /// Wakes every PE sleeping on this word.
    pub(crate) fn wake(&self) {
        // SAFETY: `ptr` is the aligned low half of a live 8-byte aligned control word.
        unsafe { futex::wake_all(self.ptr()) };
    }
}

/// How a [`poll`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The condition held.
    Done,
    /// It did not hold within the timeout; how long was waited.
    TimedOut(Duration),
    /// A PE the condition needed is gone, and how it left.
    Gone(usize, Departure),
}

/// Polls `done` with [`Backoff`] until it holds, `timeout` passes, or `gone` (asked
/// every `pacing.check_every`) names a PE that is gone and `done` still does not hold.
/// With a `futex`, `done` must become true only by a change of that word, and the poll
/// sleeps on it (up to the next check) instead of sleeping a fixed time.
pub(crate) fn poll(
    timeout: Duration,
    pacing: Pacing,
    futex: Option<FutexWord<'_>>,
    mut done: impl FnMut() -> bool,
    mut gone: impl FnMut() -> Option<(usize, Departure)>,
) -> Outcome {
    if done() {
        return Outcome::Done;
    }
    let start = Instant::now();
    let mut next_check = start + pacing.check_every;
    let mut backoff = Backoff::new(pacing.max_sleep);
    loop {
        match futex {
            Some(f) if backoff.sleeping() => {
                let seen = f.current();
                if done() {
                    return Outcome::Done;
                }
                let until = next_check.min(start + timeout);
                let nap = until.saturating_duration_since(Instant::now());
                // SAFETY: `ptr` is the aligned low half of a live 8-byte aligned control word.
                unsafe { futex::wait(f.ptr(), seen, nap.max(Duration::from_micros(100))) };
            }
            _ => backoff.snooze(),
        }
        if done() {
            return Outcome::Done;
        }
        let now = Instant::now();
        if now >= next_check {
            next_check = now + pacing.check_every;
            if let Some((pe, why)) = gone() {
                // The PE may have made the condition true just before leaving.
                return if done() {
                    Outcome::Done
                } else {
                    Outcome::Gone(pe, why)
                };
            }
        }
        let waited = now - start;
        if waited >= timeout {
            return Outcome::TimedOut(waited);
        }
    }
}

/// NVSHMEM's name of a comparison, for messages.
pub(crate) fn cmp_name(cmp: Cmp) -> &'static str {
    match cmp {
        Cmp::Eq => "EQ",
        Cmp::Ne => "NE",
        Cmp::Gt => "GT",
        Cmp::Le => "LE",
        Cmp::Lt => "LT",
        Cmp::Ge => "GE",
    }
}

fn show(kind: WaitKind, raw: u64) -> String {
    if kind.signed {
        kind.widen(raw).to_string()
    } else {
        (raw & kind.width.mask()).to_string()
    }
}

/// Checks the arrays of a deferred wait at the call: `status` aligned to 4 bytes, `values`
/// to the word's width (their contents are read when the stream gets to the wait).
pub(crate) fn check_deferred(
    op: &'static str,
    arrays: &DeferredWait,
    kind: WaitKind,
) -> Result<()> {
    for (addr, align, what) in [
        (arrays.status, 4, "status"),
        (arrays.values, kind.width.bytes() as u64, "cmp_values"),
    ] {
        if addr % align != 0 {
            return Err(TransportError::BadArgument {
                op,
                what: format!("{what} at {addr:#x} is not aligned to {align} bytes"),
            });
        }
    }
    Ok(())
}

/// Reads the arrays of a deferred wait: the `nelems` statuses and the `nelems` values of the
/// words' width (each zero-extended, as `WaitSet` takes them), where given.
///
/// # Safety
/// Where not 0, `arrays.status` must point to `nelems` readable, aligned `i32`s and
/// `arrays.values` to `nelems` readable, aligned words of `kind`'s width.
pub(crate) unsafe fn read_deferred(
    arrays: &DeferredWait,
    nelems: usize,
    kind: WaitKind,
) -> (Option<Vec<i32>>, Option<Vec<u64>>) {
    let status = (arrays.status != 0).then(|| {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(arrays.status as *const i32, nelems) }.to_vec()
    });
    let width = kind.width.bytes();
    let values = (arrays.values != 0).then(|| {
        // SAFETY: the caller's contract: `nelems * width` readable bytes.
        let bytes =
            unsafe { std::slice::from_raw_parts(arrays.values as *const u8, nelems * width) };
        bytes
            .chunks_exact(width)
            .map(|w| {
                let mut b = [0u8; 8];
                b[..width].copy_from_slice(w);
                u64::from_le_bytes(b)
            })
            .collect()
    });
    (status, values)
}

/// A send-able pointer to a checked heap word (the first of a [`WaitSet`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WordPtr(*mut u8);

// SAFETY: the pointer comes from `Region::heap_range` and points into the mapping,
// which the `Core` that every stream job holds keeps alive; it is only used for atomic
// loads of checked, aligned words.
unsafe impl Send for WordPtr {}

/// The words of a point-to-point wait, checked: for `wait_until` one word, for
/// `wait_until_all(_vector)` the words whose status is zero, each with its comparison
/// value.
#[derive(Debug)]
pub(crate) struct WaitSet {
    /// The NVSHMEM name of the wait, for errors.
    pub(crate) op: &'static str,
    /// First word of the array (checked, aligned).
    first: WordPtr,
    /// Its symmetric address.
    addr: SymAddr,
    /// Number of words in the array (for messages).
    nelems: usize,
    kind: WaitKind,
    cmp: Cmp,
    /// `(index, value)` of each word waited on.
    words: Vec<(usize, u64)>,
}

impl WaitSet {
    /// Checks the array of `nelems` words of `kind` at `addr` of PE `pe` (width 2, 4 or
    /// 8, aligned, inside the heap) and the status array (`nelems` entries), and keeps the
    /// words whose status is zero with their values (`value(i)`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        op: &'static str,
        region: &Region,
        pe: usize,
        addr: SymAddr,
        nelems: usize,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: impl Fn(usize) -> u64,
    ) -> Result<WaitSet> {
        let width = kind.width.bytes();
        if width == 1 {
            return Err(TransportError::BadWidth { op, bytes: width });
        }
        let bytes = (nelems as u64).checked_mul(width as u64).ok_or_else(|| {
            TransportError::BadArgument {
                op,
                what: format!("{nelems} words overflow the heap"),
            }
        })?;
        let first = region.heap_range(pe, addr, bytes)?;
        if addr.0 % width as u64 != 0 {
            return Err(TransportError::Misaligned {
                offset: addr.0,
                align: width,
            });
        }
        if let Some(len) = status.map(<[i32]>::len).filter(|&len| len != nelems) {
            return Err(TransportError::BadArgument {
                op,
                what: format!("status has {len} entries for {nelems} words"),
            });
        }
        let words = (0..nelems)
            .filter(|&i| status.is_none_or(|s| s[i] == 0))
            .map(|i| (i, value(i)))
            .collect();
        Ok(WaitSet {
            op,
            first: WordPtr(first),
            addr,
            nelems,
            kind,
            cmp,
            words,
        })
    }

    /// The `i`-th word's current value (acquire).
    fn load(&self, i: usize) -> u64 {
        let ptr = self.first.0.wrapping_add(i * self.kind.width.bytes());
        // SAFETY: `new` checked that all `nelems` words lie in the heap and are aligned;
        // the mapping outlives the wait (the caller holds the region).
        unsafe { atomics::load(ptr, self.kind.width, Ordering::Acquire) }
    }

    /// Waits until every word holds, in order (a word that held is not looked at again,
    /// as NVSHMEM's loop over the array does). `me` is the waiting PE.
    pub(crate) fn wait(&self, region: &Region, me: usize, timeout: Duration) -> Result<()> {
        let mut next = 0;
        let outcome = poll(
            timeout,
            Pacing::for_pes(region.layout().n_pes),
            None,
            || {
                while let Some(&(i, v)) = self.words.get(next) {
                    if !self.kind.holds(self.load(i), self.cmp, v) {
                        return false;
                    }
                    next += 1;
                }
                true
            },
            || peers::wait_hopeless(region, me),
        );
        match outcome {
            Outcome::Done => Ok(()),
            Outcome::Gone(pe, why) => Err(peers::peer_gone(region, me, self.op, pe, why)),
            Outcome::TimedOut(waited) => Err(TransportError::Timeout {
                pe: me,
                op: self.op,
                waited,
                detail: self.detail(next),
            }),
        }
    }

    /// What the wait is stuck on: the first word that does not hold.
    fn detail(&self, next: usize) -> String {
        let Some(&(i, v)) = self.words.get(next) else {
            return "all words hold".into();
        };
        let width = self.kind.width.bytes();
        let sign = if self.kind.signed {
            "signed"
        } else {
            "unsigned"
        };
        let at = SymAddr(self.addr.0 + (i * width) as u64);
        let which = if self.nelems == 1 && self.op == "wait_until" {
            String::new()
        } else {
            format!("word {i} of {}, ", self.nelems)
        };
        format!(
            "{at} ({which}{width}-byte {sign}) {} {}, last value {}",
            cmp_name(self.cmp),
            show(self.kind, v),
            show(self.kind, self.load(i))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_times_out_and_reports_gone() {
        let p = Pacing::for_pes(4);
        assert_eq!(
            poll(Duration::ZERO, p, None, || true, || None),
            Outcome::Done
        );
        match poll(Duration::from_millis(30), p, None, || false, || None) {
            Outcome::TimedOut(w) => assert!(w >= Duration::from_millis(30)),
            o => panic!("{o:?}"),
        }
        assert_eq!(
            poll(
                Duration::from_secs(5),
                p,
                None,
                || false,
                || Some((3, Departure::Panicked))
            ),
            Outcome::Gone(3, Departure::Panicked)
        );
    }

    #[test]
    fn pacing_spreads_checks_and_sleeps_in_large_jobs() {
        assert_eq!(Pacing::for_pes(4).check_every, GONE_CHECK_EVERY);
        assert_eq!(Pacing::for_pes(4).max_sleep, MAX_SLEEP);
        assert_eq!(
            Pacing::for_pes(1024).check_every,
            Duration::from_millis(640)
        );
        assert_eq!(Pacing::for_pes(1 << 20).check_every, GONE_CHECK_MAX);
        assert_eq!(Pacing::for_pes(1 << 20).max_sleep, MAX_SLEEP_CAP);
    }

    #[test]
    fn backoff_sleeps_at_most_a_millisecond() {
        let mut b = Backoff::default();
        for _ in 0..40 {
            b.snooze();
        }
        let t = Instant::now();
        b.snooze();
        assert!(t.elapsed() < Duration::from_millis(50));
    }
}
