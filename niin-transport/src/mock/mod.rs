//! The mock transport: every PE's symmetric heap in host memory, N PEs as threads of
//! one process ([`MockWorld::new`]) or as processes sharing a file mapping
//! ([`MockTransport::attach`]).
//!
//! The mock is meant to be *faithful*: a program that is correct on it is correct on a
//! GPU, and one that would hang or race on a GPU hangs or races here too — except that
//! a hang becomes a loud [`TransportError::Timeout`] after [`MockConfig::timeout`].
//! Every operation bounds-checks its PE and heap range before touching memory, scalars
//! and signals are single atomic instructions of their width, AMOs are real atomic
//! read-modify-writes (contention between threads and processes is real), and waits
//! and barriers poll shared memory.
//!
//! # The mapping
//!
//! One mapping per job: an anonymous one for an in-process world (shared by its PE
//! threads through an `Arc`, alive until the last PE's transport is dropped), the file
//! `/dev/shm/niin-mock-<job_id>` (or the same name in `std::env::temp_dir()` where
//! `/dev/shm` does not exist) for a multi-process job.
//!
//! ```text
//! offset 0          header, 128 bytes: ten u64 words
//!                     [0] magic "NIINMOCK" (release-stored last: the header is valid)
//!                     [1] layout version (3)   [2] n_pes   [3] heap_size
//!                     [4] node_size (u64::MAX: one node)   [5] max_teams
//!                     [6] FNV-1a hash of the job id (0 in-process)
//!                     [7] PEs attached (the init barrier's counter)
//!                     [8] heap offset (= control size)    [9] heap stride
//! 128 + pe*B        PE control block of `pe`, B = 128 + 16*max_teams rounded up to 64:
//!                     +0 state u32 (0 absent, 1 attached, 2 finalized, 3 panicked)
//!                     +4 pid u32 (the process that attached it)
//!                     +8 life flag u32 (0 unknown, 1 life lock held, 2 unusable)
//!                     +64 life lock: a robust, process-shared pthread mutex (64 bytes)
//!                     +128 + 8*t  barrier slot of team t: u64 (fingerprint sum << 32 |
//!                                 generation << 21 | fingerprints differed << 20 | count)
//!                     +128 + 8*(max_teams + t)  arrival record of team t: u64
//!                                 (generation << 32 | start + 1 of its last barrier)
//! C                 PE 0's heap; C = control size, a multiple of 64 KiB
//! C + pe*S          PE `pe`'s heap, S = heap_size rounded up to 64 KiB
//! ```
//!
//! The control region is only ever accessed atomically. Heaps are plain memory:
//! `put`/`get` copy with `memcpy` (`memmove` when a PE copies within its own heap), so
//! two PEs writing the same bytes without ordering race exactly as they would on a GPU.
//!
//! # Memory ordering
//!
//! - `p`/`g` are relaxed atomic stores/loads of their width (1, 2, 4, 8 bytes, aligned):
//!   never torn, ordered only by fence, quiet and barriers, as in NVSHMEM.
//! - Signals (`put_signal`, `signal_op`) update their word after the data, with a
//!   release store (SET) or an acq-rel fetch-add (ADD); waits load with acquire, so a
//!   PE that sees the signal sees the data.
//! - AMOs are acq-rel atomic RMWs on aligned 4- and 8-byte words.
//! - `fence` and `quiet` are SeqCst fences. That is faithful: the mock's puts are
//!   complete when the call returns ([`Order::Now`]) or when the stream runs them, so
//!   there is nothing left to complete — NVSHMEM's host `quiet` completes the caller's
//!   own blocking operations, and stream work is completed by synchronizing the stream.
//!   With [`Order::Stream`] they are queue entries that fence when they run.
//! - Barriers are quiet, then a central sense-reversing barrier (see `barrier.rs`) whose
//!   acq-rel arrivals make every member's earlier writes visible to every member.
//!
//! # Streams
//!
//! A stream is a worker thread with an in-order queue; handle 0 (the default stream)
//! starts on first use, [`Transport::stream_create`] makes more. Stream operations are
//! validated by the enqueuing call; the first failure while running is kept, later
//! operations on that stream are skipped, and [`Transport::stream_synchronize`]
//! returns it as `StreamFailed` and clears it, so the stream is usable again. `g` on a
//! stream waits for its answer. [`Transport::stream_destroy`] drains the stream and
//! joins its worker (returning a kept failure, if any; the stream is gone either way);
//! the default stream cannot be destroyed. `finalize` (and drop) drain and join all.
//!
//! # Limits
//!
//! - Team handles for barriers: `0..max_teams` (default 1024), slot per handle and PE 0.
//! - Every wait, barrier and attach fails with `Timeout` after `timeout` (default 60 s,
//!   `NIIN_TIMEOUT` through [`MockConfig::from_env`]); a barrier's timeout names the
//!   members that did not arrive, an attach's the PEs that did not attach. Every 20 ms
//!   (20 ms per 32 PEs in larger jobs, at most 1 s) it also checks whether the PEs it
//!   still needs have finalized, panicked or (multi-process) died, and fails with
//!   `PeerGone`, which says how ("PE 3 died (killed by signal 9 (SIGKILL))"). A barrier
//!   needs the members that have not arrived; a wait on local memory gives up when a PE
//!   died or every other PE has left.
//! - Liveness costs no system call: each multi-process PE has a thread that holds its
//!   life lock (`life.rs`) from attach to finalize; the kernel marks the lock's word when
//!   the process dies. Under niinrun, the launcher's status board ([`StatusBoard`](crate::status::StatusBoard), in the
//!   job's rendezvous directory) says how a dead PE's process ended. Barriers and the
//!   attach sleep on their word with a futex and are woken by the last arriver; other
//!   waits sleep at most 1 ms (up to 10 ms with more than 8 PEs per core), so jobs of
//!   1024 processes on 2 cores start and run.
//! - `finalize` is not collective: call a barrier first if peers may still access this
//!   PE's heap. It first runs what the streams still hold (a wait among it ends at the
//!   latest after the timeout), and returns a stream failure nobody synchronized. A second `finalize` returns `Ok(())`; any other call after it fails with
//!   `Finalized`. Dropping a transport finalizes it.
//!
//! # Multi-process jobs and cleanup
//!
//! PE 0 checks that the whole mapping fits in the free space of the file's file system
//! (`statvfs`; the file is sparse, and a PE touching a page tmpfs cannot give would die
//! of SIGBUS): a job that does not fit is refused with an error naming both sizes. It
//! creates the job file with `create_new` (an existing file is an error that names
//! the path: a stale file or a reused job id), sizes it (sparse), claims its control
//! block and publishes the header with a release store of the magic. Every other PE
//! waits for the file and the magic (within the timeout), checks the header against
//! its own `n_pes`, `heap_size`, `node_size` and `max_teams`, records its pid and
//! state, takes its life lock, and counts itself in. Once all `n_pes` have attached (the init barrier),
//! PE 0 unlinks the file: the mapping lives on in every process, and a crash after init
//! leaves nothing behind in `/dev/shm`. A job that fails during init (PE 0's init
//! barrier times out or a PE is gone) also has PE 0 remove the file; only a crash of
//! PE 0 before that leaves it, and the launcher removes it with [`cleanup_job`] when
//! the job ends.

mod atomics;
mod barrier;
mod config;
mod futex;
mod job;
mod life;
mod memory;
mod peers;
mod region;
mod stream;
mod wait;

#[cfg(test)]
mod tests;

use std::sync::atomic::{self, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub use config::{
    DEFAULT_HEAP_SIZE, DEFAULT_MAX_TEAMS, DEFAULT_TIMEOUT, MAX_MAX_TEAMS, MockConfig, TIMEOUT_VAR,
    parse_timeout,
};
pub use job::{JOB_FILE_PREFIX, MAX_JOB_ID_LEN, cleanup_job, job_file_path, job_hash};

use self::life::LifeHolder;
use self::memory::{SendPtr, check_local, check_shape, copy_bytes, copy_strided};
use self::region::{HeaderField, Layout, PeState, Region};
use self::stream::Streams;
use self::wait::WaitSet;
use crate::coll::{self, CollMemory, Collective};
use crate::error::{Result, TransportError};
use crate::ops::{
    AmoOp, Cmp, DeferredWait, Order, Scalar, SignalOp, StreamHandle, Strided, SymAddr, TeamSplit,
    TeamSync, WaitKind, Width,
};
use crate::transport::{Fingerprints, Transport};

/// What an operation needs while it runs, on the caller's thread or a stream worker:
/// the mapping (kept alive by this `Arc`), the PE and its configuration.
struct Core {
    region: Arc<Region>,
    pe: usize,
    config: MockConfig,
}

/// One PE of a mock world. `Send + Sync`: it may be used from several threads, and
/// moved to the thread that plays the PE.
pub struct MockTransport {
    core: Arc<Core>,
    streams: Streams,
    finalized: AtomicBool,
    team_events: Mutex<Vec<TeamEvent>>,
    /// The thread holding this PE's life lock (multi-process PEs).
    life: Mutex<Option<LifeHolder>>,
}

/// What the team hooks of [`Transport`] told a mock PE, in order
/// ([`MockTransport::team_events`]): the mock runs collectives itself and needs no state
/// per team, but tests check through this what a GPU world's transport would be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeamEvent {
    /// [`Transport::team_split`].
    Split(TeamSplit),
    /// [`Transport::team_destroyed`] of a handle.
    Destroyed(i32),
}

/// Creates in-process mock worlds.
#[derive(Debug)]
pub enum MockWorld {}

impl MockWorld {
    /// A world of `n_pes` PEs in this process, sharing one anonymous mapping; element
    /// `i` is PE `i`. Move each to the thread that plays it.
    #[expect(
        clippy::new_ret_no_self,
        reason = "a world is its PEs: one transport each"
    )]
    pub fn new(n_pes: usize, config: MockConfig) -> Result<Vec<MockTransport>> {
        config.validate()?;
        let region = Region::anonymous(Layout::new(n_pes, &config)?)?;
        region.write_header(0);
        for pe in 0..n_pes {
            region.claim_pe(pe, std::process::id());
        }
        region
            .header(HeaderField::Attached)
            .store(n_pes as u64, Ordering::Release);
        let region = Arc::new(region);
        Ok((0..n_pes)
            .map(|pe| {
                MockTransport::new(Core {
                    region: region.clone(),
                    pe,
                    config,
                })
            })
            .collect())
    }
}

impl MockTransport {
    fn new(core: Core) -> MockTransport {
        let pe = core.pe;
        MockTransport {
            core: Arc::new(core),
            streams: Streams::new(pe),
            finalized: AtomicBool::new(false),
            team_events: Mutex::new(Vec::new()),
            life: Mutex::new(None),
        }
    }

    /// Attaches this process as PE `pe` of the `n_pes`-PE job `job_id` (1 to 64
    /// characters of `A-Z a-z 0-9 _ . -`), through the file `/dev/shm/niin-mock-<job_id>`
    /// (see the module docs). PE 0 creates the file; the others wait for it. Returns
    /// once every PE has attached; fails with `Timeout` if they do not within
    /// `config.timeout`, and with an error naming both values if this PE's `n_pes`,
    /// `heap_size`, `node_size` or `max_teams` differ from PE 0's.
    pub fn attach(
        job_id: &str,
        pe: usize,
        n_pes: usize,
        config: MockConfig,
    ) -> Result<MockTransport> {
        let region = Arc::new(job::attach(job_id, pe, n_pes, &config)?);
        let life = LifeHolder::start(region.clone(), pe);
        job::init_barrier(job_id, &region, pe, &config)?;
        let t = MockTransport::new(Core { region, pe, config });
        *t.life.lock().unwrap_or_else(PoisonError::into_inner) = Some(life);
        Ok(t)
    }

    /// The configuration this PE was created with.
    pub fn config(&self) -> &MockConfig {
        &self.core.config
    }

    /// The team splits and destroys this PE was told of, oldest first.
    pub fn team_events(&self) -> Vec<TeamEvent> {
        self.team_events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, event: TeamEvent) {
        self.team_events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }

    fn region(&self) -> &Region {
        &self.core.region
    }

    fn live(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            Err(TransportError::Finalized { pe: self.core.pe })
        } else {
            Ok(())
        }
    }

    /// Runs `op` now, or enqueues it on the stream.
    fn run(
        &self,
        order: Order,
        op: impl FnOnce(&Core) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        match order {
            Order::Now => op(&self.core),
            Order::Stream(s) => {
                let core = self.core.clone();
                self.streams.enqueue(s, Box::new(move || op(&core)))
            }
        }
    }
}

impl std::fmt::Debug for MockTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockTransport")
            .field("pe", &self.core.pe)
            .field("n_pes", &self.core.region.layout().n_pes)
            .field("config", &self.core.config)
            .field("finalized", &self.finalized.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Drop for MockTransport {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

fn fence_now() {
    atomic::fence(Ordering::SeqCst);
}

/// A collective reads and writes the members' heaps in the shared mapping directly.
impl CollMemory for Core {
    fn coll_pe(&self) -> usize {
        self.pe
    }

    fn coll_read(&self, pe: usize, addr: SymAddr, buf: &mut [u8]) -> Result<()> {
        let from = self.region.heap_range(pe, addr, buf.len() as u64)?;
        // SAFETY: `from` is a checked heap range of `buf.len()` bytes in the live mapping;
        // `buf` is a distinct local buffer.
        unsafe { copy_bytes(from, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn coll_write(&self, pe: usize, addr: SymAddr, buf: &[u8]) -> Result<()> {
        let to = self.region.heap_range(pe, addr, buf.len() as u64)?;
        // SAFETY: as in coll_read, the other way.
        unsafe { copy_bytes(buf.as_ptr(), to, buf.len()) };
        Ok(())
    }

    fn coll_barrier(&self, team: &TeamSync) -> Result<()> {
        fence_now();
        barrier::barrier(&self.region, self.pe, team, 0, self.config.timeout).map(drop)
    }
}

impl Transport for MockTransport {
    fn my_pe(&self) -> usize {
        self.core.pe
    }

    fn n_pes(&self) -> usize {
        self.region().layout().n_pes
    }

    fn heap_size(&self) -> u64 {
        self.region().layout().heap_size
    }

    fn is_lsa_peer(&self, pe: usize) -> bool {
        let l = self.region().layout();
        pe < l.n_pes && l.node_of(pe) == l.node_of(self.core.pe)
    }

    fn peer_ptr(&self, pe: usize, addr: SymAddr) -> *mut u8 {
        if self.finalized.load(Ordering::Acquire) || !self.is_lsa_peer(pe) {
            return std::ptr::null_mut();
        }
        self.region().heap_ptr_or_null(pe, addr)
    }

    fn check_registration(&self, local: u64, len: u64) -> Result<()> {
        // The refusal comes in register_buffer, after the PEs agreed on their arguments,
        // as a GPU transport's failures would.
        let _ = (local, len);
        self.live()
    }

    fn register_buffer(&self, local: u64, len: u64) -> Result<SymAddr> {
        self.live()?;
        Err(TransportError::NotImplemented {
            what: format!(
                "registering {len} bytes at {local:#x} as symmetric memory on the mock \
                 transport: NVSHMEM registers CUDA VMM memory (cuMemCreate), which a world \
                 without a GPU has none of, and the mock's heap is one shared-memory file \
                 that memory of one process cannot join"
            ),
        })
    }

    fn stream_create(&self) -> Result<StreamHandle> {
        self.live()?;
        self.streams.create()
    }

    fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        self.live()?;
        self.streams.destroy(stream)
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        self.live()?;
        self.streams.synchronize(stream)
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
        let to = SendPtr::new(self.region().heap_range(pe, dst, len as u64)?);
        check_local("put", src, len)?;
        let from = SendPtr::from_const(src);
        self.run(order, move |_| {
            // SAFETY: `to` is a checked heap range of `len` bytes in the mapping the core
            // keeps alive; `from` is readable for `len` bytes until now by the caller's
            // contract of `put`.
            unsafe { copy_bytes(from.get(), to.get(), len) };
            Ok(())
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
        let from = SendPtr::new(self.region().heap_range(pe, src, len as u64)?);
        check_local("get", dst, len)?;
        let to = SendPtr::new(dst);
        self.run(order, move |_| {
            // SAFETY: `from` is a checked heap range in the live mapping; `to` is writable
            // for `len` bytes until now by the caller's contract of `get`.
            unsafe { copy_bytes(from.get(), to.get(), len) };
            Ok(())
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
        let (dst_span, src_span) = check_shape("iput", &shape)?;
        let to = SendPtr::new(self.region().heap_range(pe, dst, dst_span as u64)?);
        check_local("iput", src, src_span)?;
        let from = SendPtr::from_const(src);
        self.run(order, move |_| {
            // SAFETY: the shape passed `check_shape`; the destination span is a checked heap
            // range in the live mapping; the source span is readable by the caller's
            // contract of `iput`.
            unsafe { copy_strided(from.get(), to.get(), &shape) };
            Ok(())
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
        let (dst_span, src_span) = check_shape("iget", &shape)?;
        let from = SendPtr::new(self.region().heap_range(pe, src, src_span as u64)?);
        check_local("iget", dst, dst_span)?;
        let to = SendPtr::new(dst);
        self.run(order, move |_| {
            // SAFETY: as in `iput`, with the heap range on the source side and the
            // caller's writable span (contract of `iget`) on the destination side.
            unsafe { copy_strided(from.get(), to.get(), &shape) };
            Ok(())
        })
    }

    fn p(&self, order: Order, pe: usize, dst: SymAddr, value: Scalar) -> Result<()> {
        self.live()?;
        let word = SendPtr::new(self.region().heap_word(pe, dst, value.width)?);
        let (width, bits) = (value.width, value.bits & value.width.mask());
        self.run(order, move |_| {
            // SAFETY: `heap_word` checked the range and the alignment to `width`; the
            // mapping is alive while the core is.
            unsafe { atomics::store(word.get(), width, bits, Ordering::Relaxed) };
            Ok(())
        })
    }

    fn g(&self, order: Order, pe: usize, src: SymAddr, width: Width) -> Result<u64> {
        self.live()?;
        let word = SendPtr::new(self.region().heap_word(pe, src, width)?);
        let load = move || {
            // SAFETY: `heap_word` checked the range and the alignment to `width`; the
            // mapping is alive while the transport (or the stream job's core) is.
            unsafe { atomics::load(word.get(), width, Ordering::Relaxed) }
        };
        let Order::Stream(s) = order else {
            return Ok(load());
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        let core = self.core.clone();
        self.streams.query(
            s,
            Box::new(move |failed| {
                let _alive = core;
                let answer = match failed {
                    Some(e) => Err(stream::failed(s, e)),
                    None => Ok(load()),
                };
                let _ = tx.send(answer);
            }),
        )?;
        rx.recv().map_err(|_| TransportError::UnknownStream(s))?
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
        let to = SendPtr::new(self.region().heap_range(pe, dst, len as u64)?);
        let sig = SendPtr::new(self.region().heap_word(pe, sig, Width::W8)?);
        check_local("put_signal", src, len)?;
        let from = SendPtr::from_const(src);
        self.run(order, move |_| {
            // SAFETY: as in `put`.
            unsafe { copy_bytes(from.get(), to.get(), len) };
            // SAFETY: `sig` is a checked, 8-byte aligned heap word in the live mapping.
            unsafe { atomics::signal(sig.get(), op, value) };
            Ok(())
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
        let sig = SendPtr::new(self.region().heap_word(pe, sig, Width::W8)?);
        self.run(order, move |_| {
            // SAFETY: `sig` is a checked, 8-byte aligned heap word in the live mapping.
            unsafe { atomics::signal(sig.get(), op, value) };
            Ok(())
        })
    }

    fn signal_fetch(&self, sig: SymAddr) -> Result<u64> {
        self.live()?;
        let word = self.region().heap_word(self.core.pe, sig, Width::W8)?;
        // SAFETY: `word` is a checked, 8-byte aligned heap word in the live mapping.
        Ok(unsafe { atomics::load(word, Width::W8, Ordering::Acquire) })
    }

    fn wait_until(
        &self,
        order: Order,
        ivar: SymAddr,
        kind: WaitKind,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        self.live()?;
        let set = WaitSet::new(
            "wait_until",
            self.region(),
            self.core.pe,
            ivar,
            1,
            kind,
            None,
            cmp,
            |_| value,
        )?;
        self.run(order, move |core| {
            set.wait(&core.region, core.pe, core.config.timeout)
        })
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
        self.live()?;
        let set = WaitSet::new(
            "wait_until_all",
            self.region(),
            self.core.pe,
            ivars,
            nelems,
            kind,
            status,
            cmp,
            |_| value,
        )?;
        self.run(order, move |core| {
            set.wait(&core.region, core.pe, core.config.timeout)
        })
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
        self.live()?;
        let set = WaitSet::new(
            "wait_until_all_vector",
            self.region(),
            self.core.pe,
            ivars,
            values.len(),
            kind,
            status,
            cmp,
            |i| values[i],
        )?;
        self.run(order, move |core| {
            set.wait(&core.region, core.pe, core.config.timeout)
        })
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
        let op = arrays.op();
        // The words now (an error at the call); the arrays when the stream gets there.
        WaitSet::new(
            op,
            self.region(),
            self.core.pe,
            ivars,
            nelems,
            kind,
            None,
            cmp,
            |_| 0,
        )?;
        wait::check_deferred(op, &arrays, kind)?;
        self.run(Order::Stream(stream), move |core| {
            // SAFETY: the caller's contract: the arrays are readable, aligned and unchanged
            // until the stream has run this job.
            let (status, values) = unsafe { wait::read_deferred(&arrays, nelems, kind) };
            let set = WaitSet::new(
                op,
                &core.region,
                core.pe,
                ivars,
                nelems,
                kind,
                status.as_deref(),
                cmp,
                |i| values.as_ref().map_or(arrays.value, |v| v[i]),
            )?;
            set.wait(&core.region, core.pe, core.config.timeout)
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
        let word = self.region().heap_word(pe, addr, width)?;
        // SAFETY: `word` is a checked heap word aligned to `width`, which is 4 or 8.
        Ok(unsafe { atomics::amo(word, width, op, operand, compare) })
    }

    fn fence(&self, order: Order) -> Result<()> {
        self.live()?;
        self.run(order, |_| {
            fence_now();
            Ok(())
        })
    }

    fn quiet(&self, order: Order) -> Result<()> {
        self.live()?;
        self.run(order, |_| {
            fence_now();
            Ok(())
        })
    }

    fn collective(&self, order: Order, c: &Collective) -> Result<()> {
        self.live()?;
        c.validate(self.core.pe)?;
        // Symmetric heaps: this PE's ranges stand for every member's.
        let (src, dst) = c.operand_bytes();
        self.region().heap_range(self.core.pe, c.src, src as u64)?;
        self.region().heap_range(self.core.pe, c.dst, dst as u64)?;
        barrier::validate(self.region(), self.core.pe, &c.team)?;
        let c = *c;
        self.run(order, move |core| coll::run(core, &c))
    }

    fn barrier(&self, order: Order, team: TeamSync) -> Result<()> {
        self.live()?;
        barrier::validate(self.region(), self.core.pe, &team)?;
        self.run(order, move |core| {
            fence_now();
            barrier::barrier(&core.region, core.pe, &team, 0, core.config.timeout).map(drop)
        })
    }

    fn compares_fingerprints(&self, _team: &TeamSync) -> bool {
        true
    }

    /// Carries `fingerprint` in the barrier's own words (`barrier.rs`): the members
    /// compare fingerprints at no extra synchronization and no read of each other's.
    fn barrier_with_fingerprint(&self, team: TeamSync, fingerprint: u64) -> Result<Fingerprints> {
        self.live()?;
        barrier::validate(self.region(), self.core.pe, &team)?;
        fence_now();
        let core = &self.core;
        barrier::barrier(
            &core.region,
            core.pe,
            &team,
            fingerprint,
            core.config.timeout,
        )
    }

    /// Checks what a GPU transport would rely on (this PE is a member of the parent, and
    /// of its new team if it has one) and records the split.
    fn team_split(&self, split: &TeamSplit) -> Result<()> {
        self.live()?;
        let pe = self.core.pe;
        // niin-api prefixes the PE (`PE 0: team split: ...`): not again here.
        let bad = |what: String| TransportError::BadArgument {
            op: "team split",
            what,
        };
        if split.parent.team_pe(pe).is_none() {
            return Err(bad(format!(
                "not a member of parent team {}",
                split.parent.team
            )));
        }
        if let Some(t) = split.team
            && t.team_pe(pe).is_none()
        {
            return Err(bad(format!("not a member of its new team {}", t.team)));
        }
        self.record(TeamEvent::Split(*split));
        Ok(())
    }

    fn team_destroyed(&self, team: i32) -> Result<()> {
        self.live()?;
        self.record(TeamEvent::Destroyed(team));
        Ok(())
    }

    fn memset_local(&self, addr: SymAddr, byte: u8, len: usize) -> Result<()> {
        self.live()?;
        let ptr = self.region().heap_range(self.core.pe, addr, len as u64)?;
        // SAFETY: `ptr..ptr+len` is a checked range of this PE's heap in the live mapping.
        unsafe { std::ptr::write_bytes(ptr, byte, len) };
        Ok(())
    }

    fn finalize(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let drained = self.streams.close();
        fence_now();
        // Finalized while its thread unwinds (a drop during a panic): its peers report
        // "PE n panicked" rather than "has finalized".
        let state = if std::thread::panicking() {
            PeState::Panicked
        } else {
            PeState::Finalized
        };
        self.region().set_pe_state(self.core.pe, state);
        if let Some(mut life) = self
            .life
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            life.release();
        }
        drained
    }
}
