//! The GIN transport: host-initiated NVSHMEM operations on PEs that are **not** load/store
//! reachable (other nodes), through NCCL's host RMA — `ncclPutSignal`, `ncclSignal`,
//! `ncclWaitSignal` (NCCL ≥ 2.29.2, and a communicator whose `hostRmaSupport` is set).
//!
//! The router sends a PE here only when it is not an LSA peer; every PE-less operation
//! (streams, waits on local memory, barriers, `signal_fetch`, `memset_local`) goes to
//! implementation 0, the LSA transport. This transport shares the LSA transport's
//! communicator and heap window ([`crate::lsa::LsaTransport::shared`]).
//!
//! # What NCCL host RMA offers, and what that makes of NVSHMEM
//!
//! NCCL's host RMA is stream-ordered *put + signal*: `ncclPutSignal` writes a contiguous
//! range of a window into the same window of a peer and then increments an NCCL-managed
//! counter of that peer (not user memory); `ncclWaitSignal` waits for a number of such
//! increments. There is no get, no remote atomic and no signal SET on user memory. So:
//!
//! | NVSHMEM operation | here |
//! | --- | --- |
//! | `put` (contiguous), source in this PE's heap window | one `ncclPutSignal` of `len` × `ncclUint8` from the source to window offset `dst` of the PE |
//! | `put`, any other source (host memory, device memory outside the heap) | staged: per chunk of the staging window, a local copy (`cuMemcpyAsync`) into a chunk slot, then one `ncclPutSignal` from it to `dst + offset of the chunk` — chunks in order, on the same stream |
//! | `p` (1, 2, 4, 8 bytes) | the value is stored into a word slot of the staging window on the stream (`cuStreamWriteValue32/64`, or one `cuMemsetD8Async` per byte), then one `ncclPutSignal` of its width |
//! | `put_signal` SET | the data as `put`, then the 8-byte signal value as `p` to `sig` (see "Ordering") |
//! | `signal_op` SET | an 8-byte `p` of the value to `sig` |
//! | `put_signal` / `signal_op` ADD | `NotImplemented`, naming the PE: no remote atomic add in host RMA |
//! | `iput`, both strides 1 | one contiguous `put` |
//! | `iput`, destination stride 1, source strided | per chunk: one gather (`cuMemcpy2DAsync`) into a chunk slot, one `ncclPutSignal` |
//! | `iput`, destination strided | one `ncclPutSignal` per element (from the heap window directly, or from a chunk slot the elements were gathered into) |
//! | `get`, `iget`, `g` | `NotImplemented`, naming the operation and the PE: no host get in NCCL host RMA |
//! | atomics | `NotImplemented`, naming the operation and the PE |
//! | `fence` | nothing to enqueue (see "Ordering") |
//! | `quiet` | [`Order::Now`]: waits for the internal stream; [`Order::Stream`]: nothing to enqueue |
//! | `stream_synchronize` | waits for the stream (with the deadline below), then checks `ncclCommGetAsyncError` |
//! | PE-less operations | `NotImplemented` ("served by the LSA transport"): never routed here |
//! | `is_lsa_peer` / `peer_ptr` | true / this PE's heap address for this PE only; false / null for every other PE |
//!
//! [`GinTransport::notify`] and [`GinTransport::wait_notifications`] expose `ncclSignal`
//! and `ncclWaitSignal` themselves, for protocols built on NCCL's counters.
//!
//! # Streams
//!
//! [`Order::Now`] operations run on an internal stream and the call returns once that
//! stream has run them: once `ncclPutSignal` has completed, the source may be reused.
//! [`Order::Stream`] operations are enqueued on the caller's `CUstream` (0: the legacy
//! default stream) and return at once. Waiting is a poll of `cuStreamQuery` that also
//! checks NCCL's asynchronous error and gives up after the transport's timeout with
//! [`TransportError::Timeout`]: a put to a PE that never makes progress would otherwise
//! hang the caller. (The stream itself stays blocked; the error says so.)
//!
//! # Staging
//!
//! In NCCL 2.29.2–2.30.7 the *source* of `ncclPutSignal` must lie in a window registered
//! with `NCCL_WIN_COLL_SYMMETRIC` (NCCL looks the window up from the address). Sources
//! inside this PE's heap window are used as they are; everything else goes through a
//! staging window that [`GinTransport::new`] allocates (`ncclMemAlloc`, one physical
//! segment as NCCL requires) and registers as its own symmetric window — a collective
//! step, so every PE creates its GIN transport together. Its layout
//! ([`StagingLayout`]): 512 word slots of 8 bytes (values of `p` and signals), then
//! 4 chunk slots of 1 MiB (staged data), handed out round-robin.
//!
//! A slot is reused safely across streams by one CUDA event per slot: before its use the
//! stream waits for the slot's event (`cuStreamWaitEvent`: the previous user, on any
//! stream, has finished), after its last `ncclPutSignal` the event is recorded on the
//! stream. The wait–use–record sequence of one operation is enqueued under one lock. On
//! one stream the slot is also free by stream order: NCCL's proxy path makes the stream
//! wait (`cuStreamWaitValue64` on the put's `doneSeq`) until the network operation has
//! completed, so work after a `ncclPutSignal` on its stream starts only once the put has
//! read its source.
//!
//! # Ordering
//!
//! What is relied on, from NCCL's host-RMA proxy (`src/rma/rma_proxy*.cc`, 2.29.x on):
//! each `ncclPutSignal` made outside an NCCL group (niin-rs never groups them) is its own
//! launch: a stream write of the descriptor's `readySeq`, which lets the proxy issue the
//! network put, then a stream wait for its `doneSeq`, set when the network reports the put
//! complete; and the proxy issues a peer's operations in FIFO order. Hence, on one stream:
//!
//! - a later put is issued only after every earlier put on that stream has completed
//!   (network completion: the target's NIC has acknowledged the data) — that is what
//!   makes `quiet(Order::Stream)` and `fence` need no enqueued work, and what orders
//!   `put_signal`'s signal word after its data;
//! - at the target, the data and then the signal word are written by the NIC into the
//!   heap. With `NCCL_WIN_STRICT_ORDERING` on the heap window (2.29.7+; the LSA transport
//!   requests it where the library knows it, [`GinTransport::strict_ordering`] reports
//!   it) the NIC does not use relaxed PCIe ordering into that window, so a PE that sees
//!   the signal word sees the data. Without it (2.29.2–2.29.6) the signal word is still
//!   only sent after the data's acknowledgement, but NCCL does not promise that the
//!   target GPU observes the two writes in that order.
//!
//! Across different streams (and between [`Order::Now`] and stream operations) nothing
//! is ordered, as for the other transports. A `p` is one network write of at most 8
//! aligned bytes, assumed not to be torn by the NIC.
//!
//! # Not run
//!
//! This transport needs at least two nodes with a NIC and a network plugin with host
//! RMA; the unit tests check its routing, staging, chunking and argument encoding against
//! a recording fake of [`HostRma`] on the CPU. [`NcclHostRma`] has not been run.

mod backend;
mod staging;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub use backend::{HostRma, NcclHostRma};
pub use staging::{Slot, StagingLayout};

use crate::cuda::Device;
use crate::error::{Result, TransportError};
use crate::nccl::{Comm, HOST_RMA_VERSION, NcclVersion, Window};
use crate::ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSync,
    WaitKind, Width,
};
use crate::transport::Transport;

use self::staging::Rings;

/// The longest pause between two polls of a stream.
const MAX_POLL_PAUSE: Duration = Duration::from_micros(100);

/// `Ok` when NCCL can do host RMA: the library exports `ncclPutSignal`, `ncclSignal`
/// and `ncclWaitSignal` (`has_host_rma`, from [`crate::nccl::Capabilities::host_rma`]) and
/// the communicator does not report `hostRmaSupport = false`. `reported` is what
/// `ncclCommQueryProperties` said: `None` when the library has no such query (2.28),
/// `Some(None)` when it does not report the field (2.29.2/2.29.3: accepted, as those
/// versions have host RMA), `Some(Some(flag))` otherwise.
pub fn check_host_rma(
    version: NcclVersion,
    path: &str,
    has_host_rma: bool,
    reported: Option<Option<bool>>,
) -> Result<()> {
    let why = if version < HOST_RMA_VERSION || !has_host_rma {
        Some("the library does not export ncclPutSignal, ncclSignal and ncclWaitSignal")
    } else {
        match reported {
            None => Some("the library has no ncclCommQueryProperties"),
            Some(Some(false)) => Some(
                "the communicator reports hostRmaSupport = false (no network plugin with \
                 RMA support for these ranks?)",
            ),
            Some(_) => None,
        }
    };
    match why {
        None => Ok(()),
        Some(why) => Err(TransportError::NotImplemented {
            what: format!(
                "host RMA to non-LSA PEs needs NCCL ≥ {HOST_RMA_VERSION} with hostRmaSupport; \
                 found NCCL {version} at {path}: {why}"
            ),
        }),
    }
}

/// One PE's GIN transport. See the module docs.
pub struct GinTransport {
    pe: usize,
    n_pes: usize,
    heap_size: u64,
    timeout: Duration,
    heap: (u64, usize),
    layout: StagingLayout,
    rings: Mutex<Rings>,
    finalized: AtomicBool,
    rma: Box<dyn HostRma>,
}

impl fmt::Debug for GinTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GinTransport")
            .field("pe", &self.pe)
            .field("n_pes", &self.n_pes)
            .field("heap_size", &self.heap_size)
            .field("rma", &self.rma)
            .finish_non_exhaustive()
    }
}

/// Where a transfer's source elements come from.
#[derive(Clone, Copy)]
enum Source {
    /// Inside this PE's heap window: put from it directly.
    Window(u64),
    /// Anywhere else: stage it.
    Outside(u64),
}

impl GinTransport {
    /// This PE's GIN transport over `comm` and the heap's `window` (both from
    /// [`crate::lsa::LsaTransport::shared`]), for heaps of `heap_size` bytes; stream waits
    /// give up after `timeout`.
    ///
    /// Collective: every PE of `comm` calls it together (it registers the staging window),
    /// and every PE drops its transport in the same order. Refused with
    /// `NotImplemented` when NCCL lacks host RMA (see [`check_host_rma`]).
    pub fn new(
        comm: Comm,
        window: Arc<Window>,
        device: Device,
        heap_size: u64,
        timeout: Duration,
    ) -> Result<GinTransport> {
        let nccl = comm.nccl();
        device.make_current().map_err(backend::cuda_err)?;
        let reported = comm
            .properties()
            .map_err(backend::nccl_err)?
            .map(|p| p.host_rma_support);
        check_host_rma(
            nccl.version(),
            nccl.path(),
            nccl.capabilities().host_rma,
            reported,
        )?;
        if !window.comm().same_as(&comm) {
            return Err(TransportError::BadArgument {
                op: "GinTransport::new",
                what: "the heap's window belongs to another communicator".to_owned(),
            });
        }
        let pe = comm.rank() as usize;
        let n_pes = comm.n_ranks() as usize;
        let rma = NcclHostRma::new(
            comm,
            window,
            device,
            StagingLayout::DEFAULT_CHUNK_BYTES,
            StagingLayout::DEFAULT_CHUNK_SLOTS,
        )?;
        GinTransport::with_backend(Box::new(rma), pe, n_pes, heap_size, timeout)
    }

    /// This PE (`pe` of `n_pes`) over any [`HostRma`] implementation (the NCCL one, or a
    /// fake for tests). `heap_size` must fit in the backend's heap window.
    pub fn with_backend(
        rma: Box<dyn HostRma>,
        pe: usize,
        n_pes: usize,
        heap_size: u64,
        timeout: Duration,
    ) -> Result<GinTransport> {
        let bad = |what: String| {
            Err(TransportError::BadArgument {
                op: "GinTransport",
                what,
            })
        };
        if n_pes > i32::MAX as usize {
            return bad(format!("{n_pes} PEs: NCCL ranks are `int`s"));
        }
        if pe >= n_pes {
            return Err(TransportError::PeOutOfRange { pe, n_pes });
        }
        let heap = rma.heap_window();
        if heap_size > heap.1 as u64 {
            return bad(format!(
                "a heap of {heap_size} bytes does not fit in the {}-byte window",
                heap.1
            ));
        }
        let layout = rma.staging();
        layout.check()?;
        Ok(GinTransport {
            pe,
            n_pes,
            heap_size,
            timeout,
            heap,
            layout,
            rings: Mutex::new(Rings::default()),
            finalized: AtomicBool::new(false),
            rma,
        })
    }

    /// Whether the heap's window is strictly ordered (`NCCL_WIN_STRICT_ORDERING`), which
    /// the data-before-signal guarantee of `put_signal` at the target rests on (module
    /// docs, "Ordering").
    pub fn strict_ordering(&self) -> bool {
        self.rma.strict_ordering()
    }

    /// The staging window's layout.
    pub fn staging(&self) -> StagingLayout {
        self.layout
    }

    /// Increments NCCL's signal counter of this PE at `pe` (`ncclSignal`), after every
    /// earlier operation of the stream. Note that every put of this transport to `pe`
    /// (each `ncclPutSignal`: each chunk, each `p`, each signal word) increments it too.
    pub fn notify(&self, order: Order, pe: usize) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        // SAFETY: the stream is this transport's own or vouched for by the caller.
        self.run(order, "notify", |_, s| unsafe { self.rma.signal(peer, s) })
    }

    /// Makes the stream wait until NCCL's signal counter of `pe` here has grown by
    /// `count` since the previous wait (`ncclWaitSignal`); [`Order::Now`] waits on the
    /// host (with the transport's timeout). Counts every `ncclPutSignal` and `ncclSignal`
    /// that `pe` made toward this PE (see [`GinTransport::notify`]).
    pub fn wait_notifications(&self, order: Order, pe: usize, count: u32) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        let count = i32::try_from(count).map_err(|_| TransportError::BadArgument {
            op: "wait_notifications",
            what: format!("{count} signals: NCCL counts in `int`s"),
        })?;
        if count == 0 {
            return Ok(());
        }
        // SAFETY: the stream is this transport's own or vouched for by the caller.
        self.run(order, "wait_notifications", |_, s| unsafe {
            self.rma.wait(peer, count, s)
        })
    }

    fn live(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            return Err(TransportError::Finalized { pe: self.pe });
        }
        self.rma.enter()
    }

    fn lock(&self) -> MutexGuard<'_, Rings> {
        self.rings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `pe` as an NCCL rank, checked.
    fn peer(&self, pe: usize) -> Result<i32> {
        if pe >= self.n_pes {
            return Err(TransportError::PeOutOfRange {
                pe,
                n_pes: self.n_pes,
            });
        }
        Ok(pe as i32)
    }

    /// `len` bytes at `addr` as a window offset, checked against the heap.
    fn range(&self, addr: SymAddr, len: u64) -> Result<usize> {
        addr.check_range(len, self.heap_size)?;
        Ok(addr.0 as usize)
    }

    /// Checks the alignment of `addr`.
    fn aligned(addr: SymAddr, align: usize) -> Result<()> {
        addr.check_aligned(align)
    }

    fn local(op: &'static str, ptr: *const u8, len: usize) -> Result<()> {
        if ptr.is_null() && len > 0 {
            return Err(TransportError::BadArgument {
                op,
                what: format!("the local buffer of {len} bytes is a null pointer"),
            });
        }
        Ok(())
    }

    fn not_implemented(&self, op: &str, pe: usize, why: &str) -> TransportError {
        TransportError::NotImplemented {
            what: format!("{op} on PE {pe} from PE {} over GIN: {why}", self.pe),
        }
    }

    /// Where `len` bytes at `src` come from.
    fn source(&self, src: u64, len: usize) -> Source {
        let (base, size) = self.heap;
        let inside = src >= base
            && src
                .checked_add(len as u64)
                .is_some_and(|end| end <= base + size as u64);
        if inside {
            Source::Window(src)
        } else {
            Source::Outside(src)
        }
    }

    /// Enqueues `f` on the stream of `order` under the staging lock; for [`Order::Now`]
    /// on the internal stream, waited for before returning.
    fn run(
        &self,
        order: Order,
        op: &'static str,
        f: impl FnOnce(&mut Rings, u64) -> Result<()>,
    ) -> Result<()> {
        let stream = match order {
            Order::Now => self.rma.internal_stream(),
            Order::Stream(StreamHandle(raw)) => raw,
        };
        {
            let mut rings = self.lock();
            f(&mut rings, stream)?;
        }
        if order == Order::Now {
            self.wait_stream(stream, op)?;
        }
        Ok(())
    }

    /// Polls `stream` until it has run everything, checking NCCL's asynchronous error,
    /// for at most the timeout.
    fn wait_stream(&self, stream: u64, op: &'static str) -> Result<()> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(1);
        // SAFETY: `stream` is the internal stream or one the caller vouched for.
        while !unsafe { self.rma.query(stream) }? {
            self.rma.async_error()?;
            if start.elapsed() > self.timeout {
                return Err(TransportError::Timeout {
                    pe: self.pe,
                    op,
                    waited: start.elapsed(),
                    detail: format!(
                        "host RMA work on stream {stream:#x} has not completed (a PE that \
                         makes no progress, or a network that is down?); the stream stays \
                         blocked"
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_POLL_PAUSE);
        }
        self.rma.async_error()
    }

    /// One `ncclPutSignal` per piece of `len` bytes from `src` to window offset `dst` of
    /// `peer`: directly from the heap window, or staged through chunk slots in order.
    ///
    /// # Safety
    /// `src..src+len` is readable memory valid until the stream has run the copies; the
    /// stream is the internal one or vouched for; `dst..dst+len` is a checked heap range.
    unsafe fn put_bytes(
        &self,
        rings: &mut Rings,
        stream: u64,
        peer: i32,
        dst: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        match self.source(src, len) {
            // SAFETY: the source lies in the heap window; the rest is forwarded.
            Source::Window(src) => unsafe { self.rma.put(src, len, peer, dst, stream) },
            Source::Outside(src) => {
                let chunk = self.layout.chunk_bytes;
                let mut done = 0;
                while done < len {
                    let n = chunk.min(len - done);
                    let slot = rings.chunk(&self.layout);
                    let from = src + done as u64;
                    // SAFETY: the stream is vouched for (this function's contract).
                    unsafe { self.rma.slot_wait(slot.index, stream) }?;
                    // SAFETY: the slot is `chunk` bytes of the staging window, free now in
                    // stream order; the source is valid (this function's contract).
                    unsafe { self.rma.copy(slot.addr, from, n, stream) }?;
                    // SAFETY: the slot lies in the staging window; the range is checked.
                    unsafe { self.rma.put(slot.addr, n, peer, dst + done, stream) }?;
                    // SAFETY: the stream is vouched for (this function's contract).
                    unsafe { self.rma.slot_record(slot.index, stream) }?;
                    done += n;
                }
                Ok(())
            }
        }
    }

    /// Stores `value` into a word slot, then puts it to window offset `dst` of `peer`.
    ///
    /// # Safety
    /// The stream is the internal one or vouched for; `dst` is a checked, aligned word.
    unsafe fn put_word(
        &self,
        rings: &mut Rings,
        stream: u64,
        peer: i32,
        dst: usize,
        value: Scalar,
    ) -> Result<()> {
        let slot = rings.word(&self.layout);
        // SAFETY: the stream is vouched for (this function's contract).
        unsafe { self.rma.slot_wait(slot.index, stream) }?;
        // SAFETY: the slot is an aligned 8-byte word of the staging window, free now in
        // stream order.
        unsafe { self.rma.store(slot.addr, value, stream) }?;
        // SAFETY: the slot lies in the staging window; `dst` is a checked word.
        unsafe {
            self.rma
                .put(slot.addr, value.width.bytes(), peer, dst, stream)
        }?;
        // SAFETY: the stream is vouched for (this function's contract).
        unsafe { self.rma.slot_record(slot.index, stream) }
    }

    /// The strided put (see the module docs' table).
    ///
    /// # Safety
    /// As [`GinTransport::put_bytes`], for every element of the source.
    #[allow(clippy::too_many_arguments)]
    unsafe fn put_strided(
        &self,
        rings: &mut Rings,
        stream: u64,
        peer: i32,
        dst: usize,
        src: u64,
        shape: Strided,
        src_span: usize,
    ) -> Result<()> {
        let e = shape.elem_size;
        let (ds, ss) = (shape.dst_stride * e, shape.src_stride * e);
        let n = shape.nelems;
        if shape.dst_stride == 1 && shape.src_stride == 1 {
            // SAFETY: forwarded: one contiguous range on both sides.
            return unsafe { self.put_bytes(rings, stream, peer, dst, src, n * e) };
        }
        let in_window = matches!(self.source(src, src_span), Source::Window(_));
        if shape.dst_stride != 1 && in_window {
            for i in 0..n {
                let from = src + (i * ss) as u64;
                // SAFETY: element `i` lies in the heap window (the whole span does).
                unsafe { self.rma.put(from, e, peer, dst + i * ds, stream) }?;
            }
            return Ok(());
        }
        // Gather chunks of elements into staging, then one put per chunk (contiguous
        // destination) or per element (strided destination).
        let per_chunk = self.layout.chunk_bytes / e;
        let mut first = 0;
        while first < n {
            let k = per_chunk.min(n - first);
            let slot = rings.chunk(&self.layout);
            let from = src + (first * ss) as u64;
            // SAFETY: the stream is vouched for (this function's contract).
            unsafe { self.rma.slot_wait(slot.index, stream) }?;
            if shape.src_stride == 1 {
                // SAFETY: the slot holds `per_chunk` elements and is free now in stream
                // order; the source elements are valid (this function's contract).
                unsafe { self.rma.copy(slot.addr, from, k * e, stream) }?;
            } else {
                // SAFETY: as above, element by element (`ss` bytes apart).
                unsafe { self.rma.gather(slot.addr, from, ss, e, k, stream) }?;
            }
            if shape.dst_stride == 1 {
                // SAFETY: the slot lies in the staging window; the span is checked.
                unsafe {
                    self.rma
                        .put(slot.addr, k * e, peer, dst + first * e, stream)
                }?;
            } else {
                for j in 0..k {
                    let at = slot.addr + (j * e) as u64;
                    // SAFETY: element `j` of the slot; its destination lies in the span.
                    unsafe { self.rma.put(at, e, peer, dst + (first + j) * ds, stream) }?;
                }
            }
            // SAFETY: the stream is vouched for (this function's contract).
            unsafe { self.rma.slot_record(slot.index, stream) }?;
            first += k;
        }
        Ok(())
    }

    fn check_shape(op: &'static str, shape: &Strided) -> Result<(usize, usize)> {
        if !matches!(shape.elem_size, 1 | 2 | 4 | 8 | 16) {
            return Err(TransportError::BadWidth {
                op,
                bytes: shape.elem_size,
            });
        }
        let bad = |what: String| TransportError::BadArgument { op, what };
        if shape.dst_stride == 0 || shape.src_stride == 0 {
            return Err(bad(format!(
                "strides must be at least 1 element (dst_stride {}, src_stride {})",
                shape.dst_stride, shape.src_stride
            )));
        }
        let span = |stride: usize| {
            shape
                .span(stride)
                .ok_or_else(|| bad(format!("{shape:?} overflows the address space")))
        };
        Ok((span(shape.dst_stride)?, span(shape.src_stride)?))
    }

    fn pe_less(&self, op: &str) -> TransportError {
        TransportError::NotImplemented {
            what: format!(
                "{op} on the GIN transport of PE {}: operations on this PE's own memory and \
                 streams are served by the LSA transport (implementation 0)",
                self.pe
            ),
        }
    }
}

impl Transport for GinTransport {
    fn my_pe(&self) -> usize {
        self.pe
    }

    fn n_pes(&self) -> usize {
        self.n_pes
    }

    fn heap_size(&self) -> u64 {
        self.heap_size
    }

    fn is_lsa_peer(&self, pe: usize) -> bool {
        pe == self.pe
    }

    fn peer_ptr(&self, pe: usize, addr: SymAddr) -> *mut u8 {
        if pe == self.pe && addr.0 < self.heap_size {
            (self.heap.0 + addr.0) as usize as *mut u8
        } else {
            std::ptr::null_mut()
        }
    }

    fn stream_create(&self) -> Result<StreamHandle> {
        Err(self.pe_less("stream_create"))
    }

    fn stream_destroy(&self, _stream: StreamHandle) -> Result<()> {
        Err(self.pe_less("stream_destroy"))
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.live()?;
        self.wait_stream(stream.0, "stream_synchronize")
            .map_err(|e| match e {
                e @ TransportError::Timeout { .. } => e,
                other => TransportError::StreamFailed {
                    stream,
                    cause: other.to_string(),
                },
            })
    }

    unsafe fn put(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        let dst = self.range(dst, len as u64)?;
        Self::local("put", src, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the source is valid until the operation has run (the caller's
        // contract); the destination range is checked.
        self.run(order, "put", |rings, s| unsafe {
            self.put_bytes(rings, s, peer, dst, src as u64, len)
        })
    }

    unsafe fn get(
        &self,
        _order: Order,
        pe: usize,
        _dst: *mut u8,
        _src: SymAddr,
        _len: usize,
    ) -> Result<()> {
        self.live()?;
        self.peer(pe)?;
        Err(self.not_implemented("get", pe, NO_GET))
    }

    unsafe fn iput(
        &self,
        order: Order,
        pe: usize,
        dst: SymAddr,
        src: *const u8,
        shape: Strided,
    ) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        let (dst_span, src_span) = Self::check_shape("iput", &shape)?;
        let dst = self.range(dst, dst_span as u64)?;
        Self::local("iput", src, src_span)?;
        if shape.nelems == 0 {
            return Ok(());
        }
        // SAFETY: every source element is valid until the operation has run (the
        // caller's contract); the destination span is checked.
        self.run(order, "iput", |rings, s| unsafe {
            self.put_strided(rings, s, peer, dst, src as u64, shape, src_span)
        })
    }

    unsafe fn iget(
        &self,
        _order: Order,
        pe: usize,
        _dst: *mut u8,
        _src: SymAddr,
        _shape: Strided,
    ) -> Result<()> {
        self.live()?;
        self.peer(pe)?;
        Err(self.not_implemented("iget", pe, NO_GET))
    }

    fn p(&self, order: Order, pe: usize, dst: SymAddr, value: Scalar) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        let w = value.width.bytes();
        Self::aligned(dst, w)?;
        let dst = self.range(dst, w as u64)?;
        let value = Scalar {
            bits: value.bits & value.width.mask(),
            width: value.width,
        };
        // SAFETY: the destination is a checked, aligned word.
        self.run(order, "p", |rings, s| unsafe {
            self.put_word(rings, s, peer, dst, value)
        })
    }

    fn g(&self, _order: Order, pe: usize, _src: SymAddr, _width: Width) -> Result<u64> {
        self.live()?;
        self.peer(pe)?;
        Err(self.not_implemented("g", pe, NO_GET))
    }

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
    ) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        if op == SignalOp::Add {
            return Err(self.not_implemented("put_signal with NVSHMEM_SIGNAL_ADD", pe, NO_ADD));
        }
        let dst = self.range(dst, len as u64)?;
        Self::aligned(sig, 8)?;
        let sig = self.range(sig, 8)?;
        Self::local("put_signal", src, len)?;
        let word = Scalar {
            bits: value,
            width: Width::W8,
        };
        // Stream order puts the signal word after the data (module docs, "Ordering").
        self.run(order, "put_signal", |rings, s| {
            // SAFETY: as in `put`.
            unsafe { self.put_bytes(rings, s, peer, dst, src as u64, len) }?;
            // SAFETY: the signal is a checked, aligned word.
            unsafe { self.put_word(rings, s, peer, sig, word) }
        })
    }

    fn signal_op(
        &self,
        order: Order,
        pe: usize,
        sig: SymAddr,
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        self.live()?;
        let peer = self.peer(pe)?;
        if op == SignalOp::Add {
            return Err(self.not_implemented("signal_op NVSHMEM_SIGNAL_ADD", pe, NO_ADD));
        }
        Self::aligned(sig, 8)?;
        let sig = self.range(sig, 8)?;
        let word = Scalar {
            bits: value,
            width: Width::W8,
        };
        // SAFETY: the signal is a checked, aligned word.
        self.run(order, "signal_op", |rings, s| unsafe {
            self.put_word(rings, s, peer, sig, word)
        })
    }

    fn signal_fetch(&self, _sig: SymAddr) -> Result<u64> {
        Err(self.pe_less("signal_fetch"))
    }

    fn wait_until(
        &self,
        _order: Order,
        _ivar: SymAddr,
        _kind: WaitKind,
        _cmp: Cmp,
        _value: u64,
    ) -> Result<()> {
        Err(self.pe_less("wait_until"))
    }

    fn wait_until_all(
        &self,
        _order: Order,
        _ivars: SymAddr,
        _nelems: usize,
        _kind: WaitKind,
        _status: Option<&[i32]>,
        _cmp: Cmp,
        _value: u64,
    ) -> Result<()> {
        Err(self.pe_less("wait_until_all"))
    }

    fn wait_until_all_vector(
        &self,
        _order: Order,
        _ivars: SymAddr,
        _kind: WaitKind,
        _status: Option<&[i32]>,
        _cmp: Cmp,
        _values: &[u64],
    ) -> Result<()> {
        Err(self.pe_less("wait_until_all_vector"))
    }

    unsafe fn wait_until_all_deferred(
        &self,
        _stream: StreamHandle,
        _ivars: SymAddr,
        _nelems: usize,
        _kind: WaitKind,
        _cmp: Cmp,
        _arrays: DeferredWait,
    ) -> Result<()> {
        Err(self.pe_less("wait_until_all_on_stream"))
    }

    fn atomic(
        &self,
        pe: usize,
        _addr: SymAddr,
        op: AmoOp,
        _width: Width,
        _operand: u64,
        _compare: u64,
    ) -> Result<u64> {
        self.live()?;
        self.peer(pe)?;
        Err(self.not_implemented(
            &format!("atomic {op:?}"),
            pe,
            "NCCL host RMA has no remote atomics",
        ))
    }

    fn fence(&self, _order: Order) -> Result<()> {
        // Each put on a stream completes before the stream's next one starts, and
        // blocking puts have completed when they return (module docs, "Ordering").
        self.live()
    }

    fn quiet(&self, order: Order) -> Result<()> {
        self.live()?;
        match order {
            Order::Now => self.wait_stream(self.rma.internal_stream(), "quiet"),
            // The stream's later work starts after its earlier puts have completed.
            Order::Stream(_) => Ok(()),
        }
    }

    fn barrier(&self, _order: Order, _team: TeamSync) -> Result<()> {
        Err(self.pe_less("barrier"))
    }

    fn memset_local(&self, _addr: SymAddr, _byte: u8, _len: usize) -> Result<()> {
        Err(self.pe_less("memset_local"))
    }

    fn finalize(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.rma.enter()?;
        self.wait_stream(self.rma.internal_stream(), "finalize")
    }
}

/// Why `get`, `iget` and `g` are not implemented.
const NO_GET: &str =
    "no host get in NCCL host RMA (only ncclPutSignal, ncclSignal and ncclWaitSignal)";

/// Why signal ADD is not implemented.
const NO_ADD: &str = "no remote atomic add in NCCL host RMA (its signals are NCCL-managed \
                      counters, not heap words)";
