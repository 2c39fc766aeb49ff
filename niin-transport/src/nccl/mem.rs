//! Device memory from `ncclMemAlloc` (CUDA VMM memory, what NCCL wants for windows).

use std::fmt;
use std::os::raw::c_void;

use super::error::{NcclError, Result};
use super::loader::Nccl;
use super::{ReleaseReport, result};

/// Device memory allocated by `ncclMemAlloc` on the device current at allocation, freed by
/// `ncclMemFree` in `Drop`. Windows registered on it must be dropped first.
pub struct DeviceMem {
    nccl: &'static Nccl,
    ptr: *mut c_void,
    len: usize,
    /// Silenced by [`DeviceMem::release_quietly`].
    report: ReleaseReport,
}

// SAFETY: the pointer is a device address the host never dereferences; only ncclMemFree
// (in Drop, with exclusive access) uses it.
unsafe impl Send for DeviceMem {}
// SAFETY: shared access only reads the address and the length.
unsafe impl Sync for DeviceMem {}

impl fmt::Debug for DeviceMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceMem")
            .field("ptr", &format_args!("{:#x}", self.ptr as u64))
            .field("len", &self.len)
            .finish()
    }
}

impl Nccl {
    /// Allocates `len` bytes with `ncclMemAlloc` on the current CUDA device (NCCL may round
    /// the allocation up to its granularity; [`DeviceMem::len`] is what was asked for).
    pub fn mem_alloc(&'static self, len: usize) -> Result<DeviceMem> {
        if len == 0 {
            return Err(NcclError::InvalidArgument {
                what: "ncclMemAlloc of 0 bytes".to_owned(),
            });
        }
        let ptr = result::mem_alloc(self, len)?;
        if ptr.is_null() {
            return Err(NcclError::Call {
                func: "ncclMemAlloc",
                code: 0,
                name: format!("returned success but no memory for {len} bytes"),
                detail: String::new(),
            });
        }
        Ok(DeviceMem {
            nccl: self,
            ptr,
            len,
            report: ReleaseReport::default(),
        })
    }
}

impl DeviceMem {
    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr as u64
    }

    /// The device address as a pointer (for NCCL and CUDA calls; not dereferenceable on
    /// the host).
    pub fn as_mut_ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// The size asked for, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: empty allocations are refused.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// For memory on a CUDA context that has failed (a sticky error, already reported):
    /// `ncclMemFree` cannot succeed there, so its failure in `Drop` is not reported again.
    pub fn release_quietly(&self) {
        self.report.silence();
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: ptr came from this library's ncclMemAlloc and is freed once, here.
        if let Err(e) = unsafe { result::mem_free(self.nccl, self.ptr) } {
            self.report.log("ncclMemFree", &e);
        }
    }
}
