//! The `Transport` trait: every host-initiated operation on the symmetric heap of a
//! target PE, blocking ([`Order::Now`]) or ordered on a stream ([`Order::Stream`]).
//!
//! The trait speaks in symmetric addresses ([`SymAddr`], offsets into every PE's heap)
//! and raw local pointers. Raw pointers are the caller's memory — host memory for the
//! mock, host or device memory for the NCCL transports — and must stay valid until the
//! operation has run, which for a stream operation is after the call returns. That
//! contract is why the pointer-taking methods are `unsafe`; `niin-api` wraps them in
//! safe, typed calls.
//!
//! Every method validates its PE and heap ranges and returns an error rather than
//! touching memory outside the heap: a bad argument never becomes undefined behaviour.
//! Stream operations validate at enqueue time, so argument errors are reported by the
//! enqueuing call; failures while running (a wait that times out) are reported by the
//! next [`Transport::stream_synchronize`].

use enum_dispatch::enum_dispatch;

use crate::coll::Collective;
use crate::error::Result;
use crate::ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSplit,
    TeamSync, WaitKind, Width,
};

/// What a [`Transport::barrier_with_fingerprint`] found about the members' fingerprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fingerprints {
    /// Every member carried this PE's fingerprint.
    Same,
    /// Some member carried another one (or none: a plain barrier). Every member of the
    /// barrier gets this answer.
    Differ,
    /// The transport does not compare fingerprints: only the barrier ran.
    NotCompared,
}

/// The refusal of the registration defaults of [`Transport`].
fn registration_unsupported() -> crate::error::TransportError {
    crate::error::TransportError::NotImplemented {
        what: "this transport cannot make application memory symmetric".to_owned(),
    }
}

/// Host-initiated NVSHMEM operations on the symmetric heaps of a world's PEs, as one PE
/// sees them. Implemented by the mock (host memory) and, per target PE, by the LSA and
/// GIN transports; dispatched statically through [`crate::AnyTransport`].
#[enum_dispatch]
pub trait Transport {
    /// This PE's number in the world.
    fn my_pe(&self) -> usize;

    /// Number of PEs in the world.
    fn n_pes(&self) -> usize;

    /// Size in bytes of each PE's symmetric heap.
    fn heap_size(&self) -> u64;

    /// Whether `pe`'s heap is load/store accessible from this PE (an LSA peer: the same
    /// NVLink domain on a GPU, the same node for the mock). This PE is its own peer.
    fn is_lsa_peer(&self, pe: usize) -> bool;

    /// The address at which this process can load and store `addr` of `pe`'s heap, or
    /// null when `pe` is not an LSA peer (NVSHMEM's `nvshmem_ptr`) or `addr` is outside
    /// the heap. For a GPU transport the pointer is a device pointer.
    fn peer_ptr(&self, pe: usize, addr: SymAddr) -> *mut u8;

    /// Checks, on this PE alone, that `len` bytes of this process's memory at `local` can
    /// be registered as symmetric ([`Transport::register_buffer`]): run by every PE and
    /// agreed on before the collective part, so that no PE enters it alone. Transports
    /// that cannot register buffers say so here.
    fn check_registration(&self, local: u64, len: u64) -> Result<()> {
        let _ = (local, len);
        Err(registration_unsupported())
    }

    /// Makes `len` bytes of this process's memory at `local` symmetric
    /// (`nvshmemx_buffer_register_symmetric`; collective: every PE, in the same order, the
    /// same `len`, after [`Transport::check_registration`] passed on every PE). Returns the
    /// symmetric address that names it from now on; the caller checks that every PE got
    /// the same one. Every operation then accepts `len` bytes from there, as it accepts
    /// heap allocations.
    fn register_buffer(&self, local: u64, len: u64) -> Result<SymAddr> {
        self.check_registration(local, len)?;
        Err(registration_unsupported())
    }

    /// Ends the registration of the buffer at symmetric address `addr` (from
    /// [`Transport::register_buffer`]), after this PE's work that may use it.
    fn unregister_buffer(&self, addr: SymAddr) -> Result<()> {
        Err(crate::error::TransportError::BadArgument {
            op: "unregister_symmetric",
            what: format!("{addr} is not the symmetric address of a registered buffer"),
        })
    }

    /// Creates a stream: an asynchronous in-order queue of operations.
    fn stream_create(&self) -> Result<StreamHandle>;

    /// Waits for a stream's work, then destroys it.
    fn stream_destroy(&self, stream: StreamHandle) -> Result<()>;

    /// Waits until everything enqueued on `stream` has run; returns the first failure
    /// of those operations, if any (after which the stream skipped the rest of them).
    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()>;

    /// Copies `len` bytes from local memory at `src` to `dst` in `pe`'s heap.
    ///
    /// # Safety
    /// `src..src+len` must be readable memory of this process (for a GPU transport: host
    /// or device memory CUDA can read) and stay valid and unmodified until the operation
    /// has run: when the call returns for [`Order::Now`], when the stream reaches it for
    /// [`Order::Stream`].
    unsafe fn put(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
    ) -> Result<()>;

    /// Copies `len` bytes from `src` in `pe`'s heap to local memory at `dst`.
    ///
    /// # Safety
    /// `dst..dst+len` must be writable memory of this process, not accessed by anyone
    /// else, and stay valid until the operation has run (see [`Transport::put`]).
    unsafe fn get(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        len: usize,
    ) -> Result<()>;

    /// Strided put (`iput`): element `i` of `src` (stride `shape.src_stride`) to element
    /// `i` of `dst` in `pe`'s heap (stride `shape.dst_stride`).
    ///
    /// # Safety
    /// As [`Transport::put`], for the `shape.span(shape.src_stride)` bytes at `src`.
    unsafe fn iput(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        shape: Strided,
    ) -> Result<()>;

    /// Strided get (`iget`): element `i` of `src` in `pe`'s heap to element `i` of `dst`.
    ///
    /// # Safety
    /// As [`Transport::get`], for the `shape.span(shape.dst_stride)` bytes at `dst`.
    unsafe fn iget(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        shape: Strided,
    ) -> Result<()>;

    /// Scalar put (`p`): stores `value` at `dst` in `pe`'s heap as one single-copy-atomic
    /// store of its width (so a waiting PE never sees a torn value).
    fn p(&self, order: Order, pe: usize, dst: SymAddr, value: Scalar) -> Result<()>;

    /// Scalar get (`g`): reads a `width` word at `src` in `pe`'s heap. Synchronous also
    /// with a stream, as NVSHMEM's `g_on_stream`: it runs after the stream's earlier work
    /// and the call waits for it.
    fn g(&self, order: Order, pe: usize, src: SymAddr, width: Width) -> Result<u64>;

    /// Put with signal: copies the data to `pe`, then updates the 64-bit signal word at
    /// `sig` in `pe`'s heap by `op` with `value`, such that a PE that sees the signal
    /// update also sees the data.
    ///
    /// # Safety
    /// As [`Transport::put`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn put_signal(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<()>;

    /// Updates the 64-bit signal word at `sig` in `pe`'s heap (`signal_op`), atomically.
    fn signal_op(
        &self,
        order: Order,
        pe: usize,
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<()>;

    /// Reads this PE's 64-bit signal word at `sig` atomically (`signal_fetch`).
    fn signal_fetch(&self, sig: SymAddr) -> Result<u64>;

    /// Waits until this PE's word at `ivar` satisfies `word <cmp> value` (`wait_until`).
    /// Blocks the caller for [`Order::Now`]; blocks only the stream otherwise.
    fn wait_until(
        &self,
        order: Order,
        ivar: SymAddr,
        kind: WaitKind,
        cmp: Cmp,
        value: u64,
    ) -> Result<()>;

    /// Waits until every word of the array of `nelems` words at `ivars` whose `status`
    /// entry is zero (all, without `status`) satisfies `word <cmp> value`
    /// (`wait_until_all`). `status` is copied at the call.
    #[allow(clippy::too_many_arguments)]
    fn wait_until_all(
        &self,
        order: Order,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: u64,
    ) -> Result<()>;

    /// As [`Transport::wait_until_all`] with one comparison value per word
    /// (`wait_until_all_vector`); `values.len()` is the number of words.
    fn wait_until_all_vector(
        &self,
        order: Order,
        ivars: SymAddr,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[u64],
    ) -> Result<()>;

    /// The stream-ordered `wait_until_all` / `_vector` of NVSHMEM's `_on_stream` forms:
    /// enqueues on `stream` a wait for every word of the `nelems` words at `ivars` that
    /// `arrays.status` does not skip to satisfy `word <cmp> want` (`arrays.values[i]`, else
    /// `arrays.value`), reading both arrays where they lie when the stream reaches the wait.
    ///
    /// # Safety
    /// The arrays of `arrays` (where not 0) must be readable by the transport's stream work,
    /// aligned (`status` to 4 bytes, `values` to the word's width), and stay so, unchanged
    /// but by earlier work of the stream, until the stream has run the wait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn wait_until_all_deferred(
        &self,
        stream: StreamHandle,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        cmp: Cmp,
        arrays: DeferredWait,
    ) -> Result<()>;

    /// Remote atomic `op` on the `width` word (4 or 8 bytes, aligned) at `addr` in
    /// `pe`'s heap; returns the previous value for fetching operations, 0 otherwise.
    /// Blocking, as NVSHMEM's host AMOs.
    fn atomic(
        &self,
        pe: usize,
        addr: SymAddr,
        op: AmoOp,
        width: Width,
        operand: u64,
        compare: u64,
    ) -> Result<u64>;

    /// Orders this PE's earlier puts, AMOs and signals to each PE before its later ones
    /// (`fence`).
    fn fence(&self, order: Order) -> Result<()>;

    /// Completes this PE's earlier puts, AMOs and signals (`quiet`).
    fn quiet(&self, order: Order) -> Result<()>;

    /// Quiet, then waits until every member of `team` has arrived (`barrier`); this PE
    /// must be a member.
    fn barrier(&self, order: Order, team: TeamSync) -> Result<()>;

    /// Whether [`Transport::barrier_with_fingerprint`] compares the fingerprints of a
    /// blocking barrier of `team` (answers [`Fingerprints::Same`] or
    /// [`Fingerprints::Differ`], never [`Fingerprints::NotCompared`]). The default: no.
    fn compares_fingerprints(&self, team: &TeamSync) -> bool {
        let _ = team;
        false
    }

    /// A blocking [`Transport::barrier`] in which this PE also carries `fingerprint`, a
    /// non-zero hash of the collective call it makes (0: none), and learns whether every
    /// member carried the same one ([`Fingerprints`]). A transport that can compare them
    /// in the barrier's own arrival words (the mock; the LSA transport's central barrier of all
    /// PEs) does; the default runs a plain
    /// barrier and answers [`Fingerprints::NotCompared`], and the caller compares the
    /// calls another way if it wants to.
    fn barrier_with_fingerprint(&self, team: TeamSync, fingerprint: u64) -> Result<Fingerprints> {
        let _ = fingerprint;
        self.barrier(Order::Now, team)
            .map(|()| Fingerprints::NotCompared)
    }

    /// This PE's part of a team collective (reduce, reducescatter, broadcast, fcollect,
    /// alltoall; semantics in [`crate::coll`]); every member of `c.team` calls it with the
    /// same `c`. The default refuses: an implementation that can run it overrides this.
    fn collective(&self, order: Order, c: &Collective) -> Result<()> {
        let _ = order;
        Err(crate::error::TransportError::NotImplemented {
            what: format!("{} on this transport", c.kind.name()),
        })
    }

    /// A team split is being made: every member of `split.parent` calls this once per
    /// split, in the same order, right after the team table has the new teams (twice for
    /// `split_2d`: rows, then columns). A transport that keeps state per team (the GPU
    /// transport's NCCL communicator of a team with PEs on other nodes) makes it here,
    /// collectively over the parent. The default keeps nothing.
    fn team_split(&self, split: &TeamSplit) -> Result<()> {
        let _ = split;
        Ok(())
    }

    /// Team handle `team`, of which this PE was a member, is destroyed (every member calls
    /// this): what [`Transport::team_split`] kept for it is released. The default has
    /// nothing to release.
    fn team_destroyed(&self, team: i32) -> Result<()> {
        let _ = team;
        Ok(())
    }

    /// Sets `len` bytes of this PE's heap at `addr` to `byte` (for `calloc`).
    fn memset_local(&self, addr: SymAddr, byte: u8, len: usize) -> Result<()>;

    /// Releases the transport's resources. Later calls fail with `Finalized`.
    fn finalize(&self) -> Result<()>;
}
