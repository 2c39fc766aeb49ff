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
//!   [`World::fence`]; teams: [`World::team_split_strided`], [`World::team_split_2d`], ...
//! - collectives over a team: [`World::reduce`], [`World::reducescatter`],
//!   [`World::broadcast`], [`World::fcollect`], [`World::alltoall`] (and on a [`Stream`])
//!
//! Element types are NVSHMEM's, as sealed traits ([`types`]): putting a type NVSHMEM has
//! no RMA for, or an atomic on a type it has no AMO for, is a compile error. Errors are
//! [`Error`], with the values that explain them. The world holds no global state.
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

pub mod bootstrap;
pub mod buffer;
mod check;
mod coll;
pub mod config;
mod device_support;
pub mod error;
mod gpu;
pub mod launch;
mod ordered;
mod registered;
mod rma;
mod spmd;
mod stream;
mod team;
pub mod types;
mod world;

pub use buffer::{SymBuffer, SymSlice};
pub use check::{CHECKED_TEAMS, CollectiveCall, CollectiveKind};
pub use config::{TransportKind, WorldConfig};
pub use error::{Error, Result};
pub use niin_teams::{DeviceTeam, DeviceTeamTable, TeamConfig, TeamId};
pub use niin_transport::{Cmp, ReduceOp, SignalOp};
pub use ordered::strided_span;
pub use spmd::{JobPlace, run_in_process};
pub use stream::Stream;
pub use types::{AmoFetchType, AmoType, Bf16, BitwiseAmoType, Half, ReduceType, RmaType, WaitType};
pub use world::{
    COLL_LL_HEADER_BYTES, COLL_LL_RING_MAX, COLL_LL_SLOTS, DEVICE_TEAM_SLOTS, TEAM_SYNC_SLOT_BYTES,
    World, coll_ll_ring_bytes, min_heap_size,
};
