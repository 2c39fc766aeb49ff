//! The job's mapping: its [`Layout`] (control region, then every PE's heap) and the
//! [`Region`] that owns the mapping and turns checked heap ranges into pointers.
//!
//! Every access to the control region goes through atomics of the field's width, so
//! threads and processes sharing the mapping never race on it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;

use super::config::MockConfig;
use crate::error::{Result, TransportError};
use crate::ops::{SymAddr, Width};
use crate::status::StatusBoard;

/// Alignment of the heaps and of the control region's end: a multiple of every page
/// size Linux uses (4, 16 and 64 KiB).
pub(crate) const PAGE: u64 = 64 << 10;

/// `"NIINMOCK"`: set last by the creator, so a non-zero magic means the header is valid.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"NIINMOCK");

/// Version of this layout; a mapping of another version is refused.
pub(crate) const LAYOUT_VERSION: u64 = 3;

/// Bytes of the header at the start of the control region.
pub(crate) const HEADER_SIZE: u64 = 128;

/// Bytes of a PE control block before its barrier slots: state, pid, life flag, and
/// (from [`LIFE_LOCK_AT`]) the PE's life lock.
pub(crate) const PE_BLOCK_FIELDS: u64 = 128;

/// Offset of the life lock (a robust, process-shared `pthread_mutex_t`) in a PE block.
pub(crate) const LIFE_LOCK_AT: u64 = 64;

/// Bytes reserved for the life lock.
pub(crate) const LIFE_LOCK_SIZE: u64 = 64;

/// Bytes of one barrier slot (a packed fingerprint sum, generation, verdict and arrival
/// count: `barrier.rs`).
pub(crate) const SLOT_SIZE: u64 = 8;

/// Bytes of one arrival record (a packed generation and team start).
pub(crate) const ARRIVAL_SIZE: u64 = 8;

/// The most PEs a mock world has: a barrier slot counts arrivals in 20 bits (with room
/// to see an over-count). Far more than a machine runs as threads or processes.
pub(crate) const MAX_PES: usize = 1 << 19;

/// 64-bit header words, by index (byte offset = index × 8).
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum HeaderField {
    /// [`MAGIC`] once the header is written (release store, last).
    Magic = 0,
    /// [`LAYOUT_VERSION`].
    Version = 1,
    /// Number of PEs.
    NPes = 2,
    /// Bytes of each PE's heap.
    HeapSize = 3,
    /// PEs per simulated node (`u64::MAX`: one node).
    NodeSize = 4,
    /// Barrier slots per PE.
    MaxTeams = 5,
    /// FNV-1a hash of the job id (0 for an in-process world).
    JobHash = 6,
    /// How many PEs have attached (the init barrier's counter).
    Attached = 7,
    /// Byte offset of PE 0's heap (the control region's size).
    HeapOffset = 8,
    /// Bytes between consecutive PEs' heaps.
    HeapStride = 9,
}

/// Whether a PE's life lock can be read, in its control block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum LifeFlag {
    /// Not set up (yet), or an in-process world: fall back to the pid.
    #[expect(
        dead_code,
        reason = "the zero of a fresh control block: read, never written"
    )]
    Unknown = 0,
    /// A thread of the PE's process holds its life lock until it finalizes.
    Held = 1,
    /// The lock could not be set up: fall back to the pid.
    Unusable = 2,
}

/// A PE's state in its control block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum PeState {
    /// Not attached yet.
    Absent = 0,
    /// Attached and running.
    Attached = 1,
    /// Finalized: it takes part in nothing any more.
    Finalized = 2,
    /// Its thread panicked (in-process worlds; it takes part in nothing any more).
    Panicked = 3,
}

impl PeState {
    fn from_raw(raw: u32) -> PeState {
        match raw {
            1 => PeState::Attached,
            2 => PeState::Finalized,
            3 => PeState::Panicked,
            _ => PeState::Absent,
        }
    }
}

/// Where everything lies in a job's mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Number of PEs.
    pub(crate) n_pes: usize,
    /// Bytes of each heap.
    pub(crate) heap_size: u64,
    /// Bytes between heaps: `heap_size` rounded up to [`PAGE`].
    pub(crate) heap_stride: u64,
    /// PEs per simulated node.
    pub(crate) node_size: usize,
    /// Barrier slots per PE.
    pub(crate) max_teams: usize,
    /// Bytes of one PE control block (fields, then slots), a multiple of 64.
    pub(crate) pe_block: u64,
    /// Bytes of the control region, a multiple of [`PAGE`]: PE 0's heap offset.
    pub(crate) control_size: u64,
    /// Bytes of the whole mapping.
    pub(crate) total: usize,
}

fn round_up(x: u64, to: u64) -> Option<u64> {
    x.checked_add(to - 1).map(|v| v / to * to)
}

impl Layout {
    /// The layout of a world of `n_pes` PEs shaped by `config` (already validated).
    pub(crate) fn new(n_pes: usize, config: &MockConfig) -> Result<Layout> {
        if n_pes == 0 || n_pes > MAX_PES {
            return Err(TransportError::BadArgument {
                op: "mock world",
                what: format!("n_pes = {n_pes} is outside 1..={MAX_PES}"),
            });
        }
        let too_big = || TransportError::BadArgument {
            op: "mock world",
            what: format!(
                "{n_pes} PEs with {}-byte heaps do not fit in this address space",
                config.heap_size
            ),
        };
        // Barrier slots, then as many arrival records.
        let pe_block = round_up(
            PE_BLOCK_FIELDS + (SLOT_SIZE + ARRIVAL_SIZE) * config.max_teams as u64,
            64,
        )
        .ok_or_else(too_big)?;
        let control = (n_pes as u64)
            .checked_mul(pe_block)
            .and_then(|b| b.checked_add(HEADER_SIZE))
            .and_then(|b| round_up(b, PAGE))
            .ok_or_else(too_big)?;
        let heap_stride = round_up(config.heap_size, PAGE).ok_or_else(too_big)?;
        let total = heap_stride
            .checked_mul(n_pes as u64)
            .and_then(|h| h.checked_add(control))
            .filter(|&t| t <= isize::MAX as u64)
            .ok_or_else(too_big)?;
        Ok(Layout {
            n_pes,
            heap_size: config.heap_size,
            heap_stride,
            node_size: config.node_size,
            max_teams: config.max_teams,
            pe_block,
            control_size: control,
            total: usize::try_from(total).map_err(|_| too_big())?,
        })
    }

    /// A layout that covers only the header page: enough to read the header of a
    /// mapping whose real layout is not known yet.
    pub(crate) fn probe() -> Layout {
        Layout {
            n_pes: 0,
            heap_size: 0,
            heap_stride: PAGE,
            node_size: 1,
            max_teams: 0,
            pe_block: PE_BLOCK_FIELDS,
            control_size: PAGE,
            total: PAGE as usize,
        }
    }

    /// Byte offset of `pe`'s heap in the mapping.
    pub(crate) fn heap_offset(&self, pe: usize) -> u64 {
        self.control_size + pe as u64 * self.heap_stride
    }

    /// Byte offset of `pe`'s control block.
    pub(crate) fn pe_block_offset(&self, pe: usize) -> u64 {
        HEADER_SIZE + pe as u64 * self.pe_block
    }

    /// The node of `pe`.
    pub(crate) fn node_of(&self, pe: usize) -> usize {
        pe / self.node_size
    }
}

/// The mapping of a job (anonymous for an in-process world, a shared file for a
/// multi-process job) and its layout. Heap ranges become pointers only through
/// [`Region::heap_range`], which checks them.
pub(crate) struct Region {
    /// Keeps the mapping alive; never accessed through references after creation.
    map: MmapMut,
    /// First byte of the mapping.
    base: *mut u8,
    /// Where everything lies.
    layout: Layout,
    /// The launcher's status board, when the launcher keeps one (niinrun).
    board: Option<StatusBoard>,
}

// SAFETY: the region is a block of shared memory that every PE (thread or process)
// reads and writes concurrently by design. The control region is only accessed through
// atomics; the heaps through checked raw pointers, whose concurrent use is the user
// program's to order (exactly as on a GPU). `base` is never used to create references,
// and the mapping lives as long as the `Region`.
unsafe impl Send for Region {}
// SAFETY: as for `Send`: no method hands out references into the mapping, only
// pointers and atomic views, so sharing `&Region` between threads is sound.
unsafe impl Sync for Region {}

impl Region {
    /// Wraps a mapping of at least `layout.total` bytes.
    pub(crate) fn new(mut map: MmapMut, layout: Layout) -> Result<Region> {
        if map.len() < layout.total {
            return Err(TransportError::Os {
                what: format!("mapping the mock job of {} bytes", layout.total),
                cause: format!("the mapping has only {} bytes", map.len()),
            });
        }
        let base = map.as_mut_ptr();
        Ok(Region {
            map,
            base,
            layout,
            board: None,
        })
    }

    /// An anonymous, zeroed mapping for an in-process world.
    pub(crate) fn anonymous(layout: Layout) -> Result<Region> {
        let map = MmapMut::map_anon(layout.total).map_err(|e| TransportError::Os {
            what: format!(
                "mapping {} bytes of anonymous memory for {} mock PEs",
                layout.total, layout.n_pes
            ),
            cause: e.to_string(),
        })?;
        Region::new(map, layout)
    }

    /// Gives the mapping back (to wrap it again with the layout its header names).
    pub(crate) fn into_map(self) -> MmapMut {
        self.map
    }

    /// The layout.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Attaches the launcher's status board (multi-process jobs under niinrun).
    pub(crate) fn set_board(&mut self, board: Option<StatusBoard>) {
        self.board = board;
    }

    /// The launcher's status board, if any.
    pub(crate) fn board(&self) -> Option<&StatusBoard> {
        self.board.as_ref()
    }

    /// A 64-bit control word at byte `offset` of the mapping.
    fn control_u64(&self, offset: u64) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= self.layout.control_size);
        let ptr = self.base.wrapping_add(offset as usize).cast::<u64>();
        // SAFETY: `offset` lies in the control region (callers compute it from the
        // layout), is 8-byte aligned (the mapping is page-aligned and all control
        // offsets are multiples of 8), the mapping lives as long as `self`, and the
        // word is only ever accessed atomically.
        unsafe { AtomicU64::from_ptr(ptr) }
    }

    /// A 32-bit control word at byte `offset` of the mapping.
    fn control_u32(&self, offset: u64) -> &AtomicU32 {
        debug_assert!(offset % 4 == 0 && offset + 4 <= self.layout.control_size);
        let ptr = self.base.wrapping_add(offset as usize).cast::<u32>();
        // SAFETY: as in `control_u64`, for a 4-byte aligned word.
        unsafe { AtomicU32::from_ptr(ptr) }
    }

    /// A header word.
    pub(crate) fn header(&self, field: HeaderField) -> &AtomicU64 {
        self.control_u64(field as u64 * 8)
    }

    /// Writes the header (all fields but the magic, relaxed), then publishes it with a
    /// release store of the magic.
    pub(crate) fn write_header(&self, job_hash: u64) {
        let l = &self.layout;
        let node = if l.node_size == usize::MAX {
            u64::MAX
        } else {
            l.node_size as u64
        };
        let fields = [
            (HeaderField::Version, LAYOUT_VERSION),
            (HeaderField::NPes, l.n_pes as u64),
            (HeaderField::HeapSize, l.heap_size),
            (HeaderField::NodeSize, node),
            (HeaderField::MaxTeams, l.max_teams as u64),
            (HeaderField::JobHash, job_hash),
            (HeaderField::HeapOffset, l.control_size),
            (HeaderField::HeapStride, l.heap_stride),
        ];
        for (field, value) in fields {
            self.header(field).store(value, Ordering::Relaxed);
        }
        self.header(HeaderField::Magic)
            .store(MAGIC, Ordering::Release);
    }

    /// `pe`'s state word (`PeState` as u32).
    fn state_word(&self, pe: usize) -> &AtomicU32 {
        self.control_u32(self.layout.pe_block_offset(pe))
    }

    /// `pe`'s process id word.
    fn pid_word(&self, pe: usize) -> &AtomicU32 {
        self.control_u32(self.layout.pe_block_offset(pe) + 4)
    }

    /// `pe`'s life flag ([`LifeFlag`] as u32): whether its life lock can be read.
    pub(crate) fn life_flag(&self, pe: usize) -> &AtomicU32 {
        self.control_u32(self.layout.pe_block_offset(pe) + 8)
    }

    /// The first byte of `pe`'s life lock ([`LIFE_LOCK_SIZE`] bytes, 64-byte aligned).
    pub(crate) fn life_lock_ptr(&self, pe: usize) -> *mut u8 {
        assert!(pe < self.layout.n_pes);
        self.base
            .wrapping_add((self.layout.pe_block_offset(pe) + LIFE_LOCK_AT) as usize)
    }

    /// The futex word of `pe`'s life lock (its first 4 bytes, where glibc keeps it), read
    /// atomically. Only meaningful once `pe`'s life flag says [`LifeFlag::Held`].
    pub(crate) fn life_word(&self, pe: usize) -> u32 {
        self.control_u32(self.layout.pe_block_offset(pe) + LIFE_LOCK_AT)
            .load(Ordering::Acquire)
    }

    /// `pe`'s arrival record of team slot `team`: `generation << 32 | (start + 1)` of the
    /// last barrier of that handle it arrived at.
    pub(crate) fn arrival(&self, pe: usize, team: usize) -> &AtomicU64 {
        debug_assert!(team < self.layout.max_teams);
        let off = self.layout.pe_block_offset(pe)
            + PE_BLOCK_FIELDS
            + self.layout.max_teams as u64 * SLOT_SIZE
            + team as u64 * ARRIVAL_SIZE;
        self.control_u64(off)
    }

    /// Sets `pe`'s state (release): finalized or panicked.
    pub(crate) fn set_pe_state(&self, pe: usize, state: PeState) {
        self.state_word(pe).store(state as u32, Ordering::Release);
    }

    /// `pe`'s state (acquire: what `pe` did before setting it is visible).
    pub(crate) fn pe_state(&self, pe: usize) -> PeState {
        PeState::from_raw(self.state_word(pe).load(Ordering::Acquire))
    }

    /// Marks `pe` attached by process `pid`; false if it was not absent.
    pub(crate) fn claim_pe(&self, pe: usize, pid: u32) -> bool {
        let claimed = self
            .state_word(pe)
            .compare_exchange(
                PeState::Absent as u32,
                PeState::Attached as u32,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if claimed {
            self.pid_word(pe).store(pid, Ordering::Release);
        }
        claimed
    }

    /// The process id `pe` recorded (0 until it is recorded).
    pub(crate) fn pe_pid(&self, pe: usize) -> u32 {
        self.pid_word(pe).load(Ordering::Acquire)
    }

    /// Barrier slot `team` in `pe`'s control block (`team < max_teams`).
    pub(crate) fn barrier_slot(&self, pe: usize, team: usize) -> &AtomicU64 {
        debug_assert!(team < self.layout.max_teams);
        let off = self.layout.pe_block_offset(pe) + PE_BLOCK_FIELDS + team as u64 * SLOT_SIZE;
        self.control_u64(off)
    }

    /// Checks `pe` and the range `addr..addr+len` of its heap; returns the range's first
    /// byte in the mapping. Every pointer into a heap comes from here.
    pub(crate) fn heap_range(&self, pe: usize, addr: SymAddr, len: u64) -> Result<*mut u8> {
        let l = &self.layout;
        if pe >= l.n_pes {
            return Err(TransportError::PeOutOfRange { pe, n_pes: l.n_pes });
        }
        match addr.0.checked_add(len) {
            Some(end) if end <= l.heap_size => {}
            _ => {
                return Err(TransportError::OutOfHeap {
                    offset: addr.0,
                    len,
                    heap_size: l.heap_size,
                });
            }
        }
        Ok(self
            .base
            .wrapping_add((l.heap_offset(pe) + addr.0) as usize))
    }

    /// As [`Region::heap_range`] for one `width` word, which must also be aligned to its
    /// width (heaps are page-aligned, so offset alignment is address alignment).
    pub(crate) fn heap_word(&self, pe: usize, addr: SymAddr, width: Width) -> Result<*mut u8> {
        let ptr = self.heap_range(pe, addr, width.bytes() as u64)?;
        if addr.0 % width.bytes() as u64 != 0 {
            return Err(TransportError::Misaligned {
                offset: addr.0,
                align: width.bytes(),
            });
        }
        Ok(ptr)
    }

    /// The address of `addr` in `pe`'s heap, or null when either is out of range.
    pub(crate) fn heap_ptr_or_null(&self, pe: usize, addr: SymAddr) -> *mut u8 {
        if pe < self.layout.n_pes && addr.0 < self.layout.heap_size {
            self.base
                .wrapping_add((self.layout.heap_offset(pe) + addr.0) as usize)
        } else {
            std::ptr::null_mut()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(heap_size: u64) -> MockConfig {
        MockConfig {
            heap_size,
            ..MockConfig::default()
        }
    }

    #[test]
    fn layout_aligns_heaps_to_pages() {
        let l = Layout::new(3, &cfg(1000)).unwrap();
        assert_eq!(l.heap_stride, PAGE);
        assert_eq!(l.control_size % PAGE, 0);
        assert!(l.control_size >= HEADER_SIZE + 3 * l.pe_block);
        assert_eq!(
            l.pe_block,
            PE_BLOCK_FIELDS + 1024 * (SLOT_SIZE + ARRIVAL_SIZE)
        );
        assert_eq!(l.heap_offset(2), l.control_size + 2 * PAGE);
        assert_eq!(l.total as u64, l.control_size + 3 * PAGE);
    }

    #[test]
    fn layout_rejects_zero_pes_and_overflow() {
        assert!(Layout::new(0, &cfg(1 << 20)).is_err());
        assert!(Layout::new(MAX_PES + 1, &cfg(1)).is_err());
        assert!(Layout::new(1 << 20, &cfg(u64::MAX / 2)).is_err());
    }

    #[test]
    fn heap_range_checks_pe_end_and_overflow() {
        let r = Region::anonymous(Layout::new(2, &cfg(4096)).unwrap()).unwrap();
        assert!(r.heap_range(1, SymAddr(4000), 96).is_ok());
        assert!(r.heap_range(1, SymAddr(4096), 0).is_ok());
        assert_eq!(
            r.heap_range(2, SymAddr(0), 1),
            Err(TransportError::PeOutOfRange { pe: 2, n_pes: 2 })
        );
        assert_eq!(
            r.heap_range(0, SymAddr(4000), 97),
            Err(TransportError::OutOfHeap {
                offset: 4000,
                len: 97,
                heap_size: 4096
            })
        );
        assert!(matches!(
            r.heap_range(0, SymAddr(u64::MAX - 1), 4),
            Err(TransportError::OutOfHeap { .. })
        ));
        assert_eq!(
            r.heap_word(0, SymAddr(4), Width::W8),
            Err(TransportError::Misaligned {
                offset: 4,
                align: 8
            })
        );
        assert!(r.heap_ptr_or_null(0, SymAddr(4096)).is_null());
        assert!(!r.heap_ptr_or_null(1, SymAddr(4095)).is_null());
    }

    #[test]
    fn header_is_published_with_the_magic_last() {
        let r = Region::anonymous(Layout::new(2, &cfg(4096)).unwrap()).unwrap();
        assert_eq!(r.header(HeaderField::Magic).load(Ordering::Acquire), 0);
        r.write_header(42);
        assert_eq!(r.header(HeaderField::Magic).load(Ordering::Acquire), MAGIC);
        assert_eq!(r.header(HeaderField::NPes).load(Ordering::Relaxed), 2);
        assert_eq!(r.header(HeaderField::JobHash).load(Ordering::Relaxed), 42);
        assert!(r.claim_pe(1, 7));
        assert!(!r.claim_pe(1, 8));
        assert_eq!(r.pe_state(1), PeState::Attached);
        assert_eq!(r.pe_state(0), PeState::Absent);
    }
}
