//! Host synchronization: barriers, sync, fence, quiet.

use std::ffi::c_int;

use crate::convert;
use crate::error::{status_call, value_call};
use crate::state;

/// Completes this PE's outstanding puts, AMOs and signals, then waits for every PE
/// (`nvshmem_barrier_all`, collective).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_barrier_all() {
    value_call("nvshmem_barrier_all", (), || {
        Ok(state::world()?.barrier_all()?)
    });
}

/// Waits for every PE (`nvshmem_sync_all`, collective); niin-rs also completes this PE's
/// outstanding operations (a barrier is a valid, stronger sync).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_sync_all() {
    value_call("nvshmem_sync_all", (), || Ok(state::world()?.sync_all()?));
}

/// Barrier over the PEs of `team` (`nvshmem_barrier`, collective over the team; this PE
/// must be a member). Returns 0 or an `NVSHMEMX_ERROR_*` value.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_barrier(team: c_int) -> c_int {
    status_call("nvshmem_barrier", || {
        let w = state::world()?;
        Ok(w.barrier(convert::team(&w, team)?)?)
    })
}

/// Sync over the PEs of `team` (`nvshmem_team_sync`; a barrier in niin-rs). Returns 0 or
/// an `NVSHMEMX_ERROR_*` value.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_team_sync(team: c_int) -> c_int {
    status_call("nvshmem_team_sync", || {
        let w = state::world()?;
        Ok(w.barrier(convert::team(&w, team)?)?)
    })
}

/// Orders this PE's earlier puts, AMOs and signals to each PE before its later ones
/// (`nvshmem_fence`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_fence() {
    value_call("nvshmem_fence", (), || Ok(state::world()?.fence()?));
}

/// Completes this PE's earlier puts, AMOs and signals (`nvshmem_quiet`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmem_quiet() {
    value_call("nvshmem_quiet", (), || Ok(state::world()?.quiet()?));
}
