//! The seam between the GIN transport's logic and the machine: [`HostRma`], the few
//! stream-ordered calls the transport makes, and [`NcclHostRma`], the implementation over
//! an NCCL communicator, the heap's window, a staging window and the CUDA driver.
//!
//! Everything the transport decides (validation, staging, chunking, ordering) happens
//! above this trait, so a recording fake can check it on a machine without a GPU.

use std::fmt;
use std::os::raw::c_void;
use std::sync::Arc;

use crate::cuda::{self, Device, Event, Stream};
use crate::error::{Result, TransportError};
use crate::nccl::{Comm, CudaStream, DeviceMem, WaitSignal, Window, WindowFlags, sys};
use crate::ops::{Scalar, Width};

use super::staging::StagingLayout;

pub(crate) fn cuda_err(e: cuda::CudaError) -> TransportError {
    TransportError::Gpu {
        what: e.to_string(),
    }
}

pub(crate) fn nccl_err(e: crate::nccl::NcclError) -> TransportError {
    TransportError::Gpu {
        what: e.to_string(),
    }
}

/// The stream-ordered calls of the GIN transport. Streams are raw `CUstream` values
/// (0: the legacy default stream); addresses are device (unified) addresses.
///
/// Every enqueuing method is `unsafe` with one contract: `stream` is 0, or a live stream
/// of the device's context, and every address range named is memory of this process
/// that stays valid until the stream has run the operation.
pub trait HostRma: Send + Sync + fmt::Debug {
    /// Device address and size in bytes of this PE's part of the heap's window.
    fn heap_window(&self) -> (u64, usize);

    /// The staging window's layout (its base address and slots).
    fn staging(&self) -> StagingLayout;

    /// The stream [`crate::Order::Now`] operations run on.
    fn internal_stream(&self) -> u64;

    /// Whether the heap's window was registered with `NCCL_WIN_STRICT_ORDERING`.
    fn strict_ordering(&self) -> bool;

    /// Makes the device's context current on the calling thread.
    fn enter(&self) -> Result<()>;

    /// Copies `bytes` bytes from `src` to `dst` (a local copy, `cuMemcpyAsync`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn copy(&self, dst: u64, src: u64, bytes: usize, stream: u64) -> Result<()>;

    /// Gathers `count` elements of `elem` bytes, `src_pitch` bytes apart at `src`, into
    /// `count * elem` contiguous bytes at `dst` (`cuMemcpy2DAsync`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn gather(
        &self,
        dst: u64,
        src: u64,
        src_pitch: usize,
        elem: usize,
        count: usize,
        stream: u64,
    ) -> Result<()>;

    /// Stores `value` (its width's bytes, little-endian) at `dst`, ordered on `stream`.
    ///
    /// # Safety
    /// See the trait docs; `dst` is aligned to the value's width.
    unsafe fn store(&self, dst: u64, value: Scalar, stream: u64) -> Result<()>;

    /// Puts `bytes` bytes from `local` to `offset` of `peer`'s part of the heap's window:
    /// one `ncclPutSignal` of `bytes` elements of `ncclUint8` (signal index, context and
    /// flags 0). `local` must lie in a window registered `NCCL_WIN_COLL_SYMMETRIC`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn put(
        &self,
        local: u64,
        bytes: usize,
        peer: i32,
        offset: usize,
        stream: u64,
    ) -> Result<()>;

    /// Signals `peer` without data (`ncclSignal`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn signal(&self, peer: i32, stream: u64) -> Result<()>;

    /// Makes `stream` wait for `count` more signals from `peer` (`ncclWaitSignal`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn wait(&self, peer: i32, count: i32, stream: u64) -> Result<()>;

    /// Makes `stream` wait until the last recorded user of staging slot `slot` has
    /// finished with it (`cuStreamWaitEvent` on the slot's event; nothing to wait for
    /// before its first use).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn slot_wait(&self, slot: usize, stream: u64) -> Result<()>;

    /// Records the end of `stream` as the last user of staging slot `slot`
    /// (`cuEventRecord` on the slot's event).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn slot_record(&self, slot: usize, stream: u64) -> Result<()>;

    /// Whether everything enqueued on `stream` has run (`cuStreamQuery`); an error of
    /// that work is returned here.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn query(&self, stream: u64) -> Result<bool>;

    /// The communicator's asynchronous error, if any (`ncclCommGetAsyncError`).
    fn async_error(&self) -> Result<()>;
}

/// [`HostRma`] over NCCL: the communicator, the heap's window (shared with the LSA
/// transport), a staging window of its own (`ncclMemAlloc` memory registered
/// `NCCL_WIN_COLL_SYMMETRIC`), one event per staging slot and an internal stream.
pub struct NcclHostRma {
    comm: Comm,
    heap: Arc<Window>,
    device: Device,
    layout: StagingLayout,
    internal: Stream,
    events: Vec<Event>,
    use_stream_mem_ops: bool,
    // Dropped in this order: the staging window before the memory it registers.
    staging_window: Window,
    staging_mem: DeviceMem,
}

impl Drop for NcclHostRma {
    /// Runs before the fields are dropped: when the communicator is being aborted (a fatal
    /// error, already reported), freeing the staging memory may fail too and is not
    /// reported again (as the transport's heap, `DeviceMem::release_quietly`).
    fn drop(&mut self) {
        if self.comm.is_aborting() {
            self.staging_mem.release_quietly();
        }
    }
}

impl fmt::Debug for NcclHostRma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NcclHostRma")
            .field("rank", &self.comm.rank())
            .field("n_ranks", &self.comm.n_ranks())
            .field("heap", &self.heap)
            .field("staging", &self.staging_window)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl NcclHostRma {
    /// Allocates the staging window of `chunk_slots` chunks of `chunk_bytes` bytes (and
    /// the default word slots) with `ncclMemAlloc` and registers it with `comm`
    /// (collective: every rank of `comm` calls this together, with the same sizes), and
    /// creates the internal stream and the slots' events. `heap` is the heap's window.
    pub fn new(
        comm: Comm,
        heap: Arc<Window>,
        device: Device,
        chunk_bytes: usize,
        chunk_slots: usize,
    ) -> Result<NcclHostRma> {
        device.make_current().map_err(cuda_err)?;
        let mut layout = StagingLayout {
            chunk_bytes,
            chunk_slots,
            ..StagingLayout::default_at(0)
        };
        layout.check()?;
        let mem = comm.nccl().mem_alloc(layout.size()).map_err(nccl_err)?;
        layout.base = mem.ptr();
        layout.check()?;
        // Staging memory is only ever a source: it needs the symmetric registration that
        // host RMA sources need (2.29.2–2.30.7), not strict ordering.
        let flags = WindowFlags {
            coll_symmetric: true,
            strict_ordering: false,
        };
        let staging_window = comm
            .register_window(mem.ptr(), layout.size(), flags)
            .map_err(nccl_err)?;
        let internal = Stream::create_on(&device).map_err(cuda_err)?;
        let events = (0..layout.slots())
            .map(|_| Event::create_on(&device, false))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(cuda_err)?;
        let use_stream_mem_ops = device.supports_stream_mem_ops().unwrap_or(false);
        Ok(NcclHostRma {
            comm,
            heap,
            device,
            layout,
            internal,
            events,
            use_stream_mem_ops,
            staging_window,
            staging_mem: mem,
        })
    }

    fn event(&self, slot: usize) -> Result<&Event> {
        self.events
            .get(slot)
            .ok_or_else(|| TransportError::BadArgument {
                op: "GIN staging",
                what: format!("slot {slot} of {}", self.events.len()),
            })
    }
}

/// The borrowed stream of a raw handle.
///
/// # Safety
/// `raw` is 0 or a live stream of this process (the [`HostRma`] contract).
unsafe fn borrow(raw: u64) -> Stream {
    // SAFETY: forwarded from the caller.
    unsafe { Stream::borrow_raw(raw) }
}

fn nccl_stream(raw: u64) -> CudaStream {
    raw as usize as CudaStream
}

impl HostRma for NcclHostRma {
    fn heap_window(&self) -> (u64, usize) {
        (self.heap.ptr(), self.heap.size())
    }

    fn staging(&self) -> StagingLayout {
        self.layout
    }

    fn internal_stream(&self) -> u64 {
        self.internal.raw()
    }

    fn strict_ordering(&self) -> bool {
        self.heap.strict_ordering()
    }

    fn enter(&self) -> Result<()> {
        self.device.make_current().map_err(cuda_err)
    }

    unsafe fn copy(&self, dst: u64, src: u64, bytes: usize, stream: u64) -> Result<()> {
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        // SAFETY: the trait's contract, forwarded.
        unsafe { cuda::memcpy_async(dst, src, bytes, &s) }.map_err(cuda_err)
    }

    unsafe fn gather(
        &self,
        dst: u64,
        src: u64,
        src_pitch: usize,
        elem: usize,
        count: usize,
        stream: u64,
    ) -> Result<()> {
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        // SAFETY: the trait's contract, forwarded: one element per row, the destination
        // rows contiguous (pitch = element size).
        unsafe { cuda::memcpy_2d_async(dst, elem, src, src_pitch, elem, count, &s) }
            .map_err(cuda_err)
    }

    unsafe fn store(&self, dst: u64, value: Scalar, stream: u64) -> Result<()> {
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        let r = match (value.width, self.use_stream_mem_ops) {
            // SAFETY: `dst` is an aligned word of staging memory (the contract).
            (Width::W8, true) => unsafe { cuda::write_value_64(&s, dst, value.bits) },
            // SAFETY: as above.
            (Width::W4, true) => unsafe { cuda::write_value_32(&s, dst, value.bits as u32) },
            // No driver operation stores 1 or 2 bytes (nor 4 or 8 without stream memory
            // operations): one stream-ordered memset per byte.
            (w, _) => (0..w.bytes()).try_for_each(|i| {
                let byte = (value.bits >> (8 * i)) as u8;
                // SAFETY: byte `i` of the word at `dst`, staging memory (the contract).
                unsafe { cuda::memset_d8_async(dst + i as u64, byte, 1, &s) }
            }),
        };
        r.map_err(cuda_err)
    }

    unsafe fn put(
        &self,
        local: u64,
        bytes: usize,
        peer: i32,
        offset: usize,
        stream: u64,
    ) -> Result<()> {
        // SAFETY: the trait's contract, forwarded; `local` lies in the heap's or the
        // staging window (the transport's choice), both registered symmetric.
        unsafe {
            self.comm.put_signal(
                local as usize as *const c_void,
                bytes,
                sys::ncclDataType_t::ncclUint8,
                peer,
                &self.heap,
                offset,
                nccl_stream(stream),
            )
        }
        .map_err(nccl_err)
    }

    unsafe fn signal(&self, peer: i32, stream: u64) -> Result<()> {
        // SAFETY: the trait's contract, forwarded.
        unsafe { self.comm.signal(peer, nccl_stream(stream)) }.map_err(nccl_err)
    }

    unsafe fn wait(&self, peer: i32, count: i32, stream: u64) -> Result<()> {
        let waits = [WaitSignal { peer, count }];
        // SAFETY: the trait's contract, forwarded.
        unsafe { self.comm.wait_signal(&waits, nccl_stream(stream)) }.map_err(nccl_err)
    }

    unsafe fn slot_wait(&self, slot: usize, stream: u64) -> Result<()> {
        let event = self.event(slot)?;
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        s.wait_event(event).map_err(cuda_err)
    }

    unsafe fn slot_record(&self, slot: usize, stream: u64) -> Result<()> {
        let event = self.event(slot)?;
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        event.record(&s).map_err(cuda_err)
    }

    unsafe fn query(&self, stream: u64) -> Result<bool> {
        // SAFETY: the trait's contract, forwarded.
        let s = unsafe { borrow(stream) };
        s.query_done().map_err(cuda_err)
    }

    fn async_error(&self) -> Result<()> {
        self.comm.async_error().map_err(nccl_err)
    }
}
