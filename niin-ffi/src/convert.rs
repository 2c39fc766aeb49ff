//! Conversions from C arguments to niin-api's: pointers to symmetric views, PE numbers,
//! signal operators, comparisons, streams, team handles.
//!
//! **Pointers and offsets.** A symmetric object has the same heap offset on every PE; the
//! C API names it by its address in this PE's heap. `ptr - heap_base()` is the offset
//! ([`World::sym_at`] does the subtraction and checks that `ptr` lies in the heap), and
//! `heap_base() + offset` is the address handed back by `nvshmem_malloc`. Every operation
//! checks the view against the live allocations again, so a stale or interior pointer is
//! an error, never a stray access.

use std::ffi::{c_int, c_void};

use niin_api::{Cmp, RmaType, SignalOp, SymSlice, TeamId, World};
use niin_transport::StreamHandle;

use crate::error::{FfiError, FfiResult};

/// The address of heap offset `offset` in this PE's heap.
pub(crate) fn local_address(world: &World, offset: u64) -> *mut c_void {
    world.heap_base().wrapping_add(offset as usize).cast()
}

/// A local (non-symmetric) operand `ptr`, the argument `what` of the call: it may be null
/// only when the call moves nothing (`len`, in bytes or elements, is 0).
pub(crate) fn local<P>(ptr: *const P, len: usize, what: &'static str) -> FfiResult<()> {
    if ptr.is_null() && len > 0 {
        return Err(FfiError::Null(what));
    }
    Ok(())
}

/// The symmetric view of `len` bytes at `ptr`, the argument `what` of the call.
pub(crate) fn sym(
    world: &World,
    ptr: *const c_void,
    len: usize,
    what: &'static str,
) -> FfiResult<SymSlice<u8>> {
    if ptr.is_null() {
        return Err(FfiError::Null(what));
    }
    world.sym_at(ptr.cast(), len).map_err(|_| {
        let base = world.heap_base();
        let end = base.wrapping_add(world.config().heap_size as usize);
        FfiError::BadArgument(format!(
            "{what} {ptr:p} is not in this PE's symmetric heap ({base:p}..{end:p}); it must \
             point into memory from nvshmem_malloc, nvshmem_calloc or nvshmem_align, or into \
             a buffer that nvshmemx_buffer_register_symmetric returned"
        ))
    })
}

/// The signal word at `ptr` (one `uint64_t` of the symmetric heap).
pub(crate) fn signal(
    world: &World,
    ptr: *const u64,
    what: &'static str,
) -> FfiResult<SymSlice<u64>> {
    let bytes = sym(world, ptr.cast(), size_of::<u64>(), what)?;
    Ok(SymSlice::from_raw_parts(world, bytes.offset(), 1))
}

/// A target PE number, checked against the world.
pub(crate) fn pe(world: &World, pe: c_int) -> FfiResult<usize> {
    match usize::try_from(pe) {
        Ok(p) if p < world.n_pes() => Ok(p),
        _ => Err(FfiError::Api(niin_api::Error::PeOutOfRange {
            pe: world.my_pe(),
            target: i64::from(pe),
            n_pes: world.n_pes(),
        })),
    }
}

/// NVSHMEM's `sig_op` (`NVSHMEM_SIGNAL_SET` or `NVSHMEM_SIGNAL_ADD`).
pub(crate) fn signal_op(op: c_int) -> FfiResult<SignalOp> {
    SignalOp::from_raw(op).map_err(|e| FfiError::BadArgument(format!("sig_op: {e}")))
}

/// NVSHMEM's `cmp` (`NVSHMEM_CMP_*`).
pub(crate) fn cmp(cmp: c_int) -> FfiResult<Cmp> {
    Cmp::from_raw(cmp).map_err(|e| FfiError::BadArgument(format!("cmp: {e}")))
}

/// A `cudaStream_t` as the transport's stream handle (its value; 0 is the default stream).
pub(crate) fn stream(stream: *mut c_void) -> StreamHandle {
    StreamHandle(stream as usize as u64)
}

/// A team handle that must name a team of this world (`NVSHMEM_TEAM_INVALID` passes:
/// NVSHMEM defines the result of every query on it).
pub(crate) fn team(world: &World, team: c_int) -> FfiResult<TeamId> {
    let id = TeamId(team);
    if id != TeamId::INVALID && world.team_n_pes(id).is_none() {
        return Err(FfiError::BadArgument(format!(
            "team {team} is not a team handle: it is neither predefined nor a live team from \
             nvshmem_team_split_*"
        )));
    }
    Ok(id)
}

/// A count for C (`int`), saturating (PE counts always fit).
pub(crate) fn c_count(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Bytes of `nelems` elements of `size` bytes.
pub(crate) fn bytes_of(nelems: usize, size: usize) -> FfiResult<usize> {
    nelems.checked_mul(size).ok_or_else(|| {
        FfiError::BadArgument(format!(
            "nelems {nelems} of {size}-byte elements is more bytes than size_t holds"
        ))
    })
}

/// The symmetric view of the `len` elements at `ptr` (argument `what`), aligned for `T`.
pub(crate) fn elements<T: RmaType>(
    w: &World,
    ptr: *const c_void,
    len: usize,
    what: &'static str,
) -> FfiResult<SymSlice<T>> {
    let bytes = sym(w, ptr, bytes_of(len, size_of::<T>())?, what)?;
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(FfiError::BadArgument(format!(
            "{what} {ptr:p} is not aligned for its {}-byte elements",
            align_of::<T>()
        )));
    }
    Ok(SymSlice::from_raw_parts(w, bytes.offset(), len))
}

/// The one-element symmetric view of `ptr` (argument `what`), aligned for `T`.
pub(crate) fn element<T: RmaType>(
    w: &World,
    ptr: *const c_void,
    what: &'static str,
) -> FfiResult<SymSlice<T>> {
    elements(w, ptr, 1, what)
}

/// A stride of a strided call (`dst` or `sst`, in elements): at least 1.
pub(crate) fn stride(value: isize, what: &'static str) -> FfiResult<usize> {
    match usize::try_from(value) {
        Ok(s) if s > 0 => Ok(s),
        _ => Err(FfiError::BadArgument(format!(
            "{what} stride {value} must be at least 1 element"
        ))),
    }
}

/// The symmetric operand of a strided call: the elements `nelems` elements at `stride`
/// span from `ptr` (argument `what`).
pub(crate) fn strided_elements<T: RmaType>(
    w: &World,
    ptr: *const c_void,
    stride: usize,
    nelems: usize,
    what: &'static str,
) -> FfiResult<SymSlice<T>> {
    let span = niin_api::strided_span(nelems, stride).ok_or_else(|| {
        FfiError::BadArgument(format!(
            "{nelems} elements at stride {stride} span more elements than size_t holds"
        ))
    })?;
    elements(w, ptr, span, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_below_one_are_refused_by_name() {
        assert_eq!(stride(1, "dst").unwrap(), 1);
        assert_eq!(stride(7, "sst").unwrap(), 7);
        for bad in [0, -1, isize::MIN] {
            let e = stride(bad, "sst").unwrap_err().to_string();
            assert!(
                e.contains("sst stride") && e.contains(&bad.to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn byte_counts_and_their_overflow() {
        assert_eq!(bytes_of(3, 8).unwrap(), 24);
        assert_eq!(bytes_of(0, 16).unwrap(), 0);
        let e = bytes_of(usize::MAX / 2 + 1, 2).unwrap_err().to_string();
        assert!(
            e.contains(&(usize::MAX / 2 + 1).to_string()) && e.contains("2-byte"),
            "{e}"
        );
    }
}
