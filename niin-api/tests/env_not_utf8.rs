//! Regression (found by fuzzing the environment readers, `fuzz_env.rs`): a variable whose
//! value is not UTF-8 was taken for unset by `WorldConfig::from_env` and by SPMD init's
//! launcher detection, so `NIIN_TRANSPORT` or `NVSHMEM_SYMMETRIC_SIZE` silently fell back to
//! their defaults and `NIIN_PE` to a single process. Now such a value is read lossily and
//! refused as malformed, naming the variable.
//!
//! The process environment is global: this binary holds this one test only.

use niin_api::{World, WorldConfig};

#[path = "support/env.rs"]
mod env_support;
use env_support::{CONFIG_VARS, LAUNCHER_VARS, set, unset};

#[test]
fn values_that_are_not_utf8_are_errors_not_defaults() {
    for var in LAUNCHER_VARS {
        unset(var);
    }
    for var in CONFIG_VARS {
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
