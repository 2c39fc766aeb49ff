//! Remote atomics: every operation at both widths, contention, bad input.

use super::*;
use crate::error::TransportError;
use crate::ops::AmoOp;

#[test]
fn every_amo_op_at_4_and_8_bytes() {
    let w = world(2, cfg());
    for width in [Width::W4, Width::W8] {
        for op in AmoOp::ALL {
            for (start, operand, compare) in
                [(5u64, 3u64, 5u64), (0xF0F0, 0x0FF0, 7), (u64::MAX, 2, 0)]
            {
                let start = start & width.mask();
                let at = SymAddr(8);
                w[1].p(Order::Now, 1, at, Scalar { bits: start, width })
                    .unwrap();
                let got = w[0].atomic(1, at, op, width, operand, compare).unwrap();
                let now = w[1].g(Order::Now, 1, at, width).unwrap();
                assert_eq!(
                    now,
                    op.apply(start, operand, compare, width),
                    "{op:?} {width:?} {start:#x}"
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

#[test]
fn atomic_contention_is_exact() {
    const N: usize = 8;
    const M: u64 = 2000;
    let w = world(N, cfg());
    let fetched = on_all(&w, |t| {
        let mut mine = Vec::with_capacity(M as usize);
        for _ in 0..M {
            mine.push(
                t.atomic(0, SymAddr(0), AmoOp::FetchAdd, Width::W8, 1, 0)
                    .unwrap(),
            );
            t.atomic(0, SymAddr(64), AmoOp::Inc, Width::W4, 0, 0)
                .unwrap();
        }
        mine
    });
    assert_eq!(g64(&w[0], 0, 0), N as u64 * M);
    assert_eq!(
        w[0].g(Order::Now, 0, SymAddr(64), Width::W4).unwrap(),
        N as u64 * M
    );
    // Every old value was handed out exactly once.
    let mut all: Vec<u64> = fetched.into_iter().flatten().collect();
    all.sort_unstable();
    assert!(all.iter().copied().eq(0..N as u64 * M));
}

#[test]
fn compare_swap_contention_builds_a_correct_counter() {
    const N: usize = 4;
    let w = world(N, cfg());
    on_all(&w, |t| {
        for _ in 0..500 {
            let mut seen = t
                .atomic(1, SymAddr(0), AmoOp::Fetch, Width::W4, 0, 0)
                .unwrap();
            loop {
                let old = t
                    .atomic(1, SymAddr(0), AmoOp::CompareSwap, Width::W4, seen + 1, seen)
                    .unwrap();
                if old == seen {
                    break;
                }
                seen = old;
            }
        }
    });
    assert_eq!(
        w[1].g(Order::Now, 1, SymAddr(0), Width::W4).unwrap(),
        N as u64 * 500
    );
}

#[test]
fn atomic_rejects_bad_width_and_misalignment() {
    let w = world(2, cfg());
    for width in [Width::W1, Width::W2] {
        let e = w[0].atomic(1, SymAddr(0), AmoOp::Add, width, 1, 0);
        assert_eq!(
            e,
            Err(TransportError::BadWidth {
                op: "atomic",
                bytes: width.bytes()
            })
        );
    }
    let e = w[0].atomic(1, SymAddr(4), AmoOp::Add, Width::W8, 1, 0);
    assert_eq!(
        e,
        Err(TransportError::Misaligned {
            offset: 4,
            align: 8
        })
    );
    let e = w[0].atomic(1, SymAddr(2), AmoOp::Add, Width::W4, 1, 0);
    assert_eq!(
        e,
        Err(TransportError::Misaligned {
            offset: 2,
            align: 4
        })
    );
    let e = w[0].atomic(2, SymAddr(0), AmoOp::Add, Width::W4, 1, 0);
    assert_eq!(e, Err(TransportError::PeOutOfRange { pe: 2, n_pes: 2 }));
    let e = w[0].atomic(1, SymAddr(HEAP - 4), AmoOp::Add, Width::W8, 1, 0);
    assert!(matches!(e, Err(TransportError::OutOfHeap { .. })));
}
