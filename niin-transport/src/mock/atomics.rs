//! Real atomic instructions on heap words, of the word's width: scalar `p`/`g`, signal
//! updates, wait loads and AMOs. Threads of one process and processes sharing the
//! mapping contend on the same cache lines, so races and contention are real.
//!
//! Orderings: `p`/`g` are relaxed (NVSHMEM orders them only through fence, quiet and
//! barriers, which are fences here); signal updates are release (SET) or acq-rel (ADD),
//! so a PE that sees the signal sees the data put before it; wait loads are acquire;
//! AMOs are acq-rel RMWs (fetch: acquire load, set: release store).

use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

use crate::ops::{AmoOp, SignalOp, Width};

/// Loads the `width` word at `ptr`, zero-extended.
///
/// # Safety
/// `ptr` must point to `width.bytes()` bytes of a live mapping, aligned to the width
/// (as [`super::region::Region::heap_word`] returns), and stay mapped during the call.
pub(crate) unsafe fn load(ptr: *mut u8, width: Width, order: Ordering) -> u64 {
    match width {
        // SAFETY: the caller guarantees a live, aligned 1-byte word.
        Width::W1 => unsafe { AtomicU8::from_ptr(ptr) }.load(order) as u64,
        // SAFETY: the caller guarantees a live, 2-byte aligned word.
        Width::W2 => unsafe { AtomicU16::from_ptr(ptr.cast()) }.load(order) as u64,
        // SAFETY: the caller guarantees a live, 4-byte aligned word.
        Width::W4 => unsafe { AtomicU32::from_ptr(ptr.cast()) }.load(order) as u64,
        // SAFETY: the caller guarantees a live, 8-byte aligned word.
        Width::W8 => unsafe { AtomicU64::from_ptr(ptr.cast()) }.load(order),
    }
}

/// Stores the low `width` bytes of `value` at `ptr` as one atomic store.
///
/// # Safety
/// As [`load`].
pub(crate) unsafe fn store(ptr: *mut u8, width: Width, value: u64, order: Ordering) {
    match width {
        // SAFETY: the caller guarantees a live, aligned 1-byte word.
        Width::W1 => unsafe { AtomicU8::from_ptr(ptr) }.store(value as u8, order),
        // SAFETY: the caller guarantees a live, 2-byte aligned word.
        Width::W2 => unsafe { AtomicU16::from_ptr(ptr.cast()) }.store(value as u16, order),
        // SAFETY: the caller guarantees a live, 4-byte aligned word.
        Width::W4 => unsafe { AtomicU32::from_ptr(ptr.cast()) }.store(value as u32, order),
        // SAFETY: the caller guarantees a live, 8-byte aligned word.
        Width::W8 => unsafe { AtomicU64::from_ptr(ptr.cast()) }.store(value, order),
    }
}

/// Updates the 64-bit signal word at `ptr`: SET is a release store, ADD an acq-rel
/// fetch-add, so the data written before is visible to whoever sees the update.
///
/// # Safety
/// `ptr` must point to a live, 8-byte aligned word of the mapping.
pub(crate) unsafe fn signal(ptr: *mut u8, op: SignalOp, value: u64) {
    // SAFETY: the caller guarantees a live, 8-byte aligned word.
    let word = unsafe { AtomicU64::from_ptr(ptr.cast()) };
    match op {
        SignalOp::Set => word.store(value, Ordering::Release),
        SignalOp::Add => {
            word.fetch_add(value, Ordering::AcqRel);
        }
    }
}

/// Applies `op` to the `width` (4 or 8 bytes) word at `ptr` with one atomic
/// instruction; returns the previous value for fetching operations, 0 otherwise.
///
/// # Safety
/// `ptr` must point to a live word of `width` bytes aligned to it; `width` must be
/// [`Width::W4`] or [`Width::W8`] (other widths panic).
pub(crate) unsafe fn amo(ptr: *mut u8, width: Width, op: AmoOp, operand: u64, compare: u64) -> u64 {
    let old = match width {
        // SAFETY: the caller guarantees a live, 4-byte aligned word.
        Width::W4 => amo32(
            unsafe { AtomicU32::from_ptr(ptr.cast()) },
            op,
            operand,
            compare,
        ),
        // SAFETY: the caller guarantees a live, 8-byte aligned word.
        Width::W8 => amo64(
            unsafe { AtomicU64::from_ptr(ptr.cast()) },
            op,
            operand,
            compare,
        ),
        w => panic!("AMOs take 4- or 8-byte words, not {} bytes", w.bytes()),
    };
    if op.fetches() { old } else { 0 }
}

/// `amo32` and `amo64`: one AMO on an atomic word of that width, returning the old value
/// (0 for `Set`, which stores without reading).
macro_rules! amo_on_word {
    ($name:ident, $atomic:ty, $int:ty) => {
        fn $name(word: &$atomic, op: AmoOp, operand: u64, compare: u64) -> u64 {
            use Ordering::{AcqRel, Acquire, Release};
            // Truncation to the word's width is the point: operands arrive zero-extended.
            let (v, c) = (operand as $int, compare as $int);
            let old = match op {
                AmoOp::Fetch => word.load(Acquire),
                AmoOp::Set => {
                    word.store(v, Release);
                    0
                }
                AmoOp::Swap => word.swap(v, AcqRel),
                AmoOp::CompareSwap => match word.compare_exchange(c, v, AcqRel, Acquire) {
                    Ok(x) | Err(x) => x,
                },
                AmoOp::FetchAdd | AmoOp::Add => word.fetch_add(v, AcqRel),
                AmoOp::Inc | AmoOp::FetchInc => word.fetch_add(1, AcqRel),
                AmoOp::And | AmoOp::FetchAnd => word.fetch_and(v, AcqRel),
                AmoOp::Or | AmoOp::FetchOr => word.fetch_or(v, AcqRel),
                AmoOp::Xor | AmoOp::FetchXor => word.fetch_xor(v, AcqRel),
            };
            u64::from(old)
        }
    };
}

amo_on_word!(amo32, AtomicU32, u32);
amo_on_word!(amo64, AtomicU64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every AMO at both widths agrees with the model `AmoOp::apply` and returns the
    /// old value exactly when it fetches.
    #[test]
    fn amo_matches_the_model_at_4_and_8_bytes() {
        let mut word = 0u64;
        let ptr = (&raw mut word).cast::<u8>();
        for width in [Width::W4, Width::W8] {
            for op in AmoOp::ALL {
                for (start, operand, compare) in [
                    (5u64, 3u64, 5u64),
                    (0xF0F0, 0x0FF0, 1),
                    (u64::MAX, 1, u64::MAX),
                ] {
                    let start = start & width.mask();
                    // SAFETY: `ptr` is the live, 8-byte aligned local `word`.
                    unsafe { store(ptr, Width::W8, start, Ordering::Relaxed) };
                    // SAFETY: as above; 4-byte access to its first half is aligned too.
                    let got = unsafe { amo(ptr, width, op, operand, compare) };
                    // SAFETY: as above.
                    let now = unsafe { load(ptr, width, Ordering::Relaxed) };
                    assert_eq!(
                        now,
                        op.apply(start, operand, compare, width),
                        "{op:?} {width:?}"
                    );
                    assert_eq!(
                        got,
                        if op.fetches() { start } else { 0 },
                        "{op:?} {width:?}"
                    );
                }
            }
        }
    }
}
