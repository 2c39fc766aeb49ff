//! [`SymmetricHeap`]: first-fit allocation of offsets in `[0, size)`.

use std::collections::BTreeMap;
use std::fmt;

use crate::fingerprint::{Fingerprint, Layout, OpTag, outcome};
use crate::free_tree::FreeTree;
use crate::units::Bytes;
use crate::{DEFAULT_ALIGNMENT, HeapError};

/// A reserved range of the heap: `[offset, offset + len)`.
///
/// `offset` is a multiple of the requested alignment (at least [`DEFAULT_ALIGNMENT`]);
/// `len` is the number of bytes reserved — the requested size rounded up to a multiple
/// of [`DEFAULT_ALIGNMENT`] — so it can exceed what was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Start of the block, in bytes from the heap base.
    pub offset: u64,
    /// Bytes reserved (the request rounded up to the 256-byte granule).
    pub len: u64,
}

impl Block {
    /// Whether `offset` lies inside this block. Overflow-safe for any field values.
    pub fn contains(&self, offset: u64) -> bool {
        offset >= self.offset && offset - self.offset < self.len
    }
}

/// A snapshot of the heap's occupancy, from [`SymmetricHeap::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapStats {
    /// Usable heap size in bytes (`used + free`).
    pub size: u64,
    /// Bytes reserved by live blocks (sum of their `len`).
    pub used: u64,
    /// Bytes not reserved (`size - used`), possibly fragmented.
    pub free: u64,
    /// Length of the largest free block: the largest `malloc` that can succeed now.
    pub largest_free: u64,
    /// Number of live (allocated, not yet freed) blocks.
    pub live_blocks: usize,
    /// Number of free blocks (maximal free ranges; 1 for an empty heap).
    pub free_blocks: usize,
}

impl fmt::Display for HeapStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "size={} used={} free={} largest_free={} live_blocks={} free_blocks={}",
            Bytes(self.size),
            Bytes(self.used),
            Bytes(self.free),
            Bytes(self.largest_free),
            self.live_blocks,
            self.free_blocks
        )
    }
}

/// The symmetric-heap allocator: hands out offsets in `[0, size)`, owns no memory.
///
/// Deterministic: the same sequence of calls on two heaps of the same size returns the
/// same offsets, which is what makes the heap *symmetric* across PEs. See the crate docs
/// for the placement rules, the data structures and their complexities.
#[derive(Clone, Debug)]
pub struct SymmetricHeap {
    /// Usable size: the size given to `new`, rounded down to the 256-byte granule.
    size: u64,
    /// Live blocks: offset -> len.
    live: BTreeMap<u64, u64>,
    /// Free blocks, always maximal (no two adjacent), covering `[0, size)` minus `live`.
    free: FreeTree,
    /// Sum of the lengths of the live blocks.
    used: u64,
    /// Digest of the call history.
    fingerprint: Fingerprint,
    /// Digest of the live blocks.
    layout: Layout,
}

impl SymmetricHeap {
    /// A heap of `size` bytes, entirely free.
    ///
    /// The usable size is `size` rounded down to a multiple of [`DEFAULT_ALIGNMENT`]
    /// (blocks are whole 256-byte granules, so a shorter tail could never be handed out);
    /// [`SymmetricHeap::size`] reports it. Errors: [`HeapError::ZeroHeap`] for 0,
    /// [`HeapError::HeapTooSmall`] for 1..=255.
    pub fn new(size: u64) -> Result<Self, HeapError> {
        if size == 0 {
            return Err(HeapError::ZeroHeap);
        }
        let usable = size - size % DEFAULT_ALIGNMENT;
        if usable == 0 {
            return Err(HeapError::HeapTooSmall { size });
        }
        let mut free = FreeTree::new();
        free.insert(0, usable);
        Ok(Self {
            size: usable,
            live: BTreeMap::new(),
            free,
            used: 0,
            fingerprint: Fingerprint::seed(size),
            layout: Layout::empty(usable),
        })
    }

    /// Usable size in bytes (a multiple of [`DEFAULT_ALIGNMENT`]).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reserves `size` bytes at the lowest address where they fit, 256-byte aligned.
    ///
    /// `size == 0` returns `Ok(None)` and reserves nothing (OpenSHMEM: `shmem_malloc(0)`
    /// returns a null pointer). Errors: [`HeapError::SizeOverflow`] if rounding `size` up
    /// to 256 overflows, [`HeapError::OutOfMemory`] if no free block is large enough.
    /// O(log n).
    pub fn malloc(&mut self, size: u64) -> Result<Option<Block>, HeapError> {
        let result = self.allocate(1, size, DEFAULT_ALIGNMENT);
        self.record(&[OpTag::Malloc as u64, size], &result);
        result
    }

    /// Reserves room for `count` elements of `size` bytes, like [`SymmetricHeap::malloc`]
    /// of `count * size`.
    ///
    /// The heap owns no memory, so it cannot zero anything: **zeroing the block is the
    /// caller's job** (whoever maps offsets to device memory must clear it before
    /// returning the pointer from `nvshmem_calloc`). `count == 0` or `size == 0` returns
    /// `Ok(None)`. Errors: [`HeapError::SizeOverflow`] if `count * size` (or its
    /// rounding) overflows `u64`, [`HeapError::OutOfMemory`]. O(log n).
    pub fn calloc(&mut self, count: u64, size: u64) -> Result<Option<Block>, HeapError> {
        let result = self.allocate(count, size, DEFAULT_ALIGNMENT);
        self.record(&[OpTag::Calloc as u64, count, size], &result);
        result
    }

    /// Reserves `size` bytes starting at a multiple of `alignment`.
    ///
    /// `alignment` must be a power of two ([`HeapError::BadAlignment`] for 0 or any other
    /// value; checked before `size`). Alignments below 256 behave as 256 — every block is
    /// 256-aligned anyway. Placement is exact first fit: the lowest-address free block in
    /// which an `alignment`-aligned start leaves room for the (rounded) size; the bytes
    /// between that block's start and the aligned start stay a free block. Cost:
    /// O(log n) plus O(log n) per "near miss" examined (see the crate docs).
    /// `size == 0` returns `Ok(None)`. Errors: [`HeapError::SizeOverflow`],
    /// [`HeapError::OutOfMemoryAligned`] (or [`HeapError::OutOfMemory`] when the
    /// effective alignment is 256).
    pub fn align(&mut self, alignment: u64, size: u64) -> Result<Option<Block>, HeapError> {
        let result = if alignment.is_power_of_two() {
            self.allocate(1, size, alignment)
        } else {
            Err(HeapError::BadAlignment { alignment })
        };
        self.record(&[OpTag::Align as u64, alignment, size], &result);
        result
    }

    /// Releases the live block starting at `offset` and coalesces it with free
    /// neighbours on both sides; returns the released block.
    ///
    /// Errors (the heap is unchanged): [`HeapError::OffsetOutOfRange`] if
    /// `offset >= size`; [`HeapError::InteriorPointer`] if `offset` lies inside a live
    /// block but not at its start; [`HeapError::NotABlockStart`] if it lies in free space
    /// (double free, or never allocated). O(log n).
    pub fn free(&mut self, offset: u64) -> Result<Block, HeapError> {
        let result = self.release(offset);
        let words = [OpTag::Free as u64, offset];
        match &result {
            Ok(block) => self.record(&words, &Ok(Some(*block))),
            Err(e) => self.record(&words, &Err(e.clone())),
        }
        result
    }

    /// The live block containing `offset`, if any (for "is this pointer inside the heap,
    /// and in which allocation" checks). O(log n).
    pub fn find(&self, offset: u64) -> Option<Block> {
        let (&start, &len) = self.live.range(..=offset).next_back()?;
        let block = Block { offset: start, len };
        block.contains(offset).then_some(block)
    }

    /// Occupancy snapshot. O(1).
    pub fn stats(&self) -> HeapStats {
        HeapStats {
            size: self.size,
            used: self.used,
            free: self.size - self.used,
            largest_free: self.free.largest(),
            live_blocks: self.live.len(),
            free_blocks: self.free.len(),
        }
    }

    /// Digest of this heap's creation size and call history; compare across PEs to
    /// detect asymmetric allocation sequences. O(1).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// Digest of this heap's size and live blocks (not of how they came to be); compare
    /// across PEs to check that their heaps agree now. O(1).
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Live blocks in address order. O(1) to create, O(1) amortised per item.
    pub fn live_blocks(&self) -> impl Iterator<Item = Block> + '_ {
        self.live
            .iter()
            .map(|(&offset, &len)| Block { offset, len })
    }

    /// Free blocks in address order (maximal free ranges). O(n).
    pub fn free_blocks(&self) -> Vec<Block> {
        self.free
            .to_vec()
            .into_iter()
            .map(|(offset, len)| Block { offset, len })
            .collect()
    }

    /// Shared body of `malloc`, `calloc` and `align` (alignment is a power of two).
    fn allocate(
        &mut self,
        count: u64,
        elem_size: u64,
        alignment: u64,
    ) -> Result<Option<Block>, HeapError> {
        let overflow = || HeapError::SizeOverflow {
            count,
            size: elem_size,
        };
        let bytes = count.checked_mul(elem_size).ok_or_else(overflow)?;
        if bytes == 0 {
            return Ok(None);
        }
        let need = bytes
            .checked_next_multiple_of(DEFAULT_ALIGNMENT)
            .ok_or_else(overflow)?;
        let alignment = alignment.max(DEFAULT_ALIGNMENT);

        let found = if alignment == DEFAULT_ALIGNMENT {
            self.free.first_fit(need).map(|(o, l)| (o, l, o))
        } else {
            self.free.first_fit_aligned(need, alignment)
        };
        let Some((block_offset, block_len, start)) = found else {
            let largest_free = self.free.largest();
            return Err(if alignment == DEFAULT_ALIGNMENT {
                HeapError::OutOfMemory {
                    requested: bytes,
                    largest_free,
                }
            } else {
                HeapError::OutOfMemoryAligned {
                    requested: bytes,
                    alignment,
                    largest_free,
                }
            });
        };

        // Carve [start, start + need) out of the free block; the gap before it and the
        // remainder after it stay free. No overflow: both ends lie within [0, size].
        if start > block_offset {
            // The gap keeps the block's start: shrink it in place.
            self.free.set_len(block_offset, start - block_offset);
        } else {
            self.free.remove(block_offset);
        }
        let end = start + need;
        let block_end = block_offset + block_len;
        if block_end > end {
            self.free.insert(end, block_end - end);
        }
        self.live.insert(start, need);
        self.layout.add(start, need);
        self.used += need;
        Ok(Some(Block {
            offset: start,
            len: need,
        }))
    }

    /// Body of `free`.
    fn release(&mut self, offset: u64) -> Result<Block, HeapError> {
        if offset >= self.size {
            return Err(HeapError::OffsetOutOfRange {
                offset,
                size: self.size,
            });
        }
        let len = match self.live.range(..=offset).next_back() {
            Some((&start, &len)) if start == offset => len,
            Some((&start, &len)) if offset - start < len => {
                return Err(HeapError::InteriorPointer {
                    offset,
                    block_start: start,
                    block_len: len,
                });
            }
            _ => return Err(HeapError::NotABlockStart { offset }),
        };
        self.live.remove(&offset);
        self.layout.remove(offset, len);
        self.used -= len;

        // Coalesce: absorb the free block starting right after this one, then either grow
        // the free block ending right before it in place or insert a new free block.
        let mut merged_len = len;
        if let Some(right_len) = self.free.remove(offset + len) {
            merged_len += right_len;
        }
        match self.free.predecessor(offset) {
            Some((left, left_len)) if left + left_len == offset => {
                self.free.set_len(left, left_len + merged_len);
            }
            _ => self.free.insert(offset, merged_len),
        }
        Ok(Block { offset, len })
    }

    /// Appends one call and its outcome to the fingerprint.
    fn record(&mut self, args: &[u64], result: &Result<Option<Block>, HeapError>) {
        let mut words = [0u64; 7];
        words[..args.len()].copy_from_slice(args);
        let mut n = args.len();
        let tail: &[u64] = match result {
            Ok(None) => &[outcome::NONE],
            Ok(Some(b)) => &[outcome::BLOCK, b.offset, b.len],
            Err(e) => &[outcome::ERROR, e.code()],
        };
        words[n..n + tail.len()].copy_from_slice(tail);
        n += tail.len();
        self.fingerprint.record(&words[..n]);
    }

    /// Checks every invariant of the heap; returns a description of the first violation.
    /// O(n); used by tests.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        self.free.check()?;
        let free = self.free.to_vec();
        let mut spans: Vec<(u64, u64, bool)> = free.iter().map(|&(o, l)| (o, l, false)).collect();
        spans.extend(self.live.iter().map(|(&o, &l)| (o, l, true)));
        spans.sort_unstable();
        let mut cursor = 0;
        let mut prev_free = false;
        for &(o, l, is_live) in &spans {
            if o != cursor {
                return Err(format!(
                    "gap or overlap at {cursor}: next span starts at {o}"
                ));
            }
            if l == 0 || o % DEFAULT_ALIGNMENT != 0 || l % DEFAULT_ALIGNMENT != 0 {
                return Err(format!("span ({o}, {l}) empty or not granule-aligned"));
            }
            if !is_live && prev_free {
                return Err(format!("adjacent free blocks not coalesced at {o}"));
            }
            prev_free = !is_live;
            cursor = o + l;
        }
        if cursor != self.size {
            return Err(format!("spans end at {cursor}, heap size {}", self.size));
        }
        let mut layout = Layout::empty(self.size);
        self.live.iter().for_each(|(&o, &l)| layout.add(o, l));
        if layout != self.layout {
            return Err(format!(
                "layout {} but live blocks give {layout}",
                self.layout
            ));
        }
        let used: u64 = self.live.values().sum();
        if used != self.used {
            return Err(format!("used {} but live blocks sum to {used}", self.used));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod model;

#[cfg(test)]
mod proptests;
