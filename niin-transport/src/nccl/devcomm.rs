//! Device communicators created elsewhere and released here.
//!
//! `ncclDevComm` changes layout in every NCCL minor release and NCCL picks the layout it
//! writes from the requirements' `version` (`NCCL-VERSIONS.md`), so niin-rs does not
//! create device communicators from Rust: code compiled against the same `nccl_device.h`
//! as the kernels calls `ncclDevCommCreate` (through [`NcclTable::dev_comm_create`] of
//! the host library's table) into storage it owns, and hands the result to
//! [`DevComm::adopt`], which destroys it with `ncclDevCommDestroy` when dropped.
//!
//! [`NcclTable::dev_comm_create`]: super::NcclTable

use std::fmt;
use std::os::raw::c_void;

use super::comm::Comm;
use super::error::{NcclError, Result};
use super::{ReleaseReport, result};

/// A device communicator made by `ncclDevCommCreate` for a [`Comm`], destroyed with
/// `ncclDevCommDestroy` in `Drop` (before the communicator is released: it keeps a handle
/// to it). The storage of the `ncclDevComm` itself belongs to the caller of
/// [`DevComm::adopt`].
pub struct DevComm {
    comm: Comm,
    raw: *mut c_void,
    /// Silenced by [`DevComm::release_quietly`].
    report: ReleaseReport,
}

// SAFETY: the pointer is only passed to NCCL, under the communicator's lock (or from Drop,
// with exclusive access).
unsafe impl Send for DevComm {}
// SAFETY: shared access only reads the pointer value.
unsafe impl Sync for DevComm {}

impl fmt::Debug for DevComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevComm")
            .field("raw", &self.raw)
            .field("comm", &self.comm)
            .finish()
    }
}

impl DevComm {
    /// Takes ownership of the device communicator at `raw` (its destruction, not its
    /// storage). Fails if the library has no `ncclDevCommDestroy` or `raw` is null.
    ///
    /// # Safety
    /// `raw` points to an `ncclDevComm` that `ncclDevCommCreate` of `comm`'s library filled
    /// for `comm`, not destroyed yet; its storage stays valid until this `DevComm` is
    /// dropped, and nothing else destroys it.
    pub unsafe fn adopt(comm: Comm, raw: *mut c_void) -> Result<DevComm> {
        comm.nccl().require("ncclDevCommDestroy")?;
        if raw.is_null() {
            return Err(NcclError::InvalidArgument {
                what: "null device communicator".to_owned(),
            });
        }
        Ok(DevComm {
            comm,
            raw,
            report: ReleaseReport::default(),
        })
    }

    /// The device communicator's storage.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// The communicator it was made for.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// For a device communicator on a CUDA context that has failed (a sticky error,
    /// already reported): `ncclDevCommDestroy` cannot succeed there, so its failure in
    /// `Drop` is not reported again.
    pub fn release_quietly(&self) {
        self.report.silence();
    }
}

impl Drop for DevComm {
    fn drop(&mut self) {
        let _guard = self.comm.lock();
        // SAFETY: per `adopt`, raw is a live device communicator of this communicator,
        // destroyed once, here.
        let r =
            unsafe { result::dev_comm_destroy(self.comm.nccl(), self.comm.raw(), self.raw.cast()) };
        if let Err(e) = r.and_then(|()| self.comm.settle()) {
            if !self.comm.is_aborting() {
                self.report.log("ncclDevCommDestroy", &e);
            }
        }
    }
}
