//! [`World`]: one PE's handle on a world of PEs — init, queries, the symmetric heap,
//! synchronization and finalize. RMA, atomics, signals and waits are in `rma`, teams in
//! `team`, streams in `stream`: all are methods of `World`.
//!
//! A `World` holds no global state: a process may hold several worlds (an in-process
//! world of N PEs is N `World`s, one per thread), and one `World` is `Send + Sync` and
//! cheap to clone (all clones are the same PE).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::check::{CALL_AREA_BYTES, CallLog, CollectiveCall, CollectiveKind};
use crate::registered::RegisteredBuffer;
use niin_heap::{Block, Fingerprint, HeapStats, Layout, SymmetricHeap};
use niin_teams::{TeamId, TeamTable, WorldLayout};
use niin_transport::mock::{MockConfig, MockTransport, MockWorld};
use niin_transport::{Order, Routed, SymAddr, TeamSync, Transport, TransportError};

use crate::buffer::{SymBuffer, SymSlice};
use crate::config::{CollectiveChecks, TransportKind, WorldConfig};
use crate::error::{Error, Result};
use crate::types::RmaType;

/// Bytes of the world's system area before the device collectives' rings, allocated first
/// in every PE's heap at init (so at the same offset everywhere): the exchange slots of the
/// collectives niin-api runs itself (fingerprint comparison, team-handle agreement), the
/// device team-barrier words ([`SYS_TEAM_SYNC`]) and the published collective calls
/// ([`SYS_CALLS`]). The rings follow at [`SYS_COLL_LL`] ([`World::coll_ll_offset`]); their
/// size depends on the heap's.
pub(crate) const SYS_BYTES: u64 = SYS_CALLS + CALL_AREA_BYTES;
/// Offset in the system area of the published collective calls (`crate::check`): two
/// 32-byte slots per team handle below [`crate::check::CHECKED_TEAMS`].
pub(crate) const SYS_CALLS: u64 = SYS_TEAM_SYNC + (DEVICE_TEAM_SLOTS * TEAM_SYNC_SLOT_BYTES) as u64;
/// Offset in the system area of the device collectives' LL slots (4 KiB aligned, after the
/// team-barrier words).
pub(crate) const SYS_COLL_LL: u64 = SYS_BYTES.next_multiple_of(4096);
/// Offset in the system area of this PE's published allocation fingerprint (16 bytes).
pub(crate) const SYS_FINGERPRINT: u64 = 0;
/// Offset in the system area of this PE's published free team slots (`SLOT_WORDS` words).
pub(crate) const SYS_SLOTS: u64 = 256;
/// Words of team-slot bitmap exchanged per round (64 words: 4096 handles).
pub(crate) const SLOT_WORDS: usize = 64;
/// Offset in the system area of the device team-barrier words: per team handle below
/// [`DEVICE_TEAM_SLOTS`], [`TEAM_SYNC_SLOT_BYTES`] bytes (see [`World::team_sync_offset`]).
pub(crate) const SYS_TEAM_SYNC: u64 = 1024;

/// Team handles device code knows: `0..DEVICE_TEAM_SLOTS` (the entries of the device team
/// table that `libnvshmem_host` publishes, and the team-barrier slots of the system area).
/// A team with a larger handle works on the host; device code refuses it by the
/// NOT_IMPLEMENTED policy.
pub const DEVICE_TEAM_SLOTS: usize = 1024;

/// Bytes of one team's device-barrier slot: word 0 counts the arrivals of the team's other
/// PEs at this PE (each adds 1 per barrier), word 1 the barriers this PE has begun.
pub const TEAM_SYNC_SLOT_BYTES: usize = 16;

/// Team handles whose small device collectives take the one-wait LL path: `0..COLL_LL_SLOTS`
/// (the predefined teams and the first user teams). Each has an LL slot in the system area
/// ([`World::coll_ll_offset`]); collectives of other teams take the two-wait path.
pub const COLL_LL_SLOTS: usize = 16;

/// Bytes at the head of an LL slot (this PE's count of the team's LL collectives and its
/// offset in the ring, kept by device code), before the ring.
pub const COLL_LL_HEADER_BYTES: usize = 256;

/// The largest LL ring of a team, in bytes: 1 MiB, from a heap of 2 GiB. A ring wraps (its
/// members meet in a team sync) when it is used up, so a larger ring means fewer waits: a
/// 4 KiB broadcast wraps every 128 calls in 1 MiB, every 16 in 128 KiB.
pub const COLL_LL_RING_MAX: usize = 1024 * 1024;

/// Bytes of each team's LL ring for a heap of `heap_size` bytes: 1/2048 of the heap rounded
/// down to 4 KiB, at most [`COLL_LL_RING_MAX`], and 0 (no rings: every device collective
/// takes the two-wait path) below 4 KiB. The rings of all [`COLL_LL_SLOTS`] slots together
/// take at most 1/128 of the heap (plus 4 KiB of headers). The same on every PE: the heap
/// size is.
pub fn coll_ll_ring_bytes(heap_size: u64) -> usize {
    let ring = usize::try_from((heap_size / 2048) & !4095).unwrap_or(usize::MAX);
    if ring < 4096 {
        0
    } else {
        ring.min(COLL_LL_RING_MAX)
    }
}

/// The smallest symmetric heap a world takes: the system area of such a heap plus one
/// 256-byte granule for the application. A smaller `NVSHMEM_SYMMETRIC_SIZE` is refused at
/// init with this number.
pub fn min_heap_size() -> u64 {
    SYS_BYTES.next_multiple_of(niin_heap::DEFAULT_ALIGNMENT) + niin_heap::DEFAULT_ALIGNMENT
}

/// Bytes of the system area for a heap of `heap_size` bytes.
fn sys_bytes(heap_size: u64) -> u64 {
    match coll_ll_ring_bytes(heap_size) {
        0 => SYS_BYTES,
        ring => SYS_COLL_LL + (COLL_LL_SLOTS * (COLL_LL_HEADER_BYTES + ring)) as u64,
    }
}

static NEXT_WORLD_ID: AtomicU64 = AtomicU64::new(1);

/// A world id not used by another world of this process.
pub(crate) fn next_world_id() -> u64 {
    NEXT_WORLD_ID.fetch_add(1, Ordering::Relaxed)
}

/// One PE's handle on a world: init, queries, the symmetric heap, synchronization and
/// finalize; RMA, atomics, signals and waits, teams ([`crate::team`]), collectives and
/// streams ([`Stream`](crate::Stream)) are methods of `World` too.
///
/// A `World` holds no global state: a process may hold several worlds (an in-process world
/// of N PEs is N `World`s, one per thread), and one `World` is `Send + Sync` and cheap to
/// clone (all clones are the same PE).
#[derive(Clone)]
pub struct World {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) id: u64,
    pub(crate) pe: usize,
    pub(crate) n_pes: usize,
    pub(crate) transport: Routed,
    pub(crate) heap: Mutex<SymmetricHeap>,
    pub(crate) teams: Mutex<TeamTable>,
    pub(crate) sys: u64,
    pub(crate) config: WorldConfig,
    pub(crate) finalized: AtomicBool,
    /// Application buffers made symmetric (registered.rs).
    pub(crate) registered: Mutex<Vec<RegisteredBuffer>>,
    /// How far collective calls are compared across PEs (`crate::check`).
    pub(crate) check_mode: CollectiveChecks,
    /// The collective this PE is inside (`crate::check`), 0 when none.
    pub(crate) busy: AtomicU64,
    /// Call counts of the compared teams and the out-of-step state (`crate::check`).
    pub(crate) calls: CallLog,
    /// Team handles the transport can synchronize: `0..max_teams` (the mock's barrier
    /// table); `None` where it has no limit.
    pub(crate) max_teams: Option<usize>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if !self.finalized.load(Ordering::Acquire) {
            // Not collective: releases this PE's resources without a barrier.
            let _ = self.transport.finalize();
        }
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("id", &self.inner.id)
            .field("pe", &self.inner.pe)
            .field("n_pes", &self.inner.n_pes)
            .finish_non_exhaustive()
    }
}

/// Refuses a heap too small for the system area (and one application granule), naming the
/// minimum ([`WorldConfig::validate`]).
pub(crate) fn check_heap_size(heap_size: u64) -> Result<()> {
    let min = min_heap_size();
    if heap_size < min {
        return Err(Error::Config(format!(
            "a symmetric heap of {heap_size} bytes ({}) is too small: niin-rs keeps \
             {SYS_BYTES} bytes of every PE's heap for itself (team barriers, collective \
             checks), so the heap must be at least {min} bytes",
            niin_heap::SYMMETRIC_SIZE_VAR
        )));
    }
    Ok(())
}

/// Whether every transport of `t` is the mock (a CPU world).
fn transport_is_mock(t: &Routed) -> bool {
    t.implementations()
        .iter()
        .all(|i| matches!(i, niin_transport::AnyTransport::Mock(_)))
}

fn mock_config(config: &WorldConfig) -> MockConfig {
    MockConfig {
        heap_size: config.heap_size,
        node_size: config.mock_node_size.unwrap_or(usize::MAX),
        timeout: config.timeout,
        ..MockConfig::default()
    }
}

impl World {
    /// Creates an in-process world of `n_pes` PEs on the mock transport: one `World` per
    /// PE, to be moved into one thread each. [`crate::run_in_process`] does the threads.
    pub fn in_process(n_pes: usize, config: &WorldConfig) -> Result<Vec<World>> {
        if config.transport != TransportKind::Mock {
            return Err(Error::TransportUnavailable(format!(
                "an in-process world of several PEs needs the mock transport, not {:?}",
                config.transport
            )));
        }
        config.validate()?;
        let id = next_world_id();
        let mock = mock_config(config);
        let transports =
            MockWorld::new(n_pes, mock).map_err(|source| Error::Transport { pe: 0, source })?;
        transports
            .into_iter()
            .enumerate()
            .map(|(pe, t)| World::assemble(id, pe, n_pes, Routed::cpu(t), config, &mock))
            .collect()
    }

    /// Joins the world of a multi-process job on the mock transport: this process is PE
    /// `pe` of `n_pes`, and every PE of the job passes the same `job_id`.
    pub fn attach_mock(
        job_id: &str,
        pe: usize,
        n_pes: usize,
        config: &WorldConfig,
    ) -> Result<World> {
        config.validate()?;
        let mock = mock_config(config);
        let t = MockTransport::attach(job_id, pe, n_pes, mock)
            .map_err(|source| Error::Transport { pe, source })?;
        // Worlds of one job share an id derived from the job id, so buffers compare equal;
        // the top bit keeps it apart from the counter of in-process worlds.
        let id = niin_transport::mock::job_hash(job_id) | (1 << 63);
        World::assemble(id, pe, n_pes, Routed::cpu(t), config, &mock)
    }

    /// Builds the handle of PE `pe` on the mock (PEs per node from the configuration).
    fn assemble(
        id: u64,
        pe: usize,
        n_pes: usize,
        transport: Routed,
        config: &WorldConfig,
        mock: &MockConfig,
    ) -> Result<World> {
        let node_size = config.mock_node_size.unwrap_or(n_pes);
        let max_teams = Some(mock.max_teams);
        World::assemble_with(id, pe, n_pes, transport, config, node_size, max_teams)
    }

    /// Builds the handle of PE `pe` of a world whose nodes (LSA domains) hold `node_size`
    /// consecutive PEs, and makes the system-area allocation (local and deterministic:
    /// the same offset on every PE without any communication). The transport synchronizes
    /// team handles `0..max_teams` (`None`: any). The callers have validated `config`.
    pub(crate) fn assemble_with(
        id: u64,
        pe: usize,
        n_pes: usize,
        transport: Routed,
        config: &WorldConfig,
        node_size: usize,
        max_teams: Option<usize>,
    ) -> Result<World> {
        let mut heap =
            SymmetricHeap::new(config.heap_size).map_err(|source| Error::Heap { pe, source })?;
        let sys = heap
            .malloc(sys_bytes(config.heap_size))
            .map_err(|source| Error::Heap { pe, source })?
            .map(|b| b.offset)
            .expect("a non-zero size allocates");
        let node_size = node_size.clamp(1, n_pes.max(1));
        let layout = WorldLayout::new(to_i32(n_pes), to_i32(pe), to_i32(node_size))
            .map_err(|source| Error::Team { pe, source })?;
        let mock = transport_is_mock(&transport);
        let check_mode = config.check_collectives.unwrap_or(if mock {
            CollectiveChecks::All
        } else {
            CollectiveChecks::Barriers
        });
        let check_calls = check_mode == CollectiveChecks::All;
        // In a mock world this PE publishes its calls with a plain copy into its mapped call
        // area instead of the transport's `put` (a GPU transport's pointer would be device
        // memory).
        let local_slots = if mock && check_calls {
            transport.peer_ptr(pe, SymAddr(sys + SYS_CALLS))
        } else {
            std::ptr::null_mut()
        };
        let world = World {
            inner: Arc::new(Inner {
                id,
                pe,
                n_pes,
                heap: Mutex::new(heap),
                teams: Mutex::new(TeamTable::new(layout)),
                sys,
                config: config.clone(),
                finalized: AtomicBool::new(false),
                registered: Mutex::new(Vec::new()),
                check_mode,
                busy: AtomicU64::new(0),
                calls: CallLog::new(local_slots),
                max_teams,
                transport,
            }),
        };
        // The one predefined team that spans nodes: the transport hears of it as of a split
        // of the world (a GPU world with other nodes gives it an NCCL communicator). The
        // others are the world itself or lie within one node.
        let parent = world.team_sync(TeamId::WORLD)?;
        world.announce_split(parent, &[TeamId::SAME_MYPE_NODE])?;
        Ok(world)
    }

    /// This PE's number (`nvshmem_my_pe`).
    pub fn my_pe(&self) -> usize {
        self.inner.pe
    }

    /// Number of PEs (`nvshmem_n_pes`).
    pub fn n_pes(&self) -> usize {
        self.inner.n_pes
    }

    /// The configuration the world was made with.
    pub fn config(&self) -> &WorldConfig {
        &self.inner.config
    }

    /// The world's identity: buffers of one world are refused by another.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Usage figures of this PE's symmetric heap (the system area counts as used).
    pub fn heap_stats(&self) -> HeapStats {
        self.heap().stats()
    }

    /// The fingerprint of this PE's allocation history: equal on every PE of a world
    /// that allocates symmetrically.
    pub fn fingerprint(&self) -> Fingerprint {
        self.heap().fingerprint()
    }

    /// Whether `pe` is load/store reachable from this PE (an LSA peer).
    pub fn is_lsa_peer(&self, pe: usize) -> Result<bool> {
        self.check_pe(pe)?;
        Ok(self.inner.transport.is_lsa_peer(pe))
    }

    /// The address at which this process can load and store `sym` on `pe`
    /// (`nvshmem_ptr`), or null when `pe` is not an LSA peer. On a GPU transport it is a
    /// device pointer.
    pub fn ptr<T: RmaType>(&self, sym: SymSlice<T>, pe: usize) -> Result<*mut T> {
        self.check_live()?;
        self.check_pe(pe)?;
        self.check_sym(&sym)?;
        Ok(self
            .inner
            .transport
            .peer_ptr(pe, SymAddr(sym.offset))
            .cast())
    }

    /// The address of this PE's symmetric heap (offset 0) in this process: host memory
    /// on the mock, device memory on a GPU transport. `heap_base() + offset` is the local
    /// address of a symmetric object; the C ABI converts pointers with it.
    pub fn heap_base(&self) -> *mut u8 {
        self.inner.transport.peer_ptr(self.inner.pe, SymAddr(0))
    }

    /// The symmetric view of `len` bytes at local address `ptr`, if `ptr` lies in this
    /// PE's heap (checked again, against live allocations, by every operation).
    pub fn sym_at(&self, ptr: *const u8, len: usize) -> Result<SymSlice<u8>> {
        let base = self.heap_base() as usize;
        let addr = ptr as usize;
        let size = self.inner.config.heap_size as usize;
        let registered = || {
            addr.checked_sub(base)
                .and_then(|off| self.registered_covering(off as u64, len.max(1) as u64))
        };
        if base == 0 || addr < base || (addr - base >= size && registered().is_none()) {
            return Err(Error::NotSymmetric {
                pe: self.inner.pe,
                offset: addr as u64,
                len: len as u64,
            });
        }
        Ok(SymSlice::new(self.inner.id, (addr - base) as u64, len))
    }

    // ---- symmetric heap ------------------------------------------------------------

    /// Collectively allocates `len` elements of `T` (`nvshmem_malloc`): every PE calls it
    /// in the same order with the same length and gets the same offset. Includes a barrier
    /// over all PEs, as NVSHMEM's does. `len` 0 gives an empty buffer (no allocation).
    pub fn malloc<T: RmaType>(&self, len: usize) -> Result<SymBuffer<T>> {
        let bytes = self.elements_to_bytes::<T>("malloc", len)?;
        let call = CollectiveCall::new(CollectiveKind::Malloc, TeamId::WORLD, [bytes, 0, 0]);
        self.collective_alloc(call, len, |h| h.malloc(bytes))
    }

    /// As [`World::malloc`], with the memory zeroed (`nvshmem_calloc`). Each PE zeroes
    /// its part before the barrier, so no PE's later put can be overwritten by the zeroing.
    pub fn calloc<T: RmaType>(&self, len: usize) -> Result<SymBuffer<T>> {
        self.elements_to_bytes::<T>("calloc", len)?;
        let size = size_of::<T>() as u64;
        let call =
            CollectiveCall::new(CollectiveKind::Calloc, TeamId::WORLD, [len as u64, size, 0]);
        self.collective_alloc_then(
            call,
            len,
            |h| h.calloc(len as u64, size_of::<T>() as u64),
            |block| {
                self.transport_result(self.inner.transport.memset_local(
                    SymAddr(block.offset),
                    0,
                    block.len as usize,
                ))
            },
        )
    }

    /// As [`World::malloc`], with the first element aligned to `alignment` bytes, a power
    /// of two (`nvshmem_align`).
    pub fn align<T: RmaType>(&self, alignment: usize, len: usize) -> Result<SymBuffer<T>> {
        let bytes = self.elements_to_bytes::<T>("align", len)?;
        let args = [alignment as u64, bytes, 0];
        let call = CollectiveCall::new(CollectiveKind::Align, TeamId::WORLD, args);
        self.collective_alloc(call, len, |h| h.align(alignment as u64, bytes))
    }

    /// Collectively frees a buffer (`nvshmem_free`): every PE frees the same buffer at the
    /// same point. Includes a barrier over all PEs, before the buffer is released.
    pub fn free<T: RmaType>(&self, buf: SymBuffer<T>) -> Result<()> {
        self.check_live()?;
        self.check_world(buf.slice.world)?;
        let offset = if buf.is_empty() && buf.offset() == 0 {
            None
        } else {
            Some(buf.offset())
        };
        self.collective_free(offset)
    }

    /// Collectively frees the allocation that starts at heap offset `offset` (the C ABI's
    /// `nvshmem_free`, which has a pointer, not a buffer). Includes a barrier.
    pub fn free_at(&self, offset: u64) -> Result<()> {
        self.collective_free(Some(offset))
    }

    /// The barrier of a free, then the release of the block at `offset` (`None`: the null
    /// buffer, nothing to release). A mismatch found at the barrier releases nothing.
    fn collective_free(&self, offset: Option<u64>) -> Result<()> {
        let args = [offset.unwrap_or(0), 0, 0];
        let call = CollectiveCall::new(CollectiveKind::Free, TeamId::WORLD, args);
        let _busy = self.enter_collective(&call)?;
        let synced = self
            .world_sync()
            .and_then(|s| self.checked_barrier(s, call));
        if let Err(e @ Error::CollectiveMismatch { .. }) = synced {
            return Err(e);
        }
        let result = match offset {
            None => Ok(()),
            Some(offset) => self
                .heap()
                .free(offset)
                .map(drop)
                .map_err(|source| Error::Heap {
                    pe: self.inner.pe,
                    source,
                }),
        };
        let check = self.symmetry_if_configured(&synced);
        result?;
        synced?;
        check
    }

    fn elements_to_bytes<T: RmaType>(&self, op: &'static str, len: usize) -> Result<u64> {
        (len as u64)
            .checked_mul(size_of::<T>() as u64)
            .ok_or_else(|| Error::BadArgument {
                pe: self.inner.pe,
                op,
                what: format!("{len} elements of {} bytes overflow", size_of::<T>()),
            })
    }

    fn collective_alloc<T: RmaType>(
        &self,
        call: CollectiveCall,
        len: usize,
        alloc: impl FnOnce(
            &mut SymmetricHeap,
        ) -> std::result::Result<Option<Block>, niin_heap::HeapError>,
    ) -> Result<SymBuffer<T>> {
        self.collective_alloc_then(call, len, alloc, |_| Ok(()))
    }

    /// Allocates on this PE, runs `prepare` on the new block (zeroing, for calloc), then
    /// runs the collective tail: the barrier that carries `call` (a mismatch found there
    /// undoes the allocation), and the symmetry check when configured.
    fn collective_alloc_then<T: RmaType>(
        &self,
        call: CollectiveCall,
        len: usize,
        alloc: impl FnOnce(
            &mut SymmetricHeap,
        ) -> std::result::Result<Option<Block>, niin_heap::HeapError>,
        prepare: impl FnOnce(Block) -> Result<()>,
    ) -> Result<SymBuffer<T>> {
        let _busy = self.enter_collective(&call)?;
        let block = alloc(&mut self.heap())
            .map_err(|source| Error::Heap {
                pe: self.inner.pe,
                source,
            })
            .and_then(|b| match b {
                Some(b) => prepare(b).map(|()| Some(b)),
                None => Ok(None),
            });
        // Offset 0 is the system area, so it never names a user buffer: an empty buffer
        // (size 0, NVSHMEM's null) uses it as its "null" offset.
        let synced = self
            .world_sync()
            .and_then(|s| self.checked_barrier(s, call));
        if let Err(e @ Error::CollectiveMismatch { .. }) = synced {
            if let Ok(Some(b)) = block {
                // Undone on every PE that saw the mismatch: the heaps agree again.
                let _ = self.heap().free(b.offset);
            }
            return Err(e);
        }
        let check = self.symmetry_if_configured(&synced);
        let block = block?;
        synced?;
        check?;
        let offset = block.map_or(0, |b| b.offset);
        let len = if block.is_some() { len } else { 0 };
        Ok(SymBuffer {
            slice: SymSlice::new(self.inner.id, offset, len),
        })
    }

    /// The symmetry check of a heap call when [`WorldConfig::check_symmetry`] is on and its
    /// barrier (`synced`) passed, run whether or not this PE's heap call failed, so the
    /// other PEs never hang on it.
    fn symmetry_if_configured(&self, synced: &Result<()>) -> Result<()> {
        if self.inner.config.check_symmetry && synced.is_ok() {
            self.symmetry()
        } else {
            Ok(())
        }
    }

    /// The synchronization of all PEs.
    fn world_sync(&self) -> Result<TeamSync> {
        self.team_sync(TeamId::WORLD)
    }

    /// A barrier of all PEs that carries no call (inside collectives niin-api composes).
    pub(crate) fn raw_barrier_all(&self) -> Result<()> {
        let sync = self.world_sync()?;
        self.transport_result(self.inner.transport.barrier(Order::Now, sync))
    }

    /// Compares this PE's symmetric-heap layout (its live allocations: [`Layout`]) with
    /// every other PE's (a collective over all PEs). [`WorldConfig::check_symmetry`] runs
    /// it at every malloc and free. Heaps that diverged and agree again (a PE freed what
    /// the others never allocated) pass again.
    pub fn check_symmetry(&self) -> Result<()> {
        let call = CollectiveCall::new(CollectiveKind::CheckSymmetry, TeamId::WORLD, [0; 3]);
        let _busy = self.enter_collective(&call)?;
        self.symmetry()
    }

    /// [`World::check_symmetry`] inside a collective.
    fn symmetry(&self) -> Result<()> {
        let mine = self.heap().layout();
        let all = self.all_words([mine.hash, mine.live])?;
        let mismatch = all
            .iter()
            .map(|w| Layout {
                hash: w[0],
                live: w[1],
            })
            .enumerate()
            .find(|(_, theirs)| *theirs != mine);
        match mismatch {
            None => Ok(()),
            Some((other, theirs)) => Err(Error::Asymmetric {
                pe: self.inner.pe,
                other,
                mine,
                theirs,
            }),
        }
    }

    /// Every PE's two words, in PE order (a collective over all PEs, through this PE's
    /// slot of the system area; ends with a barrier, after which the slots may be reused):
    /// how the PEs compare fingerprints and agree on registrations.
    pub(crate) fn all_words(&self, words: [u64; 2]) -> Result<Vec<[u64; 2]>> {
        let slot = SymAddr(self.inner.sys + SYS_FINGERPRINT);
        let me = self.inner.pe;
        // SAFETY: `words` is a live local array of 16 bytes and Order::Now completes the
        // copy before the call returns.
        self.transport_result(unsafe {
            self.inner
                .transport
                .put(Order::Now, me, slot, words.as_ptr().cast(), 16)
        })?;
        self.raw_barrier_all()?;
        let mut all = Vec::with_capacity(self.inner.n_pes);
        for pe in 0..self.inner.n_pes {
            let mut theirs = [0u64; 2];
            // SAFETY: `theirs` is a live local array of 16 bytes, written only by this
            // call, which completes before it returns (Order::Now).
            self.transport_result(unsafe {
                self.inner
                    .transport
                    .get(Order::Now, pe, theirs.as_mut_ptr().cast(), slot, 16)
            })?;
            all.push(theirs);
        }
        // Nobody may overwrite its slot before every PE has read it.
        self.raw_barrier_all()?;
        Ok(all)
    }

    pub(crate) fn registered(&self) -> MutexGuard<'_, Vec<RegisteredBuffer>> {
        self.inner
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    // ---- synchronization -------------------------------------------------------------

    /// Completes this PE's earlier operations, then waits for every PE
    /// (`nvshmem_barrier_all`).
    pub fn barrier_all(&self) -> Result<()> {
        self.barrier(TeamId::WORLD)
    }

    /// Waits for every PE (`nvshmem_sync_all`). niin-rs completes earlier operations here
    /// too (a barrier is a valid, stronger sync).
    pub fn sync_all(&self) -> Result<()> {
        self.barrier(TeamId::WORLD)
    }

    /// Completes this PE's earlier operations, then waits for every PE of `team`
    /// (`nvshmem_barrier`); this PE must be a member.
    pub fn barrier(&self, team: TeamId) -> Result<()> {
        let call = CollectiveCall::new(CollectiveKind::Barrier, team, [0; 3]);
        let _busy = self.enter_collective(&call)?;
        let sync = self.team_sync(team)?;
        self.checked_barrier(sync, call)
    }

    /// Orders this PE's earlier puts, AMOs and signals to each PE before later ones
    /// (`nvshmem_fence`).
    pub fn fence(&self) -> Result<()> {
        self.check_live()?;
        self.transport_result(self.inner.transport.fence(Order::Now))
    }

    /// Completes this PE's earlier puts, AMOs and signals (`nvshmem_quiet`).
    pub fn quiet(&self) -> Result<()> {
        self.quiet_in(Order::Now)
    }

    /// Ends this PE's part in the world (`nvshmem_finalize`, collective): a barrier, then
    /// the transport's resources are released. Every later call on any clone of this
    /// handle fails with [`Error::Finalized`]; a second finalize does too.
    ///
    /// On NCCL, when the CUDA context has failed (a kernel stopped, e.g. a device barrier
    /// for a dead PE), the communicators are aborted instead, and the process's `exit`
    /// then ends it at once with its status, skipping exit handlers registered before
    /// this call (`NIIN_FAULT_EXIT`, README.md: NCCL's proxy thread outlives the abort
    /// and crashed in them).
    pub fn finalize(&self) -> Result<()> {
        let call = CollectiveCall::new(CollectiveKind::Finalize, TeamId::WORLD, [0; 3]);
        let busy = self.enter_collective(&call)?;
        let barrier = self.raw_barrier_all();
        self.inner.finalized.store(true, Ordering::Release);
        let released = self.transport_result(self.inner.transport.finalize());
        drop(busy);
        barrier?;
        released
    }

    // ---- shared checks -------------------------------------------------------------

    pub(crate) fn heap(&self) -> MutexGuard<'_, SymmetricHeap> {
        // A poisoned lock means a panic mid-update on this PE; the heap's own operations
        // do not panic, so its state is still consistent.
        self.inner.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn teams(&self) -> MutexGuard<'_, TeamTable> {
        self.inner.teams.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.inner.finalized.load(Ordering::Acquire) {
            Err(Error::Finalized { pe: self.inner.pe })
        } else {
            Ok(())
        }
    }

    pub(crate) fn check_pe(&self, pe: usize) -> Result<()> {
        if pe < self.inner.n_pes {
            Ok(())
        } else {
            Err(Error::PeOutOfRange {
                pe: self.inner.pe,
                target: pe as i64,
                n_pes: self.inner.n_pes,
            })
        }
    }

    fn check_world(&self, world: u64) -> Result<()> {
        if world == self.inner.id {
            Ok(())
        } else {
            Err(Error::ForeignBuffer {
                pe: self.inner.pe,
                buffer_world: world,
                world: self.inner.id,
            })
        }
    }

    /// Checks that `sym` belongs to this world and lies inside one live allocation.
    pub(crate) fn check_sym<T: RmaType>(&self, sym: &SymSlice<T>) -> Result<()> {
        self.check_world(sym.world)?;
        let len = sym.byte_len();
        let bad = || Error::NotSymmetric {
            pe: self.inner.pe,
            offset: sym.offset,
            len,
        };
        let Some(block) = self.heap().find(sym.offset) else {
            // Not in the heap: a registered buffer, or nothing symmetric.
            return match self.registered_covering(sym.offset, len) {
                Some(_) => Ok(()),
                None => Err(bad()),
            };
        };
        // The system area is internal: user views of it are refused.
        if block.offset == self.inner.sys {
            return Err(bad());
        }
        let end = sym.offset.checked_add(len).ok_or_else(bad)?;
        if end <= block.offset + block.len {
            Ok(())
        } else {
            Err(bad())
        }
    }

    /// The barrier description of `team`, checking that this PE is a member.
    pub(crate) fn team_sync(&self, team: TeamId) -> Result<TeamSync> {
        let pe = self.inner.pe;
        let teams = self.teams();
        let members = teams
            .members(team)
            .map_err(|source| Error::Team { pe, source })?;
        if teams.team_my_pe(team) < 0 {
            return Err(Error::Team {
                pe,
                source: niin_teams::TeamError::NotAMember {
                    team,
                    pe: to_i32(pe),
                },
            });
        }
        Ok(TeamSync {
            team: team.0,
            start: members.start as usize,
            stride: members.stride.max(1) as usize,
            size: members.size as usize,
        })
    }

    pub(crate) fn transport_result<R>(
        &self,
        r: std::result::Result<R, TransportError>,
    ) -> Result<R> {
        r.map_err(|source| Error::Transport {
            pe: self.inner.pe,
            source,
        })
    }
}

pub(crate) fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
