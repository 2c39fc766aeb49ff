//! The one seam between "what to do" and "how bytes move" in niin-rs.
//!
//! [`Transport`] is the set of host-initiated NVSHMEM operations on the symmetric heap
//! of a target PE. Implementations are chosen per target PE by [`router`] (an LSA peer
//! goes to the LSA transport, any other PE to GIN; a CPU world uses the mock for every
//! PE) and dispatched statically through [`AnyTransport`]. Everything in niin-rs that
//! touches NCCL, CUDA or shared memory lives in this crate.
//!
//! Implementations today: [`mock::MockTransport`] (host memory, N PEs as threads of one
//! process or as processes sharing a mapping). The NCCL LSA and GIN transports arrive
//! with the "On the GPU, host side" issue.

pub mod coll;
pub mod cuda;
pub mod env;
pub mod error;
pub mod gin;
pub mod lsa;
pub mod mock;
pub mod nccl;
pub mod ops;
pub mod probe;
pub mod router;
pub mod status;
pub mod transport;

use enum_dispatch::enum_dispatch;

pub use coll::{CollKind, Collective, Elem, ReduceOp};
pub use error::{Result, TransportError};
pub use mock::{MockConfig, MockTransport, MockWorld};
pub use ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSplit,
    TeamSync, WaitKind, Width,
};
pub use router::{Providers, RouteKind, Routed, Router};
pub use transport::{Fingerprints, Transport};

/// Every transport implementation, dispatched statically: [`Transport`] on an
/// `AnyTransport` calls the variant's implementation. The NCCL `Lsa` and `Gin`
/// variants arrive with the "On the GPU, host side" issue.
#[enum_dispatch(Transport)]
#[derive(Debug)]
// A world holds one or two of these for its whole life; boxing the larger variants would
// add an indirection to every operation to save a few hundred bytes once.
#[allow(clippy::large_enum_variant)]
pub enum AnyTransport {
    /// Host memory: N PEs as threads of one process or processes sharing a mapping.
    Mock(MockTransport),
    /// GPU heaps of LSA peers, through an NCCL window and the CUDA driver.
    Lsa(lsa::LsaTransport),
    /// Heaps of non-LSA PEs (other nodes), through NCCL's host RMA.
    Gin(gin::GinTransport),
}
