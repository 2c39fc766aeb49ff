//! Errors of the host API: every lower layer's error, plus misuse of the API itself.

use niin_heap::{HeapError, Layout, SizeError};
use niin_teams::TeamError;
use niin_transport::TransportError;

/// What went wrong in a niin-api call. Messages carry the values that explain them.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The symmetric heap refused (out of memory, bad alignment, bad free...).
    #[error("PE {pe}: symmetric heap: {source}")]
    Heap {
        /// This PE.
        pe: usize,
        /// The heap's error.
        source: HeapError,
    },
    /// A team operation was refused.
    #[error("PE {pe}: team: {source}")]
    Team {
        /// This PE.
        pe: usize,
        /// The team model's error.
        source: TeamError,
    },
    /// The transport failed.
    #[error("PE {pe}: {source}")]
    Transport {
        /// This PE.
        pe: usize,
        /// The transport's error.
        source: TransportError,
    },
    /// A configuration value (environment variable) is wrong.
    #[error("configuration: {0}")]
    Config(String),
    /// `NVSHMEM_SYMMETRIC_SIZE` is wrong.
    #[error("configuration: {0}")]
    HeapSize(#[from] SizeError),
    /// The world was used after `finalize`.
    #[error("PE {pe}: the world is finalized")]
    Finalized {
        /// This PE.
        pe: usize,
    },
    /// A PE number outside the world.
    #[error("PE {pe}: target PE {target} is out of range: the world has {n_pes} PEs")]
    PeOutOfRange {
        /// This PE.
        pe: usize,
        /// The PE asked for.
        target: i64,
        /// The world's size.
        n_pes: usize,
    },
    /// A symmetric range that is not inside a live allocation of this world.
    #[error(
        "PE {pe}: {len} bytes at heap offset {offset:#x} are not inside a live symmetric allocation"
    )]
    NotSymmetric {
        /// This PE.
        pe: usize,
        /// Start of the range.
        offset: u64,
        /// Length of the range in bytes.
        len: u64,
    },
    /// A buffer of another world was used.
    #[error("PE {pe}: buffer belongs to world {buffer_world}, not to this world {world}")]
    ForeignBuffer {
        /// This PE.
        pe: usize,
        /// The buffer's world.
        buffer_world: u64,
        /// This world.
        world: u64,
    },
    /// Lengths that must agree do not.
    #[error("PE {pe}: {op}: {what}")]
    BadArgument {
        /// This PE.
        pe: usize,
        /// The operation.
        op: &'static str,
        /// What is wrong, with the values.
        what: String,
    },
    /// The PEs' symmetric heaps do not hold the same allocations.
    #[error(
        "PE {pe}: asymmetric symmetric-heap use: this PE's live allocations are {mine}, PE {other}'s are {theirs} (every PE must make the same nvshmem_malloc/align/free calls in the same order)"
    )]
    Asymmetric {
        /// This PE.
        pe: usize,
        /// The first PE whose heap differs.
        other: usize,
        /// This PE's heap layout.
        mine: Layout,
        /// The other PE's heap layout.
        theirs: Layout,
    },
    /// The PEs of a collective call did not make the same call: another collective, or the
    /// same one with other arguments (`crate::check` in the source has the rules).
    #[error(
        "PE {pe}: collective mismatch: PE {pe} called {mine}, PE {other} called {theirs}{}",
        if *in_step {
            " (every PE of the team must make the same collective calls in the same order, \
             with the same arguments; this call was undone on every PE that saw it, and the \
             world stays usable)"
        } else {
            " (every PE of the team must make the same collective calls in the same order, \
             with the same arguments; a team collective took part, so the PEs' \
             synchronizations are out of step now: every later collective call of this PE \
             fails, finalize the world)"
        }
    )]
    CollectiveMismatch {
        /// This PE.
        pe: usize,
        /// This PE's call ([`crate::CollectiveCall`], as printed).
        mine: String,
        /// The PE whose call differs.
        other: usize,
        /// That PE's call, as printed.
        theirs: String,
        /// Whether every PE stopped at the same point (the world stays usable).
        in_step: bool,
    },
    /// An earlier collective mismatch left the PEs out of step.
    #[error(
        "PE {pe}: the world's collectives are out of step since an earlier mismatch ({cause}); only finalize is possible"
    )]
    OutOfStep {
        /// This PE.
        pe: usize,
        /// The mismatch, as reported then.
        cause: String,
    },
    /// Two threads of one PE were inside collective calls at once.
    #[error(
        "PE {pe}: {entering} was called while another thread of this PE is inside {running}: a PE's collective calls must come from one thread at a time (NVSHMEM_THREAD_SERIALIZED at most); the second call is refused"
    )]
    ConcurrentCollective {
        /// This PE.
        pe: usize,
        /// The refused call.
        entering: String,
        /// The call in progress.
        running: String,
    },
    /// The launcher's environment or the unique-id rendezvous failed.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] crate::bootstrap::BootstrapError),
    /// The requested transport is not available in this build or on this machine.
    #[error("transport: {0}")]
    TransportUnavailable(String),
    /// A PE thread of an in-process world panicked.
    #[error("PE {pe} panicked: {message}")]
    Panicked {
        /// The PE whose thread panicked.
        pe: usize,
        /// The panic message.
        message: String,
    },
}

/// Result of a niin-api call.
pub type Result<T> = std::result::Result<T, Error>;
