//! Bad input never touches memory: PEs out of range, ranges past the heap, offset
//! overflow, misalignment, null buffers, use after finalize, bad configurations.

use super::*;
use crate::error::TransportError;
use crate::ops::{AmoOp, Cmp, SignalOp, StreamHandle, Strided, WaitKind};

#[test]
fn pe_out_of_range_for_every_targeted_operation() {
    let w = world(2, cfg());
    let t = &w[0];
    let oor = Err(TransportError::PeOutOfRange { pe: 2, n_pes: 2 });
    let mut buf = [0u8; 8];
    assert_eq!(put(t, 2, 0, &buf), oor);
    // SAFETY: `buf` is a live 8-byte buffer.
    let got = unsafe { t.get(Order::Now, 2, buf.as_mut_ptr(), SymAddr(0), 8) };
    assert_eq!(got, oor);
    assert_eq!(
        t.p(
            Order::Now,
            2,
            SymAddr(0),
            Scalar {
                bits: 0,
                width: Width::W1
            }
        ),
        oor
    );
    assert_eq!(t.g(Order::Now, 2, SymAddr(0), Width::W1).map(|_| ()), oor);
    assert_eq!(
        t.signal_op(Order::Now, 2, SymAddr(0), 1, SignalOp::Set),
        oor
    );
    assert_eq!(
        t.atomic(2, SymAddr(0), AmoOp::Inc, Width::W8, 0, 0)
            .map(|_| ()),
        oor
    );
    let shape = Strided {
        elem_size: 1,
        nelems: 1,
        dst_stride: 1,
        src_stride: 1,
    };
    // SAFETY: `buf` is a live 8-byte buffer.
    let e = unsafe { t.iput(Order::Now, usize::MAX, SymAddr(0), buf.as_ptr(), shape) };
    assert!(matches!(e, Err(TransportError::PeOutOfRange { .. })));
    assert!(!t.is_lsa_peer(2));
    assert!(t.peer_ptr(2, SymAddr(0)).is_null());
}

#[test]
fn ranges_past_the_heap_end_and_offset_overflow() {
    let w = world(2, cfg());
    let t = &w[0];
    let data = [1u8; 16];
    assert_eq!(
        put(t, 1, HEAP - 8, &data),
        Err(TransportError::OutOfHeap {
            offset: HEAP - 8,
            len: 16,
            heap_size: HEAP
        })
    );
    assert_eq!(
        put(t, 1, u64::MAX - 3, &data),
        Err(TransportError::OutOfHeap {
            offset: u64::MAX - 3,
            len: 16,
            heap_size: HEAP
        })
    );
    assert!(matches!(
        get(t, 1, HEAP, 1),
        Err(TransportError::OutOfHeap { .. })
    ));
    assert!(matches!(
        t.memset_local(SymAddr(HEAP - 1), 0, 2),
        Err(TransportError::OutOfHeap { .. })
    ));
    let e = t.g(Order::Now, 1, SymAddr(u64::MAX - 7), Width::W8);
    assert!(matches!(e, Err(TransportError::OutOfHeap { .. })));
    // A strided span past the end: 3 elements of 8 bytes at stride 4 span 72 bytes.
    let shape = Strided {
        elem_size: 8,
        nelems: 3,
        dst_stride: 4,
        src_stride: 1,
    };
    let src = [0u64; 3];
    // SAFETY: `src` holds the 3 source elements.
    let e = unsafe {
        t.iput(
            Order::Now,
            1,
            SymAddr(HEAP - 64),
            src.as_ptr().cast(),
            shape,
        )
    };
    assert_eq!(
        e,
        Err(TransportError::OutOfHeap {
            offset: HEAP - 64,
            len: 72,
            heap_size: HEAP
        })
    );
    // A signal word past the end, even with valid data.
    // SAFETY: `data` is live.
    let e = unsafe {
        t.put_signal(
            Order::Now,
            1,
            SymAddr(0),
            data.as_ptr(),
            16,
            SymAddr(HEAP),
            1,
            SignalOp::Set,
        )
    };
    assert!(matches!(e, Err(TransportError::OutOfHeap { .. })));
    // Nothing was written.
    assert_eq!(get(t, 1, 0, 16).unwrap(), [0; 16]);
}

#[test]
fn misaligned_scalars_and_signals() {
    let w = world(2, cfg());
    let t = &w[0];
    for (at, width) in [(1, Width::W2), (2, Width::W4), (4, Width::W8)] {
        let e = t.p(Order::Now, 1, SymAddr(at), Scalar { bits: 0, width });
        assert_eq!(
            e,
            Err(TransportError::Misaligned {
                offset: at,
                align: width.bytes()
            })
        );
        assert!(t.g(Order::Now, 1, SymAddr(at), width).is_err());
    }
    assert!(
        t.p(
            Order::Now,
            1,
            SymAddr(3),
            Scalar {
                bits: 0,
                width: Width::W1
            }
        )
        .is_ok()
    );
    let e = t.signal_op(Order::Now, 1, SymAddr(12), 1, SignalOp::Add);
    assert_eq!(
        e,
        Err(TransportError::Misaligned {
            offset: 12,
            align: 8
        })
    );
    assert!(matches!(
        t.signal_fetch(SymAddr(1)),
        Err(TransportError::Misaligned { .. })
    ));
}

#[test]
fn bad_strided_shapes_and_null_buffers() {
    let w = world(2, cfg());
    let t = &w[0];
    let src = [0u8; 64];
    let shape = Strided {
        elem_size: 3,
        nelems: 2,
        dst_stride: 1,
        src_stride: 1,
    };
    // SAFETY: `src` is live; the calls fail before touching it.
    let e = unsafe { t.iput(Order::Now, 1, SymAddr(0), src.as_ptr(), shape) };
    assert_eq!(
        e,
        Err(TransportError::BadWidth {
            op: "iput",
            bytes: 3
        })
    );
    let shape = Strided {
        elem_size: 4,
        nelems: 2,
        dst_stride: 0,
        src_stride: 1,
    };
    // SAFETY: as above.
    let e = unsafe { t.iput(Order::Now, 1, SymAddr(0), src.as_ptr(), shape) };
    assert!(matches!(
        e,
        Err(TransportError::BadArgument { op: "iput", .. })
    ));
    // SAFETY: a null pointer is refused before any access.
    let e = unsafe { t.put(Order::Now, 1, SymAddr(0), std::ptr::null(), 8) };
    assert!(matches!(
        e,
        Err(TransportError::BadArgument { op: "put", .. })
    ));
    // SAFETY: as above.
    let e = unsafe { t.get(Order::Now, 1, std::ptr::null_mut(), SymAddr(0), 8) };
    assert!(matches!(
        e,
        Err(TransportError::BadArgument { op: "get", .. })
    ));
}

#[test]
fn every_call_after_finalize_is_finalized() {
    let w = world(2, cfg());
    let t = &w[0];
    let s = t.stream_create().unwrap();
    t.finalize().unwrap();
    let fin = TransportError::Finalized { pe: 0 };
    let data = [0u8; 8];
    let mut buf = [0u8; 8];
    let shape = Strided {
        elem_size: 1,
        nelems: 1,
        dst_stride: 1,
        src_stride: 1,
    };
    let sc = Scalar {
        bits: 1,
        width: Width::W8,
    };
    let k = WaitKind::SIGNAL;
    let (src, dst) = (data.as_ptr(), buf.as_mut_ptr());
    let unsafe_results = [
        // SAFETY: the buffers are live; every call fails before touching them.
        unsafe { t.put(Order::Now, 1, SymAddr(0), src, 8) },
        // SAFETY: as above.
        unsafe { t.get(Order::Now, 1, dst, SymAddr(0), 8) },
        // SAFETY: as above.
        unsafe { t.iput(Order::Now, 1, SymAddr(0), src, shape) },
        // SAFETY: as above.
        unsafe { t.iget(Order::Now, 1, dst, SymAddr(0), shape) },
        // SAFETY: as above.
        unsafe {
            t.put_signal(
                Order::Now,
                1,
                SymAddr(0),
                src,
                8,
                SymAddr(8),
                1,
                SignalOp::Set,
            )
        },
    ];
    let results = [
        t.stream_create().map(|_| ()),
        t.stream_synchronize(s),
        t.stream_destroy(s),
        t.p(Order::Now, 1, SymAddr(0), sc),
        t.g(Order::Now, 1, SymAddr(0), Width::W8).map(|_| ()),
        t.signal_op(Order::Now, 1, SymAddr(0), 1, SignalOp::Set),
        t.signal_fetch(SymAddr(0)).map(|_| ()),
        t.wait_until(Order::Now, SymAddr(0), k, Cmp::Eq, 0),
        t.wait_until_all(Order::Now, SymAddr(0), 1, k, None, Cmp::Eq, 0),
        t.wait_until_all_vector(Order::Now, SymAddr(0), k, None, Cmp::Eq, &[0]),
        t.atomic(1, SymAddr(0), AmoOp::Inc, Width::W8, 0, 0)
            .map(|_| ()),
        t.fence(Order::Now),
        t.quiet(Order::Stream(StreamHandle::DEFAULT)),
        t.barrier(Order::Now, world_team(2)),
        t.memset_local(SymAddr(0), 0, 1),
    ];
    for (i, r) in unsafe_results.into_iter().chain(results).enumerate() {
        assert_eq!(r, Err(fin.clone()), "call {i}");
    }
    assert!(t.peer_ptr(1, SymAddr(0)).is_null());
    // Finalizing again is fine; the PE's identity is still known.
    assert_eq!(t.finalize(), Ok(()));
    assert_eq!((t.my_pe(), t.n_pes(), t.heap_size()), (0, 2, HEAP));
    assert!(fin.to_string().contains("PE 0"));
}

#[test]
fn bad_world_configurations_are_errors() {
    assert!(MockWorld::new(0, cfg()).is_err());
    assert!(
        MockWorld::new(
            2,
            MockConfig {
                heap_size: 0,
                ..cfg()
            }
        )
        .is_err()
    );
    assert!(
        MockWorld::new(
            2,
            MockConfig {
                node_size: 0,
                ..cfg()
            }
        )
        .is_err()
    );
    assert!(
        MockWorld::new(
            1 << 20,
            MockConfig {
                heap_size: u64::MAX / 4,
                ..cfg()
            }
        )
        .is_err()
    );
}

#[test]
fn transports_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<MockTransport>();
    check::<crate::AnyTransport>();
    check::<crate::Routed>();
}
