//! Regression (found by fuzzing the C ABI, `fuzz_abi.rs`): a strided 128-bit transfer
//! (`nvshmem_iput128`, `nvshmem_iget128`, and their stream forms) moved its elements as two
//! 64-bit halves and checked each half only when it moved it, so a symmetric range that held
//! the low halves but not the last high one failed after moving the low halves: an error
//! with a partial write. Now the whole range is checked before either half moves.
//!
//! The library's state is process-global: this binary holds this one test only.

use std::ffi::c_void;

use nvshmem_host::rma_typed::bits128;
use nvshmem_host::*;

#[test]
fn a_refused_128_bit_strided_transfer_moves_nothing() {
    for (k, v) in [
        ("NIIN_TRANSPORT", "mock"),
        ("NVSHMEM_SYMMETRIC_SIZE", "512K"),
    ] {
        // SAFETY: this test binary runs this one test, the only code reading or writing the
        // environment while it runs.
        unsafe { std::env::set_var(k, v) };
    }
    nvshmem_init();
    let block = nvshmem_malloc(256).cast::<u8>();
    assert!(!block.is_null());
    // SAFETY: the mock's heap is host memory of this process; 256 bytes were allocated.
    unsafe { std::ptr::write_bytes(block, 0xa5, 256) };
    let src = [7u64; 4];
    let mut dst = [1u64; 4];
    // SAFETY: as above.
    let heap = || unsafe { std::slice::from_raw_parts(block, 256) }.to_vec();
    let before = heap();
    let reports = report_count();

    // One element 8 bytes before the end: the low half fits, the high half does not.
    let last = block.wrapping_add(248).cast::<c_void>();
    // SAFETY: `src` holds the two 8-byte halves read; the call refuses the destination.
    unsafe { bits128::iput(last, src.as_ptr().cast(), 1, 1, 1, 0) };
    assert_eq!(report_count(), reports + 1);
    assert!(
        last_report()
            .unwrap()
            .contains("not inside a live symmetric allocation"),
        "{:?}",
        last_report()
    );
    assert_eq!(heap(), before, "the refused put wrote its low half");
    // Two elements at stride 2 from offset 216: the second one's high half is past the end.
    let at = block.wrapping_add(216).cast::<c_void>();
    // SAFETY: as above (the local stride is 1: 32 bytes of `src`).
    unsafe { bits128::iput(at, src.as_ptr().cast(), 2, 1, 2, 0) };
    assert_eq!(heap(), before, "the refused strided put wrote");
    // SAFETY: `dst` holds 32 bytes; the call refuses the source.
    unsafe { bits128::iget(dst.as_mut_ptr().cast(), last, 1, 1, 1, 0) };
    assert_eq!(dst, [1; 4], "the refused get wrote its low half");
    assert_eq!(report_count(), reports + 3);

    // The ones that fit still move both halves.
    let first = block.cast::<c_void>();
    // SAFETY: `src` holds 32 bytes; the destination is inside the allocation.
    unsafe { bits128::iput(first, src.as_ptr().cast(), 2, 1, 2, 0) };
    // SAFETY: `dst` holds 32 bytes; the source is inside the allocation.
    unsafe { bits128::iget(dst.as_mut_ptr().cast(), first, 1, 2, 2, 0) };
    assert_eq!(report_count(), reports + 3, "{:?}", last_report());
    assert_eq!(dst, src);
    nvshmem_free(block.cast());
    nvshmem_finalize();
}
