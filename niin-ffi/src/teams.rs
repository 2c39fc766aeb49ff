//! Teams beyond the queries: splits, translation, configuration, destroy.
//!
//! The splits are collective over the parent team (every member calls them with the same
//! arguments); members of a new team get its handle, the others `NVSHMEM_TEAM_INVALID`.
//! niin-rs's teams are regular strided sets (`start`, `stride`, `size`), which is all the
//! OpenSHMEM split interfaces can make.

use std::ffi::{c_int, c_long};

use niin_api::{TeamConfig, TeamError, TeamId, World};

use crate::abi::{NVSHMEM_TEAM_INVALID, NvshmemTeamConfig};
use crate::convert;
use crate::error::{FfiError, FfiResult, status_call, value_call};
use crate::state;

/// The size of `parent` as the team model's errors give it (0 for a handle of no team).
fn parent_size(w: &World, parent: TeamId) -> c_int {
    w.team_n_pes(parent).map_or(0, convert::c_count)
}

/// `source` as niin-api's team error on this PE (the text every other path gives).
fn api_team_error(w: &World, source: TeamError) -> FfiError {
    FfiError::Api(niin_api::Error::Team {
        pe: w.my_pe(),
        source,
    })
}

/// The error of a strided split whose arguments select no PEs of `parent`.
fn bad_split(w: &World, parent: TeamId, start: c_int, stride: c_int, size: c_int) -> FfiError {
    api_team_error(
        w,
        TeamError::BadSplit {
            start,
            stride,
            size,
            parent_size: parent_size(w, parent),
        },
    )
}

/// Reads a split's configuration argument (NULL: the defaults).
///
/// # Safety
/// `config` must be NULL or point to a readable `nvshmem_team_config_t`.
unsafe fn read_config(config: *const NvshmemTeamConfig, mask: c_long) -> Option<TeamConfig> {
    if config.is_null() {
        return None;
    }
    // SAFETY: non-null and readable by the caller's contract.
    let c = unsafe { config.read() };
    Some(TeamConfig::new(c.num_contexts).masked(mask))
}

/// Writes `team` to `out`, which the caller checked is non-null.
///
/// # Safety
/// `out` must point to a writable `nvshmem_team_t`.
unsafe fn write_team(out: *mut c_int, team: TeamId) {
    // SAFETY: by the caller's contract.
    unsafe { out.write(team.0) };
}

/// Collectively creates the team of `size` PEs of `parent` from its PE `start` on, every
/// `stride`-th (`nvshmem_team_split_strided`), and writes its handle to `*new_team`
/// (`NVSHMEM_TEAM_INVALID` on PEs outside it, and on error). Returns 0 or an
/// `NVSHMEMX_ERROR_*` value.
///
/// # Safety
/// `config` must be NULL or point to a readable `nvshmem_team_config_t`; `new_team` must
/// be NULL or point to a writable `nvshmem_team_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_team_split_strided(
    parent: c_int,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const NvshmemTeamConfig,
    config_mask: c_long,
    new_team: *mut c_int,
) -> c_int {
    status_call("nvshmem_team_split_strided", || {
        if new_team.is_null() {
            return Err(FfiError::Null("new_team"));
        }
        // SAFETY: `new_team` is non-null and writable (this function's contract).
        unsafe { write_team(new_team, TeamId::INVALID) };
        let w = state::world()?;
        let parent = convert::team(&w, parent)?;
        // SAFETY: `config` is NULL or readable (this function's contract).
        let config = unsafe { read_config(config, config_mask) };
        let args = [start, stride, size].map(usize::try_from);
        let [Ok(start_pe), Ok(stride_pes), Ok(size_pes)] = args else {
            // NVSHMEM refuses a negative argument on the PE that passes it, before any
            // synchronization; the message is the one the team model gives the others.
            return Err(bad_split(&w, parent, start, stride, size));
        };
        let team = w.team_split_strided(parent, start_pe, stride_pes, size_pes, config)?;
        crate::modules::publish_teams(&w)?;
        // SAFETY: as above.
        unsafe { write_team(new_team, team.unwrap_or(TeamId::INVALID)) };
        Ok(())
    })
}

/// Collectively splits `parent` into rows of `xrange` PEs (`*xaxis_team`) and the columns
/// across them (`*yaxis_team`) (`nvshmem_team_split_2d`). Returns 0 or an
/// `NVSHMEMX_ERROR_*` value; on error both handles are `NVSHMEM_TEAM_INVALID`.
///
/// # Safety
/// The configurations must be NULL or readable; the team pointers must be NULL or
/// point to writable `nvshmem_team_t`s.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
pub unsafe extern "C" fn nvshmem_team_split_2d(
    parent: c_int,
    xrange: c_int,
    xaxis_config: *const NvshmemTeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut c_int,
    yaxis_config: *const NvshmemTeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut c_int,
) -> c_int {
    status_call("nvshmem_team_split_2d", || {
        if xaxis_team.is_null() || yaxis_team.is_null() {
            return Err(FfiError::Null(if xaxis_team.is_null() {
                "xaxis_team"
            } else {
                "yaxis_team"
            }));
        }
        // SAFETY: non-null and writable (this function's contract).
        unsafe { write_team(xaxis_team, TeamId::INVALID) };
        // SAFETY: as above.
        unsafe { write_team(yaxis_team, TeamId::INVALID) };
        let w = state::world()?;
        let parent = convert::team(&w, parent)?;
        // SAFETY: NULL or readable (this function's contract).
        let xconfig = unsafe { read_config(xaxis_config, xaxis_mask) };
        // SAFETY: as above.
        let yconfig = unsafe { read_config(yaxis_config, yaxis_mask) };
        let Ok(xrange_pes) = usize::try_from(xrange) else {
            // Refused on this PE before any synchronization, as NVSHMEM does.
            return Err(api_team_error(
                &w,
                TeamError::BadXRange {
                    xrange,
                    parent_size: parent_size(&w, parent),
                },
            ));
        };
        let (x, y) = w.team_split_2d(parent, xrange_pes, xconfig, yconfig)?;
        crate::modules::publish_teams(&w)?;
        // SAFETY: non-null and writable (this function's contract).
        unsafe { write_team(xaxis_team, x) };
        // SAFETY: as above.
        unsafe { write_team(yaxis_team, y) };
        Ok(())
    })
}

/// Why `nvshmemx_team_get_uniqueid` and `nvshmemx_team_init` are refused.
const TEAM_INIT_WHY: &str = "teams of any set of PEs (nvshmemx_team_get_uniqueid + \
     nvshmemx_team_init) are not implemented in niin-rs: its teams are strided (start, stride, \
     size) in the host and device team tables, and made collectively over a parent team; use \
     nvshmem_team_split_strided or nvshmem_team_split_2d";

/// `nvshmemx_team_get_uniqueid`: not implemented (NVSHMEM 3.4.5's teams of any PEs, made
/// by those PEs alone): `NVSHMEMX_ERROR_NOT_SUPPORTED` after a `NIIN:` line that says why
/// and what to use instead; `*uniqueid` is left as it was.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_team_get_uniqueid(_uniqueid: *mut u64) -> c_int {
    status_call("nvshmemx_team_get_uniqueid", || {
        state::world()?;
        Err(FfiError::NotSupported(TEAM_INIT_WHY.into()))
    })
}

/// `nvshmemx_team_init`: not implemented (see [`nvshmemx_team_get_uniqueid`]):
/// `*team` becomes `NVSHMEM_TEAM_INVALID` and the call returns
/// `NVSHMEMX_ERROR_NOT_SUPPORTED` after a `NIIN:` line.
///
/// # Safety
/// `team` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmemx_team_init(
    team: *mut c_int,
    _config: *mut NvshmemTeamConfig,
    _config_mask: c_long,
    _npes: c_int,
    _pe_idx_in_team: c_int,
) -> c_int {
    status_call("nvshmemx_team_init", || {
        if !team.is_null() {
            // SAFETY: non-null and writable (this function's contract).
            unsafe { write_team(team, TeamId::INVALID) };
        }
        state::world()?;
        Err(FfiError::NotSupported(TEAM_INIT_WHY.into()))
    })
}

/// Destroys a team made by a split (`nvshmem_team_destroy`); a predefined team, or a
/// handle that is no team, is a `NIIN:` line. `NVSHMEM_TEAM_INVALID` does nothing.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_destroy(team: c_int) {
    value_call("nvshmem_team_destroy", (), || -> FfiResult<()> {
        let w = state::world()?;
        if team == NVSHMEM_TEAM_INVALID {
            return Ok(());
        }
        w.team_destroy(convert::team(&w, team)?)?;
        crate::modules::publish_teams(&w)
    });
}

/// The number in `dest_team` of PE `src_pe` of `src_team`, or -1 when it is not a member
/// of `dest_team` or a handle is `NVSHMEM_TEAM_INVALID` (`nvshmem_team_translate_pe`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_translate_pe(
    src_team: c_int,
    src_pe: c_int,
    dest_team: c_int,
) -> c_int {
    value_call("nvshmem_team_translate_pe", -1, || {
        let w = state::world()?;
        let (src, dest) = (convert::team(&w, src_team)?, convert::team(&w, dest_team)?);
        // A negative PE number is in no team: -1, as any other PE outside `src_team`.
        Ok(usize::try_from(src_pe)
            .ok()
            .and_then(|pe| w.team_translate_pe(src, pe, dest))
            .map_or(-1, convert::c_count))
    })
}

/// Writes the configuration `team` was created with (`nvshmem_team_get_config`): the
/// version and `num_contexts` (0 for predefined teams and splits without one).
///
/// # Safety
/// `config` must be NULL or point to a writable `nvshmem_team_config_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvshmem_team_get_config(team: c_int, config: *mut NvshmemTeamConfig) {
    value_call("nvshmem_team_get_config", (), || {
        if config.is_null() {
            return Err(FfiError::Null("config"));
        }
        let w = state::world()?;
        let c = w.team_get_config(convert::team(&w, team)?)?;
        // SAFETY: non-null and writable (this function's contract).
        unsafe { config.write(NvshmemTeamConfig::new(c.num_contexts)) };
        Ok(())
    });
}
