//! Typed handles to symmetric memory: [`SymBuffer`] (an allocation, owned) and
//! [`SymSlice`] (a view of part of one, `Copy`).
//!
//! A handle holds a heap offset, not a pointer: the same offset names the same object on
//! every PE, which is what a remote operation needs. Every operation checks that the
//! range lies inside a live allocation of the handle's world, so a stale or forged
//! handle is an error, never a stray access.
//!
//! **Freeing.** `nvshmem_free` is collective: every PE frees the same allocation at the
//! same point of the program, and the heap stays symmetric only if they do. Rust's
//! `Drop` runs at scope ends that nothing synchronizes across PEs (and during unwinding),
//! so dropping a [`SymBuffer`] does *not* free it: call [`crate::World::free`] on every PE,
//! in the same order. What is never freed is reclaimed when the world is finalized.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use crate::types::RmaType;

/// A symmetric allocation of `len` elements of `T`, made collectively by
/// [`crate::World::malloc`] and friends. Not `Clone`: it stands for the allocation, which
/// [`crate::World::free`] consumes. See the [module docs](crate::buffer) on freeing.
#[derive(Debug, PartialEq, Eq)]
pub struct SymBuffer<T: RmaType> {
    pub(crate) slice: SymSlice<T>,
}

impl<T: RmaType> SymBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.slice.len == 0
    }

    /// Byte offset of element 0 in the symmetric heap (the same on every PE).
    pub fn offset(&self) -> u64 {
        self.slice.offset
    }

    /// A view of the whole buffer.
    pub fn all(&self) -> SymSlice<T> {
        self.slice
    }

    /// A view of elements `range` of the buffer.
    ///
    /// # Panics
    /// If the range is out of bounds, as slice indexing does.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> SymSlice<T> {
        self.slice.slice(range)
    }

    /// A view of element `i` alone.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn at(&self, i: usize) -> SymSlice<T> {
        self.slice.slice(i..i + 1)
    }
}

/// A view of `len` elements of `T` at a symmetric heap offset. `Copy`, so it can be
/// handed to several operations; it does not keep the allocation alive (operations on a
/// view of freed memory fail).
#[derive(Debug, PartialEq, Eq)]
pub struct SymSlice<T: RmaType> {
    pub(crate) world: u64,
    pub(crate) offset: u64,
    pub(crate) len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: RmaType> Clone for SymSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: RmaType> Copy for SymSlice<T> {}

impl<T: RmaType> SymSlice<T> {
    pub(crate) fn new(world: u64, offset: u64, len: usize) -> Self {
        SymSlice {
            world,
            offset,
            len,
            _t: PhantomData,
        }
    }

    /// A view from raw parts, for code that receives offsets from elsewhere (a C caller, a
    /// message). Safe: every operation checks the range against the live allocations.
    pub fn from_raw_parts(world: &crate::World, offset: u64, len: usize) -> Self {
        SymSlice::new(world.id(), offset, len)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset of element 0 in the symmetric heap.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length in bytes (saturating: an absurd length fails the range check later).
    pub fn byte_len(&self) -> u64 {
        (self.len as u64).saturating_mul(size_of::<T>() as u64)
    }

    /// A view of elements `range` of this view.
    ///
    /// # Panics
    /// If the range is out of bounds, as slice indexing does.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> SymSlice<T> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        assert!(
            start <= end && end <= self.len,
            "range {start}..{end} out of bounds for a symmetric view of {} elements",
            self.len
        );
        SymSlice::new(
            self.world,
            self.offset + (start * size_of::<T>()) as u64,
            end - start,
        )
    }

    /// A view of element `i` alone.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn at(&self, i: usize) -> SymSlice<T> {
        self.slice(i..i + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slicing_moves_the_offset_by_elements() {
        let s: SymSlice<u32> = SymSlice::new(1, 256, 10);
        let t = s.slice(2..5);
        assert_eq!((t.offset(), t.len()), (264, 3));
        assert_eq!(s.slice(..).len(), 10);
        assert_eq!(s.slice(9..=9).offset(), 256 + 36);
        assert_eq!(s.at(1).offset(), 260);
        assert_eq!(s.byte_len(), 40);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn slicing_past_the_end_panics_like_a_slice() {
        let s: SymSlice<u8> = SymSlice::new(1, 0, 4);
        let _ = s.slice(2..5);
    }
}
