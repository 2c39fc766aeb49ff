//! Cross-crate integration tests of niin-rs live in `tests/tests/`; this library holds
//! what they share: the host-API conformance checks ([`checks`]), which the in-process
//! tests run on threads and the `check_worker` binary runs as processes under `niinrun`.

pub mod checks;
pub mod coll_checks;
