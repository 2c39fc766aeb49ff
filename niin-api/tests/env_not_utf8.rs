//! Regression (found by fuzzing the environment readers, `fuzz_env.rs`): a variable whose
//! value is not UTF-8 was taken for unset by `WorldConfig::from_env` and by SPMD init's
//! launcher detection, so `NIIN_TRANSPORT` or `NVSHMEM_SYMMETRIC_SIZE` silently fell back to
//! their defaults and `NIIN_PE` to a single process. Now such a value is read lossily and
//! refused as malformed, naming the variable.
//!
//! The process environment is global: this binary holds this one test only.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use niin_api::{World, WorldConfig};

fn set(name: &str, value: &[u8]) {
    // SAFETY: this test binary runs this one test, the only code reading or writing the
    // environment while it runs.
    unsafe { std::env::set_var(name, OsStr::from_bytes(value)) };
}

fn unset(name: &str) {
    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(name) };
}

#[test]
fn values_that_are_not_utf8_are_errors_not_defaults() {
    for var in [
        "NIIN_PE",
        "NIIN_NPES",
        "NIIN_JOB_ID",
        "NIIN_LAUNCHER",
        "RANK",
        "WORLD_SIZE",
    ] {
        unset(var);
    }
    for var in [
        "NIIN_TRANSPORT",
        "NVSHMEM_SYMMETRIC_SIZE",
        "NIIN_TIMEOUT",
        "NIIN_CHECK_SYMMETRY",
        "NIIN_MOCK_NODE_SIZE",
        "NIIN_CHECK_COLLECTIVES",
    ] {
        set(var, b"1\xff");
        let msg = WorldConfig::from_env().unwrap_err().to_string();
        assert!(
            msg.contains(var) && msg.contains('\u{fffd}'),
            "{var}: {msg}"
        );
        unset(var);
    }
    assert!(WorldConfig::from_env().is_ok());

    // SPMD init: a launcher variable that is not UTF-8 is malformed, not absent.
    set("NIIN_TRANSPORT", b"mock");
    set("NIIN_PE", b"\xff");
    let msg = World::init().map(|_| ()).unwrap_err().to_string();
    assert!(msg.contains("NIIN_PE"), "{msg}");
    unset("NIIN_PE");
}
