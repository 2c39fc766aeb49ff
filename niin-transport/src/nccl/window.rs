//! Windows: device memory registered with a communicator (`ncclCommWindowRegister`), the
//! symmetric heap's NCCL face.
//!
//! Rules per library version (`NCCL-VERSIONS.md`):
//! - 2.28: a NULL buffer or size 0 returns success and leaves `*win` untouched.
//! - ≥ 2.29.2: `*win` is set to NULL first; a NULL buffer or size 0 is
//!   `ncclInvalidArgument`; when the communicator cannot register symmetric memory the call
//!   returns **success with `*win == NULL`**.
//!
//! [`Comm::register_window`] rejects a NULL buffer or size 0 before calling NCCL (the same
//! error on every version), pre-sets `*win` to NULL and turns "success without a window"
//! into [`NcclError::WindowNotSymmetric`]. `NCCL_WIN_STRICT_ORDERING` (2.29.7+) is passed
//! only to libraries that know it; otherwise it is left out and [`Window`] records it.

use std::fmt;
use std::os::raw::{c_int, c_void};

use super::comm::Comm;
use super::error::{NcclError, Result};
use super::result;
use super::sys;
use super::version::{NcclVersion, STRICT_ORDERING_VERSION};

/// Flags of a window registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowFlags {
    /// `NCCL_WIN_COLL_SYMMETRIC`: every rank registers a buffer of the same size, which
    /// symmetric kernels, the device API and (2.29.2–2.30.7) host RMA sources need.
    pub coll_symmetric: bool,
    /// `NCCL_WIN_STRICT_ORDERING` (2.29.7+): a remote signal makes the earlier payload
    /// visible to any CTA, not only to the one that waits. Left out on older libraries.
    pub strict_ordering: bool,
}

impl WindowFlags {
    /// The flags of the symmetric heap: symmetric, strictly ordered where supported.
    pub const SYMMETRIC_HEAP: WindowFlags = WindowFlags {
        coll_symmetric: true,
        strict_ordering: true,
    };

    /// The `NCCL_WIN_*` bits to pass to a library of `version`, and whether
    /// `strict_ordering` had to be left out (the library predates it).
    pub fn nccl_bits(self, version: NcclVersion) -> (c_int, bool) {
        let mut bits = sys::NCCL_WIN_DEFAULT as c_int;
        if self.coll_symmetric {
            bits |= sys::NCCL_WIN_COLL_SYMMETRIC as c_int;
        }
        let mut dropped = false;
        if self.strict_ordering {
            if version >= STRICT_ORDERING_VERSION {
                bits |= sys::NCCL_WIN_STRICT_ORDERING as c_int;
            } else {
                dropped = true;
            }
        }
        (bits, dropped)
    }
}

/// A registered window. Keeps its communicator alive; deregistered in `Drop`
/// (`ncclCommWindowDeregister`, collective like the registration: every rank drops its
/// windows in the same order). The memory must outlive the window.
pub struct Window {
    comm: Comm,
    raw: sys::ncclWindow_t,
    ptr: u64,
    size: usize,
    requested: WindowFlags,
    bits: c_int,
    strict_ordering_dropped: bool,
}

// SAFETY: the window handle is only passed to NCCL under its communicator's lock (or from
// Drop, which has exclusive access); the other fields are plain values.
unsafe impl Send for Window {}
// SAFETY: as for Send.
unsafe impl Sync for Window {}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("flags", &self.requested)
            .field("nccl_flags", &self.bits)
            .field("strict_ordering_dropped", &self.strict_ordering_dropped)
            .finish_non_exhaustive()
    }
}

impl Comm {
    /// Registers `size` bytes of device memory at `ptr` as a window (collective: every
    /// rank calls it, in the same order). `ptr` must stay allocated until the window is
    /// dropped; `ncclMemAlloc` memory (see [`DeviceMem`](super::DeviceMem)) is what NCCL
    /// expects for symmetric windows.
    pub fn register_window(&self, ptr: u64, size: usize, flags: WindowFlags) -> Result<Window> {
        let nccl = self.nccl();
        if ptr == 0 || size == 0 {
            return Err(NcclError::InvalidArgument {
                what: format!(
                    "window of {size} bytes at {ptr:#x}: the buffer must be non-null and \
                     non-empty (NCCL 2.28 would return success without a window, 2.29.2+ \
                     ncclInvalidArgument)"
                ),
            });
        }
        let (bits, strict_ordering_dropped) = flags.nccl_bits(nccl.version());
        // Pre-set to NULL: 2.28 leaves it untouched in some cases. It must outlive the
        // registration: a non-blocking communicator writes it when the registration
        // completes, which `settle` waits for.
        let mut raw: sys::ncclWindow_t = std::ptr::null_mut();
        {
            let _guard = self.lock();
            // SAFETY: the communicator is live; the caller keeps `size` bytes of device
            // memory at `ptr` allocated for the window's lifetime; `raw` lives until the
            // registration has completed (settle below).
            unsafe {
                result::comm_window_register(
                    nccl,
                    self.raw(),
                    ptr as *mut c_void,
                    size,
                    &mut raw,
                    bits,
                )
            }?;
            self.settle()?;
        }
        if raw.is_null() {
            return Err(NcclError::WindowNotSymmetric {
                version: nccl.version(),
                ptr,
                size,
                flags: bits,
            });
        }
        Ok(Window {
            comm: self.clone(),
            raw,
            ptr,
            size,
            requested: flags,
            bits,
            strict_ordering_dropped,
        })
    }
}

impl Window {
    /// The raw handle (valid while `self` lives).
    pub fn raw(&self) -> sys::ncclWindow_t {
        self.raw
    }

    /// The communicator the window belongs to.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The registered buffer's device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The registered size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The flags asked for.
    pub fn flags(&self) -> WindowFlags {
        self.requested
    }

    /// The `NCCL_WIN_*` bits actually passed to NCCL.
    pub fn nccl_flags(&self) -> c_int {
        self.bits
    }

    /// Whether `NCCL_WIN_STRICT_ORDERING` was asked for and is in effect.
    pub fn strict_ordering(&self) -> bool {
        self.requested.strict_ordering && !self.strict_ordering_dropped
    }

    /// Whether `NCCL_WIN_STRICT_ORDERING` was asked for but left out because the library
    /// predates it (< 2.29.7).
    pub fn strict_ordering_dropped(&self) -> bool {
        self.strict_ordering_dropped
    }

    fn check_offset(&self, offset: usize, what: &str, index: i32, limit: i32) -> Result<()> {
        if offset >= self.size {
            return Err(NcclError::InvalidArgument {
                what: format!(
                    "offset {offset:#x} is outside the {}-byte window",
                    self.size
                ),
            });
        }
        if index < 0 || index >= limit {
            return Err(NcclError::InvalidArgument {
                what: format!("{what} {index} is out of range (0..{limit})"),
            });
        }
        Ok(())
    }

    /// This process's address of `peer`'s window at `offset` (`ncclGetPeerDevicePointer`,
    /// 2.29.2+): `Ok(None)` when `peer` is not reachable by load/store (not an LSA peer).
    /// On 2.28 the error is `MissingSymbol`.
    pub fn peer_device_pointer(&self, offset: usize, peer: i32) -> Result<Option<u64>> {
        self.check_offset(offset, "peer", peer, self.comm.n_ranks())?;
        let _guard = self.comm.lock();
        // SAFETY: the window is live while `self` exists.
        let p =
            unsafe { result::get_peer_device_pointer(self.comm.nccl(), self.raw, offset, peer) }?;
        Ok((!p.is_null()).then_some(p as u64))
    }

    /// The address of LSA-team member `lsa_rank`'s window at `offset`
    /// (`ncclGetLsaDevicePointer`, 2.29.2+); `Ok(None)` if NCCL returns NULL.
    pub fn lsa_device_pointer(&self, offset: usize, lsa_rank: i32) -> Result<Option<u64>> {
        self.check_offset(offset, "LSA rank", lsa_rank, self.comm.n_ranks())?;
        let _guard = self.comm.lock();
        // SAFETY: the window is live while `self` exists.
        let p = unsafe {
            result::get_lsa_device_pointer(self.comm.nccl(), self.raw, offset, lsa_rank)
        }?;
        Ok((!p.is_null()).then_some(p as u64))
    }

    /// The buffer the window was registered with, as NCCL reports it
    /// (`ncclWinGetUserPtr`, 2.29.2+).
    pub fn user_ptr(&self) -> Result<u64> {
        let _guard = self.comm.lock();
        // SAFETY: the communicator and the window are live while `self` exists.
        let p = unsafe { result::win_get_user_ptr(self.comm.nccl(), self.comm.raw(), self.raw) }?;
        Ok(p as u64)
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let _guard = self.comm.lock();
        // SAFETY: the window belongs to the live communicator `self.comm` and is not used
        // after this.
        let r =
            unsafe { result::comm_window_deregister(self.comm.nccl(), self.comm.raw(), self.raw) };
        let r = r.and_then(|()| self.comm.settle());
        if let Err(e) = r {
            if !self.comm.is_aborting() {
                super::log_release_error("ncclCommWindowDeregister", &e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_bits_per_version() {
        let v2_28 = NcclVersion::new(2, 28, 9);
        let v2_29_2 = NcclVersion::new(2, 29, 2);
        let v2_29_7 = NcclVersion::new(2, 29, 7);
        let heap = WindowFlags::SYMMETRIC_HEAP;
        assert_eq!(heap.nccl_bits(v2_28), (1, true));
        assert_eq!(heap.nccl_bits(v2_29_2), (1, true));
        assert_eq!(heap.nccl_bits(v2_29_7), (3, false));
        assert_eq!(WindowFlags::default().nccl_bits(v2_29_7), (0, false));
        let only_strict = WindowFlags {
            coll_symmetric: false,
            strict_ordering: true,
        };
        assert_eq!(
            only_strict.nccl_bits(NcclVersion::new(2, 31, 2)),
            (2, false)
        );
    }

    #[test]
    fn flag_values_are_the_headers() {
        assert_eq!(sys::NCCL_WIN_DEFAULT, 0);
        assert_eq!(sys::NCCL_WIN_COLL_SYMMETRIC, 1);
        assert_eq!(sys::NCCL_WIN_STRICT_ORDERING, 2);
        assert_eq!(sys::NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
    }
}
