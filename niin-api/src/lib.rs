//! The Rust host API of niin-rs: NVSHMEM's programming model for Rust programs.
//!
//! A [`World`] is one PE's handle on a world of PEs. Make one with [`World::init`] (SPMD:
//! one PE per process, started by `niinrun` or alone) or [`World::in_process`] /
//! [`run_in_process`] (N PEs as threads of one process, on the mock transport). Then:
//!
//! - symmetric memory: [`World::malloc`], [`World::calloc`], [`World::align`],
//!   [`World::free`] give typed [`SymBuffer`]s (collective; see [`buffer`] on freeing);
//! - one-sided operations: put/get, strided, scalar, put-with-signal, signals, waits and
//!   atomics ([`rma`](World::put)), blocking, or on a [`Stream`];
//! - synchronization: [`World::barrier_all`], [`World::barrier`], [`World::quiet`],
//!   [`World::fence`];
//! - teams: the [`Team`] handle ([`World::team`], [`Team::split_strided`],
//!   [`Team::split_2d`], [`Team::my_pe`], [`Team::translate_pe`], [`Team::barrier`],
//!   [`Team::destroy`]), or the same by [`TeamId`] on [`World`] (see [`team`]);
//! - collectives over a team: [`World::reduce`], [`World::reducescatter`],
//!   [`World::broadcast`], [`World::fcollect`], [`World::alltoall`] (and on a [`Stream`])
//!
//! Element types are NVSHMEM's, as sealed traits ([`types`]): putting a type NVSHMEM has
//! no RMA for, or an atomic on a type it has no AMO for, is a compile error. Errors are
//! [`Error`], with the values that explain them; its `Debug` prints the same readable
//! message, so `fn main() -> Result<(), niin_api::Error>` reports it plainly (see [`error`],
//! which also re-exports the lower layers' error types). The world holds no global state.
//!
//! Configuration: [`WorldConfig::default`] is fixed defaults and reads no environment (for
//! in-process worlds and tests); [`WorldConfig::from_env`] reads the variables that
//! [`World::init`] and the C ABI read (`NIIN_TRANSPORT`, `NVSHMEM_SYMMETRIC_SIZE`,
//! `NIIN_TIMEOUT`, ... : the table is in [`config`]) and refuses a malformed value naming
//! the variable and the value.
//!
//! ```
//! use niin_api::{run_in_process, WorldConfig};
//!
//! let sums = run_in_process(4, &WorldConfig::default(), |w| {
//!     let buf = w.calloc::<u64>(1)?;
//!     w.barrier_all()?;
//!     w.atomic_add(buf.all(), w.my_pe() as u64 + 1, 0)?; // everyone adds to PE 0
//!     w.barrier_all()?;
//!     let total = w.g(buf.all(), 0)?;
//!     w.free(buf)?;
//!     Ok(total)
//! })?;
//! assert_eq!(sums, vec![10; 4]);
//! # Ok::<(), niin_api::Error>(())
//! ```

// Every type reachable from a public item can be named from outside the crate (a type of
// the lower crates in a public signature is re-exported below; tests/nameable.rs names them).
#![deny(unnameable_types)]

pub mod bootstrap;
pub mod buffer;
pub mod check;
mod coll;
pub mod config;
mod device_support;
pub mod error;
mod gpu;
pub mod interop;
pub mod launch;
mod ordered;
mod registered;
mod rma;
mod spmd;
mod stream;
pub mod team;
pub mod types;
mod world;

pub use buffer::{SymBuffer, SymSlice};
pub use check::{CHECKED_TEAMS, CollectiveCall, CollectiveKind};
pub use config::{CollectiveChecks, TransportKind, WorldConfig};
pub use error::{Departure, HeapError, Layout, SizeError, TeamError, TransportError};
pub use error::{Error, Result};
pub use niin_heap::{Fingerprint, HeapStats};
pub use niin_transport::lsa::device_support::DeviceParts;
pub use niin_transport::{CollKind, Elem, StreamHandle};
// The crates niin-api is built on, so that every type of theirs that appears in niin-api's
// public items (the fields of `DeviceParts`, the trait behind `Stream`'s raw forms) can be
// named from `niin_api` alone: `niin_api::niin_transport::nccl::Comm`.
pub use niin_heap;
pub use niin_teams;
pub use niin_teams::{DeviceTeam, DeviceTeamTable, TeamConfig, TeamId};
pub use niin_transport;
pub use niin_transport::{Cmp, ReduceOp, SignalOp};
pub use ordered::strided_span;
pub use spmd::{JobPlace, run_in_process};
pub use stream::Stream;
pub use team::Team;
pub use types::{AmoFetchType, AmoType, Bf16, BitwiseAmoType, Half, ReduceType, RmaType, WaitType};
pub use world::{
    COLL_LL_HEADER_BYTES, COLL_LL_RING_MAX, COLL_LL_SLOTS, DEVICE_TEAM_SLOTS, TEAM_SYNC_SLOT_BYTES,
    World, coll_ll_ring_bytes, min_heap_size,
};

/// cudarc, the version niin-rs is built with (driver API; see [`interop`]).
pub use cudarc;
pub use interop::SymCudaSlice;
