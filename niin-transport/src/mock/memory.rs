//! Bulk copies between local memory and heaps (`put`, `get`, `iput`, `iget`), and the
//! `Send` wrappers that carry raw pointers into stream jobs.

use std::ptr;

use crate::error::{Result, TransportError};
use crate::ops::Strided;

/// A raw pointer an operation carries to the thread that runs it: a checked pointer
/// into the mapping, or the caller's local buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendPtr(*mut u8);

// SAFETY: a `SendPtr` holds either a pointer into the mapping, checked by
// `Region::heap_range` and kept mapped by the `Core` every stream job owns, or a local
// pointer whose validity until the operation has run is the caller's obligation under
// the `unsafe` contract of the `Transport` method that took it. Only the one thread
// running the operation dereferences it.
unsafe impl Send for SendPtr {}

impl SendPtr {
    /// Wraps a mutable pointer.
    pub(crate) fn new(ptr: *mut u8) -> SendPtr {
        SendPtr(ptr)
    }

    /// Wraps a source pointer (only ever read through).
    pub(crate) fn from_const(ptr: *const u8) -> SendPtr {
        SendPtr(ptr.cast_mut())
    }

    /// The pointer. A method, so closures capture the wrapper, not the raw field.
    pub(crate) fn get(self) -> *mut u8 {
        self.0
    }
}

/// Refuses a null local pointer for a non-empty transfer (the only check a local
/// pointer allows).
pub(crate) fn check_local(op: &'static str, ptr: *const u8, len: usize) -> Result<()> {
    if ptr.is_null() && len > 0 {
        return Err(TransportError::BadArgument {
            op,
            what: format!("the local buffer of {len} bytes is a null pointer"),
        });
    }
    Ok(())
}

/// Checks a strided shape: element size 1, 2, 4, 8 or 16, strides at least 1, spans
/// that do not overflow. Returns the bytes spanned on the (destination, source) sides.
pub(crate) fn check_shape(op: &'static str, shape: &Strided) -> Result<(usize, usize)> {
    let bad = |what: String| TransportError::BadArgument { op, what };
    if !matches!(shape.elem_size, 1 | 2 | 4 | 8 | 16) {
        return Err(TransportError::BadWidth {
            op,
            bytes: shape.elem_size,
        });
    }
    if shape.dst_stride == 0 || shape.src_stride == 0 {
        return Err(bad(format!(
            "strides must be at least 1 element (dst_stride {}, src_stride {})",
            shape.dst_stride, shape.src_stride
        )));
    }
    let span = |stride: usize| {
        shape.span(stride).ok_or_else(|| {
            bad(format!(
                "{} elements of {} bytes at stride {stride} overflow the address space",
                shape.nelems, shape.elem_size
            ))
        })
    };
    Ok((span(shape.dst_stride)?, span(shape.src_stride)?))
}

/// Copies `len` bytes from `src` to `dst`, with `memmove` semantics when the ranges
/// overlap (a PE putting from its own heap into itself).
///
/// # Safety
/// `src..src+len` must be readable and `dst..dst+len` writable for the whole call.
pub(crate) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    let (s, d) = (src as usize, dst as usize);
    if s < d.saturating_add(len) && d < s.saturating_add(len) {
        // SAFETY: the caller guarantees both ranges; `copy` allows overlap.
        unsafe { ptr::copy(src, dst, len) }
    } else {
        // SAFETY: the caller guarantees both ranges, which do not overlap.
        unsafe { ptr::copy_nonoverlapping(src, dst, len) }
    }
}

/// Copies element `i` of `src` (stride `shape.src_stride`) to element `i` of `dst`
/// (stride `shape.dst_stride`) for every `i < shape.nelems`.
///
/// # Safety
/// `shape` must have passed [`check_shape`]; the source span must be readable and the
/// destination span writable for the whole call.
pub(crate) unsafe fn copy_strided(src: *const u8, dst: *mut u8, shape: &Strided) {
    let es = shape.elem_size;
    for i in 0..shape.nelems {
        // In bounds: `i * stride * es + es` is at most the checked span.
        let from = src.wrapping_add(i * shape.src_stride * es);
        let to = dst.wrapping_add(i * shape.dst_stride * es);
        // SAFETY: both elements lie inside the spans the caller guarantees.
        unsafe { copy_bytes(from, to, es) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_copy_is_a_move() {
        let mut buf = *b"abcdefgh";
        let p = buf.as_mut_ptr();
        // SAFETY: both ranges lie in `buf`.
        unsafe { copy_bytes(p, p.wrapping_add(2), 6) };
        assert_eq!(&buf, b"ababcdef");
    }

    #[test]
    fn shape_checks() {
        let s = Strided {
            elem_size: 4,
            nelems: 3,
            dst_stride: 2,
            src_stride: 1,
        };
        assert_eq!(check_shape("iput", &s).unwrap(), (20, 12));
        assert!(matches!(
            check_shape("iput", &Strided { elem_size: 3, ..s }),
            Err(TransportError::BadWidth { bytes: 3, .. })
        ));
        assert!(check_shape("iput", &Strided { dst_stride: 0, ..s }).is_err());
        assert!(
            check_shape(
                "iput",
                &Strided {
                    nelems: usize::MAX,
                    ..s
                }
            )
            .is_err()
        );
        assert!(check_local("put", ptr::null(), 0).is_ok());
        assert!(check_local("put", ptr::null(), 1).is_err());
    }
}
