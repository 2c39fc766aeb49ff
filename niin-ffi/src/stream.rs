//! Stream-ordered operations (`nvshmemx_*_on_stream`): each call checks its arguments,
//! enqueues the operation on `cstrm` and returns without waiting; the operation runs
//! after everything enqueued on `cstrm` before it. `cstrm` is a `cudaStream_t` (NULL is
//! the default stream) on a GPU transport and names a queue of the mock transport on the
//! CPU, where the default stream also exists.
//!
//! Errors found by the call are a `NIIN:` line (the operation is not enqueued); a
//! failure while the stream runs (a wait that times out) is reported by
//! [`niin_stream_synchronize`], niin-rs's way to wait for a stream where no CUDA runtime
//! is (the mock); CUDA programs use `cudaStreamSynchronize`.

use std::ffi::{c_int, c_void};

use niin_api::{Stream, World};

use crate::convert;
use crate::error::{FfiResult, status_call, value_call, void_entries};
use crate::state;

/// `cudaStream_t` as it crosses the ABI: an opaque pointer.
pub type CudaStream = *mut c_void;

/// Runs `op` on `cstrm` of the world.
pub(crate) fn on_stream<R>(
    cstrm: CudaStream,
    op: impl FnOnce(&World, &Stream<'_>) -> FfiResult<R>,
) -> FfiResult<R> {
    let w = state::world()?;
    let stream = w.borrow_stream(convert::stream(cstrm));
    op(&w, &stream)
}

/// Enqueues a barrier over all PEs (`nvshmemx_barrier_all_on_stream`): it completes the
/// stream's earlier operations and waits for every PE's barrier.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_barrier_all_on_stream(cstrm: CudaStream) {
    value_call("nvshmemx_barrier_all_on_stream", (), || {
        on_stream(cstrm, |_, s| Ok(s.barrier_all()?))
    });
}

/// Enqueues a sync over all PEs (`nvshmemx_sync_all_on_stream`; a barrier in niin-rs).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_sync_all_on_stream(cstrm: CudaStream) {
    value_call("nvshmemx_sync_all_on_stream", (), || {
        on_stream(cstrm, |_, s| Ok(s.barrier_all()?))
    });
}

/// Enqueues a barrier over `team` (`nvshmemx_barrier_on_stream`). Returns 0 or an
/// `NVSHMEMX_ERROR_*` value.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_barrier_on_stream(team: c_int, cstrm: CudaStream) -> c_int {
    status_call("nvshmemx_barrier_on_stream", || {
        on_stream(cstrm, |w, s| Ok(s.barrier(convert::team(w, team)?)?))
    })
}

/// Enqueues a sync over `team` (`nvshmemx_team_sync_on_stream`; a barrier in niin-rs).
/// Returns 0 or an `NVSHMEMX_ERROR_*` value.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_team_sync_on_stream(team: c_int, cstrm: CudaStream) -> c_int {
    status_call("nvshmemx_team_sync_on_stream", || {
        on_stream(cstrm, |w, s| Ok(s.barrier(convert::team(w, team)?)?))
    })
}

/// Enqueues a quiet (`nvshmemx_quiet_on_stream`): the stream's earlier puts and signals
/// complete before its later operations run.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_quiet_on_stream(cstrm: CudaStream) {
    value_call("nvshmemx_quiet_on_stream", (), || {
        on_stream(cstrm, |_, s| Ok(s.quiet()?))
    });
}

/// # Safety
/// `source..source + bytes` must stay readable until the stream has run the put.
pub(crate) unsafe fn putmem_on_stream(
    dest: *mut c_void,
    source: *const c_void,
    bytes: usize,
    pe: c_int,
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        if bytes == 0 {
            return Ok(());
        }
        let pe = convert::pe(w, pe)?;
        let dst = convert::sym(w, dest, bytes, "dest")?;
        convert::local(source, bytes, "source")?;
        // SAFETY: `source` is non-null and stays readable until the stream runs the put
        // (this function's contract).
        Ok(unsafe { s.putmem(dst, source.cast(), bytes, pe) }?)
    })
}

/// # Safety
/// `dest..dest + bytes` must stay writable, and not otherwise accessed, until the stream
/// has run the get.
pub(crate) unsafe fn getmem_on_stream(
    dest: *mut c_void,
    source: *const c_void,
    bytes: usize,
    pe: c_int,
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        if bytes == 0 {
            return Ok(());
        }
        let pe = convert::pe(w, pe)?;
        let src = convert::sym(w, source, bytes, "source")?;
        convert::local(dest, bytes, "dest")?;
        // SAFETY: `dest` is non-null and stays writable, unaliased, until the stream runs
        // the get (this function's contract).
        Ok(unsafe { s.getmem(dest.cast(), src, bytes, pe) }?)
    })
}

void_entries! {
    /// Enqueues a put of `bytes` bytes at `source` (local memory) into the symmetric object
    /// `dest` on `pe` (`nvshmemx_putmem_on_stream`).
    ///
    /// # Safety
    /// `source..source + bytes` must stay readable until the stream has run the put.
    fn nvshmemx_putmem_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, cstrm: CudaStream) => putmem_on_stream;

    /// As [`nvshmemx_putmem_on_stream`] (`nvshmemx_putmem_nbi_on_stream`).
    ///
    /// # Safety
    /// As [`nvshmemx_putmem_on_stream`].
    fn nvshmemx_putmem_nbi_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, cstrm: CudaStream) => putmem_on_stream;

    /// Enqueues a get of `bytes` bytes of the symmetric object `source` on `pe` into `dest`
    /// (local memory) (`nvshmemx_getmem_on_stream`).
    ///
    /// # Safety
    /// `dest..dest + bytes` must stay writable, and not otherwise accessed, until the stream
    /// has run the get.
    fn nvshmemx_getmem_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, cstrm: CudaStream) => getmem_on_stream;

    /// As [`nvshmemx_getmem_on_stream`] (`nvshmemx_getmem_nbi_on_stream`).
    ///
    /// # Safety
    /// As [`nvshmemx_getmem_on_stream`].
    fn nvshmemx_getmem_nbi_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, pe: c_int, cstrm: CudaStream) => getmem_on_stream;

    /// Enqueues a put of `bytes` bytes at `source` into `dest` on `pe`, then the update of
    /// the signal word `sig_addr` on `pe` by `sig_op` (`NVSHMEM_SIGNAL_SET` or
    /// `NVSHMEM_SIGNAL_ADD`) with `signal` (`nvshmemx_putmem_signal_on_stream`): a PE that
    /// sees the signal sees the data.
    ///
    /// # Safety
    /// `source..source + bytes` must stay readable until the stream has run the put.
    #[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
    fn nvshmemx_putmem_signal_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int, cstrm: CudaStream) => putmem_signal_on_stream;

    /// As [`nvshmemx_putmem_signal_on_stream`] (`nvshmemx_putmem_signal_nbi_on_stream`).
    ///
    /// # Safety
    /// As [`nvshmemx_putmem_signal_on_stream`].
    #[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
    fn nvshmemx_putmem_signal_nbi_on_stream(dest: *mut c_void, source: *const c_void, bytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int, cstrm: CudaStream) => putmem_signal_on_stream;
}

/// # Safety
/// As [`nvshmemx_putmem_signal_on_stream`].
#[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
pub(crate) unsafe fn putmem_signal_on_stream(
    dest: *mut c_void,
    source: *const c_void,
    bytes: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        let pe = convert::pe(w, pe)?;
        let op = convert::signal_op(sig_op)?;
        let sig = convert::signal(w, sig_addr, "sig_addr")?;
        let dst = if bytes == 0 {
            // Only the signal: the data part is an empty view of the signal's allocation.
            niin_api::SymSlice::from_raw_parts(w, sig.offset(), 0)
        } else {
            convert::sym(w, dest, bytes, "dest")?
        };
        convert::local(source, bytes, "source")?;
        // SAFETY: `source` is readable for `bytes` bytes until the stream runs the put
        // (this function's contract); with 0 bytes it is not read.
        Ok(unsafe { s.putmem_signal(dst, source.cast(), bytes, sig, signal, op, pe) }?)
    })
}

/// Enqueues the update of the signal word `sig_addr` on `pe` by `sig_op` with `signal`
/// (`nvshmemx_signal_op_on_stream`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_signal_op_on_stream(
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    cstrm: CudaStream,
) {
    value_call("nvshmemx_signal_op_on_stream", (), || {
        on_stream(cstrm, |w, s| {
            let pe = convert::pe(w, pe)?;
            let op = convert::signal_op(sig_op)?;
            let sig = convert::signal(w, sig_addr, "sig_addr")?;
            Ok(s.signal_op(sig, signal, op, pe)?)
        })
    });
}

/// Enqueues a wait: the stream's later operations run once this PE's signal word
/// `sig_addr` satisfies `word <cmp> cmp_value` (`nvshmemx_signal_wait_until_on_stream`;
/// `cmp` is an `NVSHMEM_CMP_*` value).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_signal_wait_until_on_stream(
    sig_addr: *mut u64,
    cmp: c_int,
    cmp_value: u64,
    cstrm: CudaStream,
) {
    value_call("nvshmemx_signal_wait_until_on_stream", (), || {
        on_stream(cstrm, |w, s| {
            let cmp = convert::cmp(cmp)?;
            let sig = convert::signal(w, sig_addr, "sig_addr")?;
            Ok(s.wait_until(sig, cmp, cmp_value)?)
        })
    });
}

/// Waits until everything enqueued on `cstrm` so far has run (a niin-rs extension, for
/// programs without a CUDA runtime: the mock transport). Returns 0, or an
/// `NVSHMEMX_ERROR_*` value after a `NIIN:` line naming the first operation of the
/// stream that failed since the last synchronize.
#[unsafe(no_mangle)]
pub extern "C" fn niin_stream_synchronize(cstrm: CudaStream) -> c_int {
    status_call("niin_stream_synchronize", || {
        on_stream(cstrm, |_, s| Ok(s.synchronize()?))
    })
}
