//! The Rust host API of niin-rs.
//!
//! This crate will own the `World` / PE handle (SPMD init from the environment and
//! in-process worlds of N PEs), typed symmetric buffers allocated through `niin-heap`,
//! teams through `niin-teams`, and the routing of every NVSHMEM operation to a
//! `niin-transport` implementation. It holds no global state, so one process can hold
//! several worlds. Its contents arrive with the "Transport trait + mock" issue.
