//! The symmetric heap: `nvshmem_malloc`, `nvshmem_calloc`, `nvshmem_align`,
//! `nvshmem_free`, `nvshmem_ptr`.
//!
//! Allocation and free are collective (every PE calls them in the same order with the
//! same sizes) and include a barrier; niin-api can also compare allocation histories
//! across PEs (`NIIN_CHECK_SYMMETRY=1`). A size of 0 allocates nothing and returns NULL,
//! as in NVSHMEM, after the same barrier. Pointers are this PE's addresses of heap
//! offsets (see [`crate::convert`]).

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use niin_api::{SymBuffer, World};

use crate::convert;
use crate::error::{FfiError, FfiResult, value_call};
use crate::state;

/// The pointer C sees for a new allocation: NULL for an empty one.
fn address_of(world: &World, buf: &SymBuffer<u8>) -> *mut c_void {
    if buf.is_empty() {
        null_mut()
    } else {
        convert::local_address(world, buf.offset())
    }
}

/// Allocates `size` bytes of symmetric memory on every PE (`nvshmem_malloc`,
/// collective). NULL for size 0, and NULL with a `NIIN:` line on failure (out of heap,
/// not initialized).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_malloc(size: usize) -> *mut c_void {
    value_call("nvshmem_malloc", null_mut(), || {
        let w = state::world()?;
        let buf = w.malloc::<u8>(size)?;
        Ok(address_of(&w, &buf))
    })
}

/// Allocates `count * size` zeroed bytes (`nvshmem_calloc`, collective). NULL for 0
/// bytes; NULL with a `NIIN:` line on overflow or failure.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_calloc(count: usize, size: usize) -> *mut c_void {
    value_call("nvshmem_calloc", null_mut(), || {
        let w = state::world()?;
        let bytes = count.checked_mul(size).ok_or_else(|| {
            FfiError::BadArgument(format!("{count} elements of {size} bytes overflow size_t"))
        })?;
        let buf = w.calloc::<u8>(bytes)?;
        Ok(address_of(&w, &buf))
    })
}

/// Allocates `size` bytes whose address is a multiple of `alignment`, a power of two
/// (`nvshmem_align`, collective). NULL for size 0; NULL with a `NIIN:` line on failure.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_align(alignment: usize, size: usize) -> *mut c_void {
    value_call("nvshmem_align", null_mut(), || {
        let w = state::world()?;
        let buf = w.align::<u8>(alignment, size)?;
        Ok(address_of(&w, &buf))
    })
}

/// Frees an allocation of [`nvshmem_malloc`], [`nvshmem_calloc`] or [`nvshmem_align`]
/// (`nvshmem_free`, collective). NULL does nothing. A pointer that is not the start of a
/// live allocation is a `NIIN:` line; the call still takes part in the collective, so
/// the other PEs do not hang on it.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_free(ptr: *mut c_void) {
    value_call("nvshmem_free", (), || {
        let w = state::world()?;
        if ptr.is_null() {
            return Ok(());
        }
        match convert::sym(&w, ptr, 0, "ptr") {
            Ok(sym) => Ok(w.free_at(sym.offset())?),
            Err(e) => {
                // An offset past the heap: the free fails on this PE only, after the
                // same collective steps as a good one.
                let _ = w.free_at(u64::MAX);
                Err(e)
            }
        }
    })
}

/// The address at which this process can load and store the symmetric object `ptr` on
/// `pe` (`nvshmem_ptr`), or NULL when `pe` is not load/store reachable (not an LSA
/// peer). NULL with a `NIIN:` line for a pointer outside the heap or a bad PE. On a GPU
/// transport the address is a device pointer.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_ptr(ptr: *const c_void, pe: c_int) -> *mut c_void {
    value_call("nvshmem_ptr", null_mut(), || -> FfiResult<*mut c_void> {
        let w = state::world()?;
        let pe = convert::pe(&w, pe)?;
        let sym = convert::sym(&w, ptr, 1, "ptr")?;
        Ok(w.ptr(sym, pe)?.cast())
    })
}
