//! Errors of the CUDA layer, and the conversion of a driver status into one.

use std::ffi::CStr;

use cudarc::driver::sys;

/// What went wrong in a CUDA driver operation. Each variant carries the values that
/// explain it.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CudaError {
    /// `libcuda.so` could not be loaded: no NVIDIA driver here, or not on the library path.
    #[error(
        "the CUDA driver library (libcuda.so.1) could not be loaded: this machine has no NVIDIA driver, or it is not on the library path"
    )]
    NoDriver,
    /// The driver is older than the CUDA API level niin-rs is built against.
    #[error(
        "the CUDA driver supports CUDA {}.{}; niin-rs needs a driver for CUDA {}.{} or newer",
        .found / 1000, .found % 1000 / 10, .required / 1000, .required % 1000 / 10
    )]
    DriverTooOld {
        /// `cuDriverGetVersion` (1000 * major + 10 * minor).
        found: i32,
        /// The version needed, in the same encoding.
        required: i32,
    },
    /// The driver library lacks a function niin-rs calls.
    #[error("the CUDA driver library has no function {name} (a driver older than CUDA 12.2?)")]
    MissingSymbol {
        /// The symbol looked up.
        name: &'static str,
    },
    /// The driver lacks a function that arrived after the CUDA level niin-rs needs, for an
    /// operation that needs it (`nvshmemx_cumodule_init` and its kin).
    #[error(
        "the CUDA driver (version {}.{}) has no {name}, which arrived in CUDA {since}",
        .found / 1000, .found % 1000 / 10
    )]
    DriverLacks {
        /// The driver function.
        name: &'static str,
        /// The CUDA version that brought it.
        since: &'static str,
        /// `cuDriverGetVersion` (1000 * major + 10 * minor).
        found: i32,
    },
    /// A driver call returned an error status.
    #[error("{func} failed: {name} ({code})")]
    Call {
        /// The driver function.
        func: &'static str,
        /// Its `CUresult`.
        code: i32,
        /// The status's name (`CUDA_ERROR_INVALID_VALUE`).
        name: String,
    },
    /// An argument that the operation cannot take (checked before the driver sees it).
    #[error("{what}")]
    BadArgument {
        /// What is wrong, with the value.
        what: String,
    },
    /// A kernel wait gave up at its deadline instead of hanging the stream.
    #[error("{op} on the GPU gave up at its deadline: {detail}")]
    KernelTimeout {
        /// The operation that waited.
        op: &'static str,
        /// What it waited for and the last value it saw.
        detail: String,
    },
    /// A device ordinal that does not exist.
    #[error("CUDA device {ordinal} does not exist: this machine has {count} CUDA device(s)")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
    /// No CUDA context is current on the calling thread.
    #[error(
        "no CUDA context is current on this thread: call Device::make_current (or cudaSetDevice) first"
    )]
    NoContext,
    /// The current context is not the device's primary context.
    #[error(
        "the CUDA context current on this thread is not the primary context of device {ordinal}: niin-rs works in the primary context, the one the CUDA runtime uses"
    )]
    NotPrimaryContext {
        /// The device of the current context.
        ordinal: usize,
    },
    /// The driver could not JIT-compile or load a PTX module.
    #[error("the CUDA driver could not load PTX module {module}: {name} ({code}); JIT log: {log}")]
    Jit {
        /// The module's name.
        module: String,
        /// The `CUresult` of `cuModuleLoadDataEx`.
        code: i32,
        /// Its name.
        name: String,
        /// The JIT compiler's error log (may be empty).
        log: String,
    },
}

/// The result of a CUDA layer operation.
pub type Result<T> = std::result::Result<T, CudaError>;

/// `Ok` for `CUDA_SUCCESS`, else [`CudaError::Call`] naming `func`.
pub(crate) fn check(func: &'static str, status: sys::CUresult) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(call_error(func, status))
    }
}

/// [`CudaError::Call`] for a failed `func`.
pub(crate) fn call_error(func: &'static str, status: sys::CUresult) -> CudaError {
    CudaError::Call {
        func,
        code: status as i32,
        name: error_name(status),
    }
}

/// The name of a driver status (`CUDA_ERROR_INVALID_VALUE`): from `cuGetErrorName`
/// when the driver is loaded (it knows the codes of its own version), else from the
/// table of the CUDA 12.2 headers that cudarc's enum carries.
pub(crate) fn error_name(status: sys::CUresult) -> String {
    if super::driver::loaded() {
        let mut name: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: the driver is loaded and `cuGetErrorName` exists (checked by
        // `driver()`); it only writes a pointer to a static string into `name`.
        let r = unsafe { sys::cuGetErrorName(status, &mut name) };
        if r == sys::CUresult::CUDA_SUCCESS && !name.is_null() {
            // SAFETY: on success `name` points at a NUL-terminated static string.
            return unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
        }
    }
    format!("{status:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_ok_and_failures_name_function_code_and_status() {
        assert_eq!(check("cuInit", sys::CUresult::CUDA_SUCCESS), Ok(()));
        let e = check("cuMemAlloc_v2", sys::CUresult::CUDA_ERROR_INVALID_VALUE).unwrap_err();
        assert_eq!(
            e,
            CudaError::Call {
                func: "cuMemAlloc_v2",
                code: 1,
                name: "CUDA_ERROR_INVALID_VALUE".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "cuMemAlloc_v2 failed: CUDA_ERROR_INVALID_VALUE (1)"
        );
    }

    #[test]
    fn names_agree_with_and_without_the_driver() {
        // The same names whether they come from cuGetErrorName or from the fixed table.
        for (status, code, name) in [
            (
                sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                2,
                "CUDA_ERROR_OUT_OF_MEMORY",
            ),
            (
                sys::CUresult::CUDA_ERROR_NO_DEVICE,
                100,
                "CUDA_ERROR_NO_DEVICE",
            ),
            (
                sys::CUresult::CUDA_ERROR_NOT_READY,
                600,
                "CUDA_ERROR_NOT_READY",
            ),
            (
                sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
                700,
                "CUDA_ERROR_ILLEGAL_ADDRESS",
            ),
        ] {
            assert_eq!(status as i32, code);
            assert_eq!(error_name(status), name);
        }
    }

    #[test]
    fn messages_carry_their_values() {
        let old = CudaError::DriverTooOld {
            found: 11080,
            required: 12020,
        };
        assert_eq!(
            old.to_string(),
            "the CUDA driver supports CUDA 11.8; niin-rs needs a driver for CUDA 12.2 or newer"
        );
        let none = CudaError::NoDevice {
            ordinal: 3,
            count: 2,
        };
        assert!(none.to_string().contains("device 3") && none.to_string().contains("has 2"));
    }
}
