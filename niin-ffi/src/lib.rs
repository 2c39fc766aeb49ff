//! NVSHMEM's host C ABI, built as `libnvshmem_host.so`.
//!
//! C and CUDA programs compile against the headers in `device/include` (`nvshmem.h`,
//! `nvshmemx.h`) and link this library (`-lnvshmem_host`; `scripts/build-niin-home.sh`
//! lays out an `$NIIN_HOME` with both). Every function has NVSHMEM 3.4.5's signature
//! and is thin: it checks the library's state, converts its arguments, forwards to
//! [`niin_api::World`], and converts the result.
//!
//! # The global-state model
//!
//! NVSHMEM has one library state per process; this crate holds it (the only
//! process-global state in niin-rs: `niin-api` itself owns none). It is one world
//! behind a mutex: `Uninitialized → Initialized(World) → Finalized`, with init and
//! finalize nesting as in NVSHMEM 3.4.5 (a second init counts; the finalize that
//! matches the first ends the world; init after that starts a new world). The lock is
//! never held while communicating: calls work on a clone of the `World` handle. See
//! `state` for the details.
//!
//! # Pointers and offsets
//!
//! C names a symmetric object by its address in this PE's heap; niin-api by its heap
//! offset, the same on every PE. `address - World::heap_base()` is the offset, and
//! `heap_base() + offset` the address `nvshmem_malloc` returns. Every operation checks the
//! range against the live allocations, so a pointer outside the heap or into freed
//! memory is an error, not a stray access.
//!
//! # Errors
//!
//! No call panics across the boundary or aborts the program for wrong use (the one
//! exception: a failed `nvshmem_init` exits, as NVSHMEM documents). A failure writes
//! exactly one line `NIIN: <function>: <what went wrong>` on stderr and returns NVSHMEM's
//! failure value: an `NVSHMEMX_ERROR_*` status from `int`-status functions, -1 from
//! `int`-valued queries, NULL from pointer functions, nothing from `void` functions. See
//! [`FfiError::status`] for which status each error gets.
//!
//! # The unique-ID bootstrap
//!
//! `nvshmemx_get_uniqueid` fills the 124 usable bytes of `nvshmemx_uniqueid_t` with a
//! tagged payload: a mock-transport job id (16 random bytes) or an `ncclUniqueId`;
//! [`uid`] has the layout. `nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, ...)` hands
//! the ID, rank and size to niin-api's unique-ID init (`World::init_unique_id`), which
//! attaches the mock job or creates the NCCL communicator. `NVSHMEMX_INIT_WITH_MPI_COMM` never reaches this library in a
//! working program: `nvshmemx.h` turns it into the unique-ID init (rank 0 makes the ID,
//! `MPI_Bcast` shares it) when the application is compiled with `-DNIIN_HAS_MPI`, so the
//! library never links MPI.
//!
//! # Extensions
//!
//! [`niin_stream_synchronize`] waits for a stream where no CUDA runtime is (the mock
//! transport on a CPU).
//!
//! # Driver-API modules and user buffers
//!
//! [`cumodule`] gives modules loaded with `cuModuleLoad`/`cuLibraryLoad*` their device
//! context (`nvshmemx_cumodule_init`, `nvshmemx_culibrary_init`). `symmetric_buffer` has
//! `nvshmemx_buffer_register_symmetric`: application VMM memory made symmetric on the NCCL
//! transport (its docs say how; the mock refuses). `nvshmemx_collective_launch` is inline code of the headers
//! (`niin/launch.h`), not of this library.

/// Expands `$body` when a row of `for_each_nvshmem_type!` has the marker `$want` in its
/// list (`wait`, `amo`, `ext` or `bitwise`): the typed entry points of one list only. (A
/// macro of this crate, defined before the modules that use it.)
macro_rules! if_marked {
    (wait, [wait $(, $rest:ident)*] $($body:tt)*) => { $($body)* };
    (amo, [amo $(, $rest:ident)*] $($body:tt)*) => { $($body)* };
    (ext, [ext $(, $rest:ident)*] $($body:tt)*) => { $($body)* };
    (bitwise, [bitwise $(, $rest:ident)*] $($body:tt)*) => { $($body)* };
    ($want:ident, [$first:ident $(, $rest:ident)*] $($body:tt)*) => {
        if_marked!($want, [$($rest),*] $($body)*);
    };
    ($want:ident, [] $($body:tt)*) => {};
}

pub mod abi;
pub mod amo;
pub mod coll;
mod convert;
pub mod cumodule;
pub mod error;
mod gin_proxy;
mod heap;
mod init;
mod local_buffer;
pub mod modules;
mod query;
mod rma;
pub mod rma_typed;
mod state;
mod stream;
pub mod stream_typed;
mod strided;
mod symmetric_buffer;
mod sync;
mod teams;
pub mod uid;

pub use cumodule::{
    nvshmemx_culibrary_finalize, nvshmemx_culibrary_init, nvshmemx_cumodule_finalize,
    nvshmemx_cumodule_init,
};
pub use error::{FfiError, last_report, report_count};
pub use heap::{nvshmem_align, nvshmem_calloc, nvshmem_free, nvshmem_malloc, nvshmem_ptr};
pub use init::{
    nvshmem_finalize, nvshmem_global_exit, nvshmem_init, nvshmem_init_thread, nvshmem_query_thread,
    nvshmemx_get_uniqueid, nvshmemx_hostlib_finalize, nvshmemx_hostlib_init_attr,
    nvshmemx_init_attr, nvshmemx_init_status, nvshmemx_set_attr_uniqueid_args,
};
pub use local_buffer::{
    nvshmemx_buffer_register, nvshmemx_buffer_unregister, nvshmemx_buffer_unregister_all,
    nvshmemx_mc_ptr,
};
pub use modules::{niin_register_module, niin_unregister_module};
pub use query::{
    nvshmem_info_get_name, nvshmem_info_get_version, nvshmem_my_pe, nvshmem_n_pes,
    nvshmem_team_my_pe, nvshmem_team_n_pes, nvshmemx_vendor_get_version_info,
};
pub use rma::{
    nvshmem_getmem, nvshmem_getmem_nbi, nvshmem_putmem, nvshmem_putmem_nbi, nvshmem_signal_fetch,
};
pub use stream::{
    CudaStream, niin_stream_synchronize, nvshmemx_barrier_all_on_stream,
    nvshmemx_barrier_on_stream, nvshmemx_getmem_nbi_on_stream, nvshmemx_getmem_on_stream,
    nvshmemx_putmem_nbi_on_stream, nvshmemx_putmem_on_stream, nvshmemx_putmem_signal_nbi_on_stream,
    nvshmemx_putmem_signal_on_stream, nvshmemx_quiet_on_stream, nvshmemx_signal_op_on_stream,
    nvshmemx_signal_wait_until_on_stream, nvshmemx_sync_all_on_stream,
    nvshmemx_team_sync_on_stream,
};
pub use symmetric_buffer::{
    nvshmemx_buffer_register_symmetric, nvshmemx_buffer_unregister_symmetric,
};
pub use sync::{
    nvshmem_barrier, nvshmem_barrier_all, nvshmem_fence, nvshmem_quiet, nvshmem_sync_all,
    nvshmem_team_sync,
};
pub use teams::{
    nvshmem_team_destroy, nvshmem_team_get_config, nvshmem_team_split_2d,
    nvshmem_team_split_strided, nvshmem_team_translate_pe, nvshmemx_team_get_uniqueid,
    nvshmemx_team_init,
};
