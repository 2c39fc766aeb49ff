//! Cost of the collective calls of a mock world whose PEs are threads of this process:
//! `barrier_all`, and `malloc` + `free` of 1 KiB, with 2 PEs (what the collective-mismatch
//! check adds to them is what this bench is for: compare runs with the check on, the
//! default, and off).
//!
//! Each sample makes a fresh 2-PE world (not timed); every PE runs the sample's iterations
//! and the bench reports PE 0's time per iteration. Run with
//! `cargo bench -p niin-api --bench mock_world`.
//!
//! On a machine of 2 cores a 2-PE barrier has two regimes: both PEs spin (about 0.5 µs)
//! or, when anything else wants a core, one sleeps on the futex (about 9 µs), and the
//! load of the machine moves between them within seconds, more than the check costs.
//! `NIIN_BENCH_PAIRED=<pairs>` runs a paired comparison instead of criterion: blocks of
//! 30,000 rounds with the check on and off, alternating (order swapped every pair), and
//! prints the medians of the per-iteration times and of the per-pair ratio on/off,
//! which cancels the drift of the load between blocks.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use niin_api::{World, WorldConfig, run_in_process};

/// PEs of the benchmarked world (threads; the CI machines have 2 cores).
const PES: usize = 2;

/// Rounds of one block of the paired comparison.
const PAIRED_ROUNDS: u64 = 30_000;

/// PE 0's time for `iters` rounds of `round` on a fresh world made with `config`.
fn timed(config: &WorldConfig, iters: u64, round: Round) -> Duration {
    let times = run_in_process(PES, config, move |w| {
        w.barrier_all()?;
        let start = Instant::now();
        for _ in 0..iters {
            round(&w);
        }
        let elapsed = start.elapsed();
        w.barrier_all()?;
        Ok(elapsed)
    })
    .expect("the benchmarked world runs");
    times[0]
}

fn barrier(w: &World) {
    w.barrier_all().expect("barrier_all");
}

fn malloc_free(w: &World) {
    let b = w.malloc::<u8>(1024).expect("malloc");
    w.free(b).expect("free");
}

/// The configurations compared: the default (check on) and the check off.
fn configs() -> [(&'static str, WorldConfig); 2] {
    let base = WorldConfig {
        check_symmetry: false,
        ..WorldConfig::default()
    };
    let off = WorldConfig {
        check_collectives: Some(niin_api::CollectiveChecks::Off),
        ..base.clone()
    };
    [("default", base), ("check_off", off)]
}

/// One round of a measurement.
type Round = fn(&World);

/// The rounds measured, by name.
const ROUNDS: [(&str, Round); 2] = [("barrier_all", barrier), ("malloc_free_1KiB", malloc_free)];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("mock_world_2pes");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    for (name, config) in configs() {
        for (what, round) in ROUNDS {
            group.bench_function(format!("{what}/{name}"), |b| {
                b.iter_custom(|iters| timed(&config, iters, round));
            });
        }
    }
    group.finish();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The paired comparison of `pairs` pairs of blocks (see the module docs).
fn paired(pairs: usize) {
    let [(_, on), (_, off)] = configs();
    for (what, round) in ROUNDS {
        let (mut t_on, mut t_off, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for p in 0..pairs {
            let per_round = |c: &WorldConfig| {
                timed(c, PAIRED_ROUNDS, round).as_nanos() as f64 / PAIRED_ROUNDS as f64
            };
            let (a, b) = if p % 2 == 0 {
                let a = per_round(&on);
                (a, per_round(&off))
            } else {
                let b = per_round(&off);
                (per_round(&on), b)
            };
            t_on.push(a);
            t_off.push(b);
            ratio.push(a / b);
        }
        println!(
            "{what}: check on {:.0} ns, off {:.0} ns, median ratio on/off {:.4} ({pairs} pairs \
             of {PAIRED_ROUNDS} rounds)",
            median(t_on),
            median(t_off),
            median(ratio)
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    if let Some(pairs) = std::env::var("NIIN_BENCH_PAIRED")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        paired(pairs.max(1));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
