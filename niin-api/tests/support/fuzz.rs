//! The harness of the fuzz targets (`niin-api/tests/fuzz_*.rs`, `niin-ffi/tests/fuzz_*.rs`,
//! which include this file with `#[path]`): proptest on stable Rust with a fixed seed, a
//! fixed case count and no regression files, so every CI run makes the same inputs.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// Runs `test` on `cases` inputs of `strategy` drawn from `seed` (one per target file, so
/// the files do not replay one another's inputs); a failure panics with proptest's report
/// (the minimal failing input).
pub(crate) fn fuzz<S: Strategy>(
    seed: u64,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}
