//! Property tests: random call sequences against the reference [`Model`].

use proptest::prelude::*;

use super::model::Model;
use crate::{Block, DEFAULT_ALIGNMENT, HeapError, SymmetricHeap};

/// One generated call.
#[derive(Clone, Debug)]
enum Op {
    /// `malloc(size)`.
    Malloc(u64),
    /// `calloc(count, size)`.
    Calloc(u64, u64),
    /// `align(alignment, size)`.
    Align(u64, u64),
    /// `free` of the live block selected by this index (modulo the live count).
    FreeLive(usize),
    /// `free` of an arbitrary offset (reduced modulo twice the heap size).
    FreeAny(u64),
}

/// Request sizes: mostly small, some zero, some huge.
fn size_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 1u64..=4096,
        3 => 1u64..=65_536,
        1 => Just(0u64),
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// Alignments: mostly powers of two up to 64 KiB, some invalid or huge.
fn alignment_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => (0u32..=16).prop_map(|s| 1u64 << s),
        1 => Just(1u64 << 63),
        1 => Just(0u64),
        1 => 1u64..=70_000,
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => size_strategy().prop_map(Op::Malloc),
        1 => (0u64..=64, 0u64..=2048).prop_map(|(c, s)| Op::Calloc(c, s)),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(c, s)| Op::Calloc(c, s)),
        3 => (alignment_strategy(), size_strategy()).prop_map(|(a, s)| Op::Align(a, s)),
        6 => any::<usize>().prop_map(Op::FreeLive),
        1 => any::<u64>().prop_map(Op::FreeAny),
    ]
}

/// What one call returned, for replay comparison.
type Outcome = Result<Option<Block>, HeapError>;

/// Runs `ops` on a fresh heap and model, checking agreement and invariants after every
/// call. Returns the heap and the outcomes.
fn run(size: u64, ops: &[Op]) -> Result<(SymmetricHeap, Vec<Outcome>), TestCaseError> {
    let mut heap = SymmetricHeap::new(size).unwrap();
    let mut model = Model::new(size);
    let mut outcomes = Vec::with_capacity(ops.len());
    for op in ops {
        let (got, want, alignment) = match *op {
            Op::Malloc(s) => (heap.malloc(s), model.alloc(1, s, DEFAULT_ALIGNMENT), 1),
            Op::Calloc(c, s) => (heap.calloc(c, s), model.alloc(c, s, DEFAULT_ALIGNMENT), 1),
            Op::Align(a, s) => {
                let want = if a.is_power_of_two() {
                    model.alloc(1, s, a)
                } else {
                    Err(HeapError::BadAlignment { alignment: a })
                };
                (heap.align(a, s), want, a)
            }
            Op::FreeLive(i) => {
                let offset = if model.live.is_empty() {
                    0
                } else {
                    model.live[i % model.live.len()].0
                };
                (heap.free(offset).map(Some), model.free(offset).map(Some), 1)
            }
            Op::FreeAny(x) => {
                let offset = x % (2 * heap.size());
                (heap.free(offset).map(Some), model.free(offset).map(Some), 1)
            }
        };
        prop_assert_eq!(&got, &want, "op {:?}", op);
        if let Ok(Some(b)) = &got {
            prop_assert!(b.offset % alignment.max(DEFAULT_ALIGNMENT) == 0);
            prop_assert!(b.len % DEFAULT_ALIGNMENT == 0 && b.len > 0);
            prop_assert!(b.offset + b.len <= heap.size());
        }
        outcomes.push(got);

        if let Err(msg) = heap.check() {
            return Err(TestCaseError::fail(msg));
        }
        let live: Vec<(u64, u64)> = heap.live_blocks().map(|b| (b.offset, b.len)).collect();
        prop_assert_eq!(&live, &model.live);
        let free: Vec<(u64, u64)> = heap
            .free_blocks()
            .iter()
            .map(|b| (b.offset, b.len))
            .collect();
        prop_assert_eq!(&free, &model.free);
        let st = heap.stats();
        prop_assert_eq!(st.size, model.size);
        prop_assert_eq!(st.used, model.live.iter().map(|b| b.1).sum::<u64>());
        prop_assert_eq!(st.used + st.free, st.size);
        prop_assert_eq!(st.largest_free, model.largest());
        prop_assert_eq!(st.live_blocks, model.live.len());
        prop_assert_eq!(st.free_blocks, model.free.len());
    }
    Ok((heap, outcomes))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Offsets equal the reference model's (aligned placement included), no overlap,
    /// all in bounds, alignment honoured, stats consistent, full coalescing at the end,
    /// and replay gives the same outcomes and fingerprint.
    #[test]
    fn prop_matches_reference_model(
        size in prop_oneof![(1u64..=256).prop_map(|k| k * 1024), 256u64..=300_000],
        ops in prop::collection::vec(op_strategy(), 1..200),
    ) {
        let (mut heap, outcomes) = run(size, &ops)?;

        // Determinism: replaying the same sequence gives the same outcomes and digest.
        let (replay, replay_outcomes) = run(size, &ops)?;
        prop_assert_eq!(&outcomes, &replay_outcomes);
        prop_assert_eq!(heap.fingerprint(), replay.fingerprint());
        prop_assert_eq!(heap.fingerprint().ops, ops.len() as u64);

        // Freeing everything coalesces back to one block of the whole size.
        // Odd-indexed blocks first, then even-indexed ones: the second pass coalesces
        // with neighbours on both sides.
        let live: Vec<u64> = heap.live_blocks().map(|b| b.offset).collect();
        for parity in [1, 0] {
            for (k, &o) in live.iter().enumerate() {
                if k % 2 == parity {
                    prop_assert!(heap.free(o).is_ok());
                }
            }
        }
        let st = heap.stats();
        prop_assert_eq!(st.live_blocks, 0);
        prop_assert_eq!(st.free_blocks, 1);
        prop_assert_eq!(st.largest_free, heap.size());
        prop_assert_eq!(st.used, 0);
        if let Err(msg) = heap.check() {
            return Err(TestCaseError::fail(msg));
        }
    }
}
