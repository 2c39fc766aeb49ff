//! [`Stream`]: NVSHMEM's `*_on_stream` operations, ordered on an asynchronous in-order
//! queue (a CUDA stream on a GPU, a worker thread on the mock).
//!
//! A call enqueues and returns; the operation runs after everything enqueued before it
//! on the same stream. Arguments are checked when the call is made; failures while the
//! stream runs (a wait that times out) are reported by [`Stream::synchronize`].
//!
//! Local buffers of stream operations are symmetric views of this PE's own heap: heap
//! memory stays valid until the world is finalized, which synchronizes every stream
//! first, so no borrow has to outlive the call. (Freeing a buffer while a stream still
//! uses it is a logic error NVSHMEM does not catch either; the bytes stay inside the
//! heap.) Raw-pointer forms are the `unsafe` methods of `niin_transport::Transport`.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use niin_teams::TeamId;
use niin_transport::{Cmp, DeferredWait, Order, SignalOp, StreamHandle, SymAddr, Transport};

use crate::buffer::SymSlice;
use crate::error::{Error, Result};
use crate::ordered::{Local, wait_kind};
use crate::types::{RmaType, WaitType};
use crate::world::World;

/// A stream of this PE: NVSHMEM's `*_on_stream` operations, ordered on an asynchronous
/// in-order queue (a CUDA stream on a GPU, a worker thread on the mock). Destroyed (after
/// draining) on drop.
///
/// A call enqueues and returns; the operation runs after everything enqueued before it on
/// the same stream. Arguments are checked when the call is made; failures while the stream
/// runs (a wait that times out) are reported by [`Stream::synchronize`].
///
/// Local buffers of stream operations are symmetric views of this PE's own heap: heap
/// memory stays valid until the world is finalized, which synchronizes every stream first,
/// so no borrow has to outlive the call. (Freeing a buffer while a stream still uses it is
/// a logic error NVSHMEM does not catch either; the bytes stay inside the heap.) Raw-pointer
/// forms are the `unsafe` methods of [`niin_transport::Transport`].
pub struct Stream<'w> {
    world: &'w World,
    handle: StreamHandle,
    /// Created here (destroyed on drop), or the caller's (left alone).
    owned: bool,
    /// What keeps a borrowed stream alive while this handle lives (a cudarc `CudaStream`,
    /// see [`World::cudarc_stream`]).
    keep: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("world", &self.world)
            .field("handle", &self.handle)
            .field("owned", &self.owned)
            .field("keeps_alive", &self.keep.is_some())
            .finish()
    }
}

impl World {
    /// Creates a stream for `*_on_stream` operations.
    pub fn stream(&self) -> Result<Stream<'_>> {
        self.check_live()?;
        let handle = self.transport_result(self.inner.transport.stream_create())?;
        Ok(Stream {
            world: self,
            handle,
            owned: true,
            keep: None,
        })
    }

    /// Uses a stream the caller owns (a `cudaStream_t` from C; `StreamHandle::DEFAULT`
    /// for the default stream). It is not destroyed when the `Stream` is dropped; a
    /// handle the transport does not know fails at the first operation.
    pub fn borrow_stream(&self, handle: StreamHandle) -> Stream<'_> {
        Stream {
            world: self,
            handle,
            owned: false,
            keep: None,
        }
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        if self.owned && self.world.check_live().is_ok() {
            let _ = self.world.inner.transport.stream_destroy(self.handle);
        }
    }
}

impl Stream<'_> {
    /// Keeps `owner` (what owns a borrowed stream) alive as long as this handle.
    pub(crate) fn keeping(mut self, owner: Arc<dyn Any + Send + Sync>) -> Self {
        self.keep = Some(owner);
        self
    }

    /// The transport's handle of this stream.
    pub fn handle(&self) -> StreamHandle {
        self.handle
    }

    pub(crate) fn order(&self) -> Order {
        Order::Stream(self.handle)
    }

    /// The world this stream belongs to.
    pub(crate) fn world(&self) -> &World {
        self.world
    }

    /// This PE's own heap memory behind `sym`, as the local operand of a stream
    /// operation.
    fn local<T: RmaType>(&self, sym: &SymSlice<T>) -> Result<Local<T>> {
        let w = self.world;
        w.check_live()?;
        w.check_sym(sym)?;
        let p = w.inner.transport.peer_ptr(w.my_pe(), SymAddr(sym.offset));
        if p.is_null() {
            return Err(Error::BadArgument {
                pe: w.my_pe(),
                op: "stream operation",
                what: format!(
                    "heap offset {:#x} of this PE has no local address",
                    sym.offset
                ),
            });
        }
        Ok(Local {
            ptr: p.cast_const().cast(),
            len: sym.len(),
        })
    }

    /// Waits until everything enqueued so far has run; returns the first failure.
    pub fn synchronize(&self) -> Result<()> {
        self.world
            .transport_result(self.world.inner.transport.stream_synchronize(self.handle))
    }

    /// Enqueues a put of this PE's `src` into `dst` on `pe` (`nvshmemx_<T>_put_on_stream`).
    pub fn put<T: RmaType>(&self, dst: SymSlice<T>, src: SymSlice<T>, pe: usize) -> Result<()> {
        let src = self.local(&src)?;
        // SAFETY: `src` lies in this PE's heap, which outlives the stream (finalize drains
        // the streams before it releases the heap).
        unsafe { self.world.put_in(self.order(), dst, src, pe) }
    }

    /// Enqueues a put of `bytes` bytes at local address `src` (host or, on a GPU
    /// transport, device memory) into `dst` on `pe` (`nvshmemx_putmem_on_stream`).
    ///
    /// # Safety
    /// `src..src+bytes` must stay readable until the stream has run the put.
    pub unsafe fn putmem(
        &self,
        dst: SymSlice<u8>,
        src: *const u8,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.world.put_in(
                self.order(),
                dst,
                Local {
                    ptr: src,
                    len: bytes,
                },
                pe,
            )
        }
    }

    /// Enqueues a get of `bytes` bytes of `src` on `pe` into local address `dst`
    /// (`nvshmemx_getmem_on_stream`).
    ///
    /// # Safety
    /// `dst..dst+bytes` must stay writable, and not otherwise accessed, until the stream
    /// has run the get.
    pub unsafe fn getmem(
        &self,
        dst: *mut u8,
        src: SymSlice<u8>,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.world.get_in(
                self.order(),
                Local {
                    ptr: dst,
                    len: bytes,
                },
                src,
                pe,
            )
        }
    }

    /// Enqueues a put of `bytes` bytes at `src` into `dst` on `pe`, then the signal update
    /// (`nvshmemx_putmem_signal_on_stream`).
    ///
    /// # Safety
    /// As [`Stream::putmem`].
    #[allow(clippy::too_many_arguments)] // NVSHMEM's own argument list
    pub unsafe fn putmem_signal(
        &self,
        dst: SymSlice<u8>,
        src: *const u8,
        bytes: usize,
        sig: SymSlice<u64>,
        value: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.world.put_signal_in(
                self.order(),
                (
                    dst,
                    Local {
                        ptr: src,
                        len: bytes,
                    },
                ),
                (sig, value, op),
                pe,
            )
        }
    }

    /// Enqueues a get of `src` on `pe` into this PE's `dst` (`nvshmemx_<T>_get_on_stream`).
    pub fn get<T: RmaType>(&self, dst: SymSlice<T>, src: SymSlice<T>, pe: usize) -> Result<()> {
        let dst = self.local(&dst)?;
        // SAFETY: as in `put`.
        unsafe { self.world.get_in(self.order(), dst, src, pe) }
    }

    /// Enqueues a strided put (`nvshmemx_<T>_iput_on_stream`).
    pub fn iput<T: RmaType>(
        &self,
        dst: SymSlice<T>,
        dst_stride: usize,
        src: SymSlice<T>,
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        let src = self.local(&src)?;
        // SAFETY: as in `put`.
        unsafe {
            self.world.iput_in(
                self.order(),
                (dst, dst_stride),
                (src, src_stride),
                nelems,
                pe,
            )
        }
    }

    /// Enqueues a strided get (`nvshmemx_<T>_iget_on_stream`).
    pub fn iget<T: RmaType>(
        &self,
        dst: SymSlice<T>,
        dst_stride: usize,
        src: SymSlice<T>,
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        let dst = self.local(&dst)?;
        // SAFETY: as in `put`.
        unsafe {
            self.world.iget_in(
                self.order(),
                (dst, dst_stride),
                (src, src_stride),
                nelems,
                pe,
            )
        }
    }

    /// Enqueues a strided put from local memory at `src` (host or, on a GPU transport,
    /// device memory): as [`Stream::iput`] with a raw source, for
    /// `nvshmemx_<T>_iput_on_stream`.
    ///
    /// # Safety
    /// The `(nelems - 1) * src_stride + 1` elements at `src` (none for `nelems == 0`) must
    /// stay readable until the stream has run the put.
    pub unsafe fn iput_from<T: RmaType>(
        &self,
        dst: (SymSlice<T>, usize),
        src: (*const T, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.world.iput_raw_in(self.order(), dst, src, nelems, pe) }
    }

    /// Enqueues a strided get into local memory at `dst`: as [`Stream::iget`] with a raw
    /// destination, for `nvshmemx_<T>_iget_on_stream`.
    ///
    /// # Safety
    /// The `(nelems - 1) * dst_stride + 1` elements at `dst` must stay writable, and not
    /// otherwise accessed, until the stream has run the get.
    pub unsafe fn iget_into<T: RmaType>(
        &self,
        dst: (*mut T, usize),
        src: (SymSlice<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.world.iget_raw_in(self.order(), dst, src, nelems, pe) }
    }

    /// Enqueues a scalar put (`nvshmemx_<T>_p_on_stream`); the value is captured now.
    pub fn p<T: RmaType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<()> {
        self.world.p_in(self.order(), dst, value, pe)
    }

    /// Reads one element after the stream's earlier work (`nvshmemx_<T>_g_on_stream`):
    /// synchronous, as NVSHMEM's.
    pub fn g<T: RmaType>(&self, src: SymSlice<T>, pe: usize) -> Result<T> {
        self.world.g_in(self.order(), src, pe)
    }

    /// Enqueues a put with signal (`nvshmemx_<T>_put_signal_on_stream`).
    pub fn put_signal<T: RmaType>(
        &self,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        sig: SymSlice<u64>,
        value: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        let src = self.local(&src)?;
        // SAFETY: as in `put`.
        unsafe {
            self.world
                .put_signal_in(self.order(), (dst, src), (sig, value, op), pe)
        }
    }

    /// Enqueues a signal update (`nvshmemx_signal_op_on_stream`).
    pub fn signal_op(&self, sig: SymSlice<u64>, value: u64, op: SignalOp, pe: usize) -> Result<()> {
        self.world.signal_op_in(self.order(), sig, value, op, pe)
    }

    /// Enqueues a wait on this PE's `ivar` (`nvshmemx_<T>_wait_until_on_stream`): later
    /// operations of the stream run only once `ivar <cmp> value` holds.
    pub fn wait_until<T: WaitType>(&self, ivar: SymSlice<T>, cmp: Cmp, value: T) -> Result<()> {
        self.world.wait_until_in(self.order(), ivar, cmp, value)
    }

    /// Enqueues `wait_until_all` (`nvshmemx_<T>_wait_until_all_on_stream`); `status` is
    /// copied now.
    pub fn wait_until_all<T: WaitType>(
        &self,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.world
            .wait_until_all_in(self.order(), ivars, status, cmp, value)
    }

    /// Enqueues `wait_until_all_vector` (`nvshmemx_<T>_wait_until_all_vector_on_stream`);
    /// `status` and `values` are copied now.
    pub fn wait_until_all_vector<T: WaitType>(
        &self,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        self.world
            .wait_until_all_vector_in(self.order(), ivars, status, cmp, values)
    }

    /// Enqueues `wait_until_all` with its arrays read when the stream reaches the wait, as
    /// NVSHMEM's `nvshmemx_<T>_wait_until_all[_vector]_on_stream` read them on the device:
    /// every word of `ivars` whose `status` entry is 0 (every word where `status` is null)
    /// must satisfy `word <cmp> want`, `want` the word's entry of `values` (where not null),
    /// else `value`.
    ///
    /// # Safety
    /// `status` (`ivars.len()` `i32`s) and `values` (`ivars.len()` elements), where not
    /// null, must be memory the transport's stream work can read (device memory, or memory
    /// the device can read, on a GPU; host memory on the mock), aligned, and stay so until
    /// the stream has run the wait; only earlier work of the stream may change them.
    pub unsafe fn wait_until_all_deferred<T: WaitType>(
        &self,
        ivars: SymSlice<T>,
        status: *const i32,
        cmp: Cmp,
        (value, values): (T, *const T),
    ) -> Result<()> {
        let w = self.world;
        w.check_live()?;
        w.check_sym(&ivars)?;
        let arrays = DeferredWait {
            status: status as u64,
            values: values as u64,
            value: value.to_bits(),
        };
        // SAFETY: forwarded from this function's contract.
        let r = unsafe {
            w.inner.transport.wait_until_all_deferred(
                self.handle,
                SymAddr(ivars.offset),
                ivars.len(),
                wait_kind::<T>(),
                cmp,
                arrays,
            )
        };
        w.transport_result(r)
    }

    /// Enqueues a barrier over `team` (`nvshmemx_barrier_on_stream`).
    pub fn barrier(&self, team: TeamId) -> Result<()> {
        self.world.barrier_in(self.order(), team)
    }

    /// Enqueues a barrier over all PEs (`nvshmemx_barrier_all_on_stream`).
    pub fn barrier_all(&self) -> Result<()> {
        self.barrier(TeamId::WORLD)
    }

    /// Enqueues a quiet (`nvshmemx_quiet_on_stream`).
    pub fn quiet(&self) -> Result<()> {
        self.world.quiet_in(self.order())
    }
}
