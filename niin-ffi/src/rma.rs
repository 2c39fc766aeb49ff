//! Host-initiated blocking one-sided operations: `nvshmem_putmem`, `nvshmem_getmem`,
//! their `_nbi` forms, and `nvshmem_signal_fetch`.
//!
//! "Blocking" is NVSHMEM's host meaning: when a put returns, `source` may be reused;
//! when a get returns, `dest` holds the data. The `_nbi` forms are the blocking ones (a
//! valid implementation: completion is allowed before `nvshmem_quiet`). Local buffers may
//! be any memory the transport can read or write (host memory on the mock; device or
//! host memory on a GPU transport).

use std::ffi::{c_int, c_void};

use crate::convert;
use crate::error::{FfiResult, value_call, void_entries};
use crate::state;

/// # Safety
/// `source..source + bytes` must be readable for the call.
pub(crate) unsafe fn putmem(
    dest: *mut c_void,
    source: *const c_void,
    bytes: usize,
    pe: c_int,
) -> FfiResult<()> {
    let w = state::world()?;
    if bytes == 0 {
        return Ok(());
    }
    let pe = convert::pe(&w, pe)?;
    let dst = convert::sym(&w, dest, bytes, "dest")?;
    if source.is_null() {
        return Err(crate::error::FfiError::Null("source"));
    }
    // SAFETY: `source` is non-null and readable for `bytes` bytes by the caller's contract.
    Ok(unsafe { w.putmem(dst, source.cast(), bytes, pe) }?)
}

/// # Safety
/// `dest..dest + bytes` must be writable, and not otherwise accessed, for the call.
pub(crate) unsafe fn getmem(
    dest: *mut c_void,
    source: *const c_void,
    bytes: usize,
    pe: c_int,
) -> FfiResult<()> {
    let w = state::world()?;
    if bytes == 0 {
        return Ok(());
    }
    let pe = convert::pe(&w, pe)?;
    let src = convert::sym(&w, source, bytes, "source")?;
    if dest.is_null() {
        return Err(crate::error::FfiError::Null("dest"));
    }
    // SAFETY: `dest` is non-null and writable for `bytes` bytes by the caller's contract.
    Ok(unsafe { w.getmem(dest.cast(), src, bytes, pe) }?)
}

void_entries! {
    /// Copies `bytes` bytes at `source` (local memory) into the symmetric object `dest` on
    /// `pe` (`nvshmem_putmem`); `source` may be reused when it returns. Errors are a `NIIN:`
    /// line. 0 bytes do nothing.
    ///
    /// # Safety
    /// `source..source + bytes` must be readable during the call.
    fn nvshmem_putmem(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int) => putmem;

    /// As [`nvshmem_putmem`] (`nvshmem_putmem_nbi`: niin-rs completes it at once).
    ///
    /// # Safety
    /// As [`nvshmem_putmem`].
    fn nvshmem_putmem_nbi(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int) => putmem;

    /// Copies `bytes` bytes of the symmetric object `source` on `pe` to `dest` (local
    /// memory) (`nvshmem_getmem`); `dest` holds them when it returns. Errors are a `NIIN:`
    /// line. 0 bytes do nothing.
    ///
    /// # Safety
    /// `dest..dest + bytes` must be writable, and not otherwise accessed, during the call.
    fn nvshmem_getmem(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int) => getmem;

    /// As [`nvshmem_getmem`] (`nvshmem_getmem_nbi`: niin-rs completes it at once).
    ///
    /// # Safety
    /// As [`nvshmem_getmem`].
    fn nvshmem_getmem_nbi(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int) => getmem;
}

/// Atomically reads this PE's signal word `sig_addr` (`nvshmem_signal_fetch`); 0 with a
/// `NIIN:` line on error.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_signal_fetch(sig_addr: *mut u64) -> u64 {
    value_call("nvshmem_signal_fetch", 0, || {
        let w = state::world()?;
        let sig = convert::signal(&w, sig_addr, "sig_addr")?;
        Ok(w.signal_fetch(sig)?)
    })
}
