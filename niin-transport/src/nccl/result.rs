//! Thin `Result` wrappers: one function per table entry, raw handles in and out, NCCL's
//! result code turned into [`NcclError`](super::NcclError) (with `ncclGetErrorString` and
//! `ncclGetLastError`), a symbol the library lacks into `MissingSymbol`.
//!
//! `ncclInProgress` is not an error at this layer: a non-blocking communicator returns it
//! while it works, and its owner ([`Comm`](super::Comm)) polls `ncclCommGetAsyncError`.
//! The RAII layer (`comm.rs`, `window.rs`, `mem.rs`, `devcomm.rs`) is built on these.

// The wrappers mirror NCCL's C prototypes, some of which take many arguments.
#![allow(clippy::too_many_arguments)]

use std::os::raw::{c_int, c_uint, c_void};

use super::error::Result;
use super::loader::Nccl;
use super::sys;
use super::table::{CudaStream, NcclTable};

/// The C name of a table field (for error messages).
fn c_name(field: &'static str) -> &'static str {
    NcclTable::info(field).map_or(field, |i| i.name)
}

/// Calls table entry `$field` with `$args`, then checks its result against `$comm`.
macro_rules! call {
    ($nccl:expr, $field:ident, $comm:expr; $($arg:expr),* $(,)?) => {{
        let nccl: &Nccl = $nccl;
        let f = nccl.func(nccl.table().$field, stringify!($field))?;
        // SAFETY: `f` has the prototype of NCCL's header for this symbol, and the caller of
        // the enclosing function upholds its contract (live handles, valid pointers).
        let code = unsafe { f($($arg),*) };
        // SAFETY: `$comm` is null or the communicator this call was given, still live.
        unsafe { nccl.check(c_name(stringify!($field)), code, $comm) }
    }};
}

/// `ncclGetVersion`.
pub fn get_version(nccl: &Nccl) -> Result<i32> {
    let mut v: c_int = 0;
    call!(nccl, get_version, std::ptr::null_mut(); &mut v)?;
    Ok(v)
}

/// `ncclGetUniqueId`: a new bootstrap id (starts NCCL's bootstrap root listener in this
/// process; needs no GPU).
pub fn get_unique_id(nccl: &Nccl) -> Result<sys::ncclUniqueId> {
    let mut id = sys::ncclUniqueId { internal: [0; 128] };
    call!(nccl, get_unique_id, std::ptr::null_mut(); &mut id)?;
    Ok(id)
}

/// `ncclCommInitRankConfig`. With a non-blocking configuration the communicator may still
/// be initialising when this returns (`ncclInProgress`).
///
/// # Safety
/// `config` points to an `ncclConfig_t` initialised as `NCCL_CONFIG_INITIALIZER` does,
/// whose string fields are null or valid C strings.
pub unsafe fn comm_init_rank_config(
    nccl: &Nccl,
    n_ranks: c_int,
    id: sys::ncclUniqueId,
    rank: c_int,
    config: *mut sys::ncclConfig_t,
) -> Result<sys::ncclComm_t> {
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    call!(nccl, comm_init_rank_config, std::ptr::null_mut(); &mut comm, n_ranks, id, rank, config)?;
    Ok(comm)
}

/// `ncclCommSplit`: `color` and `key` as NCCL's (`NCCL_SPLIT_NOCOLOR` for a rank that
/// joins no new communicator, which then gets null). With a non-blocking configuration
/// the child may still be initialising when this returns.
///
/// # Safety
/// `comm` is a live communicator of this library, and every rank of it makes this call
/// at the same point of its calls on `comm`; `config` as for [`comm_init_rank_config`].
pub unsafe fn comm_split(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    color: c_int,
    key: c_int,
    config: *mut sys::ncclConfig_t,
) -> Result<sys::ncclComm_t> {
    let mut child: sys::ncclComm_t = std::ptr::null_mut();
    call!(nccl, comm_split, comm; comm, color, key, &mut child, config)?;
    Ok(child)
}

/// `ncclCommFinalize`.
///
/// # Safety
/// `comm` is a live communicator of this library, not finalized yet.
pub unsafe fn comm_finalize(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<()> {
    call!(nccl, comm_finalize, comm; comm)
}

/// `ncclCommDestroy`. The communicator is gone afterwards, whatever the result.
///
/// # Safety
/// `comm` is a live communicator of this library, used by nothing else.
pub unsafe fn comm_destroy(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<()> {
    call!(nccl, comm_destroy, std::ptr::null_mut(); comm)
}

/// `ncclCommAbort`. The communicator is gone afterwards, whatever the result.
///
/// # Safety
/// `comm` is a live communicator of this library, used by nothing else afterwards.
pub unsafe fn comm_abort(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<()> {
    call!(nccl, comm_abort, std::ptr::null_mut(); comm)
}

/// `ncclCommCount`.
///
/// # Safety
/// `comm` is a live communicator of this library.
pub unsafe fn comm_count(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<i32> {
    let mut n: c_int = 0;
    call!(nccl, comm_count, comm; comm, &mut n)?;
    Ok(n)
}

/// `ncclCommUserRank`.
///
/// # Safety
/// `comm` is a live communicator of this library.
pub unsafe fn comm_user_rank(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<i32> {
    let mut r: c_int = 0;
    call!(nccl, comm_user_rank, comm; comm, &mut r)?;
    Ok(r)
}

/// `ncclCommCuDevice`.
///
/// # Safety
/// `comm` is a live communicator of this library.
pub unsafe fn comm_cu_device(nccl: &Nccl, comm: sys::ncclComm_t) -> Result<i32> {
    let mut d: c_int = 0;
    call!(nccl, comm_cu_device, comm; comm, &mut d)?;
    Ok(d)
}

/// `ncclCommGetAsyncError`: the communicator's state (`ncclInProgress` while a
/// non-blocking operation runs, an error code after an asynchronous failure).
///
/// # Safety
/// `comm` is a live communicator of this library.
pub unsafe fn comm_get_async_error(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
) -> Result<sys::ncclResult_t> {
    let mut state = sys::ncclResult_t::ncclSuccess;
    call!(nccl, comm_get_async_error, comm; comm, &mut state)?;
    Ok(state)
}

/// `ncclAllReduce`, enqueued on `stream`.
///
/// # Safety
/// `comm` is live; `send` and `recv` are device buffers of `count` elements of `datatype`
/// that stay valid until the operation completes on `stream`, a valid stream of the
/// communicator's device.
pub unsafe fn all_reduce(
    nccl: &Nccl,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    op: sys::ncclRedOp_t,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, all_reduce, comm; send, recv, count, datatype, op, comm, stream)
}

/// `ncclBroadcast`, enqueued on `stream`.
///
/// # Safety
/// As [`all_reduce`]; `send` is read on `root` only.
pub unsafe fn broadcast(
    nccl: &Nccl,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    root: c_int,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, broadcast, comm; send, recv, count, datatype, root, comm, stream)
}

/// `ncclReduceScatter`, enqueued on `stream`: `send` holds `count` elements per rank.
///
/// # Safety
/// As [`all_reduce`], with `send` of `count × ranks` elements.
pub unsafe fn reduce_scatter(
    nccl: &Nccl,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    op: sys::ncclRedOp_t,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, reduce_scatter, comm; send, recv, count, datatype, op, comm, stream)
}

/// `ncclAllGather`, enqueued on `stream`: `recv` holds `count` elements per rank.
///
/// # Safety
/// As [`all_reduce`], with `recv` of `count × ranks` elements.
pub unsafe fn all_gather(
    nccl: &Nccl,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, all_gather, comm; send, recv, count, datatype, comm, stream)
}

/// `ncclAlltoAll`, enqueued on `stream`: `count` elements to and from every rank.
///
/// # Safety
/// As [`all_reduce`], with `send` and `recv` of `count × ranks` elements.
pub unsafe fn all_to_all(
    nccl: &Nccl,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, all_to_all, comm; send, recv, count, datatype, comm, stream)
}

/// `ncclGroupStart`.
pub fn group_start(nccl: &Nccl) -> Result<()> {
    call!(nccl, group_start, std::ptr::null_mut();)
}

/// `ncclGroupEnd`.
pub fn group_end(nccl: &Nccl) -> Result<()> {
    call!(nccl, group_end, std::ptr::null_mut();)
}

/// `ncclMemAlloc`: `size` bytes of device memory on the current device (CUDA VMM,
/// suitable for windows). Returns the device pointer.
pub fn mem_alloc(nccl: &Nccl, size: usize) -> Result<*mut c_void> {
    let mut ptr: *mut c_void = std::ptr::null_mut();
    call!(nccl, mem_alloc, std::ptr::null_mut(); &mut ptr, size)?;
    Ok(ptr)
}

/// `ncclMemFree`.
///
/// # Safety
/// `ptr` came from `ncclMemAlloc` of this library, is not freed yet and is no longer used
/// (by the host, by kernels, or by a registered window).
pub unsafe fn mem_free(nccl: &Nccl, ptr: *mut c_void) -> Result<()> {
    call!(nccl, mem_free, std::ptr::null_mut(); ptr)
}

/// `ncclCommWindowRegister` (collective), writing the window to `*win`, which may stay
/// null: 2.28 leaves it untouched for a NULL buffer or size 0, and ≥ 2.29.2 returns success
/// with null when the communicator cannot register symmetric memory. With a non-blocking
/// communicator NCCL writes `*win` when the registration completes, after this returns.
///
/// # Safety
/// `comm` is live; `buf` is device memory of at least `size` bytes that stays allocated
/// until the window is deregistered; `win` is valid for writes until the registration has
/// completed (for a non-blocking communicator: until `ncclCommGetAsyncError` no longer
/// reports `ncclInProgress`).
pub unsafe fn comm_window_register(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    buf: *mut c_void,
    size: usize,
    win: *mut sys::ncclWindow_t,
    flags: c_int,
) -> Result<()> {
    call!(nccl, comm_window_register, comm; comm, buf, size, win, flags)
}

/// `ncclCommWindowDeregister` (collective).
///
/// # Safety
/// `comm` is live and `win` is one of its windows, not deregistered yet and no longer
/// used.
pub unsafe fn comm_window_deregister(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    win: sys::ncclWindow_t,
) -> Result<()> {
    call!(nccl, comm_window_deregister, comm; comm, win)
}

/// `ncclCommQueryProperties` (2.29.2+).
///
/// # Safety
/// `comm` is live; `props` points to writable memory holding an initialised
/// `ncclCommProperties_t` header (`size`, `magic`, `version`) and large enough for every
/// field the library may write.
pub unsafe fn comm_query_properties(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    props: *mut sys::ncclCommProperties_t,
) -> Result<()> {
    call!(nccl, comm_query_properties, comm; comm, props)
}

/// `ncclDevCommCreate` (collective).
///
/// # Safety
/// `comm` is live; `reqs` points to an `ncclDevCommRequirements_t` and `out` to storage
/// for an `ncclDevComm`, both of the layout the library expects for `reqs->version` (see
/// `NCCL-VERSIONS.md`: compiled against the kernels' `nccl_device.h`).
pub unsafe fn dev_comm_create(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    reqs: *const c_void,
    out: *mut sys::ncclDevComm,
) -> Result<()> {
    call!(nccl, dev_comm_create, comm; comm, reqs, out)
}

/// `ncclDevCommDestroy`.
///
/// # Safety
/// `comm` is live and `dev` is a device communicator `ncclDevCommCreate` made for it, not
/// destroyed yet and no longer used by kernels.
pub unsafe fn dev_comm_destroy(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    dev: *const sys::ncclDevComm,
) -> Result<()> {
    call!(nccl, dev_comm_destroy, comm; comm, dev)
}

/// `ncclGetPeerDevicePointer` (2.29.2+): this process's address of `peer`'s window at
/// `offset`; null when `peer` is not reachable by load/store (not an LSA peer).
///
/// # Safety
/// `win` is a live window of this library.
pub unsafe fn get_peer_device_pointer(
    nccl: &Nccl,
    win: sys::ncclWindow_t,
    offset: usize,
    peer: c_int,
) -> Result<*mut c_void> {
    let mut out: *mut c_void = std::ptr::null_mut();
    call!(nccl, get_peer_device_pointer, std::ptr::null_mut(); win, offset, peer, &mut out)?;
    Ok(out)
}

/// `ncclGetLsaDevicePointer` (2.29.2+): the address of LSA-team member `lsa_rank`'s
/// window at `offset`.
///
/// # Safety
/// `win` is a live window of this library.
pub unsafe fn get_lsa_device_pointer(
    nccl: &Nccl,
    win: sys::ncclWindow_t,
    offset: usize,
    lsa_rank: c_int,
) -> Result<*mut c_void> {
    let mut out: *mut c_void = std::ptr::null_mut();
    call!(nccl, get_lsa_device_pointer, std::ptr::null_mut(); win, offset, lsa_rank, &mut out)?;
    Ok(out)
}

/// `ncclWinGetUserPtr` (2.29.2+): the buffer `win` was registered with.
///
/// # Safety
/// `comm` is live and `win` one of its live windows.
pub unsafe fn win_get_user_ptr(
    nccl: &Nccl,
    comm: sys::ncclComm_t,
    win: sys::ncclWindow_t,
) -> Result<*mut c_void> {
    let mut out: *mut c_void = std::ptr::null_mut();
    call!(nccl, win_get_user_ptr, comm; comm, win, &mut out)?;
    Ok(out)
}

/// `ncclPutSignal` (2.29.2+), enqueued on `stream`.
///
/// # Safety
/// `comm` is live; `local` is device memory of `count` elements of `datatype` (in
/// 2.29.2–2.30.7 inside a window registered with `NCCL_WIN_COLL_SYMMETRIC`) valid until the
/// operation completes; `win` is a live window of `comm` and `offset` plus the payload fit
/// in `peer`'s part of it; `stream` is a valid stream of the communicator's device.
pub unsafe fn put_signal(
    nccl: &Nccl,
    local: *const c_void,
    count: usize,
    datatype: sys::ncclDataType_t,
    peer: c_int,
    win: sys::ncclWindow_t,
    offset: usize,
    sig_idx: c_int,
    ctx: c_int,
    flags: c_uint,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, put_signal, comm;
        local, count, datatype, peer, win, offset, sig_idx, ctx, flags, comm, stream)
}

/// `ncclSignal` (2.29.2+), enqueued on `stream`.
///
/// # Safety
/// `comm` is live and `stream` a valid stream of its device.
pub unsafe fn signal(
    nccl: &Nccl,
    peer: c_int,
    sig_idx: c_int,
    ctx: c_int,
    flags: c_uint,
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    call!(nccl, signal, comm; peer, sig_idx, ctx, flags, comm, stream)
}

/// `ncclWaitSignal` (2.29.2+), enqueued on `stream`.
///
/// # Safety
/// `comm` is live and `stream` a valid stream of its device.
pub unsafe fn wait_signal(
    nccl: &Nccl,
    descs: &mut [sys::ncclWaitSignalDesc_t],
    comm: sys::ncclComm_t,
    stream: CudaStream,
) -> Result<()> {
    let n = c_int::try_from(descs.len()).map_err(|_| super::NcclError::InvalidArgument {
        what: format!("{} signal descriptors do not fit in an int", descs.len()),
    })?;
    call!(nccl, wait_signal, comm; n, descs.as_mut_ptr(), comm, stream)
}
