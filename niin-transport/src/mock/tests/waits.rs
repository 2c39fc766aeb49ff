//! Point-to-point waits: every comparison and kind, arrays with and without status,
//! vectors, timeouts and gone peers.

use std::time::Instant;

use super::*;
use crate::error::{Departure, TransportError};
use crate::ops::{Cmp, WaitKind};

const KINDS: [WaitKind; 6] = [
    WaitKind {
        width: Width::W2,
        signed: true,
    },
    WaitKind {
        width: Width::W2,
        signed: false,
    },
    WaitKind {
        width: Width::W4,
        signed: true,
    },
    WaitKind {
        width: Width::W4,
        signed: false,
    },
    WaitKind {
        width: Width::W8,
        signed: true,
    },
    WaitKind {
        width: Width::W8,
        signed: false,
    },
];

/// `(start, target, value)`: `start cmp value` does not hold, `target cmp value` does.
fn case(kind: WaitKind, cmp: Cmp) -> (u64, u64, u64) {
    let vals: Vec<u64> = [-2i64, -1, 0, 1, 2]
        .iter()
        .map(|&v| v as u64 & kind.width.mask())
        .collect();
    for &value in &vals {
        for &start in &vals {
            for &target in &vals {
                if !kind.holds(start, cmp, value) && kind.holds(target, cmp, value) {
                    return (start, target, value);
                }
            }
        }
    }
    unreachable!("every comparison has a failing and a holding value")
}

#[test]
fn wait_until_every_cmp_and_kind() {
    let w = world(2, cfg());
    for kind in KINDS {
        for cmp in Cmp::ALL {
            let (start, target, value) = case(kind, cmp);
            let at = SymAddr(64);
            let scalar = |bits| Scalar {
                bits,
                width: kind.width,
            };
            w[0].p(Order::Now, 0, at, scalar(start)).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(3));
                    w[1].p(Order::Now, 0, at, scalar(target)).unwrap();
                });
                w[0].wait_until(Order::Now, at, kind, cmp, value).unwrap();
                // It returned because of the write, not before it.
                let now = w[0].g(Order::Now, 0, at, kind.width).unwrap();
                assert!(kind.holds(now, cmp, value), "{kind:?} {cmp:?}: {now:#x}");
            });
            // Holding already: returns at once.
            w[0].wait_until(Order::Now, at, kind, cmp, value).unwrap();
        }
    }
}

#[test]
fn wait_until_distinguishes_signed_and_unsigned() {
    let w = world(1, short(200));
    w[0].p(
        Order::Now,
        0,
        SymAddr(0),
        Scalar {
            bits: 0xFFFF,
            width: Width::W2,
        },
    )
    .unwrap();
    let s16 = WaitKind {
        width: Width::W2,
        signed: true,
    };
    let u16 = WaitKind {
        width: Width::W2,
        signed: false,
    };
    w[0].wait_until(Order::Now, SymAddr(0), s16, Cmp::Lt, 0)
        .unwrap();
    w[0].wait_until(Order::Now, SymAddr(0), u16, Cmp::Gt, 0)
        .unwrap();
    let e = w[0]
        .wait_until(Order::Now, SymAddr(0), u16, Cmp::Lt, 0)
        .unwrap_err();
    assert!(matches!(e, TransportError::Timeout { .. }), "{e}");
}

#[test]
fn wait_until_all_without_status_waits_for_every_word() {
    let w = world(2, cfg());
    let kind = WaitKind {
        width: Width::W4,
        signed: false,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in [3u64, 0, 2, 1] {
                std::thread::sleep(Duration::from_millis(2));
                w[1].p(
                    Order::Now,
                    0,
                    SymAddr(128 + 4 * i),
                    Scalar {
                        bits: 1,
                        width: Width::W4,
                    },
                )
                .unwrap();
            }
        });
        w[0].wait_until_all(Order::Now, SymAddr(128), 4, kind, None, Cmp::Eq, 1)
            .unwrap();
        for i in 0..4 {
            assert_eq!(
                w[0].g(Order::Now, 0, SymAddr(128 + 4 * i), Width::W4)
                    .unwrap(),
                1
            );
        }
    });
}

#[test]
fn wait_until_all_skips_words_whose_status_is_set() {
    let w = world(1, short(200));
    let kind = WaitKind::SIGNAL;
    p64(&w[0], 0, 0, 1);
    p64(&w[0], 0, 16, 1);
    // Word 1 never becomes 1, but it is excluded.
    w[0].wait_until_all(
        Order::Now,
        SymAddr(0),
        3,
        kind,
        Some(&[0, 5, 0]),
        Cmp::Eq,
        1,
    )
    .unwrap();
    // All excluded, and no words: nothing to wait for.
    w[0].wait_until_all(
        Order::Now,
        SymAddr(0),
        3,
        kind,
        Some(&[1, 1, 1]),
        Cmp::Eq,
        9,
    )
    .unwrap();
    w[0].wait_until_all(Order::Now, SymAddr(0), 0, kind, None, Cmp::Eq, 9)
        .unwrap();
    // Included, it times out, naming the word.
    let e = w[0]
        .wait_until_all(Order::Now, SymAddr(0), 3, kind, None, Cmp::Eq, 1)
        .unwrap_err();
    match e {
        TransportError::Timeout {
            op: "wait_until_all",
            detail,
            ..
        } => {
            assert!(
                detail.contains("heap+0x8 (word 1 of 3, 8-byte unsigned) EQ 1, last value 0"),
                "{detail}"
            );
        }
        other => panic!("{other}"),
    }
    // A status array of the wrong length.
    let e = w[0].wait_until_all(Order::Now, SymAddr(0), 3, kind, Some(&[0]), Cmp::Eq, 1);
    assert!(matches!(
        e,
        Err(TransportError::BadArgument {
            op: "wait_until_all",
            ..
        })
    ));
}

#[test]
fn wait_until_all_vector_compares_each_word_with_its_value() {
    let w = world(2, short(200));
    let kind = WaitKind {
        width: Width::W8,
        signed: true,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(3));
            p64(&w[1], 0, 0, 10);
            p64(&w[1], 0, 8, (-3i64) as u64);
            p64(&w[1], 0, 16, 7);
        });
        let values = [10u64, (-3i64) as u64, 7];
        w[0].wait_until_all_vector(Order::Now, SymAddr(0), kind, None, Cmp::Eq, &values)
            .unwrap();
    });
    let values = [10u64, 0, 7];
    w[0].wait_until_all_vector(
        Order::Now,
        SymAddr(0),
        kind,
        Some(&[0, 1, 0]),
        Cmp::Eq,
        &values,
    )
    .unwrap();
    let e = w[0].wait_until_all_vector(Order::Now, SymAddr(0), kind, None, Cmp::Eq, &values);
    match e {
        Err(TransportError::Timeout {
            op: "wait_until_all_vector",
            detail,
            ..
        }) => {
            assert!(detail.contains("EQ 0, last value -3"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wait_timeout_names_pe_op_and_what_it_waited_for() {
    let w = world(2, short(200));
    p64(&w[1], 1, 0x100, 3);
    let t = Instant::now();
    let e = w[1]
        .wait_until(Order::Now, SymAddr(0x100), WaitKind::SIGNAL, Cmp::Ge, 5)
        .unwrap_err();
    assert!(t.elapsed() >= Duration::from_millis(200));
    match &e {
        TransportError::Timeout {
            pe: 1,
            op: "wait_until",
            waited,
            detail,
        } => {
            assert!(*waited >= Duration::from_millis(200));
            assert_eq!(detail, "heap+0x100 (8-byte unsigned) GE 5, last value 3");
        }
        other => panic!("{other}"),
    }
    assert!(
        e.to_string().contains("PE 1: wait_until did not complete"),
        "{e}"
    );
}

#[test]
fn wait_fails_with_peer_gone_when_every_other_pe_finalized() {
    let mut w = world(2, cfg());
    w.pop().unwrap().finalize().unwrap();
    let t = Instant::now();
    let e = w[0]
        .wait_until(Order::Now, SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap_err();
    assert_eq!(
        e,
        TransportError::PeerGone {
            pe: 1,
            op: "wait_until",
            why: Departure::Finalized,
        }
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn wait_rejects_bad_width_range_and_alignment() {
    let w = world(1, cfg());
    let byte = WaitKind {
        width: Width::W1,
        signed: false,
    };
    let e = w[0].wait_until(Order::Now, SymAddr(0), byte, Cmp::Eq, 0);
    assert_eq!(
        e,
        Err(TransportError::BadWidth {
            op: "wait_until",
            bytes: 1
        })
    );
    let e = w[0].wait_until(Order::Now, SymAddr(4), WaitKind::SIGNAL, Cmp::Eq, 0);
    assert_eq!(
        e,
        Err(TransportError::Misaligned {
            offset: 4,
            align: 8
        })
    );
    let e = w[0].wait_until(Order::Now, SymAddr(HEAP), WaitKind::SIGNAL, Cmp::Eq, 0);
    assert!(matches!(e, Err(TransportError::OutOfHeap { .. })));
    let e = w[0].wait_until_all(
        Order::Now,
        SymAddr(0),
        usize::MAX,
        WaitKind::SIGNAL,
        None,
        Cmp::Eq,
        0,
    );
    assert!(e.is_err());
}

/// The `_on_stream` forms read their status and value arrays when the stream reaches the
/// wait: arrays changed after the call (before the stream got there) are the ones used.
#[test]
fn deferred_waits_read_their_arrays_when_the_stream_gets_there() {
    use crate::ops::{DeferredWait, SignalOp, StreamHandle};
    let w = world(1, short(2_000));
    let s: StreamHandle = w[0].stream_create().unwrap();
    let kind = WaitKind {
        width: Width::W4,
        signed: true,
    };
    // Words 0..3 at heap+256 (4 bytes each): 5, 0, 7. A gate at heap+0 holds the stream.
    for (i, v) in [5u64, 0, 7].into_iter().enumerate() {
        w[0].p(
            Order::Now,
            0,
            SymAddr(256 + 4 * i as u64),
            Scalar {
                bits: v,
                width: Width::W4,
            },
        )
        .unwrap();
    }
    w[0].wait_until(Order::Stream(s), SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap();
    // At the call: word 1 (0) is not excluded and its value 9 is never reached.
    let mut status = vec![0i32, 0, 0];
    let status_ptr = status.as_mut_ptr();
    let values = vec![5i32, 9, 7];
    let arrays = DeferredWait {
        status: status_ptr as u64,
        values: values.as_ptr() as u64,
        value: 0,
    };
    // SAFETY: both arrays live until after the stream is synchronized below, and are
    // changed only before the gate opens (the stream has not read them yet).
    unsafe { w[0].wait_until_all_deferred(s, SymAddr(256), 3, kind, Cmp::Eq, arrays) }.unwrap();
    // Changed before the stream gets there: word 1 excluded.
    let word1 = status_ptr.wrapping_add(1);
    // SAFETY: the stream is held at the gate, so nothing reads the array now.
    unsafe { word1.write_volatile(1) };
    w[0].signal_op(Order::Now, 0, SymAddr(0), 1, SignalOp::Set)
        .unwrap();
    w[0].stream_synchronize(s).unwrap();

    // Read at run time too: values changed to what words 0 and 2 are not makes it time out,
    // naming the word.
    let w2 = world(1, short(200));
    let s2 = w2[0].stream_create().unwrap();
    w2[0]
        .p(
            Order::Now,
            0,
            SymAddr(256),
            Scalar {
                bits: 5,
                width: Width::W4,
            },
        )
        .unwrap();
    w2[0]
        .wait_until(Order::Stream(s2), SymAddr(0), WaitKind::SIGNAL, Cmp::Eq, 1)
        .unwrap();
    let mut values2 = vec![5i32];
    let values2_ptr = values2.as_mut_ptr();
    let arrays2 = DeferredWait {
        status: 0,
        values: values2_ptr as u64,
        value: 0,
    };
    // SAFETY: as above.
    unsafe { w2[0].wait_until_all_deferred(s2, SymAddr(256), 1, kind, Cmp::Eq, arrays2) }.unwrap();
    // SAFETY: the stream is held at the gate.
    unsafe { values2_ptr.write_volatile(6) };
    w2[0]
        .signal_op(Order::Now, 0, SymAddr(0), 1, SignalOp::Set)
        .unwrap();
    let e = w2[0].stream_synchronize(s2).unwrap_err().to_string();
    assert!(
        e.contains("wait_until_all_vector") && e.contains("EQ 6"),
        "{e}"
    );
    // Misaligned arrays are refused at the call, by name.
    let bad = DeferredWait {
        status: 2,
        values: 0,
        value: 0,
    };
    // SAFETY: refused before anything is read.
    let e = unsafe { w2[0].wait_until_all_deferred(s2, SymAddr(256), 1, kind, Cmp::Eq, bad) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("status at 0x2 is not aligned"), "{e}");
    drop((status, values, values2));
}
