//! Steady-state cost of one allocation plus one free with 1_000, 10_000 and 100_000 live
//! blocks already in the heap, to show that it grows like O(log n).
//!
//! Setup (not timed) for each n: allocate 2n blocks of 256 B..4 KiB (fixed-seed
//! xorshift sizes), then free a pseudo-random half of them, leaving n live blocks
//! interleaved with ~n/2 free holes of assorted sizes, so the free tree is large and
//! first fit has to search it.
//!
//! * `pair/n`: `malloc(s)` then `free` of that block — the heap returns to exactly the
//!   same state after each iteration (free re-coalesces the split), so every iteration
//!   measures the same steady state. `s` cycles through a fixed table of 256 B..4 KiB.
//! * `churn/n`: `free` of a pseudo-random live block, then `malloc(s)` of a fresh
//!   pseudo-random size; the live count stays n while the layout keeps changing.
//!
//! Time budget: 6 benchmarks × (0.5 s warm-up + 3 s measurement) ≈ 25 s.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use niin_heap::SymmetricHeap;

/// Live-block counts to measure at.
const LIVE: [usize; 3] = [1_000, 10_000, 100_000];

/// Deterministic xorshift64 generator (fixed seed: the bench is reproducible).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A request size in 256 B..=4 KiB (not necessarily a multiple of 256).
    fn size(&mut self) -> u64 {
        256 + self.next() % (4096 - 256 + 1)
    }
}

/// A heap with `n` live blocks interleaved with free holes; returns it and the live
/// offsets.
fn fragmented_heap(n: usize, rng: &mut XorShift) -> (SymmetricHeap, Vec<u64>) {
    // 2n blocks of at most 4 KiB, with 2x headroom: churn never runs out of memory.
    let mut heap = SymmetricHeap::new(2 * n as u64 * 4096 * 2).expect("heap");
    let mut all = Vec::with_capacity(2 * n);
    for _ in 0..2 * n {
        let b = heap
            .malloc(rng.size())
            .expect("setup malloc")
            .expect("block");
        all.push(b.offset);
    }
    // Fisher-Yates shuffle, then free the first half.
    for i in (1..all.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        all.swap(i, j);
    }
    for &o in &all[..n] {
        heap.free(o).expect("setup free");
    }
    let live = all[n..].to_vec();
    assert_eq!(heap.stats().live_blocks, n);
    (heap, live)
}

fn bench_pair(c: &mut Criterion) {
    let mut group = c.benchmark_group("pair");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    for n in LIVE {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ n as u64);
        let (mut heap, _) = fragmented_heap(n, &mut rng);
        let sizes: Vec<u64> = (0..1024).map(|_| rng.size()).collect();
        let stats = heap.stats();
        let mut k = 0;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let s = sizes[k & 1023];
                k += 1;
                let block = heap.malloc(black_box(s)).expect("malloc").expect("block");
                black_box(heap.free(block.offset).expect("free"))
            });
        });
        assert_eq!(heap.stats(), stats, "pair must leave the heap unchanged");
    }
    group.finish();
}

fn bench_churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("churn");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    for n in LIVE {
        let mut rng = XorShift(0xd1b5_4a32_d192_ed03 ^ n as u64);
        let (mut heap, mut live) = fragmented_heap(n, &mut rng);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let i = (rng.next() % live.len() as u64) as usize;
                heap.free(black_box(live[i])).expect("free");
                let block = heap.malloc(rng.size()).expect("malloc").expect("block");
                live[i] = block.offset;
            });
        });
        assert_eq!(heap.stats().live_blocks, n);
    }
    group.finish();
}

criterion_group!(benches, bench_pair, bench_churn);
criterion_main!(benches);
