//! Kernels of CUDA modules that the application loaded itself through the driver API
//! (`cuModuleLoad*`, `cuLibraryLoad*`): finding a library's module, listing a module's
//! functions by name, and launching one of them. `libnvshmem_host`'s
//! `nvshmemx_cumodule_init` / `nvshmemx_culibrary_init` (niin-ffi) run the device-context
//! entry of such a module with these.
//!
//! The three look-ups arrived after CUDA 12.2, the driver level the rest of this layer
//! needs, so they are looked up when called: a driver without one is
//! [`CudaError::DriverLacks`], not a failure at [`driver()`](super::driver()).

use std::ffi::{CStr, c_char, c_uint, c_void};

use cudarc::driver::sys;

use super::driver::driver_version;
use super::error::{CudaError, Result, check};
use super::stream::Stream;

type GetFunctionCountFn = unsafe extern "C" fn(*mut c_uint, sys::CUmodule) -> sys::CUresult;
type EnumerateFunctionsFn =
    unsafe extern "C" fn(*mut sys::CUfunction, c_uint, sys::CUmodule) -> sys::CUresult;
type FuncGetNameFn = unsafe extern "C" fn(*mut *const c_char, sys::CUfunction) -> sys::CUresult;
type LibraryGetModuleFn = unsafe extern "C" fn(*mut sys::CUmodule, sys::CUlibrary) -> sys::CUresult;

/// The driver function `name` of prototype `F`, which arrived in CUDA `since`.
///
/// # Safety
/// `F` must be the prototype of the driver API's `name`.
unsafe fn driver_fn<F: Copy>(name: &'static str, since: &'static str) -> Result<F> {
    let found = driver_version()?;
    // SAFETY: driver_version() succeeded, so libcuda is present and culib() returns it
    // (loaded once, for the life of the process) instead of panicking.
    let lib = unsafe { sys::culib() };
    // SAFETY: looking the symbol up does not call it; its type is F by this function's
    // contract, and the library stays loaded, so the copied pointer stays valid.
    let symbol = unsafe { lib.get::<F>(name.as_bytes()) };
    symbol
        .map(|s| *s)
        .map_err(|_| CudaError::DriverLacks { name, since, found })
}

/// The module of `library` in the current context (`cuLibraryGetModule`, CUDA 12.0).
///
/// # Safety
/// `library` must be a library handle the driver gave out (`cuLibraryLoad*`), not yet
/// unloaded: the driver dereferences it.
pub unsafe fn library_module(library: sys::CUlibrary) -> Result<sys::CUmodule> {
    // SAFETY: the prototype of cuLibraryGetModule.
    let get: LibraryGetModuleFn = unsafe { driver_fn("cuLibraryGetModule", "12.0") }?;
    let mut module = std::ptr::null_mut();
    // SAFETY: a loaded library (this function's contract); the call writes the module
    // handle.
    check("cuLibraryGetModule", unsafe { get(&mut module, library) })?;
    Ok(module)
}

/// Every function of `module` with its (mangled) name (`cuModuleGetFunctionCount`,
/// `cuModuleEnumerateFunctions`: CUDA 12.4; `cuFuncGetName`: 12.3). Functions the driver
/// gives no name are left out.
///
/// # Safety
/// `module` must be a module handle the driver gave out (`cuModuleLoad*`,
/// `cuLibraryGetModule`), not yet unloaded: the driver dereferences it.
pub unsafe fn module_functions(module: sys::CUmodule) -> Result<Vec<(sys::CUfunction, String)>> {
    // SAFETY: the driver API's prototype of cuModuleGetFunctionCount.
    let count_fn: GetFunctionCountFn = unsafe { driver_fn("cuModuleGetFunctionCount", "12.4") }?;
    // SAFETY: the driver API's prototype of cuModuleEnumerateFunctions.
    let enumerate: EnumerateFunctionsFn =
        unsafe { driver_fn("cuModuleEnumerateFunctions", "12.4") }?;
    // SAFETY: the driver API's prototype of cuFuncGetName.
    let name_of: FuncGetNameFn = unsafe { driver_fn("cuFuncGetName", "12.3") }?;
    let mut count: c_uint = 0;
    // SAFETY: a loaded module (this function's contract); writes the count.
    check("cuModuleGetFunctionCount", unsafe {
        count_fn(&mut count, module)
    })?;
    let mut functions = vec![std::ptr::null_mut(); count as usize];
    // SAFETY: `functions` has room for `count` handles.
    check("cuModuleEnumerateFunctions", unsafe {
        enumerate(functions.as_mut_ptr(), count, module)
    })?;
    let mut named = Vec::with_capacity(functions.len());
    for f in functions {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a function handle the driver just returned; writes a pointer to its name,
        // owned by the module.
        check("cuFuncGetName", unsafe { name_of(&mut name, f) })?;
        if name.is_null() {
            continue;
        }
        // SAFETY: non-null: the NUL-terminated name, valid while the module is loaded.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        named.push((f, name));
    }
    Ok(named)
}

/// Enqueues `func` with one block of one thread on `stream` (`cuLaunchKernel`);
/// `params[i]` points at the value of parameter `i`.
///
/// # Safety
/// `func` must be a function of a module loaded in `stream`'s context that stays loaded
/// until the launch has run; `params` must have one pointer per parameter, each to a value
/// of that parameter's type, and the kernel must be correct for those values.
pub unsafe fn launch_single_thread(
    func: sys::CUfunction,
    stream: &Stream,
    params: &mut [*mut c_void],
) -> Result<()> {
    driver_version()?;
    // SAFETY: the caller vouches for the function, the parameters and the kernel; `params`
    // outlives the call, and no `extra` is passed.
    check("cuLaunchKernel", unsafe {
        sys::cuLaunchKernel(
            func,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            stream.handle(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

/// The device address and size of the global (`__device__` or `__constant__`) variable
/// `name` (its mangled name) of `module` (`cuModuleGetGlobal`).
///
/// # Safety
/// `module` must be a module handle the driver gave out (`cuModuleLoad*`,
/// `cuLibraryGetModule`), not yet unloaded: the driver dereferences it.
pub unsafe fn module_global(module: sys::CUmodule, name: &str) -> Result<(u64, usize)> {
    driver_version()?;
    let name = std::ffi::CString::new(name).map_err(|_| CudaError::BadArgument {
        what: format!("module_global: the variable name {name:?} holds a NUL byte"),
    })?;
    let mut address: sys::CUdeviceptr = 0;
    let mut bytes: usize = 0;
    // SAFETY: a loaded module (this function's contract), a NUL-terminated name alive
    // across the call; the call writes the address and the size.
    check("cuModuleGetGlobal", unsafe {
        sys::cuModuleGetGlobal_v2(&mut address, &mut bytes, module, name.as_ptr())
    })?;
    Ok((address, bytes))
}
