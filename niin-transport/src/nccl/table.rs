//! The raw table: one optional function pointer per NCCL host function niin-rs uses,
//! looked up once when the library is opened.
//!
//! Prototypes are those of the NCCL 2.31.2 headers (`nccl.h`, `nccl_device/core.h`);
//! `cudaStream_t` is [`CudaStream`]. Every entry is an `Option`: a symbol the library does
//! not export is `None`, and only the feature that needs it fails
//! ([`NcclError::MissingSymbol`](super::NcclError::MissingSymbol)). The prototypes of the
//! functions present in older libraries are the same there (checked against the 2.28.3,
//! 2.28.9, 2.29.2, 2.29.3, 2.29.7 and 2.30.3 headers).
//!
//! Which symbols the real libraries export (read with `dlsym` from the 2.28.3 and 2.28.9
//! wheels, the 2.29.2, 2.29.3, 2.29.7 and 2.30.3 wheels and the 2.31.2 bundle): 2.28.x lacks
//! `ncclCommQueryProperties`, `ncclGetPeerDevicePointer`, `ncclGetLsaDevicePointer`,
//! `ncclWinGetUserPtr`, `ncclPutSignal`, `ncclSignal` and `ncclWaitSignal`; 2.29.2 and
//! later export all of them.

use std::os::raw::{c_char, c_int, c_uint, c_void};

use super::sys::{
    ncclComm_t, ncclCommProperties_t, ncclConfig_t, ncclDataType_t, ncclDevComm, ncclRedOp_t,
    ncclResult_t, ncclUniqueId, ncclWaitSignalDesc_t, ncclWindow_t,
};

/// A CUDA stream as NCCL's prototypes take it (`cudaStream_t`; null is the legacy default
/// stream).
pub type CudaStream = *mut c_void;

/// One entry of the table: the C name, the version that introduced it and what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolInfo {
    /// The field of [`NcclTable`] holding it.
    pub field: &'static str,
    /// The exported C name.
    pub name: &'static str,
    /// The first NCCL version that has it.
    pub since: &'static str,
    /// What niin-rs needs it for (named in `MissingSymbol` errors).
    pub feature: &'static str,
}

/// Looks `name` (NUL-terminated) up in `lib`.
///
/// # Safety
/// `T` must be the exact type of the symbol (a function pointer type matching its C
/// prototype).
unsafe fn lookup<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Option<T> {
    // SAFETY: the caller guarantees that T is the symbol's real type.
    let symbol = unsafe { lib.get::<T>(name) };
    symbol.ok().map(|s| *s)
}

macro_rules! nccl_table {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident = $name:literal, since $since:literal, for $feature:literal:
            fn($($arg:ty),* $(,)?) -> $ret:ty;
    )*) => {
        /// The NCCL host functions niin-rs calls, as optional function pointers (`None`: the
        /// loaded library does not export the symbol).
        ///
        /// The pointers stay valid for as long as the library is loaded; a
        /// [`Nccl`](super::Nccl) never unloads its library, so a table obtained from one
        /// lives for the whole process.
        #[derive(Debug, Clone, Copy)]
        pub struct NcclTable {
            $(
                $(#[doc = $doc])*
                #[doc = concat!("\n\n`", $name, "`, since NCCL ", $since, ".")]
                pub $field: Option<unsafe extern "C" fn($($arg),*) -> $ret>,
            )*
        }

        impl NcclTable {
            /// Every entry of the table, in declaration order.
            pub const SYMBOLS: &'static [SymbolInfo] = &[
                $(SymbolInfo {
                    field: stringify!($field),
                    name: $name,
                    since: $since,
                    feature: $feature,
                },)*
            ];

            /// A table with no symbol at all.
            pub const fn empty() -> Self {
                Self { $($field: None,)* }
            }

            /// Looks every symbol up in `lib`.
            ///
            /// # Safety
            /// `lib` must be an NCCL library: the symbols it exports under these names must
            /// have the prototypes of NCCL's headers.
            pub(crate) unsafe fn load(lib: &libloading::Library) -> Self {
                Self {
                    $(
                        // SAFETY: the caller guarantees lib is NCCL, whose symbol of this
                        // name has this prototype.
                        $field: unsafe { lookup(lib, concat!($name, "\0").as_bytes()) },
                    )*
                }
            }

            /// Whether the library exports `name` (a C name, such as `"ncclPutSignal"`).
            /// Names outside the table are reported as absent.
            pub fn has(&self, name: &str) -> bool {
                $(if name == $name { return self.$field.is_some(); })*
                false
            }
        }
    };
}

nccl_table! {
    /// The library's `NCCL_VERSION_CODE`.
    get_version = "ncclGetVersion", since "2.3", for "reading the NCCL version":
        fn(*mut c_int) -> ncclResult_t;
    /// A new bootstrap id for `ncclCommInitRank*`.
    get_unique_id = "ncclGetUniqueId", since "2.0", for "creating a communicator id":
        fn(*mut ncclUniqueId) -> ncclResult_t;
    /// Communicator creation with the default configuration.
    comm_init_rank = "ncclCommInitRank", since "2.0", for "creating a communicator":
        fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> ncclResult_t;
    /// Communicator creation with an `ncclConfig_t`.
    comm_init_rank_config = "ncclCommInitRankConfig", since "2.14",
        for "creating a communicator with a configuration":
        fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int, *mut ncclConfig_t) -> ncclResult_t;
    /// A communicator of a subset of a communicator's ranks (collective over the parent):
    /// the host collectives of a team with PEs on other nodes.
    comm_split = "ncclCommSplit", since "2.18", for "a team's communicator":
        fn(ncclComm_t, c_int, c_int, *mut ncclComm_t, *mut ncclConfig_t) -> ncclResult_t;
    /// Flushes a communicator's operations before `ncclCommDestroy`.
    comm_finalize = "ncclCommFinalize", since "2.14", for "releasing a communicator":
        fn(ncclComm_t) -> ncclResult_t;
    /// Frees a communicator's local resources.
    comm_destroy = "ncclCommDestroy", since "2.0", for "releasing a communicator":
        fn(ncclComm_t) -> ncclResult_t;
    /// Frees a communicator, aborting what is still running.
    comm_abort = "ncclCommAbort", since "2.4", for "aborting a communicator":
        fn(ncclComm_t) -> ncclResult_t;
    /// The number of ranks.
    comm_count = "ncclCommCount", since "2.0", for "reading the number of ranks":
        fn(ncclComm_t, *mut c_int) -> ncclResult_t;
    /// This process's rank.
    comm_user_rank = "ncclCommUserRank", since "2.0", for "reading the rank":
        fn(ncclComm_t, *mut c_int) -> ncclResult_t;
    /// The CUDA device of the communicator.
    comm_cu_device = "ncclCommCuDevice", since "2.0", for "reading the CUDA device":
        fn(ncclComm_t, *mut c_int) -> ncclResult_t;
    /// Asynchronous errors and the state of a non-blocking communicator.
    comm_get_async_error = "ncclCommGetAsyncError", since "2.4",
        for "polling a communicator's state":
        fn(ncclComm_t, *mut ncclResult_t) -> ncclResult_t;
    /// The name of a result code.
    get_error_string = "ncclGetErrorString", since "2.0", for "naming NCCL errors":
        fn(ncclResult_t) -> *const c_char;
    /// NCCL's message about the last error.
    get_last_error = "ncclGetLastError", since "2.13", for "explaining NCCL errors":
        fn(ncclComm_t) -> *const c_char;
    /// All-reduce (host barriers and agreement between PEs).
    all_reduce = "ncclAllReduce", since "2.0", for "all-reduce (host barriers)":
        fn(*const c_void, *mut c_void, usize, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           CudaStream) -> ncclResult_t;
    /// Broadcast.
    broadcast = "ncclBroadcast", since "2.2", for "broadcast":
        fn(*const c_void, *mut c_void, usize, ncclDataType_t, c_int, ncclComm_t, CudaStream)
            -> ncclResult_t;
    /// Reduce-scatter (host collectives over the world).
    reduce_scatter = "ncclReduceScatter", since "2.2", for "host reducescatter over the world":
        fn(*const c_void, *mut c_void, usize, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           CudaStream) -> ncclResult_t;
    /// All-gather (host fcollect over the world).
    all_gather = "ncclAllGather", since "2.2", for "host fcollect over the world":
        fn(*const c_void, *mut c_void, usize, ncclDataType_t, ncclComm_t, CudaStream)
            -> ncclResult_t;
    /// All-to-all (host alltoall over the world).
    all_to_all = "ncclAlltoAll", since "2.28", for "host alltoall over the world":
        fn(*const c_void, *mut c_void, usize, ncclDataType_t, ncclComm_t, CudaStream)
            -> ncclResult_t;
    /// Opens a group of NCCL calls.
    group_start = "ncclGroupStart", since "2.0", for "grouping NCCL calls":
        fn() -> ncclResult_t;
    /// Closes a group of NCCL calls.
    group_end = "ncclGroupEnd", since "2.0", for "grouping NCCL calls":
        fn() -> ncclResult_t;
    /// Allocates device memory suited to windows (CUDA VMM).
    mem_alloc = "ncclMemAlloc", since "2.19", for "allocating the symmetric heap":
        fn(*mut *mut c_void, usize) -> ncclResult_t;
    /// Frees memory from `ncclMemAlloc`.
    mem_free = "ncclMemFree", since "2.19", for "freeing the symmetric heap":
        fn(*mut c_void) -> ncclResult_t;
    /// Registers a window (collective).
    comm_window_register = "ncclCommWindowRegister", since "2.27",
        for "registering the symmetric heap as a window":
        fn(ncclComm_t, *mut c_void, usize, *mut ncclWindow_t, c_int) -> ncclResult_t;
    /// Deregisters a window (collective).
    comm_window_deregister = "ncclCommWindowDeregister", since "2.27",
        for "deregistering a window":
        fn(ncclComm_t, ncclWindow_t) -> ncclResult_t;
    /// Communicator properties (a versioned struct).
    comm_query_properties = "ncclCommQueryProperties", since "2.29.2",
        for "querying communicator properties (LSA teams, GIN, host RMA support)":
        fn(ncclComm_t, *mut ncclCommProperties_t) -> ncclResult_t;
    /// Creates a device communicator. The requirements struct is passed as an untyped
    /// pointer: its layout belongs to the `nccl_device.h` the kernels were compiled with.
    dev_comm_create = "ncclDevCommCreate", since "2.28.3", for "creating a device communicator":
        fn(ncclComm_t, *const c_void, *mut ncclDevComm) -> ncclResult_t;
    /// Destroys a device communicator.
    dev_comm_destroy = "ncclDevCommDestroy", since "2.28.3",
        for "destroying a device communicator":
        fn(ncclComm_t, *const ncclDevComm) -> ncclResult_t;
    /// The address, in this process, of a peer's window at an offset (NULL: not an LSA
    /// peer).
    get_peer_device_pointer = "ncclGetPeerDevicePointer", since "2.29.2",
        for "host-side peer addresses of a window (LSA)":
        fn(ncclWindow_t, usize, c_int, *mut *mut c_void) -> ncclResult_t;
    /// The address of an LSA-team member's window at an offset.
    get_lsa_device_pointer = "ncclGetLsaDevicePointer", since "2.29.2",
        for "host-side LSA-team addresses of a window":
        fn(ncclWindow_t, usize, c_int, *mut *mut c_void) -> ncclResult_t;
    /// The user pointer a window was registered with.
    win_get_user_ptr = "ncclWinGetUserPtr", since "2.29.2",
        for "reading a window's user pointer":
        fn(ncclComm_t, ncclWindow_t, *mut *mut c_void) -> ncclResult_t;
    /// Host RMA: put + signal (`localbuff, count, datatype, peer, peerWin, peerWinOffset,
    /// sigIdx, ctx, flags, comm, stream`).
    put_signal = "ncclPutSignal", since "2.29.2", for "host-initiated put with signal":
        fn(*const c_void, usize, ncclDataType_t, c_int, ncclWindow_t, usize, c_int, c_int,
           c_uint, ncclComm_t, CudaStream) -> ncclResult_t;
    /// Host RMA: signal only (`peer, sigIdx, ctx, flags, comm, stream`).
    signal = "ncclSignal", since "2.29.2", for "host-initiated signal":
        fn(c_int, c_int, c_int, c_uint, ncclComm_t, CudaStream) -> ncclResult_t;
    /// Host RMA: waits for signal arrivals (`nDesc, signalDescs, comm, stream`).
    wait_signal = "ncclWaitSignal", since "2.29.2", for "host-initiated wait for signals":
        fn(c_int, *mut ncclWaitSignalDesc_t, ncclComm_t, CudaStream) -> ncclResult_t;
}

impl NcclTable {
    /// The entry whose table field is `field`.
    pub fn info(field: &str) -> Option<&'static SymbolInfo> {
        Self::SYMBOLS.iter().find(|s| s.field == field)
    }

    /// The entry whose C name is `name`.
    pub fn info_by_name(name: &str) -> Option<&'static SymbolInfo> {
        Self::SYMBOLS.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_symbol_niin_uses() {
        let names: Vec<&str> = NcclTable::SYMBOLS.iter().map(|s| s.name).collect();
        for name in [
            "ncclGetVersion",
            "ncclGetUniqueId",
            "ncclCommInitRank",
            "ncclCommInitRankConfig",
            "ncclCommSplit",
            "ncclCommFinalize",
            "ncclCommDestroy",
            "ncclCommAbort",
            "ncclCommCount",
            "ncclCommUserRank",
            "ncclCommCuDevice",
            "ncclCommGetAsyncError",
            "ncclGetErrorString",
            "ncclGetLastError",
            "ncclAllReduce",
            "ncclBroadcast",
            "ncclReduceScatter",
            "ncclAllGather",
            "ncclAlltoAll",
            "ncclGroupStart",
            "ncclGroupEnd",
            "ncclMemAlloc",
            "ncclMemFree",
            "ncclCommWindowRegister",
            "ncclCommWindowDeregister",
            "ncclCommQueryProperties",
            "ncclDevCommCreate",
            "ncclDevCommDestroy",
            "ncclGetPeerDevicePointer",
            "ncclGetLsaDevicePointer",
            "ncclWinGetUserPtr",
            "ncclPutSignal",
            "ncclSignal",
            "ncclWaitSignal",
        ] {
            assert!(names.contains(&name), "{name} missing from the table");
        }
        assert_eq!(names.len(), 34);
    }

    #[test]
    fn empty_table_has_nothing() {
        let t = NcclTable::empty();
        assert!(NcclTable::SYMBOLS.iter().all(|s| !t.has(s.name)));
        assert!(!t.has("ncclNotAFunction"));
    }

    #[test]
    fn finds_entries() {
        let i = NcclTable::info("put_signal").unwrap();
        assert_eq!((i.name, i.since), ("ncclPutSignal", "2.29.2"));
        assert_eq!(
            NcclTable::info_by_name("ncclMemAlloc").unwrap().field,
            "mem_alloc"
        );
        assert!(NcclTable::info("nope").is_none());
    }
}
