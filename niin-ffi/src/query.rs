//! Queries: this PE, the number of PEs, team numbers, the library's name and versions.
//!
//! The version and name queries answer before init too (they are constants).

use std::ffi::{c_char, c_int};

use crate::abi::{
    NVSHMEM_MAJOR_VERSION, NVSHMEM_MAX_NAME_LEN, NVSHMEM_MINOR_VERSION,
    NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION,
    VENDOR_NAME,
};
use crate::convert;
use crate::error::{FfiError, value_call};
use crate::state;

/// This PE's number in the world, or -1 (with a `NIIN:` line) before init
/// (`nvshmem_my_pe`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_my_pe() -> c_int {
    value_call("nvshmem_my_pe", -1, || {
        Ok(convert::c_count(state::world()?.my_pe()))
    })
}

/// The number of PEs in the world, or -1 (with a `NIIN:` line) before init
/// (`nvshmem_n_pes`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_n_pes() -> c_int {
    value_call("nvshmem_n_pes", -1, || {
        Ok(convert::c_count(state::world()?.n_pes()))
    })
}

/// This PE's number in `team`, or -1 when it is not a member or `team` is
/// `NVSHMEM_TEAM_INVALID` (`nvshmem_team_my_pe`). Any handle works: the predefined
/// teams and live teams from the splits; another value is -1 with a `NIIN:` line.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_my_pe(team: c_int) -> c_int {
    value_call("nvshmem_team_my_pe", -1, || {
        let w = state::world()?;
        Ok(w.team_my_pe(convert::team(&w, team)?)
            .map_or(-1, convert::c_count))
    })
}

/// The number of PEs in `team`, or -1 for `NVSHMEM_TEAM_INVALID`
/// (`nvshmem_team_n_pes`); another non-team value is -1 with a `NIIN:` line.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_n_pes(team: c_int) -> c_int {
    value_call("nvshmem_team_n_pes", -1, || {
        let w = state::world()?;
        Ok(w.team_n_pes(convert::team(&w, team)?)
            .map_or(-1, convert::c_count))
    })
}

/// Writes the OpenSHMEM specification version the API follows, 1.3 as NVSHMEM 3.4.5
/// reports it (`nvshmem_info_get_version`).
///
/// # Safety
/// `major` and `minor` must each be NULL or point to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    value_call("nvshmem_info_get_version", (), || {
        if major.is_null() || minor.is_null() {
            return Err(FfiError::Null(if major.is_null() {
                "major"
            } else {
                "minor"
            }));
        }
        // SAFETY: non-null and, by the caller's contract, writable.
        unsafe { major.write(NVSHMEM_MAJOR_VERSION) };
        // SAFETY: as above.
        unsafe { minor.write(NVSHMEM_MINOR_VERSION) };
        Ok(())
    })
}

/// Writes the NVSHMEM release whose API niin-rs implements, 3.4.5
/// (`nvshmemx_vendor_get_version_info`).
///
/// # Safety
/// `major`, `minor` and `patch` must each be NULL or point to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_vendor_get_version_info(
    major: *mut c_int,
    minor: *mut c_int,
    patch: *mut c_int,
) {
    value_call("nvshmemx_vendor_get_version_info", (), || {
        for (p, name) in [(major, "major"), (minor, "minor"), (patch, "patch")] {
            if p.is_null() {
                return Err(FfiError::Null(name));
            }
        }
        // SAFETY: non-null and, by the caller's contract, writable.
        unsafe { major.write(NVSHMEM_VENDOR_MAJOR_VERSION) };
        // SAFETY: as above.
        unsafe { minor.write(NVSHMEM_VENDOR_MINOR_VERSION) };
        // SAFETY: as above.
        unsafe { patch.write(NVSHMEM_VENDOR_PATCH_VERSION) };
        Ok(())
    })
}

/// Writes the library's name, NUL-terminated, into `name`
/// (`nvshmem_info_get_name`): the text of the header's `NVSHMEM_VENDOR_STRING`,
/// "NIIN-RS (NVSHMEM Implemented In NCCL, Rust) v" and the version, fewer than
/// `NVSHMEM_MAX_NAME_LEN` bytes with the NUL.
///
/// # Safety
/// `name` must be NULL or point to `NVSHMEM_MAX_NAME_LEN` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_info_get_name(name: *mut c_char) {
    value_call("nvshmem_info_get_name", (), || {
        if name.is_null() {
            return Err(FfiError::Null("name"));
        }
        let mut text = [0u8; NVSHMEM_MAX_NAME_LEN];
        text[..VENDOR_NAME.len()].copy_from_slice(VENDOR_NAME.as_bytes());
        let len = VENDOR_NAME.len() + 1; // with the NUL, fewer than NVSHMEM_MAX_NAME_LEN
        // SAFETY: `name` has room for NVSHMEM_MAX_NAME_LEN >= len bytes (the caller's
        // contract), and `text` is a local array, which cannot overlap C memory.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast::<u8>(), len) };
        Ok(())
    })
}
