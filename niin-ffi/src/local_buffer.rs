//! Local buffers registered for RMA: `nvshmemx_buffer_register`,
//! `nvshmemx_buffer_unregister` and `nvshmemx_buffer_unregister_all`, and the host
//! `nvshmemx_mc_ptr`.
//!
//! NVSHMEM registers a local (not symmetric) buffer with its network transports so that it
//! may be the local side of RMA (the source of a put, the destination of a get); the call is
//! local, not collective. niin-rs's transports take any local memory as that side without a
//! registration (the mock: host memory; NCCL: loads and stores, copy engines, and GIN's staging
//! window for host-initiated transfers), so a registration here changes no transfer: it is
//! kept, per world, so that the calls keep NVSHMEM's rules and errors:
//!
//! - `register(addr, length)`: `addr` non-NULL, `length` above 0, the range not wrapping the
//!   address space and not overlapping a registered one (`NVSHMEMX_ERROR_INVALID_VALUE`,
//!   naming both ranges); 0 on success;
//! - `unregister(addr)`: `addr` must start a registered buffer (else
//!   `NVSHMEMX_ERROR_INVALID_VALUE`, naming it); 0 on success;
//! - `unregister_all()`: forgets every registration of this world.
//!
//! A device kernel's GIN transfer whose local side lies outside the symmetric heap still goes
//! to the NOT_IMPLEMENTED policy (niin/rma.h): NCCL's window registration is collective, and
//! these calls are not.
//!
//! `nvshmemx_mc_ptr(team, ptr)` returns NVSHMEM's answer for a team without NVLink multicast,
//! NULL: the host library maps no multicast address for the heap (the device collectives'
//! NVLS path takes the modules' own `lsaMultimem` handle, niin/impl/coll_multimem_impl.h).
//! Its arguments are checked (`NIIN:` line and NULL for a bad team or a pointer outside the
//! heap).

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::Mutex;

use crate::convert;
use crate::error::{FfiError, status_call, value_call};
use crate::state;

/// The registered buffers: start address to length, for the world of this id.
struct Registry {
    world: u64,
    buffers: BTreeMap<usize, usize>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    world: 0,
    buffers: BTreeMap::new(),
});

/// Runs `f` on the registrations of world `id` (those of an earlier world are dropped).
fn with_registry<R>(id: u64, f: impl FnOnce(&mut BTreeMap<usize, usize>) -> R) -> R {
    let mut r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if r.world != id {
        r.world = id;
        r.buffers.clear();
    }
    f(&mut r.buffers)
}

/// Records `addr..addr + length`, refusing overlaps.
fn register(
    buffers: &mut BTreeMap<usize, usize>,
    addr: usize,
    length: usize,
) -> Result<(), FfiError> {
    if addr == 0 {
        return Err(FfiError::Null("addr"));
    }
    if length == 0 {
        return Err(FfiError::BadArgument("length is 0".into()));
    }
    let end = addr.checked_add(length).ok_or_else(|| {
        FfiError::BadArgument(format!(
            "{addr:#x} + {length} bytes wraps the address space"
        ))
    })?;
    // The registered buffer that starts last at or before `end` is the only one that can
    // overlap (the registered ranges are disjoint).
    if let Some((&start, &len)) = buffers.range(..end).next_back() {
        if start + len > addr {
            return Err(FfiError::BadArgument(format!(
                "{addr:#x}..{end:#x} overlaps the registered buffer {start:#x}..{:#x}",
                start + len
            )));
        }
    }
    buffers.insert(addr, length);
    Ok(())
}

/// Registers the local buffer `addr..addr + length` for RMA (`nvshmemx_buffer_register`):
/// 0, or `NVSHMEMX_ERROR_INVALID_VALUE` after a `NIIN:` line (NULL, 0 bytes, an overlap).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_register(addr: *mut c_void, length: usize) -> c_int {
    status_call("nvshmemx_buffer_register", || {
        let w = state::world()?;
        with_registry(w.id(), |b| register(b, addr as usize, length))
    })
}

/// Forgets the registration of the buffer that starts at `addr`
/// (`nvshmemx_buffer_unregister`): 0, or `NVSHMEMX_ERROR_INVALID_VALUE` after a `NIIN:` line
/// when no registered buffer starts there.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister(addr: *mut c_void) -> c_int {
    status_call("nvshmemx_buffer_unregister", || {
        let w = state::world()?;
        with_registry(w.id(), |b| match b.remove(&(addr as usize)) {
            Some(_) => Ok(()),
            None => Err(FfiError::BadArgument(format!(
                "addr {addr:p} does not start a buffer registered with nvshmemx_buffer_register"
            ))),
        })
    })
}

/// Forgets every registration of this world (`nvshmemx_buffer_unregister_all`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_buffer_unregister_all() {
    value_call("nvshmemx_buffer_unregister_all", (), || {
        let w = state::world()?;
        with_registry(w.id(), BTreeMap::clear);
        Ok(())
    })
}

/// The multicast address of the symmetric `ptr` for `team` (`nvshmemx_mc_ptr`): NULL, as
/// NVSHMEM answers for a team without NVLink multicast (the host library maps no multicast
/// address for the heap; device code gets NCCL's multimem pointer where NVLS is on); NULL
/// after a `NIIN:` line for a bad team or a pointer outside the symmetric heap.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_mc_ptr(team: c_int, ptr: *const c_void) -> *mut c_void {
    value_call("nvshmemx_mc_ptr", null_mut(), || {
        let w = state::world()?;
        convert::team(&w, team)?;
        convert::sym(&w, ptr, 1, "ptr")?;
        Ok(null_mut())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_are_disjoint_and_named_in_errors() {
        let mut b = BTreeMap::new();
        register(&mut b, 0x1000, 0x100).unwrap();
        register(&mut b, 0x1100, 0x100).unwrap(); // adjacent: fine
        for (addr, len) in [(0x10ff, 2), (0x0f00, 0x101), (0x1000, 1), (0x11ff, 0x10)] {
            let e = register(&mut b, addr, len).unwrap_err().to_string();
            assert!(
                e.contains("overlaps the registered buffer"),
                "{addr:#x}: {e}"
            );
        }
        register(&mut b, 0x0f00, 0x100).unwrap(); // ends where the first starts
        assert!(matches!(
            register(&mut b, 0, 8),
            Err(FfiError::Null("addr"))
        ));
        assert!(
            register(&mut b, 0x5000, 0)
                .unwrap_err()
                .to_string()
                .contains("length is 0")
        );
        let e = register(&mut b, usize::MAX - 4, 8).unwrap_err().to_string();
        assert!(e.contains("wraps"), "{e}");
        assert_eq!(b.len(), 3);
    }
}
