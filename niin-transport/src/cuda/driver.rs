//! Loading and initializing the driver, once per process; counting and choosing devices.

use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys;

use super::error::{CudaError, Result, check};

/// The oldest driver accepted: the CUDA API level cudarc is built for (`cuda-12020`).
pub(crate) const REQUIRED_DRIVER_VERSION: i32 = 12020;

/// Every driver function this module calls, by the symbol name cudarc loads. `driver()`
/// checks them all before anything is called, because cudarc panics on a missing
/// symbol; a test checks that every `sys::cu*` call in the module's sources is listed.
pub(crate) const REQUIRED_SYMBOLS: &[&str] = &[
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    "cuCtxPopCurrent_v2",
    "cuCtxPushCurrent_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceGetPCIBusId",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDriverGetVersion",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventElapsedTime",
    "cuEventQuery",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuGetErrorName",
    "cuInit",
    "cuLaunchKernel",
    "cuMemAddressFree",
    "cuMemAddressReserve",
    "cuMemAllocAsync",
    "cuMemAlloc_v2",
    "cuMemFreeAsync",
    "cuMemFreeHost",
    "cuMemFree_v2",
    "cuMemGetAddressRange_v2",
    "cuMemGetAllocationGranularity",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer_v2",
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuMemMap",
    "cuMemRelease",
    "cuMemRetainAllocationHandle",
    "cuMemSetAccess",
    "cuMemUnmap",
    "cuMemcpy2DAsync_v2",
    "cuMemcpyAsync",
    "cuMemsetD8Async",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamIsCapturing",
    "cuStreamQuery",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuStreamWaitValue32_v2",
    "cuStreamWaitValue64_v2",
    "cuStreamWriteValue32_v2",
    "cuStreamWriteValue64_v2",
];

static DRIVER: OnceLock<Result<i32>> = OnceLock::new();
static LOADED: AtomicBool = AtomicBool::new(false);

/// Loads and initializes the CUDA driver, once per process: checks that `libcuda` can be
/// loaded (else [`CudaError::NoDriver`]) and has every function niin-rs calls
/// ([`CudaError::MissingSymbol`]), runs `cuInit(0)`, and checks that the driver supports
/// CUDA 12.2 or newer ([`CudaError::DriverTooOld`]). Later calls return the first
/// call's result. Every other function of this module calls it first, so none of them
/// can reach cudarc's panicking loader without a driver.
pub fn driver() -> Result<()> {
    driver_version().map(|_| ())
}

/// The driver's CUDA version (`cuDriverGetVersion`: 1000 * major + 10 * minor, so 13000
/// for CUDA 13.0), initializing the driver first as [`driver()`] does.
pub fn driver_version() -> Result<i32> {
    DRIVER.get_or_init(init).clone()
}

/// Whether `libcuda` has been loaded and its symbols checked, so that cudarc's `sys`
/// functions can be called without a panic (even if `cuInit` then failed).
pub(crate) fn loaded() -> bool {
    LOADED.load(Ordering::Acquire)
}

fn init() -> Result<i32> {
    // SAFETY: tries to `dlopen` the driver library by its usual names (and closes it
    // again); loading it runs only the driver's own initializers.
    if !unsafe { sys::is_culib_present() } {
        return Err(CudaError::NoDriver);
    }
    // SAFETY: the library is present, so `culib()` finds it (the same names in the same
    // order) instead of panicking; it stays loaded for the life of the process.
    let lib = unsafe { sys::culib() };
    for &name in REQUIRED_SYMBOLS {
        // SAFETY: looking a symbol up does not call it; the pointer is dropped unused.
        let found = unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_ok();
        if !found {
            return Err(CudaError::MissingSymbol { name });
        }
    }
    LOADED.store(true, Ordering::Release);
    // SAFETY: `cuInit` exists (checked above) and takes no pointers.
    check("cuInit", unsafe { sys::cuInit(0) })?;
    let mut version = 0;
    // SAFETY: `cuDriverGetVersion` exists and writes one int into `version`.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut version)
    })?;
    if version < REQUIRED_DRIVER_VERSION {
        return Err(CudaError::DriverTooOld {
            found: version,
            required: REQUIRED_DRIVER_VERSION,
        });
    }
    Ok(version)
}

/// The number of CUDA devices visible to this process (after `CUDA_VISIBLE_DEVICES`).
pub fn device_count() -> Result<usize> {
    driver()?;
    let mut count = 0;
    // SAFETY: the driver is initialized; `cuDeviceGetCount` writes one int.
    check("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The device ordinal a PE uses when the application has not chosen one (no context is
/// current when niin-rs initializes), out of `count` visible devices:
///
/// - with the PE's rank among the processes of its node (`local_rank`, from the launcher:
///   `OMPI_COMM_WORLD_LOCAL_RANK`, `SLURM_LOCALID`, `LOCAL_RANK`...): `local_rank % count`.
///   One GPU per process while there are enough GPUs; with more processes than GPUs,
///   several PEs share one (NCCL ≥ 2.30 supports several ranks on one GPU; the transport
///   checks that its NCCL does);
/// - without one: `rank % count`, right when every node has `count` GPUs and runs its
///   ranks as one contiguous block.
///
/// Errors only when there is no device at all ([`CudaError::NoDevice`]). Pure: it reads
/// nothing but its arguments.
pub fn choose_device(local_rank: Option<usize>, rank: usize, count: usize) -> Result<usize> {
    if count == 0 {
        return Err(CudaError::NoDevice {
            ordinal: local_rank.unwrap_or(rank),
            count,
        });
    }
    Ok(local_rank.unwrap_or(rank) % count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this machine has a loadable CUDA driver (the GPU machine) or not (CI).
    fn driver_present() -> bool {
        // SAFETY: as in `init`: only tries to load the driver library.
        unsafe { sys::is_culib_present() }
    }

    #[test]
    fn choose_device_prefers_the_local_rank_and_wraps() {
        assert_eq!(choose_device(Some(0), 5, 4), Ok(0));
        assert_eq!(choose_device(Some(3), 5, 4), Ok(3));
        // More local processes than GPUs: PEs share GPUs round-robin.
        assert_eq!(choose_device(Some(5), 5, 4), Ok(1));
        assert_eq!(choose_device(Some(3), 0, 1), Ok(0));
        // No local rank: the global rank, wrapped.
        assert_eq!(choose_device(None, 6, 4), Ok(2));
        assert_eq!(choose_device(None, 0, 8), Ok(0));
        assert_eq!(
            choose_device(Some(2), 9, 0),
            Err(CudaError::NoDevice {
                ordinal: 2,
                count: 0
            })
        );
        assert_eq!(
            choose_device(None, 9, 0),
            Err(CudaError::NoDevice {
                ordinal: 9,
                count: 0
            })
        );
    }

    #[test]
    fn driver_is_absent_here_and_present_on_a_gpu_machine() {
        let r = driver();
        if driver_present() {
            assert_eq!(
                r,
                Ok(()),
                "a CUDA driver is installed but does not initialize"
            );
            assert!(loaded());
            assert!(driver_version().unwrap() >= REQUIRED_DRIVER_VERSION);
            assert!(device_count().unwrap() > 0);
        } else {
            assert_eq!(r, Err(CudaError::NoDriver));
            assert!(!loaded());
            assert_eq!(device_count(), Err(CudaError::NoDriver));
            // The same answer every time, and no panic from cudarc's loader.
            assert_eq!(driver(), Err(CudaError::NoDriver));
        }
    }

    /// Every call of a `sys::cu*` function in this module's sources names a symbol that `driver()`
    /// checks, so a new call cannot reach cudarc's panicking loader unchecked.
    #[test]
    fn required_symbols_cover_every_driver_call() {
        let sources = [
            ("device.rs", include_str!("device.rs")),
            ("driver.rs", include_str!("driver.rs")),
            ("error.rs", include_str!("error.rs")),
            ("foreign.rs", include_str!("foreign.rs")),
            ("kernels.rs", include_str!("kernels.rs")),
            ("memory.rs", include_str!("memory.rs")),
            ("module.rs", include_str!("module.rs")),
            ("stream.rs", include_str!("stream.rs")),
            ("vmm.rs", include_str!("vmm.rs")),
        ];
        let mut called = Vec::new();
        for (file, text) in sources {
            for (at, _) in text.match_indices("sys::cu") {
                let name: String = text[at + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // Driver functions are `cuUpperCase`; `culib` is cudarc's loader.
                let driver_fn = name.chars().nth(2).is_some_and(|c| c.is_ascii_uppercase());
                if driver_fn && text[at + 5 + name.len()..].starts_with('(') {
                    called.push((file, name));
                }
            }
        }
        assert!(called.len() > 40, "found only {} calls", called.len());
        for (file, name) in &called {
            assert!(
                REQUIRED_SYMBOLS.contains(&name.as_str()),
                "{file} calls sys::{name}, which REQUIRED_SYMBOLS does not list"
            );
        }
        for symbol in REQUIRED_SYMBOLS {
            assert!(
                called.iter().any(|(_, n)| n == symbol),
                "REQUIRED_SYMBOLS lists {symbol}, which nothing calls"
            );
        }
        let mut sorted = REQUIRED_SYMBOLS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), REQUIRED_SYMBOLS.len(), "duplicates");
    }
}
