//! The one seam between "what to do" and "how bytes move" in niin-rs.
//!
//! This crate will own the `Transport` trait and its implementations: `Lsa`
//! (load/store peers inside an NVLink domain, through NCCL windows and copy engines),
//! `Gin` (NCCL's GPU-initiated networking) and `Mock` (host memory, for CPU-only worlds),
//! plus the dlopen'd NCCL loader and the CUDA driver wrapper. Everything in niin-rs that
//! touches NCCL, CUDA or shared memory lives here. Its contents arrive with the
//! "Transport trait + mock" and "On the GPU, host side" issues.
