//! The symmetric-heap allocator behind `nvshmem_malloc`, `nvshmem_calloc`,
//! `nvshmem_align` and `nvshmem_free`.
//!
//! # What
//!
//! [`SymmetricHeap`] manages an abstract byte range `[0, size)`. It owns no memory and
//! touches none: it hands out *offsets* ([`Block`]s), and the caller adds them to the base
//! of whatever memory backs the heap on each PE. It is pure Rust — no `unsafe`, no GPU.
//!
//! # Why determinism
//!
//! NVSHMEM's symmetric heap works because every PE makes the same allocation calls in the
//! same order and therefore gets the same offsets: a remote object is "the same offset on
//! the other PE", with no address exchange. So the allocator is a deterministic function
//! of its call sequence — no `HashMap` with random state, no randomness, no dependence on
//! addresses, time or thread. The treap's "random" priorities are `splitmix64(offset)`, a
//! fixed mix. [`SymmetricHeap::fingerprint`] digests the call history so PEs can compare
//! and catch an asymmetric sequence early instead of corrupting memory silently.
//!
//! # Placement rules
//!
//! * Granule: every block's offset and length are multiples of [`DEFAULT_ALIGNMENT`]
//!   (256 B). Sizes are rounded up with checked arithmetic ([`HeapError::SizeOverflow`]
//!   instead of wrapping).
//! * `malloc` / `calloc`: **first fit by address** — the lowest-address free block whose
//!   length is at least the rounded size. The block is split; the remainder stays free.
//! * `align(a, size)`, `a` a power of two (below 256 it acts as 256): **exact first fit for
//!   the aligned start** — the lowest-address free block `[o, o + l)` with
//!   `round_up(o, a) + need <= o + l`; the allocation starts at `round_up(o, a)`. The gap
//!   `[o, round_up(o, a))`, if any, stays a free block, and so does the tail.
//! * `free`: coalesces with the free neighbour on each side, so free blocks are always
//!   maximal, and freeing every block leaves exactly one free block of the whole size.
//! * Size 0 (`malloc(0)`, `calloc` with a zero factor, `align(a, 0)`) reserves nothing and
//!   returns `Ok(None)`, OpenSHMEM's null result.
//!
//! # Data structures and complexity (n = number of blocks)
//!
//! * Live blocks: `BTreeMap<offset, len>`. `free` validation (block start / interior
//!   pointer / free space) and [`SymmetricHeap::find`] are one range query: O(log n).
//! * Free blocks: an arena-allocated treap keyed by offset in which every node also stores
//!   the largest free-block length in its subtree. Priorities are `splitmix64(offset)`, so
//!   the shape depends only on the set of free offsets and the expected depth is
//!   O(log n). "Lowest address with length ≥ k" is a single descent; predecessor /
//!   exact-offset look-ups for coalescing are ordinary searches; insert and remove are
//!   split/merge; growing or shrinking a block whose start does not move (coalescing
//!   into the left neighbour, leaving an alignment gap) is an in-place update of the
//!   path's maxima. Each is O(depth) = expected O(log n).
//! * `malloc`, `calloc`, `free`: O(log n) expected (a constant number of tree operations).
//! * `align` with `a > 256`: an in-order walk of the free tree that skips subtrees whose
//!   largest block is shorter than the request and stops at the first block that fits.
//!   A block of length ≥ `need + a − 256` always fits, so the walk ends no later than the
//!   block one O(log n) descent finds for that length; everything it rejects on the way is
//!   a "near miss" (length in `[need, need + a − 256)` with a badly placed start). Cost
//!   O((c + 1) · log n) for `c` near misses below the answer: O(log n) in the common case,
//!   O(n) in a pathological worst case (many just-too-short, misaligned blocks). Exact
//!   first fit cannot be answered with a length maximum alone, because whether a block
//!   fits depends on its offset modulo `a`; we keep the exact rule rather than a
//!   faster approximate one, since it is simple to state and to mirror in tests.
//! * `stats`, `fingerprint`, `layout`, `size`: O(1). Memory: O(n).
//!
//! # Fingerprint and failed calls
//!
//! The [`Fingerprint`] is FNV-1a over the creation size and, for every call of `malloc`,
//! `calloc`, `align` and `free`, its operation tag, arguments and outcome (returned block,
//! "none", or error code), plus a call count. **Failed calls are recorded too.** They do
//! not change the heap's blocks, but a call that fails on one PE and succeeds on another
//! is exactly the asymmetry the fingerprint exists to reveal (for example a PE started
//! with a different `NVSHMEM_SYMMETRIC_SIZE` that runs out of memory first, or a double
//! free on one PE). Zero-size calls that return `Ok(None)` are recorded as well. Read-only
//! calls (`find`, `stats`, `size`, `fingerprint`, iteration) are not.
//!
//! # Errors and limits
//!
//! All bad input is an error value, never a panic. There is no fixed limit on the number
//! of live blocks (only memory). The heap keeps no history of freed blocks, so a double
//! free and a `free` of a never-allocated offset in free space are the same error,
//! [`HeapError::NotABlockStart`]; an interior pointer is distinguished
//! ([`HeapError::InteriorPointer`]), as is an offset past the end
//! ([`HeapError::OffsetOutOfRange`]). The heap size is rounded down to a multiple of
//! 256. `calloc` does not zero memory — the heap has none; the caller must.
//!
//! # Heap size from the environment
//!
//! [`symmetric_size_from_env`] reads `NVSHMEM_SYMMETRIC_SIZE` (default
//! [`DEFAULT_SYMMETRIC_SIZE`], 256 MiB) and [`parse_symmetric_size`] parses plain bytes or
//! a binary `K`/`M`/`G`/`T` suffix, strictly: bad values are errors, never a silent
//! fallback to the default. The accepted grammar is documented on
//! [`parse_symmetric_size`].

#![forbid(unsafe_code)]

mod error;
mod fingerprint;
mod free_tree;
mod heap;
mod size;
mod units;

pub use error::{HeapError, SizeError};
pub use fingerprint::{Fingerprint, Layout};
pub use heap::{Block, HeapStats, SymmetricHeap};
pub use size::{
    DEFAULT_SYMMETRIC_SIZE, SYMMETRIC_SIZE_VAR, parse_symmetric_size, symmetric_size_from_env,
    symmetric_size_from_value,
};

/// Alignment (and size granule) of every block: 256 bytes, as in NVSHMEM. Offsets and
/// lengths of all blocks are multiples of it.
pub const DEFAULT_ALIGNMENT: u64 = 256;
