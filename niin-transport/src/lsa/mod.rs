//! The LSA transport: host-initiated NVSHMEM operations on PEs whose symmetric heap this
//! process can load and store (LSA peers: the same NVLink domain, or the same GPU), over
//! the NCCL window that holds the heap.
//!
//! Each PE's heap is one `ncclMemAlloc` allocation registered as a symmetric NCCL window;
//! NCCL maps the LSA peers' heaps into this process, and `ncclGetPeerDevicePointer` gives
//! their addresses. Every operation then picks the cheapest engine that does the job:
//!
//! | operation | engine |
//! | --- | --- |
//! | put / get | `cuMemcpyAsync` (copy engine) between the two heaps or a local buffer |
//! | iput / iget | `cuMemcpy2DAsync`: one element per row, pitches = strides |
//! | p of 4 or 8 bytes, signal SET | `cuStreamWriteValue32/64` (a kernel where the device has no stream memory operations) |
//! | p of 1 or 2 bytes, signal ADD, AMOs | one-thread kernels of niin-rs's own PTX module |
//! | stream wait, EQ (any) or GE (unsigned), 4/8 bytes | `cuStreamWaitValue32/64` (GE is the driver's cyclic `(int)(*addr - value) >= 0`, as in NVSHMEM: equal to `>=` while the values are less than 2^31 / 2^63 apart) |
//! | other stream waits | a polling kernel with a deadline (`NIIN_TIMEOUT`) |
//! | blocking waits | host polling of the word with a deadline |
//! | barrier over all PEs, all LSA peers | a central barrier: a one-thread arrival kernel, then `cuStreamWaitValue32` on this PE's release flag and its reset (see "Barriers over all PEs"); blocking: the same on the internal stream, polled with a deadline |
//! | barrier over all PEs, some on other nodes (or `NIIN_BARRIER=nccl`) | `ncclAllReduce` of one integer on the stream |
//! | blocking barrier over a sub-team | a central, self-resetting counter in the control area after the heap (one word per team handle at the team's PE 0), advanced with the AMO kernel and polled from the host |
//! | barrier over a sub-team on a stream | arrival counters in the control area (two per team handle on every PE): `signal_add` kernels to every other member's counter, then the wait kernel (with its deadline) on this PE's own; see "Stream barriers of sub-teams" |
//! | collectives (reduce, reducescatter, broadcast, fcollect, alltoall) of a team of LSA peers | a barrier, copy-engine copies or one generated reduction kernel, a barrier, on the stream (`coll.rs`) |
//!
//! [`Order::Now`] operations run on an internal stream and are synchronized before the
//! call returns; [`Order::Stream`] operations are enqueued on the caller's stream (a
//! `CUstream` value; 0 is the legacy default stream) and return at once.
//!
//! ## Barriers over all PEs
//!
//! Where every PE is an LSA peer of every other and every PE's device has stream memory
//! operations (agreed by all PEs at start, with `NIIN_BARRIER`, [`BarrierPath`]), a
//! barrier of a team of all PEs is a central barrier on two `u32` words per team handle
//! in the control area (`stream_barrier.rs`): an arrival count at the team's first PE and
//! a release flag at every PE. Each PE enqueues `niin_barrier_arrive` (a release fence,
//! then an atomic add to the count; the add that completes the count resets it and sets
//! every PE's flag), then `cuStreamWaitValue32(flag == 1)` and
//! `cuStreamWriteValue32(flag = 0)`. Why not `ncclAllReduce`: its kernel spins on the GPU
//! until every rank has joined, and PEs that share a GPU run by time-slicing, so a late
//! PE's work waits for the spinning one's time slice (4.5 ms a barrier on an H100 with 2
//! PEs); a stream wait-value is done by the GPU's front end, which yields. No value
//! depends on the call, so a captured barrier replays correctly from a CUDA graph.
//! Barriers on the internal stream (blocking ones, and those of blocking collectives) use
//! a second pair of words, so an arrival of a stream barrier still in flight is never
//! counted for a blocking one. As with any barrier, one PE's barriers of a team on
//! application streams must be ordered (one stream, or streams the application orders).
//! A stream barrier that a PE never joins blocks its stream (wait-values have no
//! deadline, as `ncclAllReduce` has none); a blocking one times out after
//! `NIIN_TIMEOUT` with an error.
//!
//! ## Stream barriers of sub-teams
//!
//! The control area after the heap holds, after the blocking barrier words, two `u64`
//! arrival counters per team handle on every PE (`stream_barrier.rs` has the layout). A
//! stream barrier of team `t` (this PE a member, every member an LSA peer) enqueues on
//! the caller's stream one `signal_add` of 1 to counter `c` of handle `t` on every other
//! member, then a wait kernel until this PE's own counter `c` of `t` is at least `E`,
//! and returns.
//!
//! - Counts. Counters are never reset (zeroed only with the heap at start). Each PE keeps,
//!   per handle and counter, the arrivals it has waited for so far, over every team of
//!   that handle it belonged to; a barrier of a team of `n` PEs adds `n - 1`, giving `E`.
//!   Every arrival at a PE's counter comes from a barrier of a team that PE is a member
//!   of, and the PE counts that barrier too, so when all arrivals so far have landed the
//!   counter equals the PE's count: `E` is exact without any reset.
//! - Which counter. `c` is the parity of the number of stream barriers this PE has
//!   enqueued for the team, a team here being its handle *and* members (start, stride,
//!   size). Only the PEs of that member set can have run barriers of such a team, and
//!   each ran all of them, so all members agree on `c` — also for a team made again
//!   with the same handle and members, whatever other teams used the handle between.
//!   A member can be at most one barrier ahead of another (its barrier `k + 1` adds run
//!   after its barrier `k` wait, which needed everyone's `k`-th add), and barrier
//!   `k + 1` uses the other counter, so an early arrival is never counted for the
//!   barrier before: a wait that passes has seen every member's arrival of this barrier
//!   (and of all earlier ones).
//! - Handle reuse. The transport is not told of team creation or destruction; nothing
//!   needs it: the counts above are per handle and cumulative, the parity per member
//!   set. What is needed is that one PE's stream barriers of a handle are ordered: on one
//!   stream, or on streams the application orders or synchronizes (true of barriers of
//!   one team anyway; for a destroyed team and a later team of the same handle,
//!   synchronize the stream before `nvshmem_team_destroy`, or keep using the same one).
//! - Memory order. Stream order completes the stream's earlier work (puts, stores,
//!   signals: the barrier's quiet) before the first `signal_add` runs; `signal_add` is
//!   `fence.acq_rel.sys` then `red.relaxed.sys` (a system-scope release), and the wait
//!   kernel ends with `fence.acq_rel.sys` after seeing the count (an acquire). So every
//!   member's pre-barrier writes are visible to work enqueued after the barrier on each
//!   member's stream. (The ordering of copy-engine writes before the next kernel rests
//!   on stream order, as for `put_signal` with a signal ADD.)
//! - Why the wait kernel and not `cuStreamWaitValue64` GE: the same work on the stream,
//!   but a deadline (`NIIN_TIMEOUT`, reported by the next stream synchronize) instead of
//!   a hang when a member never arrives, and an explicit acquire fence.
//! - A team of all PEs takes the central barrier above, or `ncclAllReduce` (which also
//!   serves worlds with GIN peers). Sub-teams keep the counters: a central count
//!   self-resets, which is safe only while every user of the handle's words belongs to
//!   every team of that handle (true of teams of all PEs), as a PE outside the old team
//!   could arrive at a new team's barrier before the old one's reset.
//!
//! Limits: a sub-team barrier needs a team handle < [`MAX_BARRIER_TEAMS`] and, on a
//! stream, every member an LSA peer of this PE (errors name the value); a stream barrier
//! over `n` PEs launches `n - 1` one-thread kernels plus the wait on each member;
//! `cuStreamWaitValue` waits have no deadline (they are what NVSHMEM uses too) — kernel
//! waits do.
//!
//! ## Peer addresses
//!
//! The heap base of every LSA peer comes from `ncclGetPeerDevicePointer` (2.29.2+). NCCL
//! 2.28 has no host query of it; there (or with `NIIN_PEER_ADDRESSES=descriptor`) the
//! transport reads the heap window's device-side descriptor, which gives NCCL's flat
//! range and this PE's LSA rank, and shares every PE's LSA rank in one all-reduce
//! (`flat_layout.rs`): the same addresses the device API computes.

mod coll;
pub mod device_support;
mod exit_guard;
mod flat_layout;
pub use coll::{HOST_COLL_VAR, HostCollPath};
pub use exit_guard::{FAULT_EXIT_VAR, FaultExit};
mod registered;
mod stream_barrier;
mod watchdog;

use crate::Fingerprints;
use flat_layout::FlatLayout;
pub use flat_layout::{PEER_ADDRESSES_VAR, PeerAddresses};
pub use registered::{HEAP_REMAP_VAR, MAX_REGISTERED, REGISTRATION_VA_BYTES};
use registered::{Placement, Registered};
pub use stream_barrier::{BARRIER_VAR, BarrierPath};
use stream_barrier::{CONTROL_BYTES, Central, StreamBarriers};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::coll::Collective;
use crate::cuda::{
    self, CollKernels, Device, DeviceBuffer, HostKernels, HostPinned, Stream, WaitCond, WaitSpec,
};
use crate::error::{Departure, Result, TransportError};
use crate::nccl::{Comm, DeviceMem, Window, WindowFlags};
use crate::ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSplit,
    TeamSync, WaitKind, Width,
};
use crate::status::{PeEnd, StatusBoard};
use crate::transport::Transport;

pub(crate) fn cuda_err(e: cuda::CudaError) -> TransportError {
    TransportError::Gpu {
        what: e.to_string(),
    }
}

fn nccl_err(e: crate::nccl::NcclError) -> TransportError {
    TransportError::Gpu {
        what: e.to_string(),
    }
}

/// What every PE must agree on at start (collective): each PE's `NIIN_HOST_COLL` (under
/// `nccl` every team split is an `ncclCommSplit`, which would wait forever for PEs that
/// skip it: different values are an error) and whether it can take the central barrier
/// over all PEs ([`BarrierPath`]; used only if every PE can). One all-reduce of two counts
/// on `stream`; returns whether every PE can take the central barrier.
fn agree_on_every_pe(
    comm: &Comm,
    stream: &Stream,
    host_coll: HostCollPath,
    central_here: bool,
    pe: usize,
    n_pes: usize,
) -> Result<bool> {
    let mine = i32::from(host_coll == HostCollPath::Nccl);
    let mut counts = [mine, i32::from(central_here)];
    sum_on_every_pe(comm, stream, &mut counts)?;
    let [nccl, central] = counts;
    if nccl != 0 && nccl as usize != n_pes {
        return Err(TransportError::BadArgument {
            op: "nvshmem_init",
            what: format!(
                "{HOST_COLL_VAR}=nccl is set on {nccl} of {n_pes} PEs (on PE {pe}: {}): \
                 every PE must set the same value",
                if mine == 1 { "set" } else { "not set" }
            ),
        });
    }
    Ok(central as usize == n_pes)
}

/// Replaces `values` with their sums over every PE (one `ncclAllReduce` of `i32`s, through
/// a scratch device buffer, on `stream`, synchronized; collective).
fn sum_on_every_pe(comm: &Comm, stream: &Stream, values: &mut [i32]) -> Result<()> {
    let bytes = size_of_val(values).max(4);
    let buf = DeviceBuffer::alloc(bytes).map_err(cuda_err)?;
    let at = buf.ptr();
    // SAFETY: `buf` holds `bytes` bytes, at least the size of `values`, a live slice; the
    // copy is synchronous.
    unsafe { cuda::memcpy_sync(at, values.as_ptr() as u64, size_of_val(values)) }
        .map_err(cuda_err)?;
    // SAFETY: the all-reduce reads and writes the `values.len()` i32 of `buf` on `stream`;
    // the communicator is live. Synchronized below, before the copy back.
    unsafe {
        comm.all_reduce_sum_i32(
            at as *const i32,
            at as *mut i32,
            values.len(),
            stream.raw() as *mut _,
        )
    }
    .map_err(nccl_err)?;
    stream.synchronize().map_err(cuda_err)?;
    // SAFETY: as the first copy, the other way; the all-reduce has completed.
    unsafe { cuda::memcpy_sync(values.as_mut_ptr() as u64, at, size_of_val(values)) }
        .map_err(cuda_err)
}

/// Reads the flat layout of `window` from its device-side descriptor, for PE `pe` of
/// `n_pes` (`flat_layout.rs`); an error says why the descriptor cannot be used.
fn read_flat_layout(window: &Window, pe: usize, n_pes: usize) -> Result<FlatLayout> {
    let at = window.raw() as u64;
    let refuse = |why: String| TransportError::NotImplemented {
        what: format!(
            "host operations between {n_pes} PEs on NCCL {}: the LSA peers' addresses come \
             from the window's device-side descriptor, and {why}",
            window.comm().nccl().version()
        ),
    };
    cuda::address_range(at).map_err(|e| {
        refuse(format!(
            "the window handle {at:#x} is not device memory ({e}): NCCL made no symmetric \
             window"
        ))
    })?;
    let mut bytes = [0u8; flat_layout::PREFIX_BYTES];
    // SAFETY: `at` is device memory of this process (checked above) holding the window's
    // descriptor, at least PREFIX_BYTES long; `bytes` is a live local array of that size,
    // and the copy is synchronous.
    unsafe { cuda::memcpy_sync(bytes.as_mut_ptr() as u64, at, bytes.len()) }.map_err(cuda_err)?;
    FlatLayout::decode(&bytes, pe, n_pes).map_err(refuse)
}

/// Every PE's LSA rank, from one all-reduce of `n_pes` `i32`s (each PE adds its own
/// `lsa_rank + 1` at its index) on `stream` (collective).
fn share_lsa_ranks(
    comm: &Comm,
    stream: &Stream,
    lsa_rank: usize,
    pe: usize,
    n_pes: usize,
) -> Result<Vec<usize>> {
    let mut ranks = vec![0i32; n_pes];
    ranks[pe] = i32::try_from(lsa_rank + 1).map_err(|_| TransportError::Gpu {
        what: format!("LSA rank {lsa_rank} does not fit an i32"),
    })?;
    sum_on_every_pe(comm, stream, &mut ranks)?;
    ranks
        .iter()
        .enumerate()
        .map(|(p, &r)| {
            usize::try_from(r - 1).map_err(|_| TransportError::Gpu {
                what: format!("PE {p} shared no LSA rank (got {r})"),
            })
        })
        .collect()
}

/// Team handles a host barrier over a sub-team can use (`0..MAX_BARRIER_TEAMS`). The
/// control area after the heap holds, per handle, one blocking barrier word (generation
/// in the high half, arrivals in the low half; used at the team's PE 0) and two
/// stream-barrier counters (`stream_barrier.rs`).
pub const MAX_BARRIER_TEAMS: usize = 4096;

/// `values` as consecutive `width`-byte little-endian words (each value's low bytes), in
/// 8-byte units for the copy: the layout of the wait kernel's `values` array.
fn pack_words(values: &[u64], width: usize) -> Vec<u64> {
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|v| v.to_le_bytes().into_iter().take(width))
        .collect();
    bytes
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// Refuses to enqueue `what` on a stream that is being captured into a CUDA graph, where
/// it would not do what it says on a replay (an error naming it), instead of a graph that is
/// wrong from its second replay.
fn refuse_capture(s: &Stream, what: &str) -> Result<()> {
    if s.is_capturing().map_err(cuda_err)? {
        return Err(TransportError::NotImplemented {
            what: format!("{what} cannot be captured into a CUDA graph"),
        });
    }
    Ok(())
}

/// What a wait compares each word with.
#[derive(Clone, Copy)]
enum Targets<'a> {
    /// One value for every word.
    One(u64),
    /// Word `i` with `values[i]`.
    Each(&'a [u64]),
}

/// One PE's LSA transport. See the module docs.
pub struct LsaTransport {
    pe: usize,
    n_pes: usize,
    heap_size: u64,
    timeout: Duration,
    /// Heap base of every PE in this process's address space; `None`: not an LSA peer.
    bases: Vec<Option<u64>>,
    device: Device,
    kernels: HostKernels,
    internal: Stream,
    /// One `int` for the all-reduce barrier.
    barrier_word: DeviceBuffer,
    /// `bases` on the device (0 for a PE that is not an LSA peer), for the reduction
    /// kernels of collectives.
    bases_on_device: DeviceBuffer,
    /// The reduction kernels, loaded at the first reduction (`coll.rs`).
    coll_kernels: Mutex<Option<Arc<CollKernels>>>,
    /// `NIIN_HOST_COLL`: the path of host collectives over the world (`coll.rs`).
    host_coll: HostCollPath,
    /// Mapped pinned word where the AMO kernel writes the old value (one AMO at a time).
    amo_result: Mutex<HostPinned>,
    /// Mapped pinned word where a blocking central barrier that carries a fingerprint
    /// copies its verdict (one such barrier at a time).
    verdict: Mutex<HostPinned>,
    /// Counts of the stream barriers over sub-teams (held while one is enqueued).
    stream_barriers: Mutex<StreamBarriers>,
    /// Streams made by `stream_create`, by raw handle.
    streams: Mutex<HashMap<u64, Stream>>,
    /// Per-operation device scratch still in use by enqueued work, by stream; freed when
    /// the stream is synchronized.
    pending: Mutex<HashMap<u64, Vec<DeviceBuffer>>>,
    use_stream_mem_ops: bool,
    /// `NIIN_FAULT_EXIT`: how the process ends after finalize found the CUDA context
    /// failed (`exit_guard.rs`).
    fault_exit: FaultExit,
    /// Barriers over all PEs take the central barrier (agreed by every PE at start; see
    /// "Barriers over all PEs" in the module docs), not `ncclAllReduce`.
    central_world: bool,
    /// More than one PE, and the LSA peers' addresses came from the heap window's
    /// device-side descriptor (`flat_layout.rs`: NCCL 2.28, or
    /// `NIIN_PEER_ADDRESSES=descriptor`), not from `ncclGetPeerDevicePointer`; registered
    /// buffers are placed the same way.
    from_descriptor: bool,
    finalized: AtomicBool,
    /// niinrun's status board of the job (`None` under other launchers): the host waits
    /// read it to fail at once, naming the PE, when another PE's process has died
    /// (`peer_failure`), instead of waiting out `NIIN_TIMEOUT`.
    status: Option<StatusBoard>,
    /// The NCCL communicators of teams, by handle, made at their splits (`coll.rs`, "Teams
    /// with PEs on other nodes"); dropped before the world's.
    team_comms: Mutex<HashMap<i32, Comm>>,
    /// The thread that tells device barriers a PE died (under niinrun) and ends the
    /// process when the driver never reports a kernel that stopped (`watchdog.rs`);
    /// stopped before the communicator it holds a handle of is released.
    watchdog: watchdog::Watchdog,
    // Held for their Drop, in this order: the registered buffers (their aliases and
    // windows), the heap's window before the memory it maps, the comm last.
    registered: Registered,
    window: Arc<Window>,
    heap: DeviceMem,
    comm: Comm,
}

// SAFETY: the CUDA driver's handles (context, streams, modules, device memory) and NCCL's
// communicator may be used from any thread; the mutable state is behind mutexes and
// atomics. Every operation makes the device's primary context current first.
unsafe impl Send for LsaTransport {}
// SAFETY: as above: shared use is synchronized by the driver, NCCL and the mutexes.
unsafe impl Sync for LsaTransport {}

impl std::fmt::Debug for LsaTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LsaTransport")
            .field("pe", &self.pe)
            .field("n_pes", &self.n_pes)
            .field("heap_size", &self.heap_size)
            .field(
                "lsa_peers",
                &self.bases.iter().filter(|b| b.is_some()).count(),
            )
            .finish_non_exhaustive()
    }
}

impl LsaTransport {
    /// Allocates this PE's heap of `heap_size` bytes with `ncclMemAlloc`, registers it as
    /// a symmetric window of `comm` (collective: every PE calls this together), learns
    /// the LSA peers' heap addresses, zeroes the heap and loads the host kernels.
    pub fn new(
        comm: Comm,
        device: Device,
        heap_size: u64,
        timeout: Duration,
    ) -> Result<LsaTransport> {
        device.make_current().map_err(cuda_err)?;
        let host_coll = HostCollPath::parse(crate::env::text(HOST_COLL_VAR)?.as_deref())?;
        let barrier_path = BarrierPath::parse(crate::env::text(BARRIER_VAR)?.as_deref())?;
        let fault_exit = FaultExit::parse(crate::env::text(FAULT_EXIT_VAR)?.as_deref())?;
        let peer_addresses =
            PeerAddresses::parse(crate::env::text(PEER_ADDRESSES_VAR)?.as_deref())?;
        let pe = comm.rank() as usize;
        let n_pes = comm.n_ranks() as usize;
        let nccl = comm.nccl();
        // The heap, then the transport's control area (team barrier words and stream
        // barrier counters), in one allocation and one window, so every LSA peer reaches
        // both. Zeroed below with the heap.
        let total = heap_size as usize + CONTROL_BYTES;
        let heap = nccl.mem_alloc(total).map_err(nccl_err)?;
        // The heap's address in this process: NCCL's memory mapped again at the start of a
        // range that also holds registered buffers (registered.rs). NCCL itself keeps
        // using its own mapping (the window below).
        let registered = Registered::new(&device, heap.ptr())?;
        let heap_base = registered.heap_base(heap.ptr());
        let strict = nccl.capabilities().strict_ordering_window_flag;
        let flags = WindowFlags {
            coll_symmetric: true,
            strict_ordering: strict,
        };
        let window = comm
            .register_window(heap.ptr(), total, flags)
            .map_err(nccl_err)?;
        let internal = Stream::create().map_err(cuda_err)?;
        let mut bases = vec![None; n_pes];
        bases[pe] = Some(heap_base);
        let from_descriptor =
            peer_addresses == PeerAddresses::Descriptor || !nccl.capabilities().host_peer_pointers;
        if n_pes > 1 && from_descriptor {
            // NCCL 2.28 (or NIIN_PEER_ADDRESSES=descriptor): the window's device-side
            // descriptor, and every PE's LSA rank (flat_layout.rs).
            let layout = read_flat_layout(&window, pe, n_pes)?;
            let lsa_ranks = share_lsa_ranks(&comm, &internal, layout.lsa_rank, pe, n_pes)?;
            for (peer, member) in flat_layout::lsa_team(&lsa_ranks, pe)
                .into_iter()
                .enumerate()
            {
                if member && peer != pe {
                    bases[peer] = Some(layout.address(lsa_ranks[peer]).ok_or_else(|| {
                        TransportError::Gpu {
                            what: format!("PE {peer}'s heap address overflows ({layout:?})"),
                        }
                    })?);
                }
            }
        } else if n_pes > 1 {
            for (peer, base) in bases.iter_mut().enumerate().filter(|(p, _)| *p != pe) {
                *base = window
                    .peer_device_pointer(0, peer as i32)
                    .map_err(nccl_err)?;
            }
        }
        // SAFETY: `heap_base` maps the `total` bytes of device memory owned by `heap`
        // (NCCL's mapping, or the transport's second mapping of it, held by `registered`).
        unsafe { cuda::memset_d8_async(heap_base, 0, total, &internal) }.map_err(cuda_err)?;
        internal.synchronize().map_err(cuda_err)?;
        let kernels = HostKernels::load(&device).map_err(cuda_err)?;
        let barrier_word = DeviceBuffer::alloc(8).map_err(cuda_err)?;
        let use_stream_mem_ops = device.supports_stream_mem_ops().unwrap_or(false);
        let central_here = barrier_path == BarrierPath::Auto
            && use_stream_mem_ops
            && bases.iter().all(Option::is_some);
        let central_world =
            n_pes > 1 && agree_on_every_pe(&comm, &internal, host_coll, central_here, pe, n_pes)?;
        let table: Vec<u64> = bases.iter().map(|b| b.unwrap_or(0)).collect();
        let bases_on_device = DeviceBuffer::alloc(8 * n_pes).map_err(cuda_err)?;
        // SAFETY: `bases_on_device` holds `8 * n_pes` bytes, the size of `table`, which
        // outlives the synchronous copy.
        unsafe { cuda::memcpy_sync(bases_on_device.ptr(), table.as_ptr() as u64, 8 * n_pes) }
            .map_err(cuda_err)?;
        let amo_result = Mutex::new(HostPinned::alloc(8).map_err(cuda_err)?);
        let verdict = Mutex::new(HostPinned::alloc(8).map_err(cuda_err)?);
        let watchdog =
            watchdog::Watchdog::start(&device, StatusBoard::from_env(n_pes), pe, comm.clone())?;
        Ok(LsaTransport {
            pe,
            n_pes,
            heap_size,
            timeout,
            bases,
            device,
            kernels,
            internal,
            barrier_word,
            bases_on_device,
            coll_kernels: Mutex::new(None),
            team_comms: Mutex::new(HashMap::new()),
            host_coll,
            amo_result,
            verdict,
            stream_barriers: Mutex::new(StreamBarriers::default()),
            streams: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            use_stream_mem_ops,
            fault_exit,
            central_world,
            from_descriptor,
            finalized: AtomicBool::new(false),
            status: StatusBoard::from_env(n_pes),
            watchdog,
            registered,
            window: Arc::new(window),
            heap,
            comm,
        })
    }

    /// The communicator and the heap's window, for the GIN transport that serves the
    /// non-LSA PEs of the same world.
    pub fn shared(&self) -> (Comm, Arc<Window>, Device) {
        (
            self.comm.clone(),
            Arc::clone(&self.window),
            self.device.clone(),
        )
    }

    fn live(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            return Err(TransportError::Finalized { pe: self.pe });
        }
        self.device.make_current().map_err(cuda_err)
    }

    /// The address of `len` bytes at `addr` of `pe`'s heap, checked.
    fn remote(&self, pe: usize, addr: SymAddr, len: u64) -> Result<u64> {
        let base = self.base(pe)?;
        self.check_range(addr, len)?;
        Ok(base + addr.0)
    }

    fn base(&self, pe: usize) -> Result<u64> {
        match self.bases.get(pe) {
            None => Err(TransportError::PeOutOfRange {
                pe,
                n_pes: self.n_pes,
            }),
            Some(None) => Err(TransportError::NotImplemented {
                what: format!(
                    "PE {pe} is not an LSA peer of PE {}: it needs the GIN transport",
                    self.pe
                ),
            }),
            Some(Some(b)) => Ok(*b),
        }
    }

    /// Checks that `len` bytes at `addr` lie in the heap or in one registered buffer.
    fn check_range(&self, addr: SymAddr, len: u64) -> Result<()> {
        let in_heap = addr.check_range(len, self.heap_size);
        if in_heap.is_err() && self.registered.contains(addr, len) {
            return Ok(());
        }
        in_heap
    }

    /// Where the alias of a buffer that NCCL registered as `window` must lie: at the heap's
    /// base plus the distance between the two windows in NCCL's flat range, which must be
    /// the same for every LSA peer (registered.rs has the why).
    fn alias_place(&self, window: &Window) -> Result<u64> {
        let distance = if self.from_descriptor {
            // NCCL's flat range holds every window at its own offset, each member's copy
            // a stride after the previous member's, so two windows are as far apart as
            // their member-0 copies, for every peer.
            let of = |w: &Window| read_flat_layout(w, self.pe, self.n_pes).map(|l| l.flat_base);
            i128::from(of(window)?) - i128::from(of(&self.window)?)
        } else {
            self.distance_from_peer_pointers(window)?
        };
        // Registered::add refuses a place inside the heap or outside the range after it.
        u64::try_from(i128::from(self.base(self.pe)?) + distance).map_err(|_| {
            TransportError::NotImplemented {
                what: format!(
                    "NCCL placed the registered buffer's window {distance:#x} bytes from the \
                     heap's: its alias would lie outside the address space"
                ),
            }
        })
    }

    /// The distance from the heap's window to `window` in NCCL's flat range, from
    /// `ncclGetPeerDevicePointer`, checked to be the same for every LSA peer.
    fn distance_from_peer_pointers(&self, window: &Window) -> Result<i128> {
        let flat = |w: &Window, pe: usize| -> Result<u64> {
            w.peer_device_pointer(0, pe as i32)
                .map_err(nccl_err)?
                .ok_or_else(|| TransportError::Gpu {
                    what: format!("NCCL gives no address of PE {pe}'s window"),
                })
        };
        let distance =
            i128::from(flat(window, self.pe)?) - i128::from(flat(&self.window, self.pe)?);
        for (peer, base) in self.bases.iter().enumerate() {
            let Some(base) = base.filter(|_| peer != self.pe) else {
                continue;
            };
            let theirs = i128::from(flat(window, peer)?) - i128::from(base);
            if theirs != distance {
                return Err(TransportError::NotImplemented {
                    what: format!(
                        "NCCL placed the registered buffer's window {distance:#x} bytes from the \
                         heap's for PE {} but {theirs:#x} for PE {peer}: niin-rs reaches \
                         registered memory at one distance from the heap for every peer",
                        self.pe
                    ),
                });
            }
        }
        Ok(distance)
    }

    fn check_aligned(addr: SymAddr, align: usize) -> Result<()> {
        addr.check_aligned(align)
    }

    /// Runs `f` on the stream of `order`; for `Order::Now` on the internal stream,
    /// synchronized before returning.
    fn on<R>(&self, order: Order, f: impl FnOnce(&Stream) -> Result<R>) -> Result<R> {
        match order {
            Order::Now => {
                let r = f(&self.internal)?;
                self.internal.synchronize().map_err(cuda_err)?;
                self.kernels.check_timeout().map_err(cuda_err)?;
                Ok(r)
            }
            Order::Stream(StreamHandle(raw)) => {
                // SAFETY: the caller vouches for its stream handle (a CUstream of this
                // context, or 0 for the legacy default stream); it is only borrowed.
                let s = unsafe { Stream::borrow_raw(raw) };
                f(&s)
            }
        }
    }

    /// Keeps `buf` alive until `order`'s stream is synchronized.
    fn keep(&self, order: Order, buf: DeviceBuffer) {
        if let Order::Stream(StreamHandle(raw)) = order {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(raw)
                .or_default()
                .push(buf);
        }
    }

    /// Stores `value` at `addr` on the stream (stream write-value where the device has
    /// it, else the store kernel).
    fn store(&self, s: &Stream, addr: u64, value: Scalar) -> Result<()> {
        let r = match (value.width, self.use_stream_mem_ops) {
            // SAFETY: `addr` is a checked, aligned device address inside a mapped heap.
            (Width::W4, true) => unsafe { cuda::write_value_32(s, addr, value.bits as u32) },
            // SAFETY: as above.
            (Width::W8, true) => unsafe { cuda::write_value_64(s, addr, value.bits) },
            // SAFETY: as above; the kernel stores exactly `width` bytes.
            (w, _) => unsafe { self.kernels.store(s, addr, value.bits, w.bytes()) },
        };
        r.map_err(cuda_err)
    }

    fn signal(&self, s: &Stream, addr: u64, value: u64, op: SignalOp) -> Result<()> {
        match op {
            SignalOp::Set => self.store(
                s,
                addr,
                Scalar {
                    bits: value,
                    width: Width::W8,
                },
            ),
            // SAFETY: `addr` is a checked, 8-aligned device address inside a mapped heap.
            SignalOp::Add => unsafe { self.kernels.signal_add(s, addr, value) }.map_err(cuda_err),
        }
    }

    /// Reads `len` bytes of this process's device memory at `addr` into a vector (on the
    /// internal stream, so it does not queue behind the application's legacy stream).
    fn read_now(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        let dst = out.as_mut_ptr() as u64;
        self.on(Order::Now, |s| {
            // SAFETY: `addr..addr+len` is checked device memory; `out` is a live host buffer
            // that outlives the copy, which `on(Order::Now)` synchronizes.
            unsafe { cuda::memcpy_async(dst, addr, len, s) }.map_err(cuda_err)
        })?;
        Ok(out)
    }

    /// Polls the `kind` words at `addr` from the host until `done(values)` or timeout.
    fn poll(
        &self,
        op: &'static str,
        addr: u64,
        n: usize,
        kind: WaitKind,
        done: impl Fn(&[u64]) -> bool,
    ) -> Result<()> {
        let w = kind.width.bytes();
        self.until_deadline(
            op,
            Duration::from_micros(200),
            || {
                let bytes = self.read_now(addr, n * w)?;
                let words: Vec<u64> = bytes
                    .chunks_exact(w)
                    .map(|c| {
                        let mut b = [0u8; 8];
                        b[..w].copy_from_slice(c);
                        u64::from_le_bytes(b)
                    })
                    .collect();
                Ok((!done(&words)).then_some(words))
            },
            |words| {
                format!(
                    "{n} word(s) of {w} bytes at device address {addr:#x}; last values {words:?}"
                )
            },
        )
    }

    /// Calls `check` until it returns `None` (done), pausing between calls (a spin at
    /// first, then sleeps doubling up to `max_pause`); once `self.timeout` has passed, a
    /// timeout error for `op` whose detail `detail` makes from the last `Some` state. While
    /// it sleeps it also reads niinrun's status board (`peer_failure`): a PE whose process
    /// died ends the wait at once with an error naming it. Either error marks the world's
    /// communicator for `ncclCommAbort` (a peer may be gone: finalize would wait for it).
    fn until_deadline<S>(
        &self,
        op: &'static str,
        max_pause: Duration,
        mut check: impl FnMut() -> Result<Option<S>>,
        detail: impl Fn(&S) -> String,
    ) -> Result<()> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(1);
        loop {
            let Some(state) = check()? else {
                return Ok(());
            };
            let failed = if start.elapsed() > self.timeout {
                Some(TransportError::Timeout {
                    pe: self.pe,
                    op,
                    waited: start.elapsed(),
                    detail: detail(&state),
                })
            } else if pause > Duration::from_micros(1) {
                self.peer_failure(op)
            } else {
                None
            };
            if let Some(e) = failed {
                self.comm.abort_on_drop();
                return Err(e);
            }
            if pause > Duration::from_micros(1) {
                std::thread::sleep(pause);
            } else {
                std::hint::spin_loop();
            }
            pause = (pause * 2).min(max_pause);
        }
    }

    /// The first other PE that niinrun's status board shows failed (its process died or
    /// exited with an error), as the error of `op`, which cannot complete without it; this
    /// PE is marked there as failing in consequence (niinrun then blames that PE). `None`
    /// without a board, or while no PE has failed (one atomic load).
    fn peer_failure(&self, op: &'static str) -> Option<TransportError> {
        let board = self.status.as_ref()?;
        let (pe, how) = failed_peer(board, self.pe)?;
        board.mark_consequence(self.pe);
        Some(TransportError::PeerGone {
            pe,
            op,
            why: Departure::Died { how },
        })
    }

    fn device_copy_of(&self, order: Order, s: &Stream, words: &[u64]) -> Result<u64> {
        refuse_capture(
            s,
            "a stream wait whose status or comparison values are copied from host memory \
             (the copy and its buffer would not outlive the call in a graph; the C \
             _on_stream forms read device arrays instead)",
        )?;
        let bytes = std::mem::size_of_val(words);
        let buf = DeviceBuffer::alloc(bytes.max(8)).map_err(cuda_err)?;
        // SAFETY: `buf` holds `bytes` bytes; a copy from pageable host memory returns once
        // the source has been staged, so `words` may go away after the call.
        unsafe { cuda::memcpy_async(buf.ptr(), words.as_ptr() as u64, bytes, s) }
            .map_err(cuda_err)?;
        let ptr = buf.ptr();
        self.keep(order, buf);
        Ok(ptr)
    }

    /// One AMO on the 8-byte word at device address `at` (a checked heap or control
    /// word), returning the old value.
    fn amo_raw(&self, at: u64, op: AmoOp, operand: u64) -> Result<u64> {
        let slot = self.amo_result.lock().unwrap_or_else(|e| e.into_inner());
        self.on(Order::Now, |s| {
            // SAFETY: `at` is an 8-aligned word of a mapped window; `slot` is a mapped
            // pinned word, held (locked) until after the synchronization in `on`.
            unsafe {
                self.kernels
                    .amo(s, at, op, 8, operand, 0, slot.device_ptr())
            }
            .map_err(cuda_err)
        })?;
        slot.load_u64(0).map_err(cuda_err)
    }

    /// A blocking barrier over a team of LSA peers: a self-resetting central barrier on
    /// the team's word in the control area of its PE 0. Each member adds one arrival; the
    /// last one clears the arrivals and bumps the generation, which the others poll for.
    fn team_barrier_now(&self, team: TeamSync) -> Result<()> {
        let slot = Self::barrier_slot(team)?;
        if team.team_pe(self.pe).is_none() {
            return Err(TransportError::BadArgument {
                op: "barrier",
                what: format!("PE {} is not a member of team {}", self.pe, team.team),
            });
        }
        // Quiet first: this PE's earlier blocking operations have completed.
        self.internal.synchronize().map_err(cuda_err)?;
        if team.size == 1 {
            return Ok(());
        }
        let word =
            self.base(team.start)? + self.heap_size + stream_barrier::blocking_word_offset(slot);
        let old = self.amo_raw(word, AmoOp::FetchAdd, 1)?;
        let (generation, arrived) = (old >> 32, old & 0xFFFF_FFFF);
        if arrived + 1 == team.size as u64 {
            self.amo_raw(word, AmoOp::Set, (generation + 1) << 32)?;
            return Ok(());
        }
        self.until_deadline(
            "barrier",
            Duration::from_micros(100),
            || {
                let now = u64::from_le_bytes(self.read_now(word, 8)?.try_into().expect("8 bytes"));
                Ok((now >> 32 == generation).then_some(now))
            },
            |now| {
                format!(
                    "team {}: {} of {} PEs arrived",
                    team.team,
                    now & 0xFFFF_FFFF,
                    team.size
                )
            },
        )
    }

    /// The control-area slot of `team`'s handle, checked against [`MAX_BARRIER_TEAMS`].
    fn barrier_slot(team: TeamSync) -> Result<usize> {
        usize::try_from(team.team)
            .ok()
            .filter(|&t| t < MAX_BARRIER_TEAMS)
            .ok_or_else(|| TransportError::BadArgument {
                op: "barrier",
                what: format!(
                    "team handle {} is outside the {MAX_BARRIER_TEAMS} barrier slots",
                    team.team
                ),
            })
    }

    /// Enqueues on `s` the stream barrier of a sub-team of LSA peers (see "Stream barriers
    /// of sub-teams" in the module docs): one `signal_add` to every other member's
    /// counter, then a wait kernel on this PE's own.
    fn enqueue_team_barrier(&self, s: &Stream, team: TeamSync) -> Result<()> {
        let slot = Self::barrier_slot(team)?;
        let others = stream_barrier::other_members(&team, self.pe, self.n_pes).map_err(|what| {
            TransportError::BadArgument {
                op: "barrier",
                what,
            }
        })?;
        let bases = others
            .iter()
            .map(|&pe| {
                self.bases[pe].ok_or_else(|| TransportError::NotImplemented {
                    what: format!(
                        "a barrier on a stream over team {} ({} PEs from PE {} stride {}): \
                         PE {pe} is not an LSA peer of PE {} (stream barriers of a team other \
                         than all PEs need every member in this PE's NVLink domain)",
                        team.team, team.size, team.start, team.stride, self.pe
                    ),
                })
            })
            .collect::<Result<Vec<u64>>>()?;
        if others.is_empty() {
            // One PE: the quiet is the stream's order.
            return Ok(());
        }
        let mine = self.base(self.pe)?;
        // Held until the work is enqueued, so counts follow enqueue order.
        let mut book = self
            .stream_barriers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let step = book.next(slot, &team);
        let counter = self.heap_size + stream_barrier::stream_counter_offset(slot, step.parity);
        for base in &bases {
            // SAFETY: `base + counter` is an 8-aligned word of the control area after a
            // mapped LSA peer's heap (inside its window, which lives as long as `self`).
            unsafe { self.kernels.signal_add(s, base + counter, 1) }.map_err(cuda_err)?;
        }
        let spec = WaitSpec::single(
            mine + counter,
            WaitKind::SIGNAL,
            Cmp::Ge,
            step.expect,
            self.timeout.as_nanos() as u64,
        );
        // SAFETY: the word is an 8-aligned word of this PE's control area, alive as long as
        // `self`.
        unsafe { self.kernels.wait(s, spec) }.map_err(cuda_err)
    }

    /// Enqueues on `s` the central barrier of `team`, a team of all PEs (every one an LSA
    /// peer): the arrival kernel on the count at the first PE, a stream wait until this
    /// PE's release flag is set, and the flag's reset (see "Barriers over all PEs").
    fn enqueue_central_barrier(&self, s: &Stream, team: TeamSync) -> Result<()> {
        self.enqueue_central_barrier_carrying(s, team, 0, None)
    }

    /// [`LsaTransport::enqueue_central_barrier`], where a blocking barrier (on the internal
    /// stream) carries `fingerprint` (0 for a plain one) in the barrier's fingerprint sum
    /// (`niin_barrier_arrive`): the last arriver's verdict (1: every member carried this
    /// fingerprint, 2: not) is copied to the pinned word `verdict`, if given, before the
    /// flag is reset. Barriers on application streams carry none (their words are apart).
    fn enqueue_central_barrier_carrying(
        &self,
        s: &Stream,
        team: TeamSync,
        fingerprint: u64,
        verdict: Option<&HostPinned>,
    ) -> Result<()> {
        let slot = Self::barrier_slot(team)?;
        // Blocking operations (the internal stream) and application streams use separate
        // words: neither counts an arrival of the other that is still in flight.
        let which = if s.raw() == self.internal.raw() {
            Central::Blocking
        } else {
            Central::Stream
        };
        if team.size < 2 {
            return Ok(());
        }
        let first = self.base(team.start)? + self.heap_size;
        let count = first + stream_barrier::central_count_offset(slot, which);
        let sum = (which == Central::Blocking).then(|| {
            (
                first + stream_barrier::central_sum_offset(slot),
                fingerprint,
            )
        });
        let flag_offset = self.heap_size + stream_barrier::central_flag_offset(slot, which);
        let flag = self.base(self.pe)? + flag_offset;
        // SAFETY: the count, the sum and every member's flag are aligned words of the
        // control areas after mapped LSA heaps (all PEs are LSA peers: `central_world`), and
        // `bases_on_device` holds every PE's heap base; all live as long as `self`.
        unsafe {
            self.kernels.barrier_arrive(
                s,
                count,
                self.bases_on_device.ptr(),
                flag_offset,
                team.size,
                sum,
            )
        }
        .map_err(cuda_err)?;
        // SAFETY: `flag` is this PE's own control word (above). The flag is 1 or 2 (the
        // verdict) once released, 0 before.
        unsafe { cuda::wait_value_32(s, flag, 1, cuda::WaitCond::Geq) }.map_err(cuda_err)?;
        if let Some(out) = verdict {
            // SAFETY: `out` is a live mapped pinned buffer of at least 4 bytes, held by the
            // caller until the stream is synchronized; `flag` is this PE's control word.
            unsafe { cuda::memcpy_async(out.device_ptr(), flag, 4, s) }.map_err(cuda_err)?;
        }
        // SAFETY: as above.
        unsafe { cuda::write_value_32(s, flag, 0) }.map_err(cuda_err)
    }

    /// Runs a blocking barrier over all PEs: the central barrier on the internal stream,
    /// then a wait for the stream with the deadline (`NIIN_TIMEOUT`), polling from the
    /// host instead of a synchronize that would never return if a PE never arrives.
    fn central_barrier_now(&self, team: TeamSync) -> Result<()> {
        self.central_barrier_now_carrying(team, 0, None)
    }

    /// [`LsaTransport::central_barrier_now`] carrying `fingerprint`, the verdict into
    /// `verdict` ([`LsaTransport::enqueue_central_barrier_carrying`]).
    fn central_barrier_now_carrying(
        &self,
        team: TeamSync,
        fingerprint: u64,
        verdict: Option<&HostPinned>,
    ) -> Result<()> {
        self.enqueue_central_barrier_carrying(&self.internal, team, fingerprint, verdict)?;
        self.until_deadline(
            "barrier",
            Duration::from_micros(50),
            || Ok((!self.internal.query_done().map_err(cuda_err)?).then_some(())),
            |()| {
                format!(
                    "team {} of all {} PEs: not every PE arrived (or this PE's earlier work \
                     on the internal stream has not finished)",
                    team.team, self.n_pes
                )
            },
        )?;
        self.kernels.check_timeout().map_err(cuda_err)
    }

    /// Whether a blocking barrier of `team` compares fingerprints
    /// ([`Transport::barrier_with_fingerprint`]): the central barrier of all PEs does.
    fn central_for(&self, team: &TeamSync) -> bool {
        self.central_world && team.is_world(self.n_pes)
    }

    /// Enqueues on `s` a barrier of `team`: an all-reduce on its communicator
    /// ([`LsaTransport::team_comm`]; the world's for the world), else the stream barrier of
    /// a sub-team of LSA peers.
    fn enqueue_barrier(&self, s: &Stream, team: TeamSync) -> Result<()> {
        self.enqueue_barrier_on(s, team, self.team_comm(&team))
    }

    /// [`LsaTransport::enqueue_barrier`] with the team's communicator already looked up.
    fn enqueue_barrier_on(&self, s: &Stream, team: TeamSync, comm: Option<Comm>) -> Result<()> {
        let Some(comm) = comm else {
            refuse_capture(
                s,
                "a barrier or sync on a stream over a team of some PEs (its arrival count is \
                 fixed when it is enqueued, so a graph replay would pass it early)",
            )?;
            return self.enqueue_team_barrier(s, team);
        };
        if self.central_for(&team) {
            return self.enqueue_central_barrier(s, team);
        }
        let word = self.barrier_word.ptr();
        // SAFETY: `word` is 8 bytes of device memory owned by this transport (its value is
        // never read: barriers of several teams may share it); the communicator is live;
        // the all-reduce is enqueued on `s`.
        unsafe {
            comm.all_reduce_sum_i32(word as *const i32, word as *mut i32, 1, s.raw() as *mut _)
        }
        .map_err(nccl_err)
    }

    /// The device address of this PE's `nelems` waited words of `kind` at `ivars`, checked
    /// (a width the wait kernel takes, aligned, inside the heap) for the wait `op`.
    fn wait_words(
        &self,
        op: &'static str,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
    ) -> Result<u64> {
        let w = kind.width.bytes();
        if !matches!(kind.width, Width::W2 | Width::W4 | Width::W8) {
            return Err(TransportError::BadWidth { op, bytes: w });
        }
        Self::check_aligned(ivars, w)?;
        self.remote(self.pe, ivars, (nelems * w) as u64)
    }

    /// Enqueues on `s` the wait kernel for the `nelems` checked words at device address
    /// `addr` (`wait_words`) against `arrays` (the kernel's `WaitSpec::validate` checks the
    /// arrays' alignment).
    ///
    /// # Safety
    /// The arrays of `arrays`, where not 0, must be device-readable until `s` has run the
    /// wait.
    unsafe fn enqueue_wait(
        &self,
        s: &Stream,
        (addr, nelems): (u64, usize),
        kind: WaitKind,
        cmp: Cmp,
        arrays: DeferredWait,
    ) -> Result<()> {
        let spec = WaitSpec {
            addr,
            nelems,
            width_bytes: kind.width.bytes(),
            signed: kind.signed,
            cmp,
            value: arrays.value,
            values: arrays.values,
            status: arrays.status,
            timeout_ns: self.timeout.as_nanos() as u64,
        };
        // SAFETY: the words are checked heap memory (`wait_words`); the arrays are this
        // function's contract.
        unsafe { self.kernels.wait(s, spec) }.map_err(cuda_err)
    }

    #[allow(clippy::too_many_arguments)]
    fn wait_impl(
        &self,
        order: Order,
        op: &'static str,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Targets<'_>,
    ) -> Result<()> {
        self.live()?;
        let w = kind.width.bytes();
        let addr = self.wait_words(op, ivars, nelems, kind)?;
        let excluded = |i: usize| status.is_some_and(|s| s.get(i).is_some_and(|&x| x != 0));
        let target = |i: usize| match values {
            Targets::One(v) => v,
            Targets::Each(vs) => vs[i],
        };
        if nelems == 0 {
            return Ok(());
        }
        match order {
            Order::Now => self.poll(op, addr, nelems, kind, |words| {
                (0..nelems).all(|i| excluded(i) || kind.holds(words[i], cmp, target(i)))
            }),
            Order::Stream(_) => self.on(order, |s| {
                let single = nelems == 1 && status.is_none();
                let mem_op = self.use_stream_mem_ops
                    && single
                    && matches!(kind.width, Width::W4 | Width::W8)
                    && (cmp == Cmp::Eq || (cmp == Cmp::Ge && !kind.signed));
                if mem_op {
                    let cond = if cmp == Cmp::Eq {
                        WaitCond::Eq
                    } else {
                        WaitCond::Geq
                    };
                    let v = target(0);
                    let r = if kind.width == Width::W4 {
                        // SAFETY: `addr` is a checked, 4-aligned word of this PE's heap.
                        unsafe { cuda::wait_value_32(s, addr, v as u32, cond) }
                    } else {
                        // SAFETY: `addr` is a checked, 8-aligned word of this PE's heap.
                        unsafe { cuda::wait_value_64(s, addr, v, cond) }
                    };
                    return r.map_err(cuda_err);
                }
                let status_dev = match status {
                    Some(st) => {
                        let words: Vec<u64> = st
                            .chunks(2)
                            .map(|c| {
                                let lo = c[0] as u32 as u64;
                                let hi = c.get(1).map_or(0, |&x| x as u32 as u64);
                                lo | hi << 32
                            })
                            .collect();
                        self.device_copy_of(order, s, &words)?
                    }
                    None => 0,
                };
                let (value, values_dev) = match values {
                    Targets::One(v) => (v, 0),
                    Targets::Each(vs) => (0, self.device_copy_of(order, s, &pack_words(vs, w))?),
                };
                let arrays = DeferredWait {
                    status: status_dev,
                    values: values_dev,
                    value,
                };
                // SAFETY: the arrays are checked device memory that stays alive until the
                // stream is synchronized (`keep`).
                unsafe { self.enqueue_wait(s, (addr, nelems), kind, cmp, arrays) }
            }),
        }
    }
}

impl Transport for LsaTransport {
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
        self.bases.get(pe).is_some_and(Option::is_some)
    }

    fn peer_ptr(&self, pe: usize, addr: SymAddr) -> *mut u8 {
        match self.bases.get(pe) {
            Some(Some(base)) if self.check_range(addr, 1).is_ok() => (base + addr.0) as *mut u8,
            _ => std::ptr::null_mut(),
        }
    }

    fn check_registration(&self, local: u64, len: u64) -> Result<()> {
        self.live()?;
        self.registered.check_buffer(local, len).map(drop)
    }

    fn register_buffer(&self, local: u64, len: u64) -> Result<SymAddr> {
        self.live()?;
        let mapped = self.registered.check_buffer(local, len)?;
        let window = self
            .comm
            .register_window(local, len as usize, self.window.flags())
            .map_err(nccl_err)?;
        let at = if self.comm.nccl().capabilities().host_peer_pointers || self.from_descriptor {
            self.alias_place(&window)?
        } else {
            self.registered.free_spot(mapped)?
        };
        let offset = at - self.base(self.pe)?;
        let place = Placement { at, mapped };
        self.registered
            .add(&self.device, local, len, place, offset, window)?;
        Ok(SymAddr(offset))
    }

    fn unregister_buffer(&self, addr: SymAddr) -> Result<()> {
        self.live()?;
        // Work of this PE that may still use the alias ends first.
        self.device.synchronize().map_err(cuda_err)?;
        self.registered.remove(addr.0)
    }

    fn stream_create(&self) -> Result<StreamHandle> {
        self.live()?;
        let s = Stream::create().map_err(cuda_err)?;
        let raw = s.raw();
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(raw, s);
        Ok(StreamHandle(raw))
    }

    fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        let sync = self.stream_synchronize(stream);
        let removed = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&stream.0);
        if removed.is_none() {
            return Err(TransportError::UnknownStream(stream));
        }
        sync
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.live()?;
        // SAFETY: borrowed only; the caller vouches for the handle (see `on`).
        let s = unsafe { Stream::borrow_raw(stream.0) };
        let r = s.synchronize().map_err(|e| TransportError::StreamFailed {
            stream,
            cause: e.to_string(),
        });
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&stream.0);
        r?;
        self.kernels
            .check_timeout()
            .map_err(|e| TransportError::StreamFailed {
                stream,
                cause: e.to_string(),
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
        let to = self.remote(pe, dst, len as u64)?;
        if len == 0 {
            return Ok(());
        }
        self.on(order, |s| {
            // SAFETY: `to` is a checked range of a mapped heap; `src` is valid by the caller's
            // contract until the copy has run.
            unsafe { cuda::memcpy_async(to, src as u64, len, s) }.map_err(cuda_err)
        })
    }

    unsafe fn get(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        len: usize,
    ) -> Result<()> {
        self.live()?;
        let from = self.remote(pe, src, len as u64)?;
        if len == 0 {
            return Ok(());
        }
        self.on(order, |s| {
            // SAFETY: as in `put`, the other way round.
            unsafe { cuda::memcpy_async(dst as u64, from, len, s) }.map_err(cuda_err)
        })
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
        let span = shape
            .span(shape.dst_stride)
            .ok_or_else(|| TransportError::BadArgument {
                op: "iput",
                what: format!("{shape:?} overflows"),
            })?;
        let to = self.remote(pe, dst, span as u64)?;
        if shape.nelems == 0 {
            return Ok(());
        }
        let e = shape.elem_size;
        self.on(order, |s| {
            // SAFETY: one `e`-byte element per row: rows of the destination are checked heap
            // memory, rows of the source are valid by the caller's contract.
            unsafe {
                cuda::memcpy_2d_async(
                    to,
                    shape.dst_stride * e,
                    src as u64,
                    shape.src_stride * e,
                    e,
                    shape.nelems,
                    s,
                )
            }
            .map_err(cuda_err)
        })
    }

    unsafe fn iget(
        &self,
        order: Order,
        pe: usize,
        dst: *mut u8,
        src: SymAddr,
        shape: Strided,
    ) -> Result<()> {
        self.live()?;
        let span = shape
            .span(shape.src_stride)
            .ok_or_else(|| TransportError::BadArgument {
                op: "iget",
                what: format!("{shape:?} overflows"),
            })?;
        let from = self.remote(pe, src, span as u64)?;
        if shape.nelems == 0 {
            return Ok(());
        }
        let e = shape.elem_size;
        self.on(order, |s| {
            // SAFETY: as in `iput`, the other way round.
            unsafe {
                cuda::memcpy_2d_async(
                    dst as u64,
                    shape.dst_stride * e,
                    from,
                    shape.src_stride * e,
                    e,
                    shape.nelems,
                    s,
                )
            }
            .map_err(cuda_err)
        })
    }

    fn p(&self, order: Order, pe: usize, dst: SymAddr, value: Scalar) -> Result<()> {
        self.live()?;
        Self::check_aligned(dst, value.width.bytes())?;
        let to = self.remote(pe, dst, value.width.bytes() as u64)?;
        self.on(order, |s| self.store(s, to, value))
    }

    fn g(&self, order: Order, pe: usize, src: SymAddr, width: Width) -> Result<u64> {
        self.live()?;
        Self::check_aligned(src, width.bytes())?;
        let from = self.remote(pe, src, width.bytes() as u64)?;
        let mut word = 0u64;
        let out = std::ptr::addr_of_mut!(word) as u64;
        self.on(order, |s| {
            // SAFETY: `word` outlives the copy, which is synchronized before returning.
            unsafe { cuda::memcpy_async(out, from, width.bytes(), s) }.map_err(cuda_err)
        })?;
        if let Order::Stream(h) = order {
            self.stream_synchronize(h)?;
        }
        Ok(word & width.mask())
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
        let to = self.remote(pe, dst, len as u64)?;
        Self::check_aligned(sig, 8)?;
        let sig_at = self.remote(pe, sig, 8)?;
        self.on(order, |s| {
            if len > 0 {
                // SAFETY: as in `put`.
                unsafe { cuda::memcpy_async(to, src as u64, len, s) }.map_err(cuda_err)?;
            }
            // Stream order: the signal starts after the copy has completed.
            self.signal(s, sig_at, value, op)
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
        Self::check_aligned(sig, 8)?;
        let sig_at = self.remote(pe, sig, 8)?;
        self.on(order, |s| self.signal(s, sig_at, value, op))
    }

    fn signal_fetch(&self, sig: SymAddr) -> Result<u64> {
        self.live()?;
        Self::check_aligned(sig, 8)?;
        let at = self.remote(self.pe, sig, 8)?;
        let bytes = self.read_now(at, 8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn wait_until(
        &self,
        order: Order,
        ivar: SymAddr,
        kind: WaitKind,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        self.wait_impl(
            order,
            "wait_until",
            ivar,
            1,
            kind,
            None,
            cmp,
            Targets::One(value),
        )
    }

    fn wait_until_all(
        &self,
        order: Order,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        self.wait_impl(
            order,
            "wait_until_all",
            ivars,
            nelems,
            kind,
            status,
            cmp,
            Targets::One(value),
        )
    }

    fn wait_until_all_vector(
        &self,
        order: Order,
        ivars: SymAddr,
        kind: WaitKind,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[u64],
    ) -> Result<()> {
        self.wait_impl(
            order,
            "wait_until_all_vector",
            ivars,
            values.len(),
            kind,
            status,
            cmp,
            Targets::Each(values),
        )
    }

    unsafe fn wait_until_all_deferred(
        &self,
        stream: StreamHandle,
        ivars: SymAddr,
        nelems: usize,
        kind: WaitKind,
        cmp: Cmp,
        arrays: DeferredWait,
    ) -> Result<()> {
        self.live()?;
        let addr = self.wait_words(arrays.op(), ivars, nelems, kind)?;
        if nelems == 0 {
            return Ok(());
        }
        let order = Order::Stream(stream);
        self.on(order, |s| {
            // The arrays go to the kernel as they are: it reads them when it runs.
            // SAFETY: the arrays are the caller's contract (device-readable until the stream
            // has run the wait).
            unsafe { self.enqueue_wait(s, (addr, nelems), kind, cmp, arrays) }
        })
    }

    fn atomic(
        &self,
        pe: usize,
        addr: SymAddr,
        op: AmoOp,
        width: Width,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        self.live()?;
        width.check_amo("atomic")?;
        Self::check_aligned(addr, width.bytes())?;
        let at = self.remote(pe, addr, width.bytes() as u64)?;
        let slot = self.amo_result.lock().unwrap_or_else(|e| e.into_inner());
        self.on(Order::Now, |s| {
            // SAFETY: `at` is a checked, aligned word of a mapped heap; `slot` is a mapped
            // pinned word, held (locked) until after the synchronization in `on`.
            unsafe {
                self.kernels.amo(
                    s,
                    at,
                    op,
                    width.bytes(),
                    operand,
                    compare,
                    slot.device_ptr(),
                )
            }
            .map_err(cuda_err)
        })?;
        Ok(slot.load_u64(0).map_err(cuda_err)? & width.mask())
    }

    fn fence(&self, _order: Order) -> Result<()> {
        // Operations of one stream (or the internal one) complete in order; blocking ones
        // have completed when they return. Nothing further to order on this transport.
        self.live()
    }

    fn quiet(&self, order: Order) -> Result<()> {
        self.live()?;
        match order {
            Order::Now => self.internal.synchronize().map_err(cuda_err),
            // Later work of the stream starts after earlier work has completed.
            Order::Stream(_) => Ok(()),
        }
    }

    fn compares_fingerprints(&self, team: &TeamSync) -> bool {
        self.central_for(team)
    }

    fn barrier_with_fingerprint(&self, team: TeamSync, fingerprint: u64) -> Result<Fingerprints> {
        if !self.central_for(&team) {
            return self
                .barrier(Order::Now, team)
                .map(|()| Fingerprints::NotCompared);
        }
        self.live()?;
        if team.size < 2 {
            self.internal.synchronize().map_err(cuda_err)?;
            return Ok(Fingerprints::Same);
        }
        let verdict = self.verdict.lock().unwrap_or_else(|e| e.into_inner());
        verdict.store_u32(0, 0).map_err(cuda_err)?;
        self.central_barrier_now_carrying(team, fingerprint, Some(&verdict))?;
        match verdict.load_u32(0).map_err(cuda_err)? {
            1 => Ok(Fingerprints::Same),
            2 => Ok(Fingerprints::Differ),
            other => Err(TransportError::Gpu {
                what: format!(
                    "barrier: the central barrier's verdict on the members' fingerprints is \
                     {other}, neither 1 (same) nor 2 (differ)"
                ),
            }),
        }
    }

    fn barrier(&self, order: Order, team: TeamSync) -> Result<()> {
        self.live()?;
        let comm = self.team_comm(&team);
        if comm.is_none() && order == Order::Now {
            // A sub-team of LSA peers, blocking: host atomics, no stream work.
            return self.team_barrier_now(team);
        }
        if order == Order::Now && self.central_for(&team) {
            return self.central_barrier_now(team);
        }
        self.on(order, |s| self.enqueue_barrier_on(s, team, comm))
    }

    fn collective(&self, order: Order, c: &Collective) -> Result<()> {
        self.live()?;
        self.run_collective(order, c)
    }

    fn team_split(&self, split: &TeamSplit) -> Result<()> {
        self.live()?;
        self.split_team_comm(split)
    }

    fn team_destroyed(&self, team: i32) -> Result<()> {
        self.live()?;
        self.drop_team_comm(team);
        Ok(())
    }

    fn memset_local(&self, addr: SymAddr, byte: u8, len: usize) -> Result<()> {
        self.live()?;
        let at = self.remote(self.pe, addr, len as u64)?;
        self.on(Order::Now, |s| {
            // SAFETY: a checked range of this PE's heap.
            unsafe { cuda::memset_d8_async(at, byte, len, s) }.map_err(cuda_err)
        })
    }

    fn finalize(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let current = self.device.make_current().map_err(cuda_err);
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let synced = current.and_then(|()| self.internal.synchronize().map_err(cuda_err));
        let mut team_comms = self.team_comms.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = &synced {
            // The context's sticky error (a kernel trapped: a device barrier that stopped
            // for a dead or missing PE, or any fault). `ncclCommFinalize` would wait for
            // peers on a context that can run nothing, which hung a survivor for ever on
            // the GPU: abort every communicator instead. The abort cannot stop NCCL's
            // proxy thread on such a context, so the process's exit is guarded too. Releasing
            // the windows, device communicators and heap then fails too; that is not
            // reported again (`synced` is the one error).
            self.comm.abort_on_drop();
            team_comms.values().for_each(Comm::abort_on_drop);
            self.heap.release_quietly();
            exit_guard::arm(self.fault_exit, self.pe, &e.to_string());
        }
        // Every PE finalizes, so every team's communicator is released on all its ranks.
        team_comms.clear();
        drop(team_comms);
        self.registered.clear();
        synced
    }
}

#[cfg(test)]
mod tests {
    use super::pack_words;

    #[test]
    fn wait_values_are_packed_at_the_words_width() {
        // 2-byte words: the low 2 bytes of each value, back to back.
        assert_eq!(
            pack_words(&[0x1111_2222, 0x3333, 0xffff_4444, 0x5555, 0x6666], 2),
            vec![0x5555_4444_3333_2222, 0x6666]
        );
        assert_eq!(
            pack_words(&[1, u64::MAX, 3], 4),
            vec![0xffff_ffff_0000_0001, 3]
        );
        assert_eq!(pack_words(&[7, 8], 8), vec![7, 8]);
        assert!(pack_words(&[], 4).is_empty());
    }
}

/// The first PE other than `me` that `board` shows failed, with the launcher's word on how
/// ("killed by signal 9 (SIGKILL)"); `None` while no PE has failed.
fn failed_peer(board: &StatusBoard, me: usize) -> Option<(usize, String)> {
    if board.failures() == 0 {
        return None;
    }
    (0..board.n_pes())
        .filter(|&pe| pe != me)
        .find_map(|pe| match board.ended(pe) {
            Some(PeEnd::Failed(how)) => Some((pe, how)),
            _ => None,
        })
}

#[cfg(test)]
mod peer_failure_tests {
    use super::*;

    #[test]
    fn a_failed_peer_is_found_on_the_board_and_this_pe_is_not_blamed() {
        let (dir, board) = crate::status::test_board("lsa", 4);
        assert_eq!(failed_peer(&board, 0), None);
        board.record(2, &PeEnd::Success);
        assert_eq!(
            failed_peer(&board, 0),
            None,
            "a PE that exited 0 is no failure"
        );
        board.record(0, &PeEnd::Failed("exited with status 5".into()));
        assert_eq!(
            failed_peer(&board, 0),
            None,
            "this PE's own failure is not a peer's"
        );
        board.record(3, &PeEnd::Failed("killed by signal 9 (SIGKILL)".into()));
        assert_eq!(
            failed_peer(&board, 0),
            Some((3, "killed by signal 9 (SIGKILL)".to_string()))
        );
        assert_eq!(
            failed_peer(&board, 3),
            Some((0, "exited with status 5".to_string()))
        );
        drop(board);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
