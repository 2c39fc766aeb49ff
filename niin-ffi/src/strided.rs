//! The strided transfers of the C ABI, blocking (`nvshmem_<T>_iput`, `nvshmem_iput<N>`, ...)
//! and stream-ordered (`nvshmemx_<T>_iput_on_stream`, ...): one implementation over
//! [`World`] and [`Stream`], which move the elements in their own order.
//!
//! Element `i` (below `nelems`) goes to `dest + i * dst` from `source + i * sst`, strides in
//! elements and at least 1 (a stride below 1 is refused by name, as NVSHMEM's host API does
//! nothing sensible with it); the symmetric operand must hold every element the strides
//! reach, aligned for the element. A 128-bit element moves as its two 64-bit halves: two
//! strided transfers of 64-bit elements at twice the strides, the low halves first (RMA of
//! any width is not atomic in NVSHMEM either).

use std::ffi::{c_int, c_void};

use niin_api::{RmaType, Stream, SymSlice, World};

use crate::convert::{self, stride, strided_elements};
use crate::error::{FfiError, FfiResult};

/// Which way a strided call moves its elements.
#[derive(Clone, Copy)]
pub(crate) enum Direction {
    /// `iput`: from local `source` to the symmetric `dest` on `pe`.
    Put,
    /// `iget`: from the symmetric `source` on `pe` to local `dest`.
    Get,
}

/// What moves strided elements: the world (complete on return) or a stream (enqueued).
pub(crate) trait Mover {
    /// `World::iput_from` / `Stream::iput_from`.
    ///
    /// # Safety
    /// As theirs.
    unsafe fn iput<T: RmaType>(
        &self,
        dst: (SymSlice<T>, usize),
        src: (*const T, usize),
        nelems: usize,
        pe: usize,
    ) -> niin_api::Result<()>;

    /// `World::iget_into` / `Stream::iget_into`.
    ///
    /// # Safety
    /// As theirs.
    unsafe fn iget<T: RmaType>(
        &self,
        dst: (*mut T, usize),
        src: (SymSlice<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> niin_api::Result<()>;
}

/// `Mover` for a type whose inherent `iput_from` / `iget_into` have its signatures.
macro_rules! impl_mover {
    ($($t:ty),*) => {$(
        impl Mover for $t {
            unsafe fn iput<T: RmaType>(
                &self,
                dst: (SymSlice<T>, usize),
                src: (*const T, usize),
                nelems: usize,
                pe: usize,
            ) -> niin_api::Result<()> {
                // SAFETY: forwarded from the caller.
                unsafe { self.iput_from(dst, src, nelems, pe) }
            }

            unsafe fn iget<T: RmaType>(
                &self,
                dst: (*mut T, usize),
                src: (SymSlice<T>, usize),
                nelems: usize,
                pe: usize,
            ) -> niin_api::Result<()> {
                // SAFETY: forwarded from the caller.
                unsafe { self.iget_into(dst, src, nelems, pe) }
            }
        }
    )*};
}

impl_mover!(World, Stream<'_>);

/// A strided put or get of `nelems` elements of `T` by `mover` (`w` checks the arguments).
///
/// # Safety
/// The local operand (`source` of a put, `dest` of a get) must be valid for the elements
/// the strides reach, and a get's not otherwise accessed, until `mover` has moved them
/// (the return for the world, the stream's run of it for a stream).
pub(crate) unsafe fn elements<T: RmaType, M: Mover>(
    (w, mover): (&World, &M),
    direction: Direction,
    (dest, source): (*mut c_void, *const c_void),
    (dst, sst): (isize, isize),
    nelems: usize,
    pe: c_int,
) -> FfiResult<()> {
    let pe = convert::pe(w, pe)?;
    let (dst, sst) = (stride(dst, "dst")?, stride(sst, "sst")?);
    let (dest, source) = (dest.cast::<T>(), source.cast::<T>());
    match direction {
        Direction::Put => {
            let dest = strided_elements::<T>(w, dest.cast_const().cast(), dst, nelems, "dest")?;
            convert::local(source, nelems, "source")?;
            // SAFETY: this function's contract.
            Ok(unsafe { mover.iput((dest, dst), (source, sst), nelems, pe) }?)
        }
        Direction::Get => {
            let source = strided_elements::<T>(w, source.cast(), sst, nelems, "source")?;
            convert::local(dest, nelems, "dest")?;
            // SAFETY: this function's contract.
            Ok(unsafe { mover.iget((dest, dst), (source, sst), nelems, pe) }?)
        }
    }
}

/// As [`elements`] for 16-byte elements: the low 64-bit halves, then the high ones, each a
/// strided transfer of `u64`s at twice the strides (a stride that doubles past `ptrdiff_t`
/// is refused by name).
///
/// # Safety
/// As [`elements`] for 16-byte elements.
pub(crate) unsafe fn elements128<M: Mover>(
    (w, mover): (&World, &M),
    direction: Direction,
    (dest, source): (*mut c_void, *const c_void),
    (dst, sst): (isize, isize),
    nelems: usize,
    pe: c_int,
) -> FfiResult<()> {
    let double = |s: isize, what: &'static str| {
        stride(s, what)?;
        s.checked_mul(2).ok_or_else(|| {
            FfiError::BadArgument(format!(
                "{what} stride {s} of 16-byte elements is more 8-byte steps than ptrdiff_t holds"
            ))
        })
    };
    let strides = (double(dst, "dst")?, double(sst, "sst")?);
    let target = convert::pe(w, pe)?;
    // Every element the strides reach must be inside the symmetric operand, both halves,
    // before either half moves: else a range that holds the low halves but not the last
    // high one fails after moving the low halves.
    let (sym, sym_stride, what) = match direction {
        Direction::Put => (dest.cast_const(), dst, "dest"),
        Direction::Get => (source, sst, "source"),
    };
    if nelems > 0 {
        let bytes = niin_api::strided_span(nelems, stride(sym_stride, what)?)
            .and_then(|span| span.checked_mul(16))
            .ok_or_else(|| {
                FfiError::BadArgument(format!(
                    "{nelems} elements at stride {sym_stride} span more bytes than size_t holds"
                ))
            })?;
        w.ptr(convert::sym(w, sym, bytes, what)?, target)?;
    }
    for half in 0..2 {
        let d = dest.cast::<u64>().wrapping_add(half).cast();
        let s = source.cast::<u64>().wrapping_add(half).cast();
        // SAFETY: this function's contract; each half lies inside the 16-byte elements.
        unsafe { elements::<u64, M>((w, mover), direction, (d, s), strides, nelems, pe) }?;
    }
    Ok(())
}
