//! Cross-crate integration tests of niin-rs live in `tests/tests/`; this library holds
//! the small shared helpers they use.
