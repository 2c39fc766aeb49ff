//! Unit tests of [`SymmetricHeap`], one per rule.

use crate::{Block, DEFAULT_ALIGNMENT, HeapError, SymmetricHeap};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn heap(size: u64) -> SymmetricHeap {
    SymmetricHeap::new(size).unwrap()
}

/// `malloc` that must succeed with a block.
fn m(h: &mut SymmetricHeap, size: u64) -> Block {
    h.malloc(size).unwrap().unwrap()
}

fn checked(h: &SymmetricHeap) {
    h.check().unwrap();
}

#[test]
fn new_rejects_zero_and_sub_granule_sizes() {
    assert_eq!(SymmetricHeap::new(0).unwrap_err(), HeapError::ZeroHeap);
    assert_eq!(
        SymmetricHeap::new(255).unwrap_err(),
        HeapError::HeapTooSmall { size: 255 }
    );
    assert_eq!(heap(256).size(), 256);
}

#[test]
fn new_rounds_size_down_to_the_granule() {
    let h = heap(1000);
    assert_eq!(h.size(), 768);
    assert_eq!(h.stats().largest_free, 768);
    assert_eq!(heap(u64::MAX).size(), u64::MAX - 255);
}

#[test]
fn default_alignment_is_256() {
    assert_eq!(DEFAULT_ALIGNMENT, 256);
    let mut h = heap(MIB);
    for size in [1, 7, 255, 256, 257, 1000, 4096] {
        let b = m(&mut h, size);
        assert_eq!(b.offset % 256, 0, "size {size}");
        assert_eq!(b.len % 256, 0, "size {size}");
    }
    checked(&h);
}

#[test]
fn malloc_rounds_len_up_to_the_granule() {
    let mut h = heap(MIB);
    assert_eq!(
        m(&mut h, 1),
        Block {
            offset: 0,
            len: 256
        }
    );
    assert_eq!(
        m(&mut h, 256),
        Block {
            offset: 256,
            len: 256
        }
    );
    assert_eq!(
        m(&mut h, 257),
        Block {
            offset: 512,
            len: 512
        }
    );
    assert_eq!(h.stats().used, 1024);
}

#[test]
fn align_with_several_powers_of_two() {
    let mut h = heap(16 * MIB);
    for shift in 9..=20 {
        let a = 1u64 << shift;
        // Knock the next free address off every large boundary first.
        m(&mut h, 256);
        let b = h.align(a, 100).unwrap().unwrap();
        assert_eq!(b.offset % a, 0, "alignment {a}");
        assert_eq!(b.len, 256);
    }
    checked(&h);
}

#[test]
fn align_below_256_still_gives_256_aligned_blocks() {
    let mut h = heap(MIB);
    for a in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
        let b = h.align(a, 10).unwrap().unwrap();
        assert_eq!(b.offset % 256, 0, "alignment {a}");
    }
    // Same placement as malloc: contiguous from 0.
    let offsets: Vec<u64> = h.live_blocks().map(|b| b.offset).collect();
    assert_eq!(offsets, (0..9).map(|i| i * 256).collect::<Vec<_>>());
}

#[test]
fn align_zero_or_non_power_of_two_is_an_error() {
    let mut h = heap(MIB);
    for a in [0, 3, 100, 257, 768, u64::MAX] {
        assert_eq!(
            h.align(a, 64),
            Err(HeapError::BadAlignment { alignment: a }),
            "{a}"
        );
        // Checked before the size, so even size 0 is rejected.
        assert_eq!(h.align(a, 0), Err(HeapError::BadAlignment { alignment: a }));
    }
    assert_eq!(h.stats().live_blocks, 0);
}

#[test]
fn align_gap_before_the_aligned_start_stays_free() {
    let mut h = heap(MIB);
    m(&mut h, 256); // [0, 256)
    let b = h.align(4 * KIB, 256).unwrap().unwrap();
    assert_eq!(
        b,
        Block {
            offset: 4096,
            len: 256
        }
    );
    let free = h.free_blocks();
    assert_eq!(
        free[0],
        Block {
            offset: 256,
            len: 4096 - 256
        }
    );
    // The gap is usable by a later malloc.
    assert_eq!(m(&mut h, 1000).offset, 256);
    checked(&h);
}

#[test]
fn align_is_first_fit_for_the_aligned_start() {
    let mut h = heap(MIB);
    // Holes: [0, 1 KiB) is big enough for 512 bytes but has no 8 KiB-aligned... except
    // offset 0 itself; [8 KiB, ...) is the next 8 KiB boundary.
    let a = m(&mut h, 512); // [0, 512)
    m(&mut h, 512); // [512, 1024)
    h.free(a.offset).unwrap();
    // The 512-byte hole at 0 is 8 KiB-aligned and fits exactly: it is chosen.
    assert_eq!(h.align(8 * KIB, 512).unwrap().unwrap().offset, 0);
    // Next one: the tail [1024, ..) has its first 8 KiB boundary at 8192.
    assert_eq!(h.align(8 * KIB, 512).unwrap().unwrap().offset, 8192);
    checked(&h);
}

#[test]
fn align_huge_alignment_only_fits_at_zero() {
    let mut h = heap(MIB);
    let b = h.align(1 << 63, 256).unwrap().unwrap();
    assert_eq!(b.offset, 0);
    assert_eq!(
        h.align(1 << 63, 256),
        Err(HeapError::OutOfMemoryAligned {
            requested: 256,
            alignment: 1 << 63,
            largest_free: MIB - 256
        })
    );
    checked(&h);
}

#[test]
fn size_zero_returns_none_and_reserves_nothing() {
    let mut h = heap(MIB);
    assert_eq!(h.malloc(0), Ok(None));
    assert_eq!(h.calloc(0, 64), Ok(None));
    assert_eq!(h.calloc(64, 0), Ok(None));
    assert_eq!(h.calloc(0, u64::MAX), Ok(None));
    assert_eq!(h.align(4096, 0), Ok(None));
    assert_eq!(h.stats().live_blocks, 0);
    assert_eq!(h.stats().free_blocks, 1);
}

#[test]
fn rounding_is_overflow_safe() {
    let mut h = heap(MIB);
    assert_eq!(
        h.malloc(u64::MAX),
        Err(HeapError::SizeOverflow {
            count: 1,
            size: u64::MAX
        })
    );
    assert!(matches!(
        h.malloc(u64::MAX - 254),
        Err(HeapError::SizeOverflow { .. })
    ));
    // Largest size whose rounding fits (2^64 - 256): out of memory, not overflow.
    assert_eq!(
        h.malloc(u64::MAX - 255),
        Err(HeapError::OutOfMemory {
            requested: u64::MAX - 255,
            largest_free: MIB
        })
    );
    assert!(matches!(
        h.align(1 << 20, u64::MAX),
        Err(HeapError::SizeOverflow { .. })
    ));
    // A near-u64::MAX heap: offsets near the top never overflow.
    let mut big = heap(u64::MAX);
    let b = m(&mut big, u64::MAX / 2);
    assert_eq!(b.offset, 0);
    assert!(big.align(1 << 62, 256).unwrap().is_some());
    assert!(big.malloc(u64::MAX / 2).unwrap_err().is_out_of_memory());
    checked(&big);
}

#[test]
fn calloc_overflow_is_an_error() {
    let mut h = heap(MIB);
    assert_eq!(
        h.calloc(u64::MAX, 2),
        Err(HeapError::SizeOverflow {
            count: u64::MAX,
            size: 2
        })
    );
    assert_eq!(
        h.calloc(1 << 32, 1 << 32),
        Err(HeapError::SizeOverflow {
            count: 1 << 32,
            size: 1 << 32
        })
    );
    // Product fits but its rounding does not.
    assert!(matches!(
        h.calloc(1, u64::MAX),
        Err(HeapError::SizeOverflow { .. })
    ));
    assert_eq!(h.stats().live_blocks, 0);
}

#[test]
fn calloc_is_malloc_of_the_product() {
    let mut h = heap(MIB);
    assert_eq!(
        h.calloc(10, 100).unwrap(),
        Some(Block {
            offset: 0,
            len: 1024
        })
    );
    assert_eq!(
        h.calloc(3 * MIB, 1),
        Err(HeapError::OutOfMemory {
            requested: 3 * MIB,
            largest_free: MIB - 1024
        })
    );
}

#[test]
fn first_fit_by_address_reuses_the_lowest_hole() {
    let mut h = heap(MIB);
    let a = m(&mut h, 1024);
    let b = m(&mut h, 2048);
    let _c = m(&mut h, 1024);
    h.free(b.offset).unwrap(); // hole [1024, 3072)
    h.free(a.offset).unwrap(); // merges into hole [0, 3072)
    assert_eq!(m(&mut h, 3072).offset, 0);
    checked(&h);
}

#[test]
fn first_fit_too_big_request_goes_after_the_hole() {
    let mut h = heap(MIB);
    let _a = m(&mut h, 256);
    let b = m(&mut h, 1024); // [256, 1280)
    let c = m(&mut h, 256); // [1280, 1536)
    h.free(b.offset).unwrap();
    // Too big for the 1 KiB hole: lands after the last block.
    assert_eq!(m(&mut h, 2048).offset, c.offset + c.len);
    // Fits the hole: lands in it, at its start, even though later space is larger.
    assert_eq!(m(&mut h, 512).offset, 256);
    assert_eq!(m(&mut h, 512).offset, 768);
    checked(&h);
}

#[test]
fn splitting_leaves_the_remainder_free() {
    let mut h = heap(64 * KIB);
    let b = m(&mut h, 1000);
    assert_eq!(
        b,
        Block {
            offset: 0,
            len: 1024
        }
    );
    assert_eq!(
        h.free_blocks(),
        vec![Block {
            offset: 1024,
            len: 63 * KIB
        }]
    );
    // An exact fit consumes the whole block: no empty remainder.
    let rest = m(&mut h, 63 * KIB);
    assert_eq!(rest.offset, 1024);
    assert!(h.free_blocks().is_empty());
    assert_eq!(h.stats().largest_free, 0);
    checked(&h);
}

#[test]
fn coalesce_with_left_neighbour() {
    let mut h = heap(64 * KIB);
    let a = m(&mut h, 1024);
    let b = m(&mut h, 1024);
    let _guard = m(&mut h, 256);
    h.free(a.offset).unwrap();
    h.free(b.offset).unwrap(); // left neighbour a is free
    assert_eq!(
        h.free_blocks()[0],
        Block {
            offset: 0,
            len: 2048
        }
    );
    assert_eq!(h.stats().free_blocks, 2);
    checked(&h);
}

#[test]
fn coalesce_with_right_neighbour() {
    let mut h = heap(64 * KIB);
    let _guard = m(&mut h, 256);
    let a = m(&mut h, 1024);
    let b = m(&mut h, 1024);
    let _guard2 = m(&mut h, 256);
    h.free(b.offset).unwrap();
    h.free(a.offset).unwrap(); // right neighbour b is free
    assert_eq!(
        h.free_blocks()[0],
        Block {
            offset: 256,
            len: 2048
        }
    );
    assert_eq!(h.stats().free_blocks, 2);
    checked(&h);
}

#[test]
fn coalesce_with_both_neighbours() {
    let mut h = heap(64 * KIB);
    let _guard = m(&mut h, 256);
    let a = m(&mut h, 1024);
    let b = m(&mut h, 1024);
    let c = m(&mut h, 1024);
    let _guard2 = m(&mut h, 256);
    h.free(a.offset).unwrap();
    h.free(c.offset).unwrap();
    assert_eq!(h.stats().free_blocks, 3);
    h.free(b.offset).unwrap();
    assert_eq!(
        h.free_blocks()[0],
        Block {
            offset: 256,
            len: 3072
        }
    );
    assert_eq!(h.stats().free_blocks, 2);
    checked(&h);
}

#[test]
fn freeing_everything_coalesces_to_one_block() {
    let mut h = heap(MIB);
    let mut blocks = Vec::new();
    for i in 0..200 {
        blocks.push(m(&mut h, 256 + (i * 37) % 3000));
        if i % 7 == 0 {
            blocks.push(h.align(8 * KIB, 300).unwrap().unwrap());
        }
    }
    // Free in an interleaved order.
    let order: Vec<usize> = (0..blocks.len())
        .filter(|i| i % 3 == 0)
        .chain((0..blocks.len()).filter(|i| i % 3 != 0).rev())
        .collect();
    for i in order {
        h.free(blocks[i].offset).unwrap();
    }
    let st = h.stats();
    assert_eq!(st.free_blocks, 1);
    assert_eq!(st.largest_free, h.size());
    assert_eq!(st.live_blocks, 0);
    assert_eq!(st.used, 0);
    assert_eq!(
        h.free_blocks(),
        vec![Block {
            offset: 0,
            len: MIB
        }]
    );
    checked(&h);
}

/// A fixed call sequence with frees, aligned calls, failures and zero sizes.
fn script(h: &mut SymmetricHeap) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    let a = h.malloc(1000).unwrap().unwrap();
    let b = h.align(4096, 300).unwrap().unwrap();
    out.push(Some(a.offset));
    out.push(Some(b.offset));
    out.push(h.calloc(4, 100).unwrap().map(|x| x.offset));
    h.free(a.offset).unwrap();
    out.push(h.malloc(0).unwrap().map(|x| x.offset));
    out.push(h.malloc(500).unwrap().map(|x| x.offset));
    out.push(h.malloc(10 * MIB).ok().flatten().map(|x| x.offset));
    out.push(h.align(64 * KIB, 1).unwrap().map(|x| x.offset));
    out
}

#[test]
fn determinism_same_sequence_same_offsets_and_fingerprint() {
    let mut h1 = heap(MIB);
    let mut h2 = heap(MIB);
    assert_eq!(h1.fingerprint(), h2.fingerprint());
    let o1 = script(&mut h1);
    let o2 = script(&mut h2);
    assert_eq!(o1, o2);
    assert_eq!(h1.fingerprint(), h2.fingerprint());
    assert_eq!(h1.fingerprint().ops, 8);
    assert_eq!(h1.stats(), h2.stats());
    assert_eq!(h1.free_blocks(), h2.free_blocks());
    // Fixed expectations: the placement is a documented function of the calls.
    assert_eq!(
        o1,
        vec![
            Some(0),
            Some(4096),
            Some(1024),
            None,
            Some(0),
            None,
            Some(65536)
        ]
    );
}

#[test]
fn determinism_different_sequence_different_fingerprint() {
    // Other heap size, same calls.
    let mut h1 = heap(MIB);
    let mut h2 = heap(2 * MIB);
    script(&mut h1);
    script(&mut h2);
    assert_ne!(h1.fingerprint(), h2.fingerprint());

    // Same calls, other order (same final state).
    let mut x = heap(MIB);
    let mut y = heap(MIB);
    let xa = m(&mut x, 256);
    let xb = m(&mut x, 256);
    x.free(xa.offset).unwrap();
    x.free(xb.offset).unwrap();
    let ya = m(&mut y, 256);
    let yb = m(&mut y, 256);
    y.free(yb.offset).unwrap();
    y.free(ya.offset).unwrap();
    assert_eq!(x.stats(), y.stats());
    assert_ne!(x.fingerprint(), y.fingerprint());
    assert_eq!(x.fingerprint().ops, y.fingerprint().ops);

    // malloc vs calloc of the same size: same offsets, different calls.
    let mut p = heap(MIB);
    let mut q = heap(MIB);
    m(&mut p, 1024);
    q.calloc(1, 1024).unwrap();
    assert_ne!(p.fingerprint(), q.fingerprint());
}

#[test]
fn failed_calls_change_the_fingerprint_but_not_the_state() {
    let mut clean = heap(MIB);
    let mut noisy = heap(MIB);
    m(&mut clean, 512);
    m(&mut noisy, 512);
    // Failed calls on one heap only.
    assert!(noisy.malloc(2 * MIB).is_err());
    assert!(noisy.free(12_345).is_err());
    assert!(noisy.align(3, 256).is_err());
    assert_eq!(noisy.stats(), clean.stats());
    assert_eq!(noisy.free_blocks(), clean.free_blocks());
    assert_ne!(noisy.fingerprint(), clean.fingerprint());
    assert_eq!(noisy.fingerprint().ops, clean.fingerprint().ops + 3);
    // Subsequent placement is unaffected.
    assert_eq!(m(&mut noisy, 256), m(&mut clean, 256));

    // Zero-size calls are recorded too.
    let before = clean.fingerprint();
    assert_eq!(clean.malloc(0), Ok(None));
    assert_ne!(clean.fingerprint(), before);
    // Read-only calls are not.
    let before = clean.fingerprint();
    let _ = clean.find(0);
    let _ = clean.stats();
    assert_eq!(clean.fingerprint(), before);
}

#[test]
fn fingerprint_display() {
    let h = heap(MIB);
    let s = h.fingerprint().to_string();
    assert!(s.starts_with("ops=0 hash=0x"), "{s}");
    assert_eq!(s.len(), "ops=0 hash=0x".len() + 16);
}

#[test]
fn out_of_memory_carries_requested_and_largest_free() {
    let mut h = heap(4 * MIB);
    m(&mut h, MIB);
    let e = h.malloc(3 * MIB + 1).unwrap_err();
    assert_eq!(
        e,
        HeapError::OutOfMemory {
            requested: 3 * MIB + 1,
            largest_free: 3 * MIB
        }
    );
    let msg = e.to_string();
    assert!(msg.contains("requested 3145729 bytes"), "{msg}");
    assert!(
        msg.contains("largest free block 3145728 bytes (3 MiB)"),
        "{msg}"
    );
    // The heap is unchanged.
    assert_eq!(h.stats().live_blocks, 1);
    checked(&h);
}

#[test]
fn double_free_is_an_error() {
    let mut h = heap(MIB);
    let a = m(&mut h, 1024);
    let _b = m(&mut h, 1024);
    assert_eq!(h.free(a.offset), Ok(a));
    assert_eq!(
        h.free(a.offset),
        Err(HeapError::NotABlockStart { offset: a.offset })
    );
    assert_eq!(h.stats().live_blocks, 1);
    checked(&h);
}

#[test]
fn interior_pointer_is_an_error() {
    let mut h = heap(MIB);
    let _a = m(&mut h, 256);
    let b = m(&mut h, 1024); // [256, 1280)
    for off in [257, 512, 1279] {
        assert_eq!(
            h.free(off),
            Err(HeapError::InteriorPointer {
                offset: off,
                block_start: 256,
                block_len: 1024
            })
        );
    }
    assert_eq!(h.find(b.offset), Some(b));
    assert_eq!(h.stats().live_blocks, 2);
    checked(&h);
}

#[test]
fn free_of_never_allocated_offset_is_an_error() {
    let mut h = heap(MIB);
    assert_eq!(h.free(0), Err(HeapError::NotABlockStart { offset: 0 }));
    m(&mut h, 256);
    assert_eq!(
        h.free(4096),
        Err(HeapError::NotABlockStart { offset: 4096 })
    );
    assert_eq!(
        h.free(4097),
        Err(HeapError::NotABlockStart { offset: 4097 })
    );
    checked(&h);
}

#[test]
fn free_past_the_heap_end_is_an_error() {
    let mut h = heap(MIB);
    for off in [MIB, MIB + 256, u64::MAX] {
        assert_eq!(
            h.free(off),
            Err(HeapError::OffsetOutOfRange {
                offset: off,
                size: MIB
            })
        );
    }
}

#[test]
fn find_returns_the_live_block_containing_an_offset() {
    let mut h = heap(MIB);
    let a = m(&mut h, 256);
    let b = m(&mut h, 1024);
    assert_eq!(h.find(0), Some(a));
    assert_eq!(h.find(255), Some(a));
    assert_eq!(h.find(256), Some(b));
    assert_eq!(h.find(1279), Some(b));
    assert_eq!(h.find(1280), None); // free space
    assert_eq!(h.find(MIB), None);
    assert_eq!(h.find(u64::MAX), None);
    h.free(a.offset).unwrap();
    assert_eq!(h.find(0), None);
    assert!(b.contains(300) && !b.contains(1280) && !b.contains(0));
}

#[test]
fn stats_bookkeeping() {
    let mut h = heap(MIB);
    let st = h.stats();
    assert_eq!(
        (
            st.size,
            st.used,
            st.free,
            st.largest_free,
            st.live_blocks,
            st.free_blocks
        ),
        (MIB, 0, MIB, MIB, 0, 1)
    );
    let a = m(&mut h, 1000); // 1024
    let _b = m(&mut h, 2000); // 2048
    let st = h.stats();
    assert_eq!(st.used, 3072);
    assert_eq!(st.free, MIB - 3072);
    assert_eq!(st.largest_free, MIB - 3072);
    assert_eq!((st.live_blocks, st.free_blocks), (2, 1));
    h.free(a.offset).unwrap();
    let st = h.stats();
    assert_eq!(st.used, 2048);
    assert_eq!(st.free, MIB - 2048);
    assert_eq!(st.largest_free, MIB - 3072);
    assert_eq!((st.live_blocks, st.free_blocks), (1, 2));
    assert!(st.to_string().contains("used=2 KiB"), "{st}");
}

#[test]
fn no_fixed_limit_on_live_blocks() {
    const N: u64 = 100_000;
    let mut h = heap(N * 256 + MIB);
    for i in 0..N {
        assert_eq!(m(&mut h, 1).offset, i * 256);
    }
    assert_eq!(h.stats().live_blocks, 100_000);
    // Free every other block: 50_000 holes, none coalescible.
    for i in (0..N).step_by(2) {
        h.free(i * 256).unwrap();
    }
    assert_eq!(h.stats().free_blocks, 50_001);
    // First fit fills the holes in address order.
    assert_eq!(m(&mut h, 256).offset, 0);
    assert_eq!(m(&mut h, 256).offset, 512);
    // A 512-byte request skips all 256-byte holes.
    assert_eq!(m(&mut h, 512).offset, N * 256);
    checked(&h);
    for b in h.live_blocks().collect::<Vec<_>>() {
        h.free(b.offset).unwrap();
    }
    assert_eq!(h.stats().free_blocks, 1);
    assert_eq!(h.stats().largest_free, h.size());
}

/// A PE that undid an allocation the others never made has another history but the same
/// layout as they do: the layout agrees again, the fingerprint never does.
#[test]
fn an_undone_allocation_restores_the_layout_not_the_fingerprint() {
    let mut a = heap(MIB);
    let mut b = heap(MIB);
    let keep = m(&mut a, 1000).offset;
    assert_eq!(m(&mut b, 1000).offset, keep);
    let extra = m(&mut a, 512).offset;
    assert_ne!(a.layout(), b.layout());
    a.free(extra).unwrap();
    assert_eq!(a.layout(), b.layout());
    assert_ne!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.layout().live, 1);
    checked(&a);
    // Equal layouts place the next allocation alike.
    assert_eq!(m(&mut a, 300).offset, m(&mut b, 300).offset);
}
