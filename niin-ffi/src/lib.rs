//! NVSHMEM's host C ABI, exported as `libnvshmem_host.so`.
//!
//! This crate will be the only place in niin-rs with a process-global world (NVSHMEM's
//! model) and the only place that speaks C: it converts arguments, forwards to
//! `niin-api`, and turns errors into NVSHMEM return values plus one `NIIN:` line on
//! stderr. Its contents arrive with the "On the GPU, host side" issue.
