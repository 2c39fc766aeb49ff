//! A deliberately naive reference allocator for the property tests: sorted `Vec`s of
//! intervals, O(n) first fit, O(n) coalescing. Written independently of the real one
//! (u128 arithmetic, linear scans) so that agreement means something.

use crate::{Block, DEFAULT_ALIGNMENT, HeapError};

/// Reference heap: free and live intervals `(offset, len)`, each sorted by offset.
#[derive(Clone, Debug)]
pub(super) struct Model {
    /// Usable size.
    pub(super) size: u64,
    /// Free intervals, sorted, coalesced.
    pub(super) free: Vec<(u64, u64)>,
    /// Live intervals, sorted.
    pub(super) live: Vec<(u64, u64)>,
}

impl Model {
    /// A model heap of `size` bytes (`size >= 256`).
    pub(super) fn new(size: u64) -> Self {
        let usable = size / DEFAULT_ALIGNMENT * DEFAULT_ALIGNMENT;
        Self {
            size: usable,
            free: vec![(0, usable)],
            live: Vec::new(),
        }
    }

    /// Largest free interval.
    pub(super) fn largest(&self) -> u64 {
        self.free.iter().map(|f| f.1).max().unwrap_or(0)
    }

    /// `count * elem` bytes at `alignment` (already validated as a power of two).
    pub(super) fn alloc(
        &mut self,
        count: u64,
        elem: u64,
        alignment: u64,
    ) -> Result<Option<Block>, HeapError> {
        let bytes = u128::from(count) * u128::from(elem);
        let overflow = HeapError::SizeOverflow { count, size: elem };
        if bytes > u128::from(u64::MAX) {
            return Err(overflow);
        }
        if bytes == 0 {
            return Ok(None);
        }
        let g = u128::from(DEFAULT_ALIGNMENT);
        let need = bytes.div_ceil(g) * g;
        if need > u128::from(u64::MAX) {
            return Err(overflow);
        }
        let a = u128::from(alignment.max(DEFAULT_ALIGNMENT));
        for i in 0..self.free.len() {
            let (o, l) = self.free[i];
            let start = u128::from(o).div_ceil(a) * a;
            if start + need <= u128::from(o) + u128::from(l) {
                let start = u64::try_from(start).unwrap();
                let need = u64::try_from(need).unwrap();
                let mut pieces = Vec::new();
                if start > o {
                    pieces.push((o, start - o));
                }
                if o + l > start + need {
                    pieces.push((start + need, o + l - start - need));
                }
                self.free.splice(i..=i, pieces);
                let j = self.live.partition_point(|b| b.0 < start);
                self.live.insert(j, (start, need));
                return Ok(Some(Block {
                    offset: start,
                    len: need,
                }));
            }
        }
        let requested = u64::try_from(bytes).unwrap();
        let largest_free = self.largest();
        Err(if a == g {
            HeapError::OutOfMemory {
                requested,
                largest_free,
            }
        } else {
            HeapError::OutOfMemoryAligned {
                requested,
                alignment: u64::try_from(a).unwrap(),
                largest_free,
            }
        })
    }

    /// Frees the block starting at `offset`.
    pub(super) fn free(&mut self, offset: u64) -> Result<Block, HeapError> {
        if offset >= self.size {
            return Err(HeapError::OffsetOutOfRange {
                offset,
                size: self.size,
            });
        }
        let Some(i) = self
            .live
            .iter()
            .position(|&(o, l)| o <= offset && offset < o + l)
        else {
            return Err(HeapError::NotABlockStart { offset });
        };
        let (o, l) = self.live[i];
        if o != offset {
            return Err(HeapError::InteriorPointer {
                offset,
                block_start: o,
                block_len: l,
            });
        }
        self.live.remove(i);
        self.free.push((o, l));
        self.free.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.free.len());
        for &(fo, fl) in &self.free {
            match merged.last_mut() {
                Some(last) if last.0 + last.1 == fo => last.1 += fl,
                _ => merged.push((fo, fl)),
            }
        }
        self.free = merged;
        Ok(Block { offset: o, len: l })
    }
}
