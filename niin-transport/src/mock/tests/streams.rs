//! Streams: ordering behind waits, failures reported by synchronize, `g` on a stream,
//! the default stream, unknown handles, destroy and finalize.

use super::*;
use crate::error::TransportError;
use crate::ops::{Cmp, SignalOp, StreamHandle, WaitKind};

#[test]
fn stream_put_after_a_wait_lands_only_once_the_wait_is_released() {
    let w = world(2, cfg());
    let s = w[0].stream_create().unwrap();
    let data = 7u64.to_ne_bytes();
    // On PE 0's stream: wait for PE 0's flag, then put to PE 1.
    w[0].wait_until(Order::Stream(s), SymAddr(0), WaitKind::SIGNAL, Cmp::Ge, 1)
        .unwrap();
    // SAFETY: `data` lives until after the stream is synchronized below.
    unsafe { w[0].put(Order::Stream(s), 1, SymAddr(64), data.as_ptr(), 8) }.unwrap();
    // The calls returned; the put must not have landed while the wait is unsatisfied.
    for _ in 0..20 {
        assert_eq!(g64(&w[1], 1, 64), 0, "the put overtook the wait");
        std::thread::sleep(Duration::from_millis(5));
    }
    w[1].signal_op(Order::Now, 0, SymAddr(0), 1, SignalOp::Set)
        .unwrap();
    w[0].stream_synchronize(s).unwrap();
    assert_eq!(g64(&w[1], 1, 64), 7);
    w[0].stream_destroy(s).unwrap();
}

#[test]
fn stream_failure_is_reported_by_synchronize_and_the_stream_is_usable_again() {
    let w = world(1, short(200));
    let s = w[0].stream_create().unwrap();
    w[0].wait_until(Order::Stream(s), SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap();
    // Skipped: it comes after the failed wait.
    w[0].p(
        Order::Stream(s),
        0,
        SymAddr(8),
        Scalar {
            bits: 1,
            width: Width::W8,
        },
    )
    .unwrap();
    // `g` on the failed stream answers with the failure.
    match w[0].g(Order::Stream(s), 0, SymAddr(8), Width::W8) {
        Err(TransportError::StreamFailed { stream, cause }) => {
            assert_eq!(stream, s);
            assert!(cause.contains("wait_until"), "{cause}");
        }
        other => panic!("{other:?}"),
    }
    match w[0].stream_synchronize(s) {
        Err(TransportError::StreamFailed { stream, cause }) => {
            assert_eq!(stream, s);
            assert!(
                cause.contains("PE 0: wait_until did not complete"),
                "{cause}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        g64(&w[0], 0, 8),
        0,
        "the operation after the failure was skipped"
    );
    // Cleared: the stream runs operations again.
    w[0].p(
        Order::Stream(s),
        0,
        SymAddr(8),
        Scalar {
            bits: 2,
            width: Width::W8,
        },
    )
    .unwrap();
    w[0].stream_synchronize(s).unwrap();
    assert_eq!(g64(&w[0], 0, 8), 2);
}

#[test]
fn g_on_a_stream_runs_after_earlier_stream_work() {
    let w = world(2, cfg());
    let s = w[0].stream_create().unwrap();
    for v in 1..=50u64 {
        w[0].p(
            Order::Stream(s),
            1,
            SymAddr(0),
            Scalar {
                bits: v,
                width: Width::W8,
            },
        )
        .unwrap();
        assert_eq!(
            w[0].g(Order::Stream(s), 1, SymAddr(0), Width::W8).unwrap(),
            v
        );
    }
}

#[test]
fn default_stream_exists_from_the_start() {
    let w = world(2, cfg());
    let d = Order::Stream(StreamHandle::DEFAULT);
    w[0].p(
        d,
        1,
        SymAddr(0),
        Scalar {
            bits: 9,
            width: Width::W8,
        },
    )
    .unwrap();
    w[0].quiet(d).unwrap();
    w[0].fence(d).unwrap();
    w[0].stream_synchronize(StreamHandle::DEFAULT).unwrap();
    assert_eq!(g64(&w[1], 1, 0), 9);
    let e = w[0].stream_destroy(StreamHandle::DEFAULT);
    assert!(matches!(
        e,
        Err(TransportError::BadArgument {
            op: "stream_destroy",
            ..
        })
    ));
}

#[test]
fn unknown_streams_are_errors() {
    let w = world(2, cfg());
    let bogus = StreamHandle(99);
    assert_eq!(
        w[0].stream_synchronize(bogus),
        Err(TransportError::UnknownStream(bogus))
    );
    assert_eq!(
        w[0].stream_destroy(bogus),
        Err(TransportError::UnknownStream(bogus))
    );
    let e = w[0].p(
        Order::Stream(bogus),
        1,
        SymAddr(0),
        Scalar {
            bits: 1,
            width: Width::W8,
        },
    );
    assert_eq!(e, Err(TransportError::UnknownStream(bogus)));
    assert_eq!(
        w[0].g(Order::Stream(bogus), 1, SymAddr(0), Width::W8),
        Err(TransportError::UnknownStream(bogus))
    );
    let s = w[0].stream_create().unwrap();
    w[0].stream_destroy(s).unwrap();
    assert_eq!(
        w[0].stream_synchronize(s),
        Err(TransportError::UnknownStream(s))
    );
    // Another PE's stream is not this PE's.
    let s1 = w[1].stream_create().unwrap();
    let s0 = w[0].stream_create().unwrap();
    assert_ne!(s0, StreamHandle::DEFAULT);
    w[1].stream_synchronize(s1).unwrap();
}

#[test]
fn stream_arguments_are_checked_at_the_enqueue() {
    let w = world(2, cfg());
    let s = Order::Stream(w[0].stream_create().unwrap());
    let e = w[0].p(
        s,
        5,
        SymAddr(0),
        Scalar {
            bits: 1,
            width: Width::W8,
        },
    );
    assert_eq!(e, Err(TransportError::PeOutOfRange { pe: 5, n_pes: 2 }));
    let data = [0u8; 16];
    // SAFETY: `data` is live; the call fails before enqueuing anything.
    let e = unsafe { w[0].put(s, 1, SymAddr(HEAP - 8), data.as_ptr(), 16) };
    assert!(matches!(e, Err(TransportError::OutOfHeap { .. })));
    let e = w[0].wait_until(s, SymAddr(3), WaitKind::SIGNAL, Cmp::Eq, 0);
    assert!(matches!(e, Err(TransportError::Misaligned { .. })));
}

#[test]
fn stream_barriers_and_signals_between_pes() {
    let w = world(3, cfg());
    on_all(&w, |t| {
        let s = t.stream_create().unwrap();
        let me = t.my_pe();
        let next = (me + 1) % 3;
        for round in 1..=20u64 {
            t.signal_op(Order::Stream(s), next, SymAddr(0), 1, SignalOp::Add)
                .unwrap();
            t.barrier(Order::Stream(s), world_team(3)).unwrap();
            // GE, not EQ: the previous PE may leave this round's barrier first and add
            // the next round's signal before this PE looks, as it could on a GPU.
            let sig = SymAddr(0);
            t.wait_until(Order::Stream(s), sig, WaitKind::SIGNAL, Cmp::Ge, round)
                .unwrap();
        }
        t.stream_synchronize(s).unwrap();
        assert_eq!(t.signal_fetch(SymAddr(0)).unwrap(), 20);
        t.stream_destroy(s).unwrap();
    });
}

#[test]
fn finalize_drains_the_streams() {
    let w = world(2, cfg());
    let s = w[0].stream_create().unwrap();
    for v in 1..=100u64 {
        w[0].p(
            Order::Stream(s),
            1,
            SymAddr(0),
            Scalar {
                bits: v,
                width: Width::W8,
            },
        )
        .unwrap();
    }
    w[0].p(
        Order::Stream(StreamHandle::DEFAULT),
        1,
        SymAddr(8),
        Scalar {
            bits: 5,
            width: Width::W8,
        },
    )
    .unwrap();
    w[0].finalize().unwrap();
    assert_eq!(g64(&w[1], 1, 0), 100);
    assert_eq!(g64(&w[1], 1, 8), 5);
}

#[test]
fn finalize_reports_a_stream_failure_nobody_synchronized() {
    let w = world(1, short(100));
    let s = w[0].stream_create().unwrap();
    w[0].wait_until(Order::Stream(s), SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap();
    assert!(matches!(
        w[0].finalize(),
        Err(TransportError::StreamFailed { .. })
    ));
    assert_eq!(w[0].finalize(), Ok(()));
}
