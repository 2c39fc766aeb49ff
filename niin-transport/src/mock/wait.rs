//! Polling: the [`Backoff`] every wait, barrier and attach uses, the [`poll`] loop with
//! its timeout and peer checks, and the point-to-point waits ([`WaitSet`]:
//! `wait_until`, `wait_until_all`, `wait_until_all_vector`).
//!
//! A wait loads each word with an acquire load of its width, so once it sees the value
//! it also sees what the writer wrote before its release (a signal, or a `p` after a
//! fence). Backoff: a few spins, then `yield_now`, then sleeps growing to 1 ms — the
//! machines that run the tests have 2 cores and 4–16 PE threads, so spinning waiters
//! must get out of the writers' way. A wait that does not finish within the timeout
//! fails with `Timeout` (on a GPU it would hang); every ~100 ms it also checks whether
//! the PEs it needs are gone and fails with `PeerGone` if so.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use super::atomics;
use super::peers;
use super::region::Region;
use crate::error::{Result, TransportError};
use crate::ops::{Cmp, DeferredWait, SymAddr, WaitKind};

/// How often a waiter checks for gone peers.
pub(crate) const GONE_CHECK_EVERY: Duration = Duration::from_millis(100);

/// Longest sleep between polls.
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Escalating pauses between polls: spins, then yields, then sleeps (10 µs doubling up
/// to 1 ms).
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Pauses once, a little longer than last time.
    pub(crate) fn snooze(&mut self) {
        match self.step {
            0..8 => {
                for _ in 0..(1u32 << self.step) {
                    std::hint::spin_loop();
                }
            }
            8..16 => thread::yield_now(),
            s => {
                let sleep = Duration::from_micros(10u64 << (s - 16).min(7)).min(MAX_SLEEP);
                thread::sleep(sleep);
            }
        }
        self.step = self.step.saturating_add(1);
    }
}

/// How a [`poll`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The condition held.
    Done,
    /// It did not hold within the timeout; how long was waited.
    TimedOut(Duration),
    /// A PE the condition needed is gone.
    Gone(usize),
}

/// Polls `done` with [`Backoff`] until it holds, `timeout` passes, or `gone` (asked
/// every [`GONE_CHECK_EVERY`]) names a PE that is gone and `done` still does not hold.
pub(crate) fn poll(
    timeout: Duration,
    mut done: impl FnMut() -> bool,
    mut gone: impl FnMut() -> Option<usize>,
) -> Outcome {
    if done() {
        return Outcome::Done;
    }
    let start = Instant::now();
    let mut next_check = start + GONE_CHECK_EVERY;
    let mut backoff = Backoff::default();
    loop {
        backoff.snooze();
        if done() {
            return Outcome::Done;
        }
        let now = Instant::now();
        if now >= next_check {
            next_check = now + GONE_CHECK_EVERY;
            if let Some(pe) = gone() {
                // The PE may have made the condition true just before leaving.
                return if done() {
                    Outcome::Done
                } else {
                    Outcome::Gone(pe)
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
            Outcome::Gone(pe) => Err(TransportError::PeerGone { pe, op: self.op }),
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
        assert_eq!(poll(Duration::ZERO, || true, || None), Outcome::Done);
        match poll(Duration::from_millis(30), || false, || None) {
            Outcome::TimedOut(w) => assert!(w >= Duration::from_millis(30)),
            o => panic!("{o:?}"),
        }
        assert_eq!(
            poll(Duration::from_secs(5), || false, || Some(3)),
            Outcome::Gone(3)
        );
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
