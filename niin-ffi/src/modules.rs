//! The device context of every CUDA module: registration of the per-translation-unit hooks
//! of `device/include/niin/impl/context_impl.h`, their setup at init and teardown at
//! finalize, and the check that a module's NCCL headers can work with the loaded NCCL.
//!
//! # Why per module
//!
//! The device API is header-only, so every CUDA translation unit (TU) that includes
//! `nvshmem.h` has its own copy of the context slot (`static __device__`): one per TU
//! without `-rdc`, and still one per TU with it. Each TU registers itself from a static
//! initializer with [`niin_register_module`], handing a [`NiinModuleHooks`]: the
//! `NCCL_VERSION_CODE`, `sizeof(ncclDevComm)` and `sizeof(ncclDevCommRequirements)` of the
//! NCCL headers it was compiled with, and three functions compiled in the TU:
//!
//! - `create_dev_comm(info, storage, capacity, err, errlen)` fills an
//!   `ncclDevCommRequirements` from the TU's own headers and calls `ncclDevCommCreate`
//!   (through the pointer in [`NiinHostInfo`]: the NCCL this library loaded, one per
//!   process) into `storage`;
//! - `setup(info, dev_comm, err, errlen)` builds the TU's `niin_device_context` around that
//!   `ncclDevComm` and writes it into the TU's `static __device__` context with a kernel of
//!   the TU's own module (not `cudaMemcpyToSymbol`, unreliable for `-rdc` symbols); the
//!   kernel also fills the TU's LSA table (per peer, the distance from the heap to NCCL's
//!   peer pointer), which setup allocates;
//! - `teardown(info, err, errlen)` zeroes the context and frees the LSA table.
//!
//! # When
//!
//! `attach` runs at the end of every successful init: it sets up each registered module
//! in registration order. A module registered while a world is attached (a `dlopen`ed
//! library) is set up at registration. `detach_at_finalize` runs at the last finalize,
//! before the world's own finalize: once this PE's device work is done and every PE has
//! reached it (a barrier), every module's teardown, then the device communicators are
//! destroyed. `ncclDevCommCreate` is collective (`ncclDevCommDestroy` may be), so every PE
//! must register the same modules in the same order (one binary on every PE does) and load
//! a later library at the same point of its program.
//!
//! # One device communicator per header ABI
//!
//! Modules compiled against the same headers (same version code and struct sizes) share one
//! `ncclDevComm`: the first of them creates it into storage this library owns (4 KiB, so a
//! library that writes a larger layout than the headers declare writes into zeroed slack,
//! not over someone's memory), the others copy it. So a barrier started by a kernel of one
//! TU and matched on another PE by a kernel of another TU uses the same NCCL barrier, and
//! init makes one collective creation per header version, not one per TU. This library
//! destroys each device communicator (`ncclDevCommDestroy`, under the communicator's lock)
//! after every module's teardown.
//!
//! A module that is unregistered (its static destructor: `dlclose`, or process exit) is
//! forgotten without calling its hooks: at exit the CUDA runtime may be gone already, and
//! after `dlclose` nothing can launch its kernels any more. Its LSA table (8 bytes per LSA
//! peer) is not freed.
//!
//! # The ABI check
//!
//! [`check_abi`] decides, before anything is created, whether a module's headers can work
//! with the loaded library (`shared/NCCL-VERSIONS.md` has the facts; the table is in its
//! docs). A refusal fails init with one `NIIN:` line that names both versions.
//!
//! On a world without NCCL (the CPU mock) no module is set up: the slots stay NULL.
//!
//! # A one-PE world without a device communicator
//!
//! NCCL 2.28.3 refuses `ncclDevCommCreate` for a communicator of one rank. A one-PE world
//! needs nothing of a devComm (the PE reaches only its own heap, by address; a barrier of
//! one PE is a fence), so when creation fails there the modules are set up with none
//! (`dev_comm` NULL to `setup`, `has_dev_comm = 0` in the context) instead of failing init.
//! With more PEs a failed creation fails init.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use niin_api::World;
use niin_transport::lsa::device_support::DeviceParts;
use niin_transport::nccl::{DevComm, NcclVersion, sys};

use crate::error::{FfiError, FfiResult, report, status_call, value_call};

/// Version of [`NiinModuleHooks`] and [`NiinHostInfo`] (`NIIN_MODULE_ABI_VERSION` in
/// `context_impl.h`).
pub const MODULE_ABI_VERSION: c_uint = 8;

/// Bytes of the storage each device communicator is created into.
pub const DEV_COMM_CAPACITY: usize = 4096;

/// The environment variable that sets [`NiinHostInfo::barrier_count`].
pub const BARRIER_CTAS_VAR: &str = "NIIN_BARRIER_CTAS";

/// CTAs that may be inside `nvshmem_barrier_all` at once, by default: 2 per SM of an H100
/// or H200 (132 SMs). The same on every PE whatever its GPU, as it must be: NCCL lays the
/// barriers out in symmetric memory.
pub const DEFAULT_BARRIER_CTAS: u32 = 2 * 132;

/// The largest [`BARRIER_CTAS_VAR`] accepted.
pub const MAX_BARRIER_CTAS: u32 = 1 << 16;

/// `ncclDevCommCreate`'s prototype, with the requirements untyped (their layout is the
/// module's headers').
pub type DevCommCreateFn = unsafe extern "C" fn(
    sys::ncclComm_t,
    *const c_void,
    *mut sys::ncclDevComm,
) -> sys::ncclResult_t;
/// `ncclDevCommDestroy`'s prototype.
pub type DevCommDestroyFn =
    unsafe extern "C" fn(sys::ncclComm_t, *const sys::ncclDevComm) -> sys::ncclResult_t;
/// `ncclGetErrorString`'s prototype.
pub type GetErrorStringFn = unsafe extern "C" fn(sys::ncclResult_t) -> *const c_char;
/// `ncclGetLastError`'s prototype.
pub type GetLastErrorFn = unsafe extern "C" fn(sys::ncclComm_t) -> *const c_char;

/// What the host library tells a module's hooks (`niin_host_info` in `context_impl.h`;
/// the layouts are checked on both sides).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NiinHostInfo {
    /// [`MODULE_ABI_VERSION`].
    pub abi_version: c_uint,
    /// `size_of::<NiinHostInfo>()`.
    pub struct_size: c_uint,
    /// The world's `ncclComm_t`.
    pub nccl_comm: *mut c_void,
    /// The `ncclWindow_t` of the symmetric heap.
    pub window: *mut c_void,
    /// Device address of this PE's heap.
    pub heap_base: *mut c_void,
    /// Bytes of the heap.
    pub heap_size: usize,
    /// This PE.
    pub my_pe: c_int,
    /// PEs of the world.
    pub n_pes: c_int,
    /// Size of this PE's LSA team.
    pub lsa_size: c_int,
    /// This PE's rank in its LSA team.
    pub lsa_rank: c_int,
    /// Non-zero when the world has PEs outside the LSA team: the devComm needs GIN.
    pub gin_wanted: c_int,
    /// `lsaBarrierCount` (and `barrierCount` with GIN) to request.
    pub barrier_count: c_uint,
    /// `ginSignalCount` to request when GIN is wanted.
    pub gin_signal_count: c_uint,
    /// `ginCounterCount` to request when GIN is wanted.
    pub gin_counter_count: c_uint,
    /// `ncclGetVersion` of the loaded library.
    pub nccl_version_code: c_int,
    /// The CUDA device of the communicator.
    pub cuda_device: c_int,
    /// The loaded library's `ncclDevCommCreate`.
    pub dev_comm_create: Option<DevCommCreateFn>,
    /// The loaded library's `ncclDevCommDestroy` (this library destroys the devComms;
    /// given for completeness).
    pub dev_comm_destroy: Option<DevCommDestroyFn>,
    /// The loaded library's `ncclGetErrorString`.
    pub get_error_string: Option<GetErrorStringFn>,
    /// The loaded library's `ncclGetLastError` (NULL where it has none).
    pub get_last_error: Option<GetLastErrorFn>,
    /// [`PUT_SIGNAL_MODE_VAR`]: 0 fused, 1 split (ABI 2).
    pub put_signal_mode: c_int,
    /// Entries of `team_table` (0: none yet).
    pub team_slots: c_int,
    /// Device address of the PE's team table (NULL: none yet).
    pub team_table: *mut c_void,
    /// [`GIN_LOOPBACK_VAR`]: non-zero routes LSA peers through the GIN proxy (a test mode).
    pub gin_loopback: c_int,
    /// [`GIN_QUEUE_SLOTS_VAR`]: slots of each module's GIN queue (a power of two).
    pub gin_queue_slots: c_uint,
    /// Heap offset of the device team-barrier words ([`World::team_sync_offset`]; ABI 3).
    pub team_sync_offset: u64,
    /// Entries of `registered_table` (ABI 4; 0: none).
    pub registered_slots: c_uint,
    /// Device address of the registered-buffer table (`niin_device_registered[]`: heap
    /// offset and size of each buffer made symmetric, size 0 for an unused entry).
    pub registered_table: *mut c_void,
    /// Heap offset of the device collectives' LL slots ([`World::coll_ll_offset`]; ABI 5).
    pub coll_ll_offset: u64,
    /// Team handles with an LL slot ([`niin_api::COLL_LL_SLOTS`]; 0: none).
    pub coll_ll_slots: c_uint,
    /// Bytes of each slot's ring ([`World::coll_ll_ring_bytes`]; 0: no rings), after a
    /// [`niin_api::COLL_LL_HEADER_BYTES`]-byte header.
    pub coll_ll_ring_bytes: c_uint,
    /// Non-zero: the modules ask NCCL for the LSA team's multimem handle
    /// (`ncclDevCommRequirements.lsaMultimem`, NVLS; ABI 6): [`lsa_multimem_wanted`].
    pub lsa_multimem: c_int,
    /// Zero (keeps the struct a multiple of 8 bytes).
    pub reserved6: c_uint,
    /// Heap offset of the barrier words of the world and LSA-team device barriers:
    /// `barrier_count` slots of 16 bytes, zero at init (ABI 7; `niin/impl/sync_impl.h`).
    pub world_sync_offset: u64,
    /// Device address of the watchdog's two mapped host words: 0, or 1 + a PE that died,
    /// which device barriers poll while they wait; set by device code before it stops a
    /// kernel (ABI 8; `niin-transport/src/lsa/watchdog.rs`). NULL where the world has no
    /// watchdog (ABI 7).
    pub abort_word: *mut c_uint,
    /// `NIIN_TIMEOUT` in nanoseconds: how long a device barrier waits before it stops the
    /// kernel naming the PEs that did not arrive (ABI 7).
    pub timeout_ns: u64,
}

/// A module's `create_dev_comm` hook.
pub type CreateDevCommHook =
    unsafe extern "C" fn(*const NiinHostInfo, *mut c_void, usize, *mut c_char, usize) -> c_int;
/// A module's `setup` hook.
pub type SetupHook =
    unsafe extern "C" fn(*const NiinHostInfo, *const c_void, *mut c_char, usize) -> c_int;
/// A module's `teardown` hook.
pub type TeardownHook = unsafe extern "C" fn(*const NiinHostInfo, *mut c_char, usize) -> c_int;
/// A module's `gin_poll` hook (the GIN proxy: `niin/impl/gin_proxy_impl.h`): launches the
/// module's GIN worker when its doorbell rang; with `stop` non-zero stops it. Returns 1
/// while a worker runs, 0 when none does, -1 after writing why into the buffer.
pub type GinPollHook =
    unsafe extern "C" fn(*const NiinHostInfo, c_int, *mut c_char, usize) -> c_int;

/// What a module registers (`niin_module_hooks` in `context_impl.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NiinModuleHooks {
    /// [`MODULE_ABI_VERSION`] of the headers the module was compiled with.
    pub abi_version: c_uint,
    /// `sizeof(niin_module_hooks)` there.
    pub struct_size: c_uint,
    /// `NCCL_VERSION_CODE` of the module's NCCL headers.
    pub nccl_version_code: c_int,
    /// `sizeof(ncclDevComm)` there.
    pub dev_comm_size: c_uint,
    /// `sizeof(ncclDevCommRequirements)` there (0: not given).
    pub dev_comm_reqs_size: c_uint,
    /// `sizeof(niin_device_context)` there.
    pub context_size: c_uint,
    /// The source file of the TU (for messages), or NULL.
    pub module_name: *const c_char,
    /// Creates the devComm into the storage given.
    pub create_dev_comm: Option<CreateDevCommHook>,
    /// Builds the context and fills the slot (the TU's context).
    pub setup: Option<SetupHook>,
    /// Clears the slot and frees the LSA table.
    pub teardown: Option<TeardownHook>,
    /// Runs the module's GIN proxy (ABI 2).
    pub gin_poll: Option<GinPollHook>,
}

const _: () = {
    assert!(size_of::<NiinHostInfo>() == 208);
    assert!(std::mem::offset_of!(NiinHostInfo, world_sync_offset) == 184);
    assert!(std::mem::offset_of!(NiinHostInfo, abort_word) == 192);
    assert!(std::mem::offset_of!(NiinHostInfo, timeout_ns) == 200);
    assert!(std::mem::offset_of!(NiinHostInfo, lsa_multimem) == 176);
    assert!(std::mem::offset_of!(NiinHostInfo, coll_ll_offset) == 160);
    assert!(std::mem::offset_of!(NiinHostInfo, coll_ll_slots) == 168);
    assert!(std::mem::offset_of!(NiinHostInfo, coll_ll_ring_bytes) == 172);
    assert!(std::mem::offset_of!(NiinHostInfo, registered_slots) == 144);
    assert!(std::mem::offset_of!(NiinHostInfo, registered_table) == 152);
    assert!(std::mem::offset_of!(NiinHostInfo, team_sync_offset) == 136);
    assert!(std::mem::offset_of!(NiinHostInfo, put_signal_mode) == 112);
    assert!(std::mem::offset_of!(NiinHostInfo, team_table) == 120);
    assert!(std::mem::offset_of!(NiinHostInfo, gin_queue_slots) == 132);
    assert!(std::mem::offset_of!(NiinHostInfo, heap_size) == 32);
    assert!(std::mem::offset_of!(NiinHostInfo, barrier_count) == 60);
    assert!(std::mem::offset_of!(NiinHostInfo, nccl_version_code) == 72);
    assert!(std::mem::offset_of!(NiinHostInfo, dev_comm_create) == 80);
    assert!(std::mem::offset_of!(NiinHostInfo, get_last_error) == 104);
    assert!(size_of::<NiinModuleHooks>() == 64);
    assert!(std::mem::offset_of!(NiinModuleHooks, gin_poll) == 56);
    assert!(std::mem::offset_of!(NiinModuleHooks, module_name) == 24);
    assert!(std::mem::offset_of!(NiinModuleHooks, create_dev_comm) == 32);
    assert!(std::mem::offset_of!(NiinModuleHooks, teardown) == 48);
};

// ---- the ABI check -------------------------------------------------------------------

/// What a module's headers say about their device ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleAbi {
    /// `NCCL_VERSION_CODE` of the headers.
    pub headers: NcclVersion,
    /// `sizeof(ncclDevComm)` there.
    pub dev_comm_size: u32,
    /// `sizeof(ncclDevCommRequirements)` there; 0 when not given.
    pub reqs_size: u32,
}

/// The answer of [`check_abi`] for a combination that works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbiVerdict {
    /// Whether the loaded library serves GIN to device code of these headers.
    pub gin: bool,
}

/// Why a module's headers cannot work with the loaded library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiRefusal {
    /// Headers older than NCCL's device API.
    HeadersTooOld,
    /// A library older than NCCL's device API.
    RuntimeTooOld,
    /// A struct size that is not the one these headers' version has.
    SizeMismatch {
        /// `"ncclDevComm"` or `"ncclDevCommRequirements"`.
        what: &'static str,
        /// The module's size.
        got: u32,
        /// The size of that version's struct.
        expected: u32,
    },
    /// A devComm larger than the storage this library creates it into.
    TooLarge {
        /// The module's `sizeof(ncclDevComm)`.
        size: u32,
    },
    /// Headers newer than the library.
    HeadersNewer,
    /// NCCL 2.28.3 and 2.28.7+ lay both structs out differently, and 2.28 copies them
    /// blindly.
    Layout228 {
        /// `sizeof(ncclDevComm)` of the headers' layout.
        headers_size: u32,
        /// `sizeof(ncclDevComm)` of the library's layout.
        runtime_size: u32,
    },
    /// NCCL 2.29 needs the versioned requirements of 2.29.2+ headers.
    NeedsVersionedRequirements,
    /// NCCL 2.30.3+ refuses device code older than 2.29.2.
    NotBackwardsCompatible,
    /// A library version whose treatment of older device code is not known: only headers
    /// of exactly its version are accepted.
    UnknownRuntime,
    /// The world needs GIN, which this combination does not serve.
    NoGin {
        /// Why not.
        why: &'static str,
    },
}

const fn v(minor: u32, patch: u32) -> NcclVersion {
    NcclVersion::new(2, minor, patch)
}

/// Struct sizes of the NCCL releases whose headers were measured (nvcc 13.0, x86-64):
/// `(version, sizeof(ncclDevComm), sizeof(ncclDevCommRequirements) if measured)`. 2.28.7
/// and 2.30.7 are from `NCCL-VERSIONS.md` (devComm only).
pub const KNOWN_LAYOUTS: &[(NcclVersion, u32, Option<u32>)] = &[
    (v(28, 3), 88, Some(24)),
    (v(28, 7), 200, None),
    (v(28, 9), 200, Some(56)),
    (v(29, 2), 200, Some(72)),
    (v(29, 3), 200, Some(72)),
    (v(29, 7), 224, Some(88)),
    (v(30, 3), 240, Some(96)),
    (v(30, 7), 240, None),
    (v(31, 2), 248, Some(120)),
];

/// The measured layout of `version`, if it is one of [`KNOWN_LAYOUTS`].
pub fn known_layout(version: NcclVersion) -> Option<(u32, Option<u32>)> {
    KNOWN_LAYOUTS
        .iter()
        .find(|(k, _, _)| *k == version)
        .map(|&(_, d, r)| (d, r))
}

/// Whether device code of NCCL `headers` can run with the loaded NCCL `runtime`, and with
/// GIN when `gin_needed` (the world has PEs outside the LSA team). From
/// `NCCL-VERSIONS.md`:
///
/// | library | headers accepted | GIN |
/// | --- | --- | --- |
/// | any | none newer than the library, none older than 2.28.3 | |
/// | 2.28.3–2.28.6 | 2.28.3–2.28.6 (88-byte devComm) | no (2.28.3 has none) |
/// | 2.28.7–2.28.x | 2.28.7+ (200-byte devComm) | yes |
/// | 2.29.x | 2.29.2+ (versioned requirements) | when headers and library are on the same side of 2.29.7 (its GIN fields of `ncclDevComm` changed) |
/// | 2.30.0–2.30.2 | the same version only (unknown releases) | yes |
/// | ≥ 2.30.3 | 2.29.2+ | 2.30+ headers only: NCCL serves 2.29.x device code LSA only |
///
/// Before that, `sizeof(ncclDevComm)` (and of the requirements, when given) must be the
/// one measured for the headers' version ([`KNOWN_LAYOUTS`]; unknown versions are not
/// checked), and at most [`DEV_COMM_CAPACITY`].
pub fn check_abi(
    module: &ModuleAbi,
    runtime: NcclVersion,
    gin_needed: bool,
) -> Result<AbiVerdict, AbiRefusal> {
    let h = module.headers;
    let r = runtime;
    if h < v(28, 3) {
        return Err(AbiRefusal::HeadersTooOld);
    }
    if r < v(28, 3) {
        return Err(AbiRefusal::RuntimeTooOld);
    }
    if let Some((dev_comm, reqs)) = known_layout(h) {
        if module.dev_comm_size != dev_comm {
            return Err(AbiRefusal::SizeMismatch {
                what: "ncclDevComm",
                got: module.dev_comm_size,
                expected: dev_comm,
            });
        }
        if let Some(reqs) = reqs.filter(|&x| module.reqs_size != 0 && module.reqs_size != x) {
            return Err(AbiRefusal::SizeMismatch {
                what: "ncclDevCommRequirements",
                got: module.reqs_size,
                expected: reqs,
            });
        }
    }
    if module.dev_comm_size as usize > DEV_COMM_CAPACITY {
        return Err(AbiRefusal::TooLarge {
            size: module.dev_comm_size,
        });
    }
    if h > r {
        return Err(AbiRefusal::HeadersNewer);
    }
    let gin: Result<(), &'static str> = if r < v(29, 0) {
        // 2.28.x headers (h <= r): the same layout or nothing.
        let old = |x: NcclVersion| x < v(28, 7);
        if old(h) != old(r) {
            return Err(AbiRefusal::Layout228 {
                headers_size: if old(h) { 88 } else { 200 },
                runtime_size: if old(r) { 88 } else { 200 },
            });
        }
        if old(h) {
            Err("NCCL 2.28.3 headers have no GIN (ncclGin arrives in 2.28.7)")
        } else {
            Ok(())
        }
    } else if r < v(30, 0) {
        if h < v(29, 2) {
            return Err(AbiRefusal::NeedsVersionedRequirements);
        }
        if (h >= v(29, 7)) == (r >= v(29, 7)) {
            Ok(())
        } else {
            Err(
                "the GIN fields of ncclDevComm changed in 2.29.7 (ginContextCount became \
                 ginConnectionCount) and NCCL 2.29 has no compatibility layer for them",
            )
        }
    } else if r < v(30, 3) {
        if h != r {
            return Err(AbiRefusal::UnknownRuntime);
        }
        Ok(())
    } else {
        if h < v(29, 2) {
            return Err(AbiRefusal::NotBackwardsCompatible);
        }
        if h < v(30, 0) {
            Err(
                "NCCL 2.30.3 and later serve device code of 2.29.x headers with LSA only \
                 (GIN refused)",
            )
        } else {
            Ok(())
        }
    };
    match gin {
        Ok(()) => Ok(AbiVerdict { gin: true }),
        Err(why) if gin_needed => Err(AbiRefusal::NoGin { why }),
        Err(_) => Ok(AbiVerdict { gin: false }),
    }
}

impl fmt::Display for AbiRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiRefusal::HeadersTooOld => write!(
                f,
                "NCCL's device API (ncclDevComm, ncclDevCommCreate) starts with 2.28.3"
            ),
            AbiRefusal::RuntimeTooOld => write!(
                f,
                "the library is older than NCCL's device API, which starts with 2.28.3"
            ),
            AbiRefusal::SizeMismatch {
                what,
                got,
                expected,
            } => write!(
                f,
                "the module's sizeof({what}) is {got} bytes, but that NCCL version's is \
                 {expected}: it was compiled with nccl.h and nccl_device.h of different NCCL \
                 versions"
            ),
            AbiRefusal::TooLarge { size } => write!(
                f,
                "its sizeof(ncclDevComm) is {size} bytes, more than the {DEV_COMM_CAPACITY} \
                 bytes this niin-rs creates device communicators into"
            ),
            AbiRefusal::HeadersNewer => write!(
                f,
                "the headers are newer than the library: NCCL refuses device code newer than \
                 itself, and the kernels may use what it does not have"
            ),
            AbiRefusal::Layout228 {
                headers_size,
                runtime_size,
            } => write!(
                f,
                "NCCL 2.28.3's ncclDevComm is 88 bytes and 2.28.7+'s 200 bytes, with different \
                 ncclDevCommRequirements too; NCCL 2.28 copies both without checking, so these \
                 {headers_size}-byte headers with a {runtime_size}-byte library would corrupt \
                 memory"
            ),
            AbiRefusal::NeedsVersionedRequirements => write!(
                f,
                "NCCL 2.29 reads a versioned ncclDevCommRequirements (size, magic, version), \
                 which headers older than 2.29.2 do not have"
            ),
            AbiRefusal::NotBackwardsCompatible => write!(
                f,
                "NCCL 2.30.3 and later refuse device code older than 2.29.2 (\"not backwards \
                 compatible\")"
            ),
            AbiRefusal::UnknownRuntime => write!(
                f,
                "how this library version treats device code of other versions is not known \
                 to niin-rs, so only headers of exactly its version are accepted"
            ),
            AbiRefusal::NoGin { why } => write!(
                f,
                "this world has PEs outside this PE's NVLink (LSA) domain, whose device-side \
                 access needs GIN, but {why}"
            ),
        }
    }
}

impl AbiRefusal {
    /// What the user can do about it.
    pub fn remedy(&self, headers: NcclVersion, runtime: NcclVersion) -> String {
        match self {
            AbiRefusal::SizeMismatch { .. } => {
                "compile with -I of one NCCL include directory (holding both nccl.h and \
                 nccl_device.h)"
                    .to_owned()
            }
            AbiRefusal::TooLarge { .. } => {
                "use NCCL headers this niin-rs knows (2.28.3 to 2.31.x)".to_owned()
            }
            AbiRefusal::RuntimeTooOld => "load NCCL 2.28.3 or later".to_owned(),
            AbiRefusal::HeadersTooOld => {
                format!("compile the kernels against NCCL {runtime}'s headers (2.28.3 or later)")
            }
            AbiRefusal::NoGin { .. } if runtime < v(28, 7) => {
                "load NCCL 2.29.2 or later and compile the kernels against its headers, or run \
                 the job inside one NVLink domain"
                    .to_owned()
            }
            AbiRefusal::NoGin { .. } => format!(
                "compile the kernels against NCCL {runtime}'s headers, or run the job inside \
                 one NVLink domain"
            ),
            _ => format!(
                "compile the kernels against NCCL {runtime}'s headers, or load NCCL {headers} \
                 (NIIN_NCCL_LIBRARY or NCCL_HOME)"
            ),
        }
    }
}

/// The `NIIN:` message of a refusal: names the module, both versions, why and what to do.
pub fn refusal_message(
    module: &str,
    abi: &ModuleAbi,
    runtime: NcclVersion,
    library: &str,
    refusal: &AbiRefusal,
) -> String {
    format!(
        "CUDA module {module} was compiled against NCCL {} headers (sizeof(ncclDevComm) = {}) \
         but the loaded NCCL is {runtime} ({library}): {refusal}; {}",
        abi.headers,
        abi.dev_comm_size,
        refusal.remedy(abi.headers, runtime)
    )
}

/// The barrier count from the value of [`BARRIER_CTAS_VAR`] (`None`: not set).
pub fn barrier_count_from(var: Option<&str>) -> Result<u32, String> {
    let Some(text) = var else {
        return Ok(DEFAULT_BARRIER_CTAS);
    };
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_BARRIER_CTAS).contains(&n) => Ok(n),
        _ => Err(format!(
            "{BARRIER_CTAS_VAR}={text:?} is not a number of CTAs from 1 to {MAX_BARRIER_CTAS} \
             (the most CTAs inside nvshmem_barrier_all at once; default \
             {DEFAULT_BARRIER_CTAS}); every PE must use the same value"
        )),
    }
}

/// The environment variable of NIIN's put-with-signal mode ([`put_signal_mode_from`]).
pub const PUT_SIGNAL_MODE_VAR: &str = "NIIN_PUT_SIGNAL_MODE";
/// The environment variable of the GIN proxy's loopback test mode ([`flag_from`]).
pub const GIN_LOOPBACK_VAR: &str = "NIIN_GIN_LOOPBACK";

/// NVSHMEM's switch for NVLink SHARP (NVLS): set, the modules never ask NCCL for a multimem
/// handle and the device collectives never take their multimem path.
pub const DISABLE_NVLS_VAR: &str = "NVSHMEM_DISABLE_NVLS";
/// The environment variable of the GIN queue's slots ([`gin_queue_slots_from`]).
pub const GIN_QUEUE_SLOTS_VAR: &str = "NIIN_GIN_QUEUE_SLOTS";
/// GIN queue slots of a module by default.
pub const DEFAULT_GIN_QUEUE_SLOTS: u32 = 1024;

/// NIIN's put-with-signal mode from the value of [`PUT_SIGNAL_MODE_VAR`] (`None`: not
/// set): 0 fused (default; also `auto`: the data, then the signal as a release atomic), 1
/// split (`separate`, `split`, `fence_signal`: the data, a system fence, a relaxed signal).
pub fn put_signal_mode_from(var: Option<&str>) -> Result<c_int, String> {
    match var.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("auto") | Some("fused") => Ok(0),
        Some("separate") | Some("split") | Some("fence_signal") => Ok(1),
        Some(other) => Err(format!(
            "{PUT_SIGNAL_MODE_VAR}={other:?} is not a put-with-signal mode: use auto or fused \
             (default), or separate (aliases split, fence_signal)"
        )),
    }
}

/// A boolean of NVSHMEM's environment from the value of `name` (`None` or empty: false):
/// 1/0, true/false, yes/no, on/off, y/n, any case.
pub fn bool_from(name: &str, var: Option<&str>) -> Result<bool, String> {
    let Some(text) = var.map(str::trim) else {
        return Ok(false);
    };
    match text.to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "no" | "n" | "off" => Ok(false),
        "1" | "true" | "yes" | "y" | "on" => Ok(true),
        _ => Err(format!(
            "{name}={text:?} is not a boolean (1/0, true/false, yes/no, on/off)"
        )),
    }
}

/// A 0/1 switch from the value of `name` (`None`: not set, 0).
pub fn flag_from(name: &str, var: Option<&str>) -> Result<c_int, String> {
    match var.map(str::trim) {
        None | Some("0") | Some("") => Ok(0),
        Some("1") => Ok(1),
        Some(other) => Err(format!("{name}={other:?} is not 0 or 1")),
    }
}

/// The GIN queue's slots from the value of [`GIN_QUEUE_SLOTS_VAR`] (`None`: not set): a
/// power of two from 2 to 65536.
pub fn gin_queue_slots_from(var: Option<&str>) -> Result<u32, String> {
    let Some(text) = var else {
        return Ok(DEFAULT_GIN_QUEUE_SLOTS);
    };
    match text.trim().parse::<u32>() {
        Ok(n) if (2..=65536).contains(&n) && n.is_power_of_two() => Ok(n),
        _ => Err(format!(
            "{GIN_QUEUE_SLOTS_VAR}={text:?} is not a power of two from 2 to 65536 (requests a \
             module's kernels may have in flight to the GIN proxy; default \
             {DEFAULT_GIN_QUEUE_SLOTS})"
        )),
    }
}

/// The settings of the environment that go into [`NiinHostInfo`] besides the world's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSettings {
    /// [`BARRIER_CTAS_VAR`].
    pub barrier_count: u32,
    /// [`PUT_SIGNAL_MODE_VAR`].
    pub put_signal_mode: c_int,
    /// [`GIN_LOOPBACK_VAR`].
    pub gin_loopback: c_int,
    /// [`GIN_QUEUE_SLOTS_VAR`].
    pub gin_queue_slots: u32,
    /// [`DISABLE_NVLS_VAR`].
    pub nvls_disabled: bool,
}

impl DeviceSettings {
    /// Reads the five variables; the first bad one is the error.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| niin_transport::env::text(name).map_err(|e| e.to_string());
        Ok(DeviceSettings {
            barrier_count: barrier_count_from(var(BARRIER_CTAS_VAR)?.as_deref())?,
            put_signal_mode: put_signal_mode_from(var(PUT_SIGNAL_MODE_VAR)?.as_deref())?,
            gin_loopback: flag_from(GIN_LOOPBACK_VAR, var(GIN_LOOPBACK_VAR)?.as_deref())?,
            gin_queue_slots: gin_queue_slots_from(var(GIN_QUEUE_SLOTS_VAR)?.as_deref())?,
            nvls_disabled: bool_from(DISABLE_NVLS_VAR, var(DISABLE_NVLS_VAR)?.as_deref())?,
        })
    }
}

// ---- the registry --------------------------------------------------------------------

/// A registered module.
struct Module {
    /// Identity: the registered address (static data of the module).
    at: *const NiinModuleHooks,
    hooks: NiinModuleHooks,
    name: String,
    /// Why the module cannot be set up, known at registration.
    refused: Option<String>,
    set_up: bool,
}

/// Device communicators created for one header ABI.
struct Group {
    key: (c_int, c_uint, c_uint),
    /// Dropped before `storage`, which it points into.
    dev_comm: Option<DevComm>,
    /// NCCL refused a device communicator in a one-PE world (see
    /// [`one_pe_without_dev_comm`]): the group's modules are set up with none.
    without: bool,
    storage: Box<DevCommStorage>,
}

/// Whether a failed `ncclDevCommCreate` still lets the modules be set up: only in a world
/// of one PE, where the device code needs no device communicator (no peer but the PE
/// itself, whose heap it addresses directly; barriers of one PE are a local fence). NCCL
/// 2.28.3 refuses a devComm for a one-rank communicator ("Communicator does not support
/// symmetric memory!"); later releases create it, and then it is used.
pub fn one_pe_without_dev_comm(n_pes: c_int, lsa_size: c_int, gin_wanted: c_int) -> bool {
    n_pes == 1 && lsa_size == 1 && gin_wanted == 0
}

#[repr(C, align(64))]
struct DevCommStorage([u8; DEV_COMM_CAPACITY]);

/// Entries of the team table on the device (niin-api's constant: the team-barrier slots of
/// the system area have the same count).
pub use niin_api::DEVICE_TEAM_SLOTS;

/// A table in device memory that kernels read and the host rewrites between them (the
/// team table, the registered buffers), the staging copy it is written from, and the
/// stream of the copies.
struct DeviceTable {
    device: niin_transport::cuda::DeviceBuffer,
    staging: niin_transport::cuda::HostPinned,
    stream: niin_transport::cuda::Stream,
    /// What the table is, for messages.
    what: &'static str,
}

impl DeviceTable {
    fn new(parts: &DeviceParts, bytes: usize, what: &'static str) -> FfiResult<DeviceTable> {
        let fail = |step: &str, e: niin_transport::cuda::CudaError| {
            FfiError::Os(format!("the device {what}: {step}: {e}"))
        };
        parts
            .device
            .make_current()
            .map_err(|e| fail("making the device current", e))?;
        Ok(DeviceTable {
            device: niin_transport::cuda::DeviceBuffer::alloc_on(&parts.device, bytes)
                .map_err(|e| fail("cuMemAlloc", e))?,
            staging: niin_transport::cuda::HostPinned::alloc_on(&parts.device, bytes)
                .map_err(|e| fail("cuMemHostAlloc", e))?,
            stream: niin_transport::cuda::Stream::create_on(&parts.device)
                .map_err(|e| fail("a stream", e))?,
            what,
        })
    }

    /// Copies `bytes` (the whole table, its size) to the device and waits for the copy.
    fn publish(&self, bytes: &[u8]) -> FfiResult<()> {
        let what = self.what;
        let fail = |step: &str, e: niin_transport::cuda::CudaError| {
            FfiError::Os(format!("publishing the {what} to the device: {step}: {e}"))
        };
        let len = bytes.len().min(self.device.len());
        self.staging
            .write_bytes(0, &bytes[..len])
            .map_err(|e| fail("staging", e))?;
        // SAFETY: both ranges are live allocations of at least `len` bytes (the device
        // table and the mapped staging buffer), and the copy is waited for before either
        // is used again.
        unsafe {
            niin_transport::cuda::memcpy_async(
                self.device.ptr(),
                self.staging.device_ptr(),
                len,
                &self.stream,
            )
        }
        .map_err(|e| fail("cuMemcpyAsync", e))?;
        self.stream.synchronize().map_err(|e| fail("waiting", e))
    }

    /// The team table's bytes: `table`, then unused slots up to [`DEVICE_TEAM_SLOTS`].
    fn team_bytes(table: &niin_api::DeviceTeamTable) -> Vec<u8> {
        let size = DEVICE_TEAM_SLOTS * niin_api::DeviceTeam::SIZE_BYTES;
        let mut bytes = table.to_bytes();
        bytes.truncate(size);
        let unused = niin_api::DeviceTeam::UNUSED.to_le_bytes();
        while bytes.len() < size {
            bytes.extend_from_slice(&unused);
        }
        bytes
    }

    /// The registered-buffer table's bytes (`niin_device_registered[]`): per buffer its
    /// heap offset and size, then zeros up to [`REGISTERED_SLOTS`].
    fn registered_bytes(world: &World) -> Vec<u8> {
        let mut bytes = vec![0u8; REGISTERED_SLOTS * 16];
        for (slot, (offset, len)) in world
            .registered_buffers()
            .into_iter()
            .take(REGISTERED_SLOTS)
            .enumerate()
        {
            bytes[slot * 16..slot * 16 + 8].copy_from_slice(&offset.to_le_bytes());
            bytes[slot * 16 + 8..slot * 16 + 16].copy_from_slice(&len.to_le_bytes());
        }
        bytes
    }
}

/// Entries of the device table of registered buffers: as many as the transport registers.
pub const REGISTERED_SLOTS: usize = niin_transport::lsa::MAX_REGISTERED;

/// The world whose device contexts the modules have.
struct Attached {
    info: NiinHostInfo,
    /// The team table the contexts point at (`info.team_table`).
    teams: DeviceTable,
    /// The registered buffers' table (ABI 4).
    registered: DeviceTable,
    /// The device barrier words (`info.world_sync_offset`; ABI 7), held until finalize.
    _world_sync: niin_api::SymBuffer<u64>,
    groups: Vec<Group>,
    runtime: NcclVersion,
    library: String,
    /// Held last: keeps the communicator and window alive while devComms exist.
    parts: DeviceParts,
}

struct Registry {
    modules: Vec<Module>,
    attached: Option<Attached>,
}

// SAFETY: the raw pointers are the registered hooks (static data and code of a loaded
// module, valid from any thread until it unregisters) and NCCL/CUDA handles that this
// library passes to those hooks and to NCCL, always under the registry's lock.
unsafe impl Send for Registry {}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    modules: Vec::new(),
    attached: None,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The message a hook wrote into `err` (NUL-terminated within it).
fn hook_message(err: &[u8]) -> String {
    let text = CStr::from_bytes_until_nul(err)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(err).into_owned());
    if text.is_empty() {
        "no reason given".to_owned()
    } else {
        text
    }
}

/// Reads and checks a registration.
///
/// # Safety
/// `at` is non-null and points to a `niin_module_hooks` that stays valid (unchanged) until
/// it is unregistered, at least `struct_size` bytes long.
unsafe fn read_module(at: *const NiinModuleHooks) -> Module {
    // SAFETY: every version of the struct starts with the two 32-bit fields.
    let head = unsafe { at.cast::<[c_uint; 2]>().read() };
    let (abi, size) = (head[0], head[1] as usize);
    if abi != MODULE_ABI_VERSION || size < size_of::<NiinModuleHooks>() {
        return Module {
            at,
            hooks: empty_hooks(),
            name: format!("at {at:p}"),
            refused: Some(format!(
                "a CUDA module registered device-context hooks of ABI version {abi} ({size} \
                 bytes), but this libnvshmem_host speaks version {MODULE_ABI_VERSION} ({} \
                 bytes): the module was compiled with the headers of another niin-rs; compile \
                 it with this niin-rs's include directory",
                size_of::<NiinModuleHooks>()
            )),
            set_up: false,
        };
    }
    // SAFETY: version 1 and at least our size: the whole struct is readable.
    let hooks = unsafe { at.read() };
    let name = if hooks.module_name.is_null() {
        format!("at {at:p}")
    } else {
        // SAFETY: a non-null module_name is a NUL-terminated string of the module's static
        // data (the header sets it from __FILE__).
        unsafe { CStr::from_ptr(hooks.module_name) }
            .to_string_lossy()
            .into_owned()
    };
    let refused = (hooks.create_dev_comm.is_none()
        || hooks.setup.is_none()
        || hooks.teardown.is_none())
    .then(|| format!("CUDA module {name} registered without its create/setup/teardown hooks"));
    Module {
        at,
        hooks,
        name,
        refused,
        set_up: false,
    }
}

fn empty_hooks() -> NiinModuleHooks {
    NiinModuleHooks {
        abi_version: 0,
        struct_size: 0,
        nccl_version_code: 0,
        dev_comm_size: 0,
        dev_comm_reqs_size: 0,
        context_size: 0,
        module_name: std::ptr::null(),
        create_dev_comm: None,
        setup: None,
        teardown: None,
        gin_poll: None,
    }
}

/// Registers a CUDA module's device-context hooks (called by the static initializer of
/// every translation unit that includes `nvshmem.h` under nvcc). Returns 0, or an
/// `NVSHMEMX_ERROR_*` status after a `NIIN:` line when the library is initialized and the
/// module cannot be set up (its kernels then find no context). Registering the same hooks
/// twice registers them once.
///
/// # Safety
/// `hooks` must be NULL or point to a `niin_module_hooks` that stays valid and unchanged
/// until [`niin_unregister_module`] is called with it, whose functions may be called from
/// any thread while it is registered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn niin_register_module(hooks: *const NiinModuleHooks) -> c_int {
    status_call("niin_register_module", || {
        if hooks.is_null() {
            return Err(FfiError::Null("hooks"));
        }
        let mut reg = registry();
        if reg.modules.iter().any(|m| m.at == hooks) {
            return Ok(());
        }
        // SAFETY: non-null; valid until unregistered, by the caller's contract.
        let module = unsafe { read_module(hooks) };
        reg.modules.push(module);
        let Registry { modules, attached } = &mut *reg;
        match attached {
            Some(att) => set_up(att, modules.last_mut().expect("just pushed")),
            None => Ok(()),
        }
    })
}

/// Forgets a CUDA module (its static destructor: process exit, or `dlclose` of the library
/// holding it). Its hooks are not called: its LSA table stays allocated.
///
/// # Safety
/// `hooks` must be NULL or a pointer given to [`niin_register_module`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn niin_unregister_module(hooks: *const NiinModuleHooks) {
    value_call("niin_unregister_module", (), || {
        registry().modules.retain(|m| m.at != hooks);
        Ok(())
    })
}

/// Sets up `m` for the attached world: ABI check, the group's devComm (created by the
/// first module of its group), then the module's context.
fn set_up(att: &mut Attached, m: &mut Module) -> FfiResult<()> {
    if let Some(why) = &m.refused {
        return Err(FfiError::NotSupported(why.clone()));
    }
    if m.set_up {
        return Ok(());
    }
    let abi = ModuleAbi {
        headers: NcclVersion::from_code(m.hooks.nccl_version_code),
        dev_comm_size: m.hooks.dev_comm_size,
        reqs_size: m.hooks.dev_comm_reqs_size,
    };
    check_abi(&abi, att.runtime, att.info.gin_wanted != 0).map_err(|refusal| {
        FfiError::NotSupported(refusal_message(
            &m.name,
            &abi,
            att.runtime,
            &att.library,
            &refusal,
        ))
    })?;
    let (Some(create), Some(setup)) = (m.hooks.create_dev_comm, m.hooks.setup) else {
        return Err(FfiError::NotSupported(format!(
            "CUDA module {} registered without its hooks",
            m.name
        )));
    };
    if att.info.dev_comm_create.is_none() || att.info.dev_comm_destroy.is_none() {
        return Err(FfiError::NotSupported(format!(
            "the loaded NCCL {} ({}) has no ncclDevCommCreate/ncclDevCommDestroy: kernels \
             calling nvshmem_* need NCCL's device API (CUDA module {})",
            att.runtime, att.library, m.name
        )));
    }
    let key = (
        m.hooks.nccl_version_code,
        m.hooks.dev_comm_size,
        m.hooks.dev_comm_reqs_size,
    );
    let index = match att.groups.iter().position(|g| g.key == key) {
        Some(i) => i,
        None => {
            att.groups.push(Group {
                key,
                dev_comm: None,
                without: false,
                storage: Box::new(DevCommStorage([0; DEV_COMM_CAPACITY])),
            });
            att.groups.len() - 1
        }
    };
    let info: *const NiinHostInfo = &att.info;
    let group = &mut att.groups[index];
    let storage = group.storage.0.as_mut_ptr().cast::<c_void>();
    let mut err = [0u8; 1024];
    if group.dev_comm.is_none() && !group.without {
        let rc = att
            .parts
            .with_comm_locked(|_| {
                // SAFETY: the hook is the module's create_dev_comm (registered, so loaded);
                // `info` lives in the registry, `storage` is DEV_COMM_CAPACITY zeroed bytes
                // of this group, `err` a writable buffer of its length. The communicator
                // lock is held, so no other call uses the communicator meanwhile.
                unsafe {
                    create(
                        info,
                        storage,
                        DEV_COMM_CAPACITY,
                        err.as_mut_ptr().cast(),
                        err.len(),
                    )
                }
            })
            .map_err(|e| FfiError::Os(format!("CUDA module {}: {e}", m.name)))?;
        let one_pe =
            one_pe_without_dev_comm(att.info.n_pes, att.info.lsa_size, att.info.gin_wanted);
        if rc != 0 && one_pe {
            group.without = true;
        } else if rc != 0 {
            return Err(FfiError::Os(format!(
                "CUDA module {} could not create its NCCL device communicator: {}",
                m.name,
                hook_message(&err)
            )));
        } else {
            // SAFETY: `storage` now holds a devComm that ncclDevCommCreate of this library
            // made for this communicator; the group owns the storage, which outlives the
            // DevComm (it is dropped first), and only that DevComm destroys it.
            let adopted = unsafe { DevComm::adopt(att.parts.comm.clone(), storage) };
            group.dev_comm = Some(adopted.map_err(|e| FfiError::Os(e.to_string()))?);
        }
    }
    let dev_comm: *const c_void = if group.without {
        std::ptr::null()
    } else {
        storage
    };
    // SAFETY: the module's setup hook, with the registry's `info`, the group's created
    // devComm (read only; NULL for a one-PE group without one, which the hook accepts for
    // n_pes == 1 only) and a writable `err` of its length.
    let rc = unsafe { setup(info, dev_comm, err.as_mut_ptr().cast(), err.len()) };
    if rc != 0 {
        return Err(FfiError::Os(format!(
            "CUDA module {} could not set up its device context: {}",
            m.name,
            hook_message(&err)
        )));
    }
    m.set_up = true;
    Ok(())
}

/// Tears `m` down if it is set up.
fn tear_down(info: &NiinHostInfo, m: &mut Module) -> FfiResult<()> {
    if !std::mem::take(&mut m.set_up) {
        return Ok(());
    }
    let Some(teardown) = m.hooks.teardown else {
        return Ok(());
    };
    let mut err = [0u8; 1024];
    // SAFETY: the module's teardown hook (registered, so loaded), with the host info it was
    // set up with and a writable `err` of its length.
    let rc = unsafe { teardown(info, err.as_mut_ptr().cast(), err.len()) };
    if rc != 0 {
        return Err(FfiError::Os(format!(
            "CUDA module {} could not release its device context: {}",
            m.name,
            hook_message(&err)
        )));
    }
    Ok(())
}

/// The host info for `parts`.
fn host_info(parts: &DeviceParts, n_pes: usize, settings: DeviceSettings) -> NiinHostInfo {
    let barrier_count = settings.barrier_count;
    let nccl = parts.comm.nccl();
    let table = nccl.table();
    let gin = parts.has_non_lsa_peers();
    let to_int = |n: usize| c_int::try_from(n).unwrap_or(c_int::MAX);
    NiinHostInfo {
        abi_version: MODULE_ABI_VERSION,
        struct_size: size_of::<NiinHostInfo>() as c_uint,
        nccl_comm: parts.comm.raw().cast(),
        window: parts.window.raw().cast(),
        heap_base: parts.heap_base as *mut c_void,
        heap_size: parts.heap_size as usize,
        my_pe: to_int(parts.my_pe),
        n_pes: to_int(n_pes),
        lsa_size: to_int(parts.lsa_size()),
        lsa_rank: to_int(parts.lsa_rank()),
        gin_wanted: c_int::from(gin),
        barrier_count,
        gin_signal_count: if gin { barrier_count } else { 0 },
        gin_counter_count: if gin { barrier_count } else { 0 },
        nccl_version_code: nccl.version().code as c_int,
        cuda_device: parts.cuda_device,
        dev_comm_create: table.dev_comm_create,
        dev_comm_destroy: table.dev_comm_destroy,
        get_error_string: table.get_error_string,
        get_last_error: table.get_last_error,
        put_signal_mode: settings.put_signal_mode,
        team_slots: 0,
        team_table: std::ptr::null_mut(),
        gin_loopback: settings.gin_loopback,
        gin_queue_slots: settings.gin_queue_slots,
        team_sync_offset: 0,
        registered_slots: 0,
        registered_table: std::ptr::null_mut(),
        coll_ll_offset: 0,
        coll_ll_slots: 0,
        coll_ll_ring_bytes: 0,
        lsa_multimem: 0,
        reserved6: 0,
        world_sync_offset: 0,
        abort_word: std::ptr::null_mut(),
        timeout_ns: 0,
    }
}

/// Whether the modules' devComms ask for the LSA team's multimem handle (NVLS, for the device
/// collectives of `niin/impl/coll_multimem_impl.h`): only where NCCL says the communicator
/// supports it (`ncclCommQueryProperties`, NCCL 2.29.2 and later; NCCL fails the devComm
/// otherwise), for an LSA team of more than 2 GPUs (NCCL's own rule for its symmetric
/// kernels), not under [`GIN_LOOPBACK_VAR`] (every peer through the GIN proxy), and not when
/// [`DISABLE_NVLS_VAR`] is set.
pub fn lsa_multimem_wanted(
    settings: DeviceSettings,
    lsa_size: usize,
    multimem_support: Option<bool>,
) -> bool {
    !settings.nvls_disabled
        && settings.gin_loopback == 0
        && lsa_size > 2
        && multimem_support == Some(true)
}

/// Gives every registered module its device context for `world` (the end of init). On a
/// world without NCCL nothing is done. On failure every module set up so far is torn down
/// again and the error names the module and why.
pub(crate) fn attach(world: &World) -> FfiResult<()> {
    let Some(parts) = world.nccl_parts() else {
        return Ok(());
    };
    let settings = DeviceSettings::from_env().map_err(FfiError::BadArgument)?;
    let mut reg = registry();
    detach_locked(&mut reg)?;
    let nccl = parts.comm.nccl();
    let teams = DeviceTable::new(
        &parts,
        DEVICE_TEAM_SLOTS * niin_api::DeviceTeam::SIZE_BYTES,
        "team table",
    )?;
    teams.publish(&DeviceTable::team_bytes(&world.device_team_table()))?;
    let registered = DeviceTable::new(&parts, REGISTERED_SLOTS * 16, "registered-buffer table")?;
    registered.publish(&DeviceTable::registered_bytes(world))?;
    // The barrier words of the world and LSA-team device barriers: a zeroed symmetric block
    // allocated here, by every PE at the end of init (so at the same offset everywhere).
    let world_sync = world
        .calloc::<u64>(2 * settings.barrier_count as usize)
        .map_err(|e| {
            FfiError::Os(format!(
                "allocating the device barrier words ({} slots of 16 bytes, \
                 {BARRIER_CTAS_VAR}) in the symmetric heap: {e}",
                settings.barrier_count
            ))
        })?;
    let mut info = host_info(&parts, world.n_pes(), settings);
    info.world_sync_offset = world_sync.offset();
    info.abort_word = parts.abort_word as *mut c_uint;
    info.timeout_ns = u64::try_from(world.config().timeout.as_nanos()).unwrap_or(u64::MAX);
    info.team_slots = DEVICE_TEAM_SLOTS as c_int;
    info.team_table = teams.device.ptr() as *mut c_void;
    info.team_sync_offset = world.team_sync_offset();
    info.registered_slots = REGISTERED_SLOTS as c_uint;
    info.registered_table = registered.device.ptr() as *mut c_void;
    info.coll_ll_offset = world.coll_ll_offset();
    info.coll_ll_ring_bytes = c_uint::try_from(world.coll_ll_ring_bytes()).unwrap_or(0);
    info.coll_ll_slots = if info.coll_ll_ring_bytes == 0 {
        0
    } else {
        niin_api::COLL_LL_SLOTS as c_uint
    };
    // (a library without ncclCommQueryProperties, or a failed query: no multimem)
    let multimem_support = parts
        .comm
        .properties()
        .ok()
        .flatten()
        .map(|p| p.multimem_support);
    info.lsa_multimem = c_int::from(lsa_multimem_wanted(
        settings,
        parts.lsa_size(),
        multimem_support,
    ));
    reg.attached = Some(Attached {
        teams,
        registered,
        _world_sync: world_sync,
        info,
        groups: Vec::new(),
        runtime: nccl.version(),
        library: nccl.path().to_owned(),
        parts,
    });
    let Registry { modules, attached } = &mut *reg;
    let att = attached.as_mut().expect("just attached");
    let mut failed = None;
    for m in modules.iter_mut() {
        if let Err(e) = set_up(att, m) {
            failed = Some(e);
            break;
        }
    }
    match failed {
        None => {
            let proxied = att.info.gin_wanted != 0 || att.info.gin_loopback != 0;
            drop(reg);
            if proxied {
                crate::gin_proxy::start();
            }
            Ok(())
        }
        Some(e) => {
            if let Err(cleanup) = detach_locked(&mut reg) {
                report("nvshmem_init", cleanup);
            }
            Err(e)
        }
    }
}

/// Takes every module's device context away at the last finalize, before the world's own
/// finalize: waits for this PE's device work, then for every PE (a barrier: no kernel of
/// any PE still uses a devComm or a context), then runs each module's teardown and destroys
/// the device communicators. Returns the first error after doing all of it.
pub(crate) fn detach_at_finalize(world: &World) -> FfiResult<()> {
    let device = registry().attached.as_ref().map(|a| a.parts.device.clone());
    let Some(device) = device else {
        return Ok(());
    };
    let synced = device.synchronize().map_err(|e| {
        FfiError::Os(format!(
            "waiting for this PE's kernels before releasing the device contexts: {e}"
        ))
    });
    let barrier = world.barrier_all().map_err(FfiError::from);
    let mut reg = registry();
    if synced.is_err() {
        // The context failed (a kernel stopped): destroying the device communicators fails
        // too, and the error returned here already says why.
        for group in reg.attached.iter().flat_map(|a| &a.groups) {
            group.dev_comm.iter().for_each(DevComm::release_quietly);
        }
    }
    let detached = detach_locked(&mut reg);
    synced.and(barrier).and(detached)
}

fn detach_locked(reg: &mut Registry) -> FfiResult<()> {
    let Some(att) = reg.attached.take() else {
        return Ok(());
    };
    // The proxy thread polls under the registry's lock, which is held here: it stops at its
    // next look (each module's teardown stops that module's worker itself).
    crate::gin_proxy::request_stop();
    let mut first = Ok(());
    for m in reg.modules.iter_mut().rev() {
        let r = tear_down(&att.info, m);
        if first.is_ok() {
            first = r;
        }
    }
    // The devComms (ncclDevCommDestroy), then the storage, then the communicator handle.
    drop(att);
    first
}

/// Copies `world`'s team table to the device after a split or destroy, so kernels see the
/// teams the host has (nothing to do on a world without NCCL).
pub(crate) fn publish_teams(world: &World) -> FfiResult<()> {
    with_attached(|a| {
        a.teams
            .publish(&DeviceTable::team_bytes(&world.device_team_table()))
    })
}

/// Copies `world`'s registered buffers to the device after a registration or its end, so
/// that device code (`nvshmem_ptr`) knows them (nothing to do on a world without NCCL).
pub(crate) fn publish_registered(world: &World) -> FfiResult<()> {
    with_attached(|a| a.registered.publish(&DeviceTable::registered_bytes(world)))
}

/// Runs `f` on the attached world's device state, under the registry's lock; `Ok` when
/// no world is attached.
fn with_attached(f: impl FnOnce(&Attached) -> FfiResult<()>) -> FfiResult<()> {
    registry().attached.as_ref().map_or(Ok(()), f)
}

/// One round of the GIN proxy (niin-ffi/src/gin_proxy.rs): every set-up module's
/// `gin_poll` hook. Returns whether any worker runs, or `None` when no world is attached
/// (the proxy then ends). A failing hook is reported once per round with a `NIIN:` line.
pub(crate) fn gin_poll_round() -> Option<bool> {
    let reg = registry();
    let att = reg.attached.as_ref()?;
    let mut running = false;
    for m in reg.modules.iter().filter(|m| m.set_up) {
        let Some(poll) = m.hooks.gin_poll else {
            continue;
        };
        let mut err = [0u8; 512];
        // SAFETY: the hook of a registered, set-up module (its code is loaded), with the
        // host info it was set up with and a writable buffer of the length given.
        let rc = unsafe { poll(&att.info, 0, err.as_mut_ptr().cast(), err.len()) };
        match rc {
            0 => {}
            1 => running = true,
            _ => report(
                "nvshmem (GIN proxy)",
                FfiError::Os(format!("CUDA module {}: {}", m.name, hook_message(&err))),
            ),
        }
    }
    Some(running)
}

/// How many modules are registered, and how many of them are set up (for tests and
/// diagnostics).
pub fn module_counts() -> (usize, usize) {
    let reg = registry();
    let set_up = reg.modules.iter().filter(|m| m.set_up).count();
    (reg.modules.len(), set_up)
}

// ---- driver-API modules (crate::cumodule) ---------------------------------------------

/// The attached NCCL world as a driver-API module ([`crate::cumodule`]) needs it.
pub(crate) struct CumoduleWorld {
    /// The host info every module is set up with.
    pub(crate) info: NiinHostInfo,
    /// The loaded NCCL.
    pub(crate) runtime: NcclVersion,
    /// Its path, for messages.
    pub(crate) library: String,
    /// The communicator's device (its primary context).
    pub(crate) device: niin_transport::cuda::Device,
}

/// The attached world, or `None` when no world with NCCL is attached (before init, after
/// finalize, on the mock transport).
pub(crate) fn cumodule_world() -> Option<CumoduleWorld> {
    let reg = registry();
    let att = reg.attached.as_ref()?;
    Some(CumoduleWorld {
        info: att.info,
        runtime: att.runtime,
        library: att.library.clone(),
        device: att.parts.device.clone(),
    })
}

/// The device communicator of header ABI `key` (`NCCL_VERSION_CODE`, `sizeof(ncclDevComm)`,
/// `sizeof(ncclDevCommRequirements)`) for the driver-API module `name`: the one the
/// registered modules of that ABI share, created now when none has been (collective:
/// `ncclDevCommCreate` under the communicator's lock, with the requirements that
/// `requirements` returns, a pointer that stays valid until this function returns).
/// Returns a copy of the devComm's bytes, or `None` in a one-PE world whose NCCL refuses
/// one (as for registered modules: [`one_pe_without_dev_comm`]). The group, and so the
/// devComm, lives until the world is detached.
pub(crate) fn cumodule_dev_comm(
    key: (c_int, c_uint, c_uint),
    name: &str,
    requirements: impl FnOnce(&NiinHostInfo) -> FfiResult<*const c_void>,
) -> FfiResult<Option<Vec<u8>>> {
    let mut reg = registry();
    let Some(att) = reg.attached.as_mut() else {
        return Err(FfiError::NotSupported(format!(
            "{name}: no NCCL world is attached (nvshmem_init on the NCCL transport first)"
        )));
    };
    let size = key.1 as usize;
    if size > DEV_COMM_CAPACITY {
        return Err(FfiError::NotSupported(format!(
            "{name}: sizeof(ncclDevComm) = {size} exceeds the {DEV_COMM_CAPACITY} bytes of \
             storage"
        )));
    }
    let Attached {
        info,
        groups,
        parts,
        ..
    } = att;
    let index = match groups.iter().position(|g| g.key == key) {
        Some(i) => i,
        None => {
            groups.push(Group {
                key,
                dev_comm: None,
                without: false,
                storage: Box::new(DevCommStorage([0; DEV_COMM_CAPACITY])),
            });
            groups.len() - 1
        }
    };
    let group = &mut groups[index];
    if group.dev_comm.is_none() && !group.without {
        let Some(create) = info.dev_comm_create else {
            return Err(FfiError::NotSupported(format!(
                "{name}: the loaded NCCL has no ncclDevCommCreate: kernels calling nvshmem_* \
                 need NCCL's device API"
            )));
        };
        let reqs = requirements(info)?;
        let storage = group.storage.0.as_mut_ptr().cast::<c_void>();
        let rc = parts
            .with_comm_locked(|comm| {
                // SAFETY: the loaded NCCL's ncclDevCommCreate with the world's communicator
                // (its lock held), requirements laid out by the module's own headers (valid
                // for this call, per this function's contract) and DEV_COMM_CAPACITY zeroed
                // bytes of this group's storage, more than the headers' sizeof(ncclDevComm).
                unsafe { create(comm, reqs, storage.cast()) }
            })
            .map_err(|e| FfiError::Os(format!("{name}: {e}")))?;
        if rc == sys::ncclResult_t::ncclSuccess {
            // SAFETY: `storage` holds a devComm that this library's ncclDevCommCreate made for
            // this communicator; the group owns the storage, which outlives the DevComm
            // (dropped first), and only that DevComm destroys it.
            let adopted = unsafe { DevComm::adopt(parts.comm.clone(), storage) };
            group.dev_comm = Some(adopted.map_err(|e| FfiError::Os(e.to_string()))?);
        } else if one_pe_without_dev_comm(info.n_pes, info.lsa_size, info.gin_wanted) {
            group.without = true;
        } else {
            let text = |f: Option<GetErrorStringFn>| {
                // SAFETY: the loaded NCCL's ncclGetErrorString, which returns a static string
                // (or NULL) for any result code.
                let p = f.map_or(std::ptr::null(), |f| unsafe { f(rc) });
                if p.is_null() {
                    "?".to_owned()
                } else {
                    // SAFETY: non-null: a NUL-terminated static string of NCCL.
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                }
            };
            return Err(FfiError::Os(format!(
                "{name} could not create its NCCL device communicator: ncclDevCommCreate \
                 (NCCL {} headers, library {}) returned {} ({})",
                NcclVersion::from_code(key.0),
                NcclVersion::from_code(info.nccl_version_code),
                text(info.get_error_string),
                rc.0
            )));
        }
    }
    Ok(if group.without {
        None
    } else {
        Some(group.storage.0[..size].to_vec())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The releases of the table, in order.
    const VERSIONS: [NcclVersion; 8] = [
        v(28, 3),
        v(28, 9),
        v(29, 2),
        v(29, 3),
        v(29, 7),
        v(30, 3),
        v(30, 7),
        v(31, 2),
    ];

    fn abi(h: NcclVersion) -> ModuleAbi {
        let (dev_comm_size, reqs) = known_layout(h).expect("a measured version");
        ModuleAbi {
            headers: h,
            dev_comm_size,
            reqs_size: reqs.unwrap_or(0),
        }
    }

    /// Row = library, column = headers (in `VERSIONS` order): `F` LSA and GIN, `L` LSA
    /// only, `x` refused.
    const TABLE: [(NcclVersion, &str); 8] = [
        (v(28, 3), "Lxxxxxxx"),
        (v(28, 9), "xFxxxxxx"),
        (v(29, 2), "xxFxxxxx"),
        (v(29, 3), "xxFFxxxx"),
        (v(29, 7), "xxLLFxxx"),
        (v(30, 3), "xxLLLFxx"),
        (v(30, 7), "xxLLLFFx"),
        (v(31, 2), "xxLLLFFF"),
    ];

    #[test]
    fn the_whole_table() {
        for (runtime, row) in TABLE {
            for (h, want) in VERSIONS.iter().zip(row.chars()) {
                let lsa = check_abi(&abi(*h), runtime, false);
                let gin = check_abi(&abi(*h), runtime, true);
                let cell = format!("headers {h}, library {runtime}");
                match want {
                    'F' => {
                        assert_eq!(lsa, Ok(AbiVerdict { gin: true }), "{cell}");
                        assert_eq!(gin, Ok(AbiVerdict { gin: true }), "{cell}");
                    }
                    'L' => {
                        assert_eq!(lsa, Ok(AbiVerdict { gin: false }), "{cell}");
                        assert!(
                            matches!(gin, Err(AbiRefusal::NoGin { .. })),
                            "{cell}: {gin:?}"
                        );
                    }
                    'x' => {
                        assert!(lsa.is_err(), "{cell}: {lsa:?}");
                        assert!(gin.is_err(), "{cell}: {gin:?}");
                        assert!(
                            !matches!(lsa, Err(AbiRefusal::NoGin { .. })),
                            "{cell}: an LSA-only world is refused for another reason"
                        );
                    }
                    _ => unreachable!(),
                }
            }
        }
    }

    #[test]
    fn each_refusal_has_its_reason() {
        let check = |h, r| check_abi(&abi(h), r, false);
        assert_eq!(check(v(29, 2), v(28, 9)), Err(AbiRefusal::HeadersNewer));
        assert_eq!(check(v(31, 2), v(30, 7)), Err(AbiRefusal::HeadersNewer));
        assert_eq!(check(v(28, 9), v(28, 3)), Err(AbiRefusal::HeadersNewer));
        assert_eq!(
            check(v(28, 3), v(28, 9)),
            Err(AbiRefusal::Layout228 {
                headers_size: 88,
                runtime_size: 200
            })
        );
        assert_eq!(
            check(v(28, 9), v(29, 7)),
            Err(AbiRefusal::NeedsVersionedRequirements)
        );
        assert_eq!(
            check(v(28, 3), v(29, 2)),
            Err(AbiRefusal::NeedsVersionedRequirements)
        );
        assert_eq!(
            check(v(28, 9), v(31, 2)),
            Err(AbiRefusal::NotBackwardsCompatible)
        );
        assert_eq!(
            check(v(28, 3), v(30, 3)),
            Err(AbiRefusal::NotBackwardsCompatible)
        );
    }

    #[test]
    fn gin_is_refused_where_the_library_serves_lsa_only() {
        for (h, r) in [
            (v(28, 3), v(28, 3)),
            (v(29, 2), v(29, 7)),
            (v(29, 7), v(30, 3)),
            (v(29, 3), v(31, 2)),
        ] {
            assert!(matches!(
                check_abi(&abi(h), r, true),
                Err(AbiRefusal::NoGin { .. })
            ));
            assert_eq!(check_abi(&abi(h), r, false), Ok(AbiVerdict { gin: false }));
        }
    }

    #[test]
    fn sizes_are_checked_against_the_measured_layouts() {
        let mixed = ModuleAbi {
            headers: v(29, 7),
            dev_comm_size: 200,
            reqs_size: 88,
        };
        assert_eq!(
            check_abi(&mixed, v(31, 2), false),
            Err(AbiRefusal::SizeMismatch {
                what: "ncclDevComm",
                got: 200,
                expected: 224
            })
        );
        let reqs = ModuleAbi {
            headers: v(31, 2),
            dev_comm_size: 248,
            reqs_size: 96,
        };
        assert_eq!(
            check_abi(&reqs, v(31, 2), false),
            Err(AbiRefusal::SizeMismatch {
                what: "ncclDevCommRequirements",
                got: 96,
                expected: 120
            })
        );
        // Requirements size not given: only the devComm is checked.
        let no_reqs = ModuleAbi {
            reqs_size: 0,
            ..reqs
        };
        assert!(check_abi(&no_reqs, v(31, 2), true).is_ok());
        // 2.28.7 and 2.30.7: devComm size known, requirements not measured.
        let v2_30_7 = ModuleAbi {
            headers: v(30, 7),
            dev_comm_size: 240,
            reqs_size: 104,
        };
        assert!(check_abi(&v2_30_7, v(31, 2), true).is_ok());
        let bad = ModuleAbi {
            dev_comm_size: 248,
            ..v2_30_7
        };
        assert!(matches!(
            check_abi(&bad, v(31, 2), true),
            Err(AbiRefusal::SizeMismatch { expected: 240, .. })
        ));
        // A size mismatch is reported before a version refusal.
        let both = ModuleAbi {
            headers: v(28, 9),
            dev_comm_size: 88,
            reqs_size: 56,
        };
        assert!(matches!(
            check_abi(&both, v(31, 2), false),
            Err(AbiRefusal::SizeMismatch { .. })
        ));
    }

    #[test]
    fn unmeasured_versions_follow_the_rules_of_their_family() {
        let any = |h, size| ModuleAbi {
            headers: h,
            dev_comm_size: size,
            reqs_size: 0,
        };
        // 2.28.5 (never measured) is of 2.28.3's layout; 2.28.8 of 2.28.7's.
        assert_eq!(
            check_abi(&any(v(28, 5), 88), v(28, 5), false),
            Ok(AbiVerdict { gin: false })
        );
        assert!(matches!(
            check_abi(&any(v(28, 5), 88), v(28, 9), false),
            Err(AbiRefusal::Layout228 { .. })
        ));
        assert_eq!(
            check_abi(&any(v(28, 8), 200), v(28, 9), true),
            Ok(AbiVerdict { gin: true })
        );
        // A library between releases we know (2.30.1): only its own headers.
        assert_eq!(
            check_abi(&any(v(29, 7), 224), v(30, 1), false),
            Err(AbiRefusal::UnknownRuntime)
        );
        assert_eq!(
            check_abi(&any(v(30, 1), 240), v(30, 1), true),
            Ok(AbiVerdict { gin: true })
        );
        // A future library keeps 2.31.2's compatibility rules.
        assert_eq!(
            check_abi(&abi(v(31, 2)), v(32, 0), true),
            Ok(AbiVerdict { gin: true })
        );
        assert_eq!(
            check_abi(&abi(v(29, 7)), NcclVersion::new(3, 0, 0), false),
            Ok(AbiVerdict { gin: false })
        );
    }

    #[test]
    fn too_old_and_too_large() {
        let old = ModuleAbi {
            headers: v(27, 7),
            dev_comm_size: 64,
            reqs_size: 0,
        };
        assert_eq!(
            check_abi(&old, v(31, 2), false),
            Err(AbiRefusal::HeadersTooOld)
        );
        assert_eq!(
            check_abi(&abi(v(28, 3)), v(27, 7), false),
            Err(AbiRefusal::RuntimeTooOld)
        );
        let huge = ModuleAbi {
            headers: v(33, 1),
            dev_comm_size: 8192,
            reqs_size: 0,
        };
        assert_eq!(
            check_abi(&huge, v(33, 1), false),
            Err(AbiRefusal::TooLarge { size: 8192 })
        );
        // Header code 0 (no NCCL_VERSION_CODE) decodes as 0.0.0.
        let none = ModuleAbi {
            headers: NcclVersion::from_code(0),
            dev_comm_size: 248,
            reqs_size: 120,
        };
        assert_eq!(
            check_abi(&none, v(31, 2), false),
            Err(AbiRefusal::HeadersTooOld)
        );
    }

    #[test]
    fn every_refusal_message_names_both_versions() {
        for (runtime, _) in TABLE {
            for h in VERSIONS {
                for gin in [false, true] {
                    let a = abi(h);
                    if let Err(refusal) = check_abi(&a, runtime, gin) {
                        let msg =
                            refusal_message("kern.cu", &a, runtime, "/x/libnccl.so.2", &refusal);
                        assert!(msg.contains(&format!("NCCL {h} headers")), "{msg}");
                        assert!(
                            msg.contains(&format!("loaded NCCL is {runtime} (")),
                            "{msg}"
                        );
                        assert!(msg.contains("kern.cu") && msg.contains("/x/libnccl.so.2"));
                        assert!(!msg.contains('\n'));
                    }
                }
            }
        }
        let a = abi(v(28, 3));
        let msg = refusal_message(
            "a.cu",
            &a,
            v(28, 9),
            "/usr/lib/libnccl.so.2",
            &check_abi(&a, v(28, 9), false).unwrap_err(),
        );
        assert_eq!(
            msg,
            "CUDA module a.cu was compiled against NCCL 2.28.3 headers (sizeof(ncclDevComm) = \
             88) but the loaded NCCL is 2.28.9 (/usr/lib/libnccl.so.2): NCCL 2.28.3's \
             ncclDevComm is 88 bytes and 2.28.7+'s 200 bytes, with different \
             ncclDevCommRequirements too; NCCL 2.28 copies both without checking, so these \
             88-byte headers with a 200-byte library would corrupt memory; compile the kernels \
             against NCCL 2.28.9's headers, or load NCCL 2.28.3 (NIIN_NCCL_LIBRARY or \
             NCCL_HOME)"
        );
    }

    #[test]
    fn only_a_one_pe_world_goes_without_a_dev_comm() {
        assert!(one_pe_without_dev_comm(1, 1, 0));
        assert!(
            !one_pe_without_dev_comm(2, 2, 0),
            "two PEs need the devComm's barriers"
        );
        assert!(!one_pe_without_dev_comm(2, 1, 1), "two nodes need GIN");
        assert!(
            !one_pe_without_dev_comm(1, 1, 1),
            "inconsistent: GIN in a one-PE world"
        );
        assert!(!one_pe_without_dev_comm(0, 0, 0));
    }

    #[test]
    fn barrier_count_parsing() {
        assert_eq!(barrier_count_from(None), Ok(264));
        assert_eq!(barrier_count_from(Some("132")), Ok(132));
        assert_eq!(barrier_count_from(Some(" 1 ")), Ok(1));
        assert_eq!(barrier_count_from(Some("65536")), Ok(65536));
        for bad in ["0", "65537", "-1", "", "many", "2.5"] {
            let e = barrier_count_from(Some(bad)).unwrap_err();
            assert!(e.contains("NIIN_BARRIER_CTAS"), "{e}");
        }
    }

    #[test]
    fn device_settings_parsing() {
        assert_eq!(put_signal_mode_from(None), Ok(0));
        assert_eq!(put_signal_mode_from(Some("auto")), Ok(0));
        assert_eq!(put_signal_mode_from(Some(" FUSED ")), Ok(0));
        for split in ["separate", "split", "fence_signal"] {
            assert_eq!(put_signal_mode_from(Some(split)), Ok(1), "{split}");
        }
        let e = put_signal_mode_from(Some("fast")).unwrap_err();
        assert!(
            e.contains("NIIN_PUT_SIGNAL_MODE") && e.contains("fast"),
            "{e}"
        );
        assert_eq!(flag_from(GIN_LOOPBACK_VAR, None), Ok(0));
        assert_eq!(flag_from(GIN_LOOPBACK_VAR, Some("1")), Ok(1));
        let e = flag_from(GIN_LOOPBACK_VAR, Some("yes")).unwrap_err();
        assert!(e.contains("NIIN_GIN_LOOPBACK") && e.contains("yes"), "{e}");
        assert_eq!(bool_from(DISABLE_NVLS_VAR, None), Ok(false));
        for yes in ["1", "true", "YES", " on ", "y"] {
            assert_eq!(bool_from(DISABLE_NVLS_VAR, Some(yes)), Ok(true), "{yes}");
        }
        for no in ["", "0", "False", "no", "off", "n"] {
            assert_eq!(bool_from(DISABLE_NVLS_VAR, Some(no)), Ok(false), "{no}");
        }
        let e = bool_from(DISABLE_NVLS_VAR, Some("maybe")).unwrap_err();
        assert!(
            e.contains("NVSHMEM_DISABLE_NVLS") && e.contains("maybe"),
            "{e}"
        );
        assert_eq!(gin_queue_slots_from(None), Ok(DEFAULT_GIN_QUEUE_SLOTS));
        assert_eq!(gin_queue_slots_from(Some("2")), Ok(2));
        assert_eq!(gin_queue_slots_from(Some("65536")), Ok(65536));
        for bad in ["0", "1", "3", "1000", "131072", "-2", "many"] {
            let e = gin_queue_slots_from(Some(bad)).unwrap_err();
            assert!(e.contains("NIIN_GIN_QUEUE_SLOTS"), "{e}");
        }
    }

    #[test]
    fn multimem_only_where_nccl_supports_it_on_more_than_two_gpus() {
        let on = DeviceSettings {
            barrier_count: 1,
            put_signal_mode: 0,
            gin_loopback: 0,
            gin_queue_slots: DEFAULT_GIN_QUEUE_SLOTS,
            nvls_disabled: false,
        };
        assert!(lsa_multimem_wanted(on, 4, Some(true)));
        assert!(lsa_multimem_wanted(on, 8, Some(true)));
        // NCCL without multimem support would fail the devComm: never asked
        assert!(!lsa_multimem_wanted(on, 4, Some(false)));
        // NCCL 2.28 has no ncclCommQueryProperties: unknown, so never asked
        assert!(!lsa_multimem_wanted(on, 4, None));
        // NCCL's own rule for its symmetric kernels: more than 2 GPUs
        assert!(!lsa_multimem_wanted(on, 2, Some(true)));
        let disabled = DeviceSettings {
            nvls_disabled: true,
            ..on
        };
        assert!(!lsa_multimem_wanted(disabled, 4, Some(true)));
        let loopback = DeviceSettings {
            gin_loopback: 1,
            ..on
        };
        assert!(!lsa_multimem_wanted(loopback, 4, Some(true)));
    }

    unsafe extern "C" fn fail_create(
        _: *const NiinHostInfo,
        _: *mut c_void,
        _: usize,
        _: *mut c_char,
        _: usize,
    ) -> c_int {
        1
    }
    unsafe extern "C" fn fail_setup(
        _: *const NiinHostInfo,
        _: *const c_void,
        _: *mut c_char,
        _: usize,
    ) -> c_int {
        1
    }
    unsafe extern "C" fn ok_teardown(_: *const NiinHostInfo, _: *mut c_char, _: usize) -> c_int {
        0
    }

    fn hooks(abi_version: c_uint) -> NiinModuleHooks {
        NiinModuleHooks {
            abi_version,
            struct_size: size_of::<NiinModuleHooks>() as c_uint,
            nccl_version_code: 23102,
            dev_comm_size: 248,
            dev_comm_reqs_size: 120,
            context_size: 320,
            module_name: c"test.cu".as_ptr(),
            create_dev_comm: Some(fail_create),
            setup: Some(fail_setup),
            teardown: Some(ok_teardown),
            gin_poll: None,
        }
    }

    /// Registration is bookkeeping while no NCCL world is attached: nothing is called.
    #[test]
    fn registration_without_a_world() {
        let good = Box::leak(Box::new(hooks(MODULE_ABI_VERSION)));
        let future = Box::leak(Box::new(hooks(MODULE_ABI_VERSION + 1)));
        // SAFETY: leaked, so valid for the rest of the process.
        assert_eq!(unsafe { niin_register_module(good) }, 0);
        // SAFETY: as above; a second registration of the same hooks only counts once.
        assert_eq!(unsafe { niin_register_module(good) }, 0);
        // SAFETY: as above; an unknown ABI is recorded (refused at init), not read further.
        assert_eq!(unsafe { niin_register_module(future) }, 0);
        // SAFETY: NULL is refused.
        assert_ne!(unsafe { niin_register_module(std::ptr::null()) }, 0);
        {
            let reg = registry();
            let m = reg.modules.iter().find(|m| m.at == &*good).unwrap();
            assert_eq!(m.name, "test.cu");
            assert!(m.refused.is_none() && !m.set_up);
            let f = reg.modules.iter().find(|m| m.at == &*future).unwrap();
            let why = f.refused.as_ref().unwrap();
            let want = format!("ABI version {}", MODULE_ABI_VERSION + 1);
            assert!(why.contains(&want), "{why:?} does not name {want}");
        }
        // SAFETY: pointers given to niin_register_module.
        unsafe { niin_unregister_module(good) };
        // SAFETY: as above.
        unsafe { niin_unregister_module(future) };
        assert!(
            registry()
                .modules
                .iter()
                .all(|m| m.at != &*good && m.at != &*future)
        );
    }

    #[test]
    fn hook_messages() {
        let mut buf = [0u8; 16];
        buf[..5].copy_from_slice(b"oops\0");
        assert_eq!(hook_message(&buf), "oops");
        assert_eq!(hook_message(&[0u8; 4]), "no reason given");
        assert_eq!(hook_message(b"no nul"), "no nul");
    }
}
