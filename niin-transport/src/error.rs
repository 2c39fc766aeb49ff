//! Errors of the transport layer. Each variant carries the values that explain it.

use std::time::Duration;

use crate::ops::StreamHandle;

/// What went wrong in a transport operation.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// A PE number outside the world.
    #[error("PE {pe} is out of range: the world has {n_pes} PEs (0..{n_pes})")]
    PeOutOfRange {
        /// The PE asked for.
        pe: usize,
        /// The world's size.
        n_pes: usize,
    },
    /// A range that does not lie inside the symmetric heap.
    #[error(
        "{len} bytes at heap offset {offset:#x} do not fit in the symmetric heap of {heap_size} bytes"
    )]
    OutOfHeap {
        /// First byte of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// Size of each PE's heap.
        heap_size: u64,
    },
    /// A word that is not aligned to its width.
    #[error("heap offset {offset:#x} is not aligned to {align} bytes")]
    Misaligned {
        /// The address.
        offset: u64,
        /// Its required alignment.
        align: usize,
    },
    /// A width the operation does not take.
    #[error("{op} does not support {bytes}-byte words")]
    BadWidth {
        /// The operation.
        op: &'static str,
        /// The width given.
        bytes: usize,
    },
    /// An argument that is out of its domain (a zero stride, a length overflow...).
    #[error("{op}: {what}")]
    BadArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong, with the value.
        what: String,
    },
    /// A comparison number that is not one of NVSHMEM's six.
    #[error("comparison {raw} is not an NVSHMEM_CMP_* value (0..=5)")]
    BadComparison {
        /// The number given.
        raw: i32,
    },
    /// A signal operation that is neither SET (9) nor ADD (10).
    #[error("signal operation {raw} is neither NVSHMEM_SIGNAL_SET (9) nor NVSHMEM_SIGNAL_ADD (10)")]
    BadSignalOp {
        /// The number given.
        raw: i32,
    },
    /// A wait or barrier that did not finish in time: on a GPU it would hang.
    #[error("PE {pe}: {op} did not complete within {waited:?} ({detail})")]
    Timeout {
        /// The PE that waited.
        pe: usize,
        /// The operation.
        op: &'static str,
        /// How long it waited.
        waited: Duration,
        /// What it waited for (address, comparison, last value seen; barrier arrivals).
        detail: String,
    },
    /// A stream handle this transport did not create (or already destroyed).
    #[error("stream {0:?} is not a stream of this PE")]
    UnknownStream(StreamHandle),
    /// An operation enqueued on a stream failed; later operations on it were skipped.
    #[error("an operation on stream {stream:?} failed: {cause}")]
    StreamFailed {
        /// The stream.
        stream: StreamHandle,
        /// The first failure, as text.
        cause: String,
    },
    /// Another PE of the job failed or left, so a collective cannot complete.
    #[error("PE {pe} {why}; {op} cannot complete")]
    PeerGone {
        /// The PE that is gone.
        pe: usize,
        /// The operation that needed it.
        op: &'static str,
        /// How it left.
        why: Departure,
    },
    /// The operation exists in NVSHMEM but this transport does not do it.
    #[error("not implemented: {what}")]
    NotImplemented {
        /// The operation and the condition (for example "host RMA to non-LSA PE 3").
        what: String,
    },
    /// An operating-system call failed (shared memory, threads).
    #[error("{what}: {cause}")]
    Os {
        /// What was being done, with the path or size.
        what: String,
        /// The OS's message.
        cause: String,
    },
    /// The CUDA driver or NCCL failed (the message names the call and its error).
    #[error("GPU: {what}")]
    Gpu {
        /// The failing call and its error, as the CUDA or NCCL layer reports it.
        what: String,
    },
    /// The transport was used after `finalize`.
    #[error("the transport of PE {pe} is finalized")]
    Finalized {
        /// This PE.
        pe: usize,
    },
}

/// How a PE left its job, as the PEs still waiting for it report it
/// ([`TransportError::PeerGone`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Departure {
    /// It called `finalize` (or dropped its transport, for example after an error).
    Finalized,
    /// Its thread panicked (a PE of an in-process world).
    Panicked,
    /// Its process ended without finalizing. `how` is the launcher's word on it when the
    /// launcher told (niinrun: "killed by signal 9 (SIGKILL)", "exited with status 3"),
    /// else "its process ended without finalizing".
    Died {
        /// How the process ended.
        how: String,
    },
}

impl std::fmt::Display for Departure {
    /// `has finalized`, `panicked`, `died (killed by signal 9 (SIGKILL))`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Departure::Finalized => f.write_str("has finalized"),
            Departure::Panicked => f.write_str("panicked"),
            Departure::Died { how } => write!(f, "died ({how})"),
        }
    }
}

impl TransportError {
    /// Whether this error only reports another PE's failure (a [`TransportError::PeerGone`]):
    /// when several PEs fail, the one whose error is not a consequence is the cause.
    pub fn is_consequence(&self) -> bool {
        matches!(self, TransportError::PeerGone { .. })
    }
}

/// Result of a transport operation.
pub type Result<T> = std::result::Result<T, TransportError>;
