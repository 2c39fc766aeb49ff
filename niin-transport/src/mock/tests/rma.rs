//! Puts, gets, strided transfers, scalars, signals, memset and peer pointers.

use super::*;
use crate::ops::{Cmp, SignalOp, Strided, WaitKind};

fn pattern(pe: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + pe * 31) as u8).collect()
}

#[test]
fn put_get_round_trip_across_pes() {
    let w = world(4, cfg());
    on_all(&w, |t| {
        let (me, n) = (t.my_pe(), t.n_pes());
        put(t, (me + 1) % n, 1000, &pattern(me, 3000)).unwrap();
        t.barrier(Order::Now, world_team(n)).unwrap();
        // What the previous PE put into my heap, read locally and from a neighbour.
        let prev = (me + n - 1) % n;
        assert_eq!(get(t, me, 1000, 3000).unwrap(), pattern(prev, 3000));
        assert_eq!(get(t, (me + 1) % n, 1000, 3000).unwrap(), pattern(me, 3000));
        // The bytes around the range are untouched.
        assert_eq!(get(t, me, 999, 1).unwrap(), [0]);
        assert_eq!(get(t, me, 4000, 1).unwrap(), [0]);
    });
}

#[test]
fn zero_length_transfers_are_no_ops() {
    let w = world(2, cfg());
    put(&w[0], 1, HEAP, &[]).unwrap();
    assert_eq!(get(&w[0], 1, HEAP, 0).unwrap(), Vec::<u8>::new());
}

#[test]
fn iput_iget_strided_round_trip() {
    let w = world(2, cfg());
    let src: Vec<u32> = (0..10).map(|i| 100 + i).collect();
    // Elements 0, 2, 4, 6, 8 of `src` to elements 0, 3, 6, 9, 12 of PE 1's array.
    let shape = Strided {
        elem_size: 4,
        nelems: 5,
        dst_stride: 3,
        src_stride: 2,
    };
    // SAFETY: `src` holds 10 u32s; the source span is 9 elements.
    unsafe { w[0].iput(Order::Now, 1, SymAddr(64), src.as_ptr().cast(), shape) }.unwrap();
    let raw = get(&w[0], 1, 64, 13 * 4).unwrap();
    let words: Vec<u32> = raw
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    for (i, w) in words.iter().enumerate() {
        let expect = if i % 3 == 0 {
            100 + 2 * (i as u32 / 3)
        } else {
            0
        };
        assert_eq!(*w, expect, "element {i}");
    }
    // Back again, packed: elements 0, 3, 6, 9, 12 of PE 1's array to 0..5 locally.
    let mut back = [0u32; 5];
    let shape = Strided {
        elem_size: 4,
        nelems: 5,
        dst_stride: 1,
        src_stride: 3,
    };
    // SAFETY: `back` holds the 5 u32s of the destination span.
    unsafe { w[0].iget(Order::Now, 1, back.as_mut_ptr().cast(), SymAddr(64), shape) }.unwrap();
    assert_eq!(back, [100, 102, 104, 106, 108]);
    // 16-byte elements too.
    let src16 = [1u128, 2, 3];
    let shape = Strided {
        elem_size: 16,
        nelems: 3,
        dst_stride: 2,
        src_stride: 1,
    };
    // SAFETY: `src16` holds the 3 elements of the source span.
    unsafe { w[1].iput(Order::Now, 0, SymAddr(256), src16.as_ptr().cast(), shape) }.unwrap();
    assert_eq!(get(&w[1], 0, 256 + 32, 16).unwrap(), 2u128.to_ne_bytes());
}

#[test]
fn p_and_g_at_every_width() {
    let w = world(2, cfg());
    let v = 0x1122_3344_5566_7788u64;
    for (i, width) in [Width::W1, Width::W2, Width::W4, Width::W8]
        .into_iter()
        .enumerate()
    {
        let at = 64 + 16 * i as u64;
        w[0].p(Order::Now, 1, SymAddr(at), Scalar { bits: v, width })
            .unwrap();
        assert_eq!(
            w[0].g(Order::Now, 1, SymAddr(at), width).unwrap(),
            v & width.mask()
        );
        assert_eq!(
            w[1].g(Order::Now, 1, SymAddr(at), width).unwrap(),
            v & width.mask()
        );
        // Only `width` bytes were stored.
        let after = get(&w[1], 1, at + width.bytes() as u64, 1).unwrap();
        assert_eq!(after, [0], "{width:?}");
    }
}

#[test]
fn put_signal_set_publishes_the_data() {
    let w = world(2, cfg());
    let data = pattern(9, 5000);
    on_all(&w, |t| {
        if t.my_pe() == 0 {
            // SAFETY: `data` outlives the blocking call.
            unsafe {
                t.put_signal(
                    Order::Now,
                    1,
                    SymAddr(4096),
                    data.as_ptr(),
                    data.len(),
                    SymAddr(8),
                    1,
                    SignalOp::Set,
                )
            }
            .unwrap();
        } else {
            t.wait_until(Order::Now, SymAddr(8), WaitKind::SIGNAL, Cmp::Eq, 1)
                .unwrap();
            assert_eq!(get(t, 1, 4096, 5000).unwrap(), data);
        }
    });
}

#[test]
fn put_signal_add_from_two_pes_publishes_both() {
    let w = world(3, cfg());
    on_all(&w, |t| match t.my_pe() {
        1 => {
            t.wait_until(Order::Now, SymAddr(0), WaitKind::SIGNAL, Cmp::Ge, 20)
                .unwrap();
            assert_eq!(get(t, 1, 1024, 1000).unwrap(), pattern(0, 1000));
            assert_eq!(get(t, 1, 2048, 1000).unwrap(), pattern(2, 1000));
            assert_eq!(t.signal_fetch(SymAddr(0)).unwrap(), 20);
        }
        me => {
            let data = pattern(me, 1000);
            let at = if me == 0 { 1024 } else { 2048 };
            // SAFETY: `data` outlives the blocking call.
            unsafe {
                t.put_signal(
                    Order::Now,
                    1,
                    SymAddr(at),
                    data.as_ptr(),
                    1000,
                    SymAddr(0),
                    10,
                    SignalOp::Add,
                )
            }
            .unwrap();
        }
    });
}

#[test]
fn signal_op_set_add_and_fetch() {
    let w = world(2, cfg());
    w[0].signal_op(Order::Now, 1, SymAddr(16), 5, SignalOp::Set)
        .unwrap();
    w[0].signal_op(Order::Now, 1, SymAddr(16), 3, SignalOp::Add)
        .unwrap();
    assert_eq!(w[1].signal_fetch(SymAddr(16)).unwrap(), 8);
    w[1].signal_op(Order::Now, 1, SymAddr(16), 1, SignalOp::Set)
        .unwrap();
    assert_eq!(w[1].signal_fetch(SymAddr(16)).unwrap(), 1);
}

#[test]
fn put_within_own_heap_may_overlap() {
    let w = world(1, cfg());
    put(&w[0], 0, 0, b"abcdefgh").unwrap();
    let base = w[0].peer_ptr(0, SymAddr(0));
    // SAFETY: the source is bytes 0..6 of this PE's heap, valid during the call.
    unsafe { w[0].put(Order::Now, 0, SymAddr(2), base, 6) }.unwrap();
    assert_eq!(get(&w[0], 0, 0, 8).unwrap(), b"ababcdef");
}

#[test]
fn memset_local_sets_bytes() {
    let w = world(2, cfg());
    w[1].memset_local(SymAddr(10), 0xAB, 20).unwrap();
    assert_eq!(
        get(&w[0], 1, 9, 22).unwrap(),
        [&[0][..], &[0xAB; 20], &[0]].concat()
    );
}

#[test]
fn peer_ptr_is_null_for_non_lsa_pes_with_node_size() {
    let w = world(
        4,
        MockConfig {
            node_size: 2,
            ..cfg()
        },
    );
    let t = &w[2];
    assert!(t.is_lsa_peer(2) && t.is_lsa_peer(3));
    assert!(!t.is_lsa_peer(0) && !t.is_lsa_peer(1) && !t.is_lsa_peer(4));
    assert!(t.peer_ptr(0, SymAddr(0)).is_null());
    assert!(t.peer_ptr(1, SymAddr(0)).is_null());
    assert!(t.peer_ptr(4, SymAddr(0)).is_null());
    assert!(t.peer_ptr(3, SymAddr(HEAP)).is_null());
    let ptr = t.peer_ptr(3, SymAddr(8)).cast::<u64>();
    assert!(!ptr.is_null());
    // A store through the peer pointer is what PE 3 sees.
    // SAFETY: `ptr` is 8-byte aligned inside PE 3's heap, which the world keeps mapped.
    unsafe { ptr.write_volatile(77) };
    assert_eq!(g64(&w[3], 3, 8), 77);
    // Non-LSA PEs are still reachable through the mock's network.
    p64(t, 0, 8, 5);
    assert_eq!(g64(t, 0, 8), 5);
}

#[test]
fn one_node_makes_every_pe_an_lsa_peer() {
    let w = world(3, cfg());
    for pe in 0..3 {
        assert!(w[0].is_lsa_peer(pe));
        assert!(!w[0].peer_ptr(pe, SymAddr(0)).is_null());
    }
    // Heaps are distinct and page-aligned.
    let a = w[0].peer_ptr(1, SymAddr(0)) as usize;
    let b = w[0].peer_ptr(2, SymAddr(0)) as usize;
    assert!(b - a >= HEAP as usize);
    assert_eq!(a % 4096, 0);
}
