//! User buffers in the symmetric address space: `nvshmemx_buffer_register_symmetric` and
//! `nvshmemx_buffer_unregister_symmetric`, with NVSHMEM 3.4.5's signatures, refused on both
//! transports.
//!
//! # What NVSHMEM does
//!
//! `nvshmemx_buffer_register_symmetric(buf, size, flags)` is collective (every PE, the same
//! `size`; it ends with a barrier). `buf` must be a CUDA VMM allocation (`cuMemCreate`) of
//! the PE's device (or EGM host memory), `flags` 0. NVSHMEM maps that physical memory a
//! second time, into the top of its symmetric heap's virtual range, registers it with its
//! transports, and returns the alias: an address inside the heap, at the same offset on
//! every PE, that every NVSHMEM operation (host and device) accepts. NULL on failure.
//! `nvshmemx_buffer_unregister_symmetric(alias, size)` is collective too (a barrier first),
//! and returns 0 or an error (`NVSHMEMX_ERROR_INVALID_VALUE` for an address that is not
//! registered).
//!
//! # Why niin-rs cannot yet
//!
//! - NCCL: every niin-rs operation addresses symmetric memory as an offset into the heap,
//!   which is one NCCL window: device code adds a per-peer distance to NCCL's mapping of
//!   that window, and the host checks offsets against the heap's allocations. NCCL maps a
//!   window's memory for the peers once, at registration (`ncclCommWindowRegister`), so
//!   mapping other memory into the heap's range afterwards reaches no peer. A window of its
//!   own over the user's buffer would be reachable by NCCL's peer pointers, but at
//!   addresses that no niin-rs operation accepts (outside the heap): it needs the world,
//!   the transports and the device context to route addresses to a second window.
//! - The mock: the heap is one shared-memory file that every PE's process maps; memory of
//!   one process cannot join it.
//!
//! So both calls take part in the collective as NVSHMEM's do (the barrier), then fail
//! loudly: register returns NULL, unregister `NVSHMEMX_ERROR_INVALID_VALUE`, each after a
//! `NIIN:` line that says why and what to use instead (`nvshmem_malloc`).

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use niin_api::World;

use crate::error::{FfiError, FfiResult, status_call, value_call};
use crate::state;

/// Why `buf_ptr` of `size` bytes cannot be registered in `world` (NVSHMEM's argument
/// checks first).
fn refusal(world: &World, buf_ptr: *mut c_void, size: usize, flags: c_int) -> FfiError {
    if size == 0 {
        return FfiError::BadArgument("size is 0".to_owned());
    }
    if flags != 0 {
        return FfiError::BadArgument(format!("flags is {flags}: NVSHMEM 3.4.5 takes only 0"));
    }
    if buf_ptr.is_null() {
        return FfiError::Null("buf_ptr");
    }
    let transport = if world.nccl_parts().is_some() {
        "the NCCL transport: niin-rs reaches symmetric memory as offsets into one NCCL window \
         (the heap), which NCCL mapped for the peers when it was registered; it cannot take \
         in another allocation, and a window of its own over the buffer would be at addresses \
         no niin-rs operation accepts"
    } else {
        "the mock transport: its heap is one shared-memory file mapped by every PE's process, \
         which memory of one process cannot join"
    };
    FfiError::NotSupported(format!(
        "registering {size} bytes at {buf_ptr:p} as symmetric memory is not implemented on \
         {transport}; allocate the buffer with nvshmem_malloc instead"
    ))
}

/// Registers a user buffer as symmetric memory (`nvshmemx_buffer_register_symmetric`,
/// collective): not implemented in niin-rs. Every PE takes part in the barrier that ends
/// NVSHMEM's call, then gets NULL after a `NIIN:` line naming the transport and why.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_register_symmetric(
    buf_ptr: *mut c_void,
    size: usize,
    flags: c_int,
) -> *mut c_void {
    value_call("nvshmemx_buffer_register_symmetric", null_mut(), || {
        let world = state::world()?;
        let why = refusal(&world, buf_ptr, size, flags);
        world.barrier_all()?;
        Err::<*mut c_void, _>(why)
    })
}

/// Unregisters a buffer of [`nvshmemx_buffer_register_symmetric`]
/// (`nvshmemx_buffer_unregister_symmetric`, collective): after NVSHMEM's barrier,
/// `NVSHMEMX_ERROR_INVALID_VALUE`, since niin-rs registers none.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister_symmetric(
    mmap_ptr: *mut c_void,
    size: usize,
) -> c_int {
    status_call("nvshmemx_buffer_unregister_symmetric", || {
        let world = state::world()?;
        world.barrier_all()?;
        unregister_refusal(mmap_ptr, size)
    })
}

/// The error of every unregistration.
fn unregister_refusal(mmap_ptr: *mut c_void, size: usize) -> FfiResult<()> {
    Err(FfiError::BadArgument(format!(
        "{mmap_ptr:p} ({size} bytes) is not a buffer registered with \
         nvshmemx_buffer_register_symmetric (niin-rs registers none: that call is not \
         implemented)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::NVSHMEMX_ERROR_INVALID_VALUE;

    #[test]
    fn before_init_both_fail_with_nvshmems_values() {
        let mut buf = [0u8; 64];
        let p = buf.as_mut_ptr().cast::<c_void>();
        // No world in the unit tests' process: NULL and INVALID_VALUE after a NIIN: line.
        assert!(nvshmemx_buffer_register_symmetric(p, 64, 0).is_null());
        assert_eq!(
            nvshmemx_buffer_unregister_symmetric(p, 64),
            NVSHMEMX_ERROR_INVALID_VALUE
        );
    }

    #[test]
    fn the_unregister_error_names_the_pointer() {
        let e = unregister_refusal(0x1000usize as *mut c_void, 4096).unwrap_err();
        assert_eq!(e.status(), NVSHMEMX_ERROR_INVALID_VALUE);
        assert!(e.to_string().contains("0x1000 (4096 bytes)"), "{e}");
    }
}
