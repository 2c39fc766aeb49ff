//! A CUDA device and its retained primary context.

use std::ffi::{CStr, c_char};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys;

use super::driver::{device_count, driver};
use super::error::{CudaError, Result, call_error, check};

/// A CUDA device with its primary context retained (`cuDevicePrimaryCtxRetain`; the
/// retain is released when the last clone is dropped). The primary context is the one
/// the application's CUDA runtime uses, so memory, streams and modules are shared with
/// it. Cheap to clone: clones share one retain.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct DeviceInner {
    ordinal: usize,
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: a `CUdevice` is an integer and a `CUcontext` a handle that the driver lets any
// thread use (the driver API is thread-safe); `DeviceInner` has no other state.
unsafe impl Send for DeviceInner {}
// SAFETY: as above; `&DeviceInner` only reads the two handles.
unsafe impl Sync for DeviceInner {}

impl Drop for DeviceInner {
    fn drop(&mut self) {
        // SAFETY: balances the `cuDevicePrimaryCtxRetain` of `Device::open` or
        // `Device::current`; every handle made in the context holds a `Device` clone,
        // so none outlives this release. An error (driver shutting down) is ignored.
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) };
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.inner.ordinal)
            .field("primary_context", &self.inner.ctx)
            .finish()
    }
}

impl Device {
    /// Opens device `ordinal` and retains its primary context (created if the
    /// application's runtime has not yet). Does not make it current.
    pub fn open(ordinal: usize) -> Result<Device> {
        driver()?;
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let mut dev = 0;
        // SAFETY: the driver is initialized and `ordinal < count` fits in an int.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut dev, ordinal as i32)
        })?;
        Device::retain(ordinal, dev)
    }

    fn retain(ordinal: usize, dev: sys::CUdevice) -> Result<Device> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: `dev` is a valid device; the call writes the primary context into `ctx`.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
        Ok(Device {
            inner: Arc::new(DeviceInner { ordinal, dev, ctx }),
        })
    }

    /// The device whose primary context is current on the calling thread (what the
    /// application chose with `cudaSetDevice`), retained; `None` when no context is
    /// current; [`CudaError::NotPrimaryContext`] when the current one is not primary.
    pub fn current() -> Result<Option<Device>> {
        driver()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: the driver is initialized; writes the current context (or null).
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut ctx) })?;
        if ctx.is_null() {
            return Ok(None);
        }
        let mut dev = 0;
        // SAFETY: a context is current; writes its device.
        check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut dev) })?;
        let mut ordinal = None;
        for i in 0..device_count()? {
            let mut d = 0;
            // SAFETY: `i` is below the device count.
            check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut d, i as i32) })?;
            if d == dev {
                ordinal = Some(i);
                break;
            }
        }
        let ordinal = ordinal.ok_or_else(|| CudaError::BadArgument {
            what: format!("the current context's device {dev} is not among the visible devices"),
        })?;
        let device = Device::retain(ordinal, dev)?;
        if device.inner.ctx != ctx {
            return Err(CudaError::NotPrimaryContext { ordinal });
        }
        Ok(Some(device))
    }

    /// Makes the primary context current on the calling thread (`cuCtxSetCurrent`), as
    /// `cudaSetDevice` does. Free functions such as [`super::memcpy_async`] work in the
    /// calling thread's current context.
    pub fn make_current(&self) -> Result<()> {
        // SAFETY: the context is retained by `self`, so it is alive.
        check("cuCtxSetCurrent", unsafe {
            sys::cuCtxSetCurrent(self.inner.ctx)
        })
    }

    /// The device ordinal (`cuDeviceGet`'s, after `CUDA_VISIBLE_DEVICES`).
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The retained primary context (a `CUcontext`, the runtime's context of the device).
    pub fn raw_context(&self) -> sys::CUcontext {
        self.inner.ctx
    }

    /// The device's name (`NVIDIA H200`).
    pub fn name(&self) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` holds `buf.len()` chars; the driver writes a NUL-terminated name.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.inner.dev)
        })?;
        Ok(c_string(&buf))
    }

    /// A device attribute (`cuDeviceGetAttribute`).
    pub fn attribute(&self, attribute: sys::CUdevice_attribute) -> Result<i32> {
        let mut value = 0;
        // SAFETY: `dev` is valid; the call writes one int.
        check("cuDeviceGetAttribute", unsafe {
            sys::cuDeviceGetAttribute(&mut value, attribute, self.inner.dev)
        })?;
        Ok(value)
    }

    /// The compute capability, `(major, minor)`: `(9, 0)` for an H100 or H200.
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        use sys::CUdevice_attribute::*;
        Ok((
            self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// Whether the stream memory operations ([`super::write_value_32`] and `_64`,
    /// [`super::wait_value_32`] and `_64`) work on this device. From CUDA 11.7 on, the
    /// driver's (`_v2`) 32-bit operations are always enabled, and the 64-bit ones where
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS` says so; the old
    /// `CAN_USE_STREAM_MEM_OPS_V1` attribute describes the retired v1 entry points, which
    /// niin-rs does not call. So: true when the 64-bit operations are supported, which
    /// implies the 32-bit ones.
    pub fn supports_stream_mem_ops(&self) -> Result<bool> {
        let ops64 = self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
        )?;
        Ok(ops64 != 0)
    }

    /// Whether [`super::WaitCond::Nor`] is supported in stream waits
    /// (`CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR`).
    pub fn supports_wait_value_nor(&self) -> Result<bool> {
        let nor = self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
        )?;
        Ok(nor != 0)
    }

    /// The device's PCI bus id, `domain:bus:device.function` (`0000:3b:00.0`).
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut buf = [0 as c_char; 64];
        // SAFETY: `buf` holds `buf.len()` chars; the driver writes a NUL-terminated id.
        check("cuDeviceGetPCIBusId", unsafe {
            sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, self.inner.dev)
        })?;
        Ok(c_string(&buf))
    }

    /// Waits for all work of the context, every stream of it (`cuCtxSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the primary context is current (bound above).
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    /// Asks, without waiting, whether the driver has recorded an error of the context (the
    /// sticky error a stopped kernel leaves): `cuStreamQuery` of the legacy default stream,
    /// which returns that error once the driver knows it, and `CUDA_SUCCESS` or
    /// `CUDA_ERROR_NOT_READY` until then (`Ok`). The watchdog calls it from its own thread
    /// to tell a stop the driver has reported from one it has not (`lsa/watchdog.rs`).
    pub fn query_error(&self) -> Result<()> {
        let _bound = self.bind()?;
        // SAFETY: the primary context is current (bound above); the null handle is the
        // legacy default stream, which always exists.
        let status = unsafe { sys::cuStreamQuery(std::ptr::null_mut()) };
        match status {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            other => Err(call_error("cuStreamQuery", other)),
        }
    }

    /// Makes the primary context current until the guard is dropped, which restores
    /// the calling thread's previous context.
    pub(crate) fn bind(&self) -> Result<Bound> {
        Bound::new(self.inner.ctx)
    }

    /// Whether two handles are the same device (the same primary context).
    pub fn same_device(&self, other: &Device) -> bool {
        self.inner.ctx == other.inner.ctx
    }
}

/// The text of a NUL-terminated C string in `buf` (all of `buf` if there is no NUL).
fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A context made current on this thread for a scope: pushed if another (or none) was
/// current, popped on drop. Not `Send`: current contexts are per thread.
pub(crate) struct Bound {
    pushed: bool,
    _thread: PhantomData<*const ()>,
}

impl Bound {
    /// Makes `ctx` current (a push, unless it already is).
    pub(crate) fn new(ctx: sys::CUcontext) -> Result<Bound> {
        let mut current = std::ptr::null_mut();
        // SAFETY: the driver is initialized (a `Device` exists); writes the current context.
        check("cuCtxGetCurrent", unsafe {
            sys::cuCtxGetCurrent(&mut current)
        })?;
        if current == ctx {
            return Ok(Bound {
                pushed: false,
                _thread: PhantomData,
            });
        }
        // SAFETY: `ctx` is a retained, live context; pushing it is undone in `drop`.
        check("cuCtxPushCurrent_v2", unsafe {
            sys::cuCtxPushCurrent_v2(ctx)
        })?;
        Ok(Bound {
            pushed: true,
            _thread: PhantomData,
        })
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = std::ptr::null_mut();
            // SAFETY: pops the context this guard pushed on this thread (the guard is
            // not `Send`, and guards are dropped in reverse order of creation).
            let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_fails_cleanly_without_a_driver_and_works_with_one() {
        // SAFETY: only tries to load the driver library.
        if !unsafe { sys::is_culib_present() } {
            assert_eq!(Device::open(0).unwrap_err(), CudaError::NoDriver);
            assert_eq!(Device::current().unwrap_err(), CudaError::NoDriver);
            return;
        }
        let count = device_count().unwrap();
        assert_eq!(
            Device::open(count).unwrap_err(),
            CudaError::NoDevice {
                ordinal: count,
                count
            }
        );
        let d = Device::open(0).unwrap();
        assert_eq!(d.ordinal(), 0);
        assert!(!d.name().unwrap().is_empty());
        assert_eq!(d.pci_bus_id().unwrap().matches(':').count(), 2);
        assert!(d.compute_capability().unwrap().0 >= 7);
        d.make_current().unwrap();
        let cur = Device::current().unwrap().expect("a current context");
        assert!(cur.same_device(&d));
        d.synchronize().unwrap();
    }

    #[test]
    fn c_strings_stop_at_the_nul() {
        let mut buf = [0 as c_char; 8];
        for (i, b) in b"H200\0xy".iter().enumerate() {
            buf[i] = *b as c_char;
        }
        assert_eq!(c_string(&buf), "H200");
        let full = [b'a' as c_char; 3];
        assert_eq!(c_string(&full), "aaa");
    }
}
