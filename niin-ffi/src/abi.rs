//! The C-side types and constants of the ABI, mirrored from NVSHMEM 3.4.5 (the same
//! values and layouts as `device/include/niin/types.h`, which C programs compile against).
//!
//! Layouts are checked at compile time below (sizes and field offsets as NVSHMEM's own
//! `static_assert`s state them), so a drift between this file and the C header shows up
//! as a build failure here or in the header's own asserts.

use std::ffi::{c_int, c_long, c_void};
use std::mem::{offset_of, size_of};

// ---- return values (NVSHMEM's `enum nvshmemx_status`) -------------------------------

/// `NVSHMEMX_SUCCESS`.
pub const NVSHMEMX_SUCCESS: c_int = 0;
/// `NVSHMEMX_ERROR_INVALID_VALUE`: a bad argument, or a call in the wrong library state.
pub const NVSHMEMX_ERROR_INVALID_VALUE: c_int = 1;
/// `NVSHMEMX_ERROR_OUT_OF_MEMORY`: the symmetric heap cannot hold the request.
pub const NVSHMEMX_ERROR_OUT_OF_MEMORY: c_int = 2;
/// `NVSHMEMX_ERROR_NOT_SUPPORTED`: a feature this build or transport does not have.
pub const NVSHMEMX_ERROR_NOT_SUPPORTED: c_int = 3;
/// `NVSHMEMX_ERROR_SYMMETRY`: the PEs did not allocate symmetrically.
pub const NVSHMEMX_ERROR_SYMMETRY: c_int = 4;
/// `NVSHMEMX_ERROR_GPU_NOT_SELECTED`.
pub const NVSHMEMX_ERROR_GPU_NOT_SELECTED: c_int = 5;
/// `NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED`.
pub const NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED: c_int = 6;
/// `NVSHMEMX_ERROR_INTERNAL`: the transport failed (timeout, peer gone, OS error) or a
/// bug in niin-rs.
pub const NVSHMEMX_ERROR_INTERNAL: c_int = 7;

// ---- nvshmemx_init_attr flags (NVSHMEM's `enum flags`) -----------------------------

/// `NVSHMEMX_INIT_THREAD_PES`.
pub const NVSHMEMX_INIT_THREAD_PES: u32 = 1;
/// `NVSHMEMX_INIT_WITH_MPI_COMM`: handled by `nvshmemx.h` when built with `NIIN_HAS_MPI`.
pub const NVSHMEMX_INIT_WITH_MPI_COMM: u32 = 1 << 1;
/// `NVSHMEMX_INIT_WITH_SHMEM`.
pub const NVSHMEMX_INIT_WITH_SHMEM: u32 = 1 << 2;
/// `NVSHMEMX_INIT_WITH_UNIQUEID`.
pub const NVSHMEMX_INIT_WITH_UNIQUEID: u32 = 1 << 3;

// ---- nvshmemx_init_status_t --------------------------------------------------------

/// `NVSHMEM_STATUS_NOT_INITIALIZED`.
pub const NVSHMEM_STATUS_NOT_INITIALIZED: c_int = 0;
/// `NVSHMEM_STATUS_IS_BOOTSTRAPPED`.
pub const NVSHMEM_STATUS_IS_BOOTSTRAPPED: c_int = 1;
/// `NVSHMEM_STATUS_IS_INITIALIZED`.
pub const NVSHMEM_STATUS_IS_INITIALIZED: c_int = 2;

// ---- thread levels -----------------------------------------------------------------

/// `NVSHMEM_THREAD_SINGLE`.
pub const NVSHMEM_THREAD_SINGLE: c_int = 0;
/// `NVSHMEM_THREAD_FUNNELED`.
pub const NVSHMEM_THREAD_FUNNELED: c_int = 1;
/// `NVSHMEM_THREAD_SERIALIZED`: what niin-rs provides, as NVSHMEM does.
pub const NVSHMEM_THREAD_SERIALIZED: c_int = 2;
/// `NVSHMEM_THREAD_MULTIPLE`.
pub const NVSHMEM_THREAD_MULTIPLE: c_int = 3;

// ---- teams, comparisons, signals ---------------------------------------------------

/// `NVSHMEM_TEAM_INVALID`.
pub const NVSHMEM_TEAM_INVALID: c_int = -1;
/// `NVSHMEM_TEAM_WORLD`.
pub const NVSHMEM_TEAM_WORLD: c_int = 0;
/// `NVSHMEM_TEAM_SHARED`.
pub const NVSHMEM_TEAM_SHARED: c_int = 1;
/// `NVSHMEMX_TEAM_NODE`.
pub const NVSHMEMX_TEAM_NODE: c_int = 2;
/// `NVSHMEMX_TEAM_SAME_MYPE_NODE`.
pub const NVSHMEMX_TEAM_SAME_MYPE_NODE: c_int = 3;
/// `NVSHMEMI_TEAM_SAME_GPU`.
pub const NVSHMEMI_TEAM_SAME_GPU: c_int = 4;
/// `NVSHMEMI_TEAM_GPU_LEADERS`.
pub const NVSHMEMI_TEAM_GPU_LEADERS: c_int = 5;
/// `NVSHMEM_CMP_GE` (the other `NVSHMEM_CMP_*` are `niin_api::Cmp`'s values).
pub const NVSHMEM_CMP_GE: c_int = 5;
/// `NVSHMEM_SIGNAL_SET`.
pub const NVSHMEM_SIGNAL_SET: c_int = 9;
/// `NVSHMEM_SIGNAL_ADD`.
pub const NVSHMEM_SIGNAL_ADD: c_int = 10;

// ---- versions and names ------------------------------------------------------------

/// `NVSHMEM_MAX_NAME_LEN`: the buffer size `nvshmem_info_get_name` may fill, NUL included.
pub const NVSHMEM_MAX_NAME_LEN: usize = 256;
/// `NVSHMEM_MAJOR_VERSION`: the OpenSHMEM specification version NVSHMEM 3.4.5 reports
/// through `nvshmem_info_get_version` (1.3).
pub const NVSHMEM_MAJOR_VERSION: c_int = 1;
/// `NVSHMEM_MINOR_VERSION`.
pub const NVSHMEM_MINOR_VERSION: c_int = 3;
/// `NVSHMEM_VENDOR_MAJOR_VERSION`: the NVSHMEM release whose API niin-rs implements.
pub const NVSHMEM_VENDOR_MAJOR_VERSION: c_int = 3;
/// `NVSHMEM_VENDOR_MINOR_VERSION`.
pub const NVSHMEM_VENDOR_MINOR_VERSION: c_int = 4;
/// `NVSHMEM_VENDOR_PATCH_VERSION`.
pub const NVSHMEM_VENDOR_PATCH_VERSION: c_int = 5;

/// What `nvshmem_info_get_name` writes (without the NUL); the header's
/// `NVSHMEM_VENDOR_STRING` is the same text.
pub const VENDOR_NAME: &str = concat!(
    "NIIN-RS (NVSHMEM Implemented In NCCL, Rust) v",
    env!("CARGO_PKG_VERSION")
);

// ---- structures --------------------------------------------------------------------

/// `UNIQUEID_PADDING`: bytes of `nvshmemx_uniqueid_t::internal`.
pub const UNIQUEID_PADDING: usize = 124;
/// `INIT_ARGS_PADDING`: bytes of `nvshmemx_init_args_t::content`.
pub const INIT_ARGS_PADDING: usize = 96;
/// `TEAM_CONFIG_V2_PADDING`: bytes of `nvshmem_team_config_t::padding`.
pub const TEAM_CONFIG_V2_PADDING: usize = 48;

/// The `version` field NVSHMEM's initializers give a v1 structure of `size` bytes:
/// `(1 << 16) + size`.
pub const fn version_v1(size: usize) -> c_int {
    (1 << 16) + size as c_int
}

/// `nvshmemx_uniqueid_t` (`nvshmemx_uniqueid_v1`): 128 bytes, an `int` version and 124
/// bytes that niin-rs fills as [`crate::uid`] describes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvshmemxUniqueid {
    /// `(1 << 16) + sizeof(nvshmemx_uniqueid_t)` (`NVSHMEMX_UNIQUEID_INITIALIZER`).
    pub version: c_int,
    /// The identity of the job (see [`crate::uid`]).
    pub internal: [u8; UNIQUEID_PADDING],
}

impl NvshmemxUniqueid {
    /// `NVSHMEMX_UNIQUEID_INITIALIZER`: the version, and all-zero contents.
    pub const INITIALIZER: NvshmemxUniqueid = NvshmemxUniqueid {
        version: version_v1(size_of::<NvshmemxUniqueid>()),
        internal: [0; UNIQUEID_PADDING],
    };
}

/// `nvshmemx_uniqueid_args_t` (`nvshmemx_uniqueid_args_v1`): 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NvshmemxUniqueidArgs {
    /// `(1 << 16) + sizeof(nvshmemx_uniqueid_args_t)`.
    pub version: c_int,
    /// The unique ID (not copied: it must live until `nvshmemx_init_attr` returns).
    pub id: *mut NvshmemxUniqueid,
    /// This PE's rank, `UNIQUEID_ARGS_INVALID` (-1) until set.
    pub myrank: c_int,
    /// The number of PEs, `UNIQUEID_ARGS_INVALID` (-1) until set.
    pub nranks: c_int,
}

/// `nvshmemx_init_args_t` (`nvshmemx_init_args_v1`): 128 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NvshmemxInitArgs {
    /// `(1 << 16) + sizeof(nvshmemx_init_args_t)`.
    pub version: c_int,
    /// Arguments of the unique-ID bootstrap.
    pub uid_args: NvshmemxUniqueidArgs,
    /// Reserved.
    pub content: [u8; INIT_ARGS_PADDING],
}

/// `nvshmemx_init_attr_t` (`nvshmemx_init_attr_v1`): 144 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NvshmemxInitAttr {
    /// `(1 << 16) + sizeof(nvshmemx_init_attr_t)`.
    pub version: c_int,
    /// Points to an `MPI_Comm` (`NVSHMEMX_INIT_WITH_MPI_COMM`, handled in the header).
    pub mpi_comm: *mut c_void,
    /// Further arguments.
    pub args: NvshmemxInitArgs,
}

impl NvshmemxInitAttr {
    /// `NVSHMEMX_INIT_ATTR_INITIALIZER`.
    pub const INITIALIZER: NvshmemxInitAttr = NvshmemxInitAttr {
        version: version_v1(size_of::<NvshmemxInitAttr>()),
        mpi_comm: std::ptr::null_mut(),
        args: NvshmemxInitArgs {
            version: version_v1(size_of::<NvshmemxInitArgs>()),
            uid_args: NvshmemxUniqueidArgs {
                version: version_v1(size_of::<NvshmemxUniqueidArgs>()),
                id: std::ptr::null_mut(),
                myrank: -1,
                nranks: -1,
            },
            content: [0; INIT_ARGS_PADDING],
        },
    };
}

/// `nvshmem_team_config_t` (`nvshmem_team_config_v2`): 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct NvshmemTeamConfig {
    /// `(2 << 16) + sizeof(nvshmem_team_config_t)`.
    pub version: c_int,
    /// Number of contexts the team expects to create.
    pub num_contexts: c_int,
    /// The team's unique id (`nvshmemx_team_init`, not offered by niin-rs).
    pub uniqueid: u64,
    /// Reserved.
    pub padding: [u8; TEAM_CONFIG_V2_PADDING],
}

impl NvshmemTeamConfig {
    /// `NVSHMEM_TEAM_CONFIG_INITIALIZER`, with `num_contexts` contexts.
    pub const fn new(num_contexts: c_int) -> NvshmemTeamConfig {
        NvshmemTeamConfig {
            version: (2 << 16) + size_of::<NvshmemTeamConfig>() as c_int,
            num_contexts,
            uniqueid: u64::MAX,
            padding: [0; TEAM_CONFIG_V2_PADDING],
        }
    }
}

/// `NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS`.
pub const NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS: c_long = 1;

// NVSHMEM 3.4.5's own static_asserts, and the field offsets its headers imply.
const _: () = {
    assert!(size_of::<NvshmemxUniqueid>() == 128);
    assert!(size_of::<NvshmemxUniqueidArgs>() == 24);
    assert!(size_of::<NvshmemxInitArgs>() == 128);
    assert!(size_of::<NvshmemxInitAttr>() == 144);
    assert!(size_of::<NvshmemTeamConfig>() == 64);
    assert!(offset_of!(NvshmemxUniqueidArgs, id) == 8);
    assert!(offset_of!(NvshmemxUniqueidArgs, myrank) == 16);
    assert!(offset_of!(NvshmemxInitArgs, uid_args) == 8);
    assert!(offset_of!(NvshmemxInitArgs, content) == 32);
    assert!(offset_of!(NvshmemxInitAttr, mpi_comm) == 8);
    assert!(offset_of!(NvshmemxInitAttr, args) == 16);
    assert!(VENDOR_NAME.len() < NVSHMEM_MAX_NAME_LEN);
    // LP64: `long` (team config masks) is 64 bits, as niin-rs passes it on.
    assert!(size_of::<c_long>() == 8);
};
