//! The process environment for the test binaries that set it (`from_env.rs`,
//! `env_not_utf8.rs`, `fuzz_env.rs`, which include this file with `#[path]`). Each of them
//! holds one test only: the environment is global to the process.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// The variables `WorldConfig::from_env` reads.
pub(crate) const CONFIG_VARS: [&str; 6] = [
    "NIIN_TRANSPORT",
    "NVSHMEM_SYMMETRIC_SIZE",
    "NIIN_TIMEOUT",
    "NIIN_CHECK_SYMMETRY",
    "NIIN_MOCK_NODE_SIZE",
    "NIIN_CHECK_COLLECTIVES",
];

/// Launcher variables SPMD init would take for a multi-PE job (unset: a one-PE world).
pub(crate) const LAUNCHER_VARS: [&str; 6] = [
    "NIIN_PE",
    "NIIN_NPES",
    "NIIN_JOB_ID",
    "NIIN_LAUNCHER",
    "RANK",
    "WORLD_SIZE",
];

/// Sets `name` to the bytes `value` (not necessarily UTF-8).
pub(crate) fn set(name: &str, value: impl AsRef<[u8]>) {
    // SAFETY: the including test binary runs one test, the only code reading or writing the
    // environment while it runs.
    unsafe { std::env::set_var(name, OsStr::from_bytes(value.as_ref())) };
}

/// Removes `name`.
pub(crate) fn unset(name: &str) {
    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(name) };
}
