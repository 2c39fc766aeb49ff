//! User buffers in the symmetric address space: `nvshmemx_buffer_register_symmetric` and
//! `nvshmemx_buffer_unregister_symmetric`, with NVSHMEM 3.4.5's signatures and semantics on
//! the NCCL transport.
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
//! # What niin-rs does
//!
//! [`niin_api::World::register_symmetric`]: the PEs agree on their arguments first (a PE
//! with a bad buffer fails every PE, naming it, rather than leaving the others in NCCL's
//! collective), then the transport registers the buffer as an NCCL window and maps it a
//! second time at an address the same distance from every PE's heap (niin-transport's
//! `lsa/registered.rs` says why that address makes every existing path work). That
//! address is returned, as NVSHMEM returns its alias, and every host and device operation
//! takes it. Limits: worlds whose PEs are all in this PE's LSA team (PEs reached over GIN
//! are refused with a message); the buffer must start a CUDA mapping; at most
//! `niin_transport::lsa::MAX_REGISTERED` buffers at once. The mock transport refuses (it
//! has no CUDA memory to register), after the agreement, on every PE.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use crate::convert::local_address;
use crate::error::{FfiError, status_call, value_call};
use crate::state;

/// Registers a user buffer as symmetric memory (`nvshmemx_buffer_register_symmetric`,
/// collective): returns the symmetric alias of `buf_ptr`, or NULL after a `NIIN:` line
/// that says why (on every PE when any PE's arguments are wrong).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_register_symmetric(
    buf_ptr: *mut c_void,
    size: usize,
    flags: c_int,
) -> *mut c_void {
    value_call("nvshmemx_buffer_register_symmetric", null_mut(), || {
        let world = state::world()?;
        if flags != 0 {
            // Still take part in the agreement (as a PE with no buffer), so the other PEs
            // fail with this PE named instead of waiting for it.
            let _ = world.register_symmetric(null_mut(), size);
            return Err(FfiError::BadArgument(format!(
                "flags is {flags}: NVSHMEM 3.4.5 takes only 0"
            )));
        }
        let view = world.register_symmetric(buf_ptr.cast(), size)?;
        crate::modules::publish_registered(&world)?;
        Ok(local_address(&world, view.offset()))
    })
}

/// Unregisters a buffer of [`nvshmemx_buffer_register_symmetric`]
/// (`nvshmemx_buffer_unregister_symmetric`, collective): `mmap_ptr` is the alias that
/// call returned, `size` the size registered. 0, or `NVSHMEMX_ERROR_INVALID_VALUE` after
/// a `NIIN:` line (on every PE when any PE names no registered buffer).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister_symmetric(
    mmap_ptr: *mut c_void,
    size: usize,
) -> c_int {
    status_call("nvshmemx_buffer_unregister_symmetric", || {
        let world = state::world()?;
        // An address below the heap names no buffer: an offset no buffer has.
        let offset = (mmap_ptr as u64)
            .checked_sub(world.heap_base() as u64)
            .unwrap_or(u64::MAX);
        world.unregister_symmetric(offset, size)?;
        crate::modules::publish_registered(&world)
    })
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
}
