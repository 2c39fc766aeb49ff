//! [`World`]: one PE's handle on a world of PEs — init, queries, the symmetric heap,
//! synchronization and finalize. RMA, atomics, signals and waits are in `rma`, teams in
//! `team`, streams in `stream`: all are methods of `World`.
//!
//! A `World` holds no global state: a process may hold several worlds (an in-process
//! world of N PEs is N `World`s, one per thread), and one `World` is `Send + Sync` and
//! cheap to clone (all clones are the same PE).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::registered::RegisteredBuffer;
use niin_heap::{Block, Fingerprint, HeapStats, SymmetricHeap};
use niin_teams::{TeamId, TeamTable, WorldLayout};
use niin_transport::mock::{MockConfig, MockTransport, MockWorld};
use niin_transport::{Order, Routed, SymAddr, TeamSync, Transport, TransportError};

use crate::buffer::{SymBuffer, SymSlice};
use crate::config::{TransportKind, WorldConfig};
use crate::error::{Error, Result};
use crate::types::RmaType;

/// Bytes of the world's system area before the device collectives' rings, allocated first
/// in every PE's heap at init (so at the same offset everywhere): the exchange slots of the
/// collectives niin-api runs itself (fingerprint comparison, team-handle agreement) and the
/// device team-barrier words ([`SYS_TEAM_SYNC`]). The rings follow at [`SYS_COLL_LL`]
/// ([`World::coll_ll_offset`]); their size depends on the heap's.
pub(crate) const SYS_BYTES: u64 = SYS_TEAM_SYNC + (DEVICE_TEAM_SLOTS * TEAM_SYNC_SLOT_BYTES) as u64;
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

/// One PE's handle on a world. See the module docs.
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
        let id = next_world_id();
        let transports = MockWorld::new(n_pes, mock_config(config))
            .map_err(|source| Error::Transport { pe: 0, source })?;
        transports
            .into_iter()
            .enumerate()
            .map(|(pe, t)| World::assemble(id, pe, n_pes, Routed::cpu(t), config))
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
        let t = MockTransport::attach(job_id, pe, n_pes, mock_config(config))
            .map_err(|source| Error::Transport { pe, source })?;
        // Worlds of one job share an id derived from the job id, so buffers compare equal;
        // the top bit keeps it apart from the counter of in-process worlds.
        let id = niin_transport::mock::job_hash(job_id) | (1 << 63);
        World::assemble(id, pe, n_pes, Routed::cpu(t), config)
    }

    /// Builds the handle of PE `pe` on the mock (PEs per node from the configuration).
    fn assemble(
        id: u64,
        pe: usize,
        n_pes: usize,
        transport: Routed,
        config: &WorldConfig,
    ) -> Result<World> {
        let node_size = config.mock_node_size.unwrap_or(n_pes);
        World::assemble_with(id, pe, n_pes, transport, config, node_size)
    }

    /// Builds the handle of PE `pe` of a world whose nodes (LSA domains) hold `node_size`
    /// consecutive PEs, and makes the system-area allocation (local and deterministic:
    /// the same offset on every PE without any communication).
    pub(crate) fn assemble_with(
        id: u64,
        pe: usize,
        n_pes: usize,
        transport: Routed,
        config: &WorldConfig,
        node_size: usize,
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
        let world = World {
            inner: Arc::new(Inner {
                id,
                pe,
                n_pes,
                transport,
                heap: Mutex::new(heap),
                teams: Mutex::new(TeamTable::new(layout)),
                sys,
                config: config.clone(),
                finalized: AtomicBool::new(false),
                registered: Mutex::new(Vec::new()),
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
        self.collective_alloc(len, |h| h.malloc(bytes))
    }

    /// As [`World::malloc`], with the memory zeroed (`nvshmem_calloc`). Each PE zeroes
    /// its part before the barrier, so no PE's later put can be overwritten by the zeroing.
    pub fn calloc<T: RmaType>(&self, len: usize) -> Result<SymBuffer<T>> {
        self.elements_to_bytes::<T>("calloc", len)?;
        self.collective_alloc_then(
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
        self.collective_alloc(len, |h| h.align(alignment as u64, bytes))
    }

    /// Collectively frees a buffer (`nvshmem_free`): every PE frees the same buffer at the
    /// same point. Includes a barrier over all PEs.
    pub fn free<T: RmaType>(&self, buf: SymBuffer<T>) -> Result<()> {
        self.check_live()?;
        self.check_world(buf.slice.world)?;
        let result = if buf.is_empty() && buf.offset() == 0 {
            Ok(())
        } else {
            self.heap()
                .free(buf.offset())
                .map(drop)
                .map_err(|source| Error::Heap {
                    pe: self.inner.pe,
                    source,
                })
        };
        self.after_collective_alloc(result)
    }

    /// Collectively frees the allocation that starts at heap offset `offset` (the C ABI's
    /// `nvshmem_free`, which has a pointer, not a buffer). Includes a barrier.
    pub fn free_at(&self, offset: u64) -> Result<()> {
        self.check_live()?;
        let result = self
            .heap()
            .free(offset)
            .map(drop)
            .map_err(|source| Error::Heap {
                pe: self.inner.pe,
                source,
            });
        self.after_collective_alloc(result)
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
        len: usize,
        alloc: impl FnOnce(
            &mut SymmetricHeap,
        ) -> std::result::Result<Option<Block>, niin_heap::HeapError>,
    ) -> Result<SymBuffer<T>> {
        self.collective_alloc_then(len, alloc, |_| Ok(()))
    }

    /// Allocates on this PE, runs `prepare` on the new block (zeroing, for calloc), then
    /// runs the collective tail (symmetry check, barrier).
    fn collective_alloc_then<T: RmaType>(
        &self,
        len: usize,
        alloc: impl FnOnce(
            &mut SymmetricHeap,
        ) -> std::result::Result<Option<Block>, niin_heap::HeapError>,
        prepare: impl FnOnce(Block) -> Result<()>,
    ) -> Result<SymBuffer<T>> {
        self.check_live()?;
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
        let block = self.after_collective_alloc(block)?;
        let offset = block.map_or(0, |b| b.offset);
        let len = if block.is_some() { len } else { 0 };
        Ok(SymBuffer {
            slice: SymSlice::new(self.inner.id, offset, len),
        })
    }

    /// The collective tail of malloc/free: the symmetry check (when on) and the barrier,
    /// run whether or not this PE's heap call failed, so the other PEs never hang on it.
    fn after_collective_alloc<R>(&self, local: Result<R>) -> Result<R> {
        let check = if self.inner.config.check_symmetry {
            self.check_symmetry()
        } else {
            Ok(())
        };
        let barrier = self.barrier_all();
        let value = local?;
        check?;
        barrier?;
        Ok(value)
    }

    /// Compares this PE's allocation fingerprint with every other PE's (a collective over
    /// all PEs). [`WorldConfig::check_symmetry`] runs it at every malloc and free.
    pub fn check_symmetry(&self) -> Result<()> {
        self.check_live()?;
        let mine = self.fingerprint();
        let all = self.all_words([mine.hash, mine.ops])?;
        let mismatch = all
            .iter()
            .map(|w| Fingerprint {
                hash: w[0],
                ops: w[1],
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
        self.barrier_all()?;
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
        self.barrier_all()?;
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
        self.barrier_in(Order::Now, team)
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
    pub fn finalize(&self) -> Result<()> {
        self.check_live()?;
        let barrier = self.barrier_all();
        self.inner.finalized.store(true, Ordering::Release);
        let released = self.transport_result(self.inner.transport.finalize());
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
