//! Cost of the collective calls of a mock world whose PEs are threads of this process:
//! `barrier_all`, and `malloc` + `free` of 1 KiB, with 2 PEs (what the collective-mismatch
//! check adds to them is what this bench is for: compare runs with the check on, the
//! default, and off).
//!
//! Each sample makes a fresh 2-PE world (not timed); every PE runs the sample's iterations
//! and the bench reports PE 0's time per iteration. Run with
//! `cargo bench -p niin-api --bench mock_world`.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use niin_api::{World, WorldConfig, run_in_process};

/// PEs of the benchmarked world (threads; the CI machines have 2 cores).
const PES: usize = 2;

/// PE 0's time for `iters` rounds of `round` on a fresh world made with `config`.
fn timed(config: &WorldConfig, iters: u64, round: fn(&World)) -> Duration {
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

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("mock_world_2pes");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    let base = WorldConfig {
        check_symmetry: false,
        ..WorldConfig::default()
    };
    let off = WorldConfig {
        check_collectives: Some(false),
        ..base.clone()
    };
    for (name, config) in [("default", base), ("check_off", off)] {
        group.bench_function(format!("barrier_all/{name}"), |b| {
            b.iter_custom(|iters| timed(&config, iters, barrier));
        });
        group.bench_function(format!("malloc_free_1KiB/{name}"), |b| {
            b.iter_custom(|iters| timed(&config, iters, malloc_free));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
