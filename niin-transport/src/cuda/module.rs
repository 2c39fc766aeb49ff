//! PTX modules, JIT-compiled by the driver, and their kernels.

use std::ffi::{CString, c_void};
use std::fmt;
use std::sync::Arc;

use cudarc::driver::sys;

use super::device::Device;
use super::error::{CudaError, Result, check, error_name};
use super::stream::Stream;

/// Size of the buffer for the JIT compiler's error log.
const JIT_LOG_BYTES: usize = 8192;

/// A module loaded from PTX text into a device's primary context (`cuModuleLoadDataEx`:
/// the driver JIT-compiles it for the device, or takes it from its compute cache);
/// unloaded when the module and all its [`Function`]s are dropped.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    raw: sys::CUmodule,
    name: String,
    owner: Device,
}

// SAFETY: a `CUmodule` is a handle the driver lets any thread use.
unsafe impl Send for ModuleInner {}
// SAFETY: as above; `&ModuleInner` only reads the handle.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let Ok(_bound) = self.owner.bind() else {
            return;
        };
        // SAFETY: loaded in the owner's context; unloaded once, after every `Function`
        // (each holds this `Arc`) is gone.
        let _ = unsafe { sys::cuModuleUnload(self.raw) };
    }
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("name", &self.inner.name)
            .field("device", &self.inner.owner.ordinal())
            .finish()
    }
}

impl Module {
    /// Loads PTX text into `device`'s primary context; `name` names the module in errors.
    /// A JIT failure returns [`CudaError::Jit`] with the compiler's log.
    pub fn load_ptx(device: &Device, name: &str, ptx: &str) -> Result<Module> {
        let image = CString::new(ptx).map_err(|e| CudaError::BadArgument {
            what: format!(
                "PTX module {name} has a NUL byte at offset {}",
                e.nul_position()
            ),
        })?;
        let _bound = device.bind()?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_BYTES as *mut c_void];
        let mut raw = std::ptr::null_mut();
        // SAFETY: the device's context is current; `image` is NUL-terminated PTX; the
        // options name a log buffer of JIT_LOG_BYTES bytes (alive across the call) and
        // its size, passed by value in the pointer as the driver API defines.
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                image.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if status != sys::CUresult::CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(CudaError::Jit {
                module: name.to_string(),
                code: status as i32,
                name: error_name(status),
                log: String::from_utf8_lossy(&log[..end]).trim().to_string(),
            });
        }
        Ok(Module {
            inner: Arc::new(ModuleInner {
                raw,
                name: name.to_string(),
                owner: device.clone(),
            }),
        })
    }

    /// The kernel `name` of the module (`cuModuleGetFunction`; `.entry` names in PTX).
    pub fn function(&self, name: &str) -> Result<Function> {
        let c_name = CString::new(name).map_err(|_| CudaError::BadArgument {
            what: format!("kernel name {name:?} has a NUL byte"),
        })?;
        let _bound = self.inner.owner.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the module is loaded in the bound context; `c_name` is NUL-terminated.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut raw, self.inner.raw, c_name.as_ptr())
        })
        .map_err(|e| match e {
            CudaError::Call { code, name: status, .. } => CudaError::BadArgument {
                what: format!(
                    "module {} has no kernel {name}: cuModuleGetFunction returned {status} ({code})",
                    self.inner.name
                ),
            },
            other => other,
        })?;
        Ok(Function {
            raw,
            name: name.to_string(),
            module: Arc::clone(&self.inner),
        })
    }

    /// The device the module is loaded on.
    pub fn device(&self) -> &Device {
        &self.inner.owner
    }
}

/// A kernel of a loaded [`Module`] (keeps the module loaded).
pub struct Function {
    raw: sys::CUfunction,
    name: String,
    module: Arc<ModuleInner>,
}

// SAFETY: a `CUfunction` is a handle the driver lets any thread use (launches from
// several threads are fine).
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .field("module", &self.module.name)
            .finish()
    }
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Enqueues the kernel on `stream` (`cuLaunchKernel`) with `grid` blocks of `block`
    /// threads and `shared` bytes of dynamic shared memory. `params[i]` points at the
    /// value of parameter `i`; the driver copies the values before returning. The
    /// module's context is made current for the launch.
    ///
    /// # Safety
    ///
    /// `params` must have one pointer per kernel parameter, each to a value of that
    /// parameter's type; the kernel must be correct for those values (its memory
    /// accesses valid until it has run); `stream` must belong to the module's context.
    pub unsafe fn launch(
        &self,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared: u32,
        stream: &Stream,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let _bound = self.module.owner.bind()?;
        // SAFETY: the caller vouches for the parameters, the kernel's accesses and the
        // stream; `params` outlives the call, and no `extra` is passed.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                self.raw,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared,
                stream.handle(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jit_errors_carry_the_log_and_missing_kernels_are_named() {
        // SAFETY: only tries to load the driver library.
        if !unsafe { sys::is_culib_present() } {
            let e = Device::open(0)
                .and_then(|d| Module::load_ptx(&d, "x", ""))
                .unwrap_err();
            assert_eq!(e, CudaError::NoDriver);
            return;
        }
        let d = Device::open(0).unwrap();
        let broken = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k() { bogus.u32 %r; }\n";
        match Module::load_ptx(&d, "broken.ptx", broken) {
            Err(CudaError::Jit { module, log, .. }) => {
                assert_eq!(module, "broken.ptx");
                assert!(!log.is_empty(), "no JIT log");
                println!("JIT log: {log}");
            }
            other => panic!("broken PTX loaded: {other:?}"),
        }
        let fine = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k() { ret; }\n";
        let m = Module::load_ptx(&d, "fine.ptx", fine).unwrap();
        assert_eq!(m.function("k").unwrap().name(), "k");
        let e = m.function("nope").unwrap_err();
        assert!(e.to_string().contains("has no kernel nope"), "{e}");
        assert!(matches!(
            Module::load_ptx(&d, "nul", "a\0b"),
            Err(CudaError::BadArgument { .. })
        ));
    }
}
