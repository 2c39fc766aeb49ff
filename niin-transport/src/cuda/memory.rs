//! Copies, memsets and stream memory operations on unified addresses; device scratch
//! buffers and pinned host buffers.
//!
//! Addresses are `u64` unified virtual addresses (`CUdeviceptr`): device memory of this
//! GPU, a peer GPU's memory mapped here (an LSA peer's heap), pinned or pageable host
//! memory (a host pointer cast to `u64`); the driver tells them apart.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use cudarc::driver::sys;

use super::device::Device;
use super::driver::driver;
use super::error::{CudaError, Result, check};
use super::stream::Stream;

/// The condition of a stream wait ([`wait_value_32`], [`wait_value_64`]), as the driver
/// defines it (`CU_STREAM_WAIT_VALUE_*`), for the word `*addr` and the `value` given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitCond {
    /// `(int32_t)(*addr - value) >= 0` (`int64_t` at 64 bits): a *cyclic* comparison,
    /// equal to `*addr >= value` only while the two are less than 2^31 (2^63) apart.
    Geq,
    /// `*addr == value`.
    Eq,
    /// `(*addr & value) != 0`.
    And,
    /// `~(*addr | value) != 0`; needs [`Device::supports_wait_value_nor`].
    Nor,
}

impl WaitCond {
    /// The `CU_STREAM_WAIT_VALUE_*` flags value (no `FLUSH`: see the module docs).
    pub const fn flags(self) -> u32 {
        use sys::CUstreamWaitValue_flags_enum::*;
        (match self {
            WaitCond::Geq => CU_STREAM_WAIT_VALUE_GEQ,
            WaitCond::Eq => CU_STREAM_WAIT_VALUE_EQ,
            WaitCond::And => CU_STREAM_WAIT_VALUE_AND,
            WaitCond::Nor => CU_STREAM_WAIT_VALUE_NOR,
        }) as u32
    }
}

/// `Ok` if `addr` is not null and is aligned to `align` bytes.
pub(crate) fn check_word(op: &str, what: &str, addr: u64, align: usize) -> Result<()> {
    if addr == 0 {
        return Err(CudaError::BadArgument {
            what: format!("{op}: the {what} address is null"),
        });
    }
    if addr % align as u64 != 0 {
        return Err(CudaError::BadArgument {
            what: format!("{op}: the {what} address {addr:#x} is not aligned to {align} bytes"),
        });
    }
    Ok(())
}

/// Enqueues a copy of `bytes` bytes from `src` to `dst` on `stream` (`cuMemcpyAsync`:
/// the copy engines; between GPUs over NVLink where they are peers). A copy from
/// pageable host memory returns once the source has been staged; with pinned memory
/// or device memory the host must not reuse the source until the stream has done it.
///
/// # Safety
///
/// `src..src+bytes` and `dst..dst+bytes` must be memory of this process (device, mapped
/// peer or host) that stays valid until the copy has run, and the destination must not
/// be accessed meanwhile in a way that races with it.
pub unsafe fn memcpy_async(dst: u64, src: u64, bytes: usize, stream: &Stream) -> Result<()> {
    if bytes > 0 {
        check_word("memcpy_async", "destination", dst, 1)?;
        check_word("memcpy_async", "source", src, 1)?;
    }
    driver()?;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller vouches for both ranges and the stream; unified addressing lets
    // the driver find each side's memory type.
    check("cuMemcpyAsync", unsafe {
        sys::cuMemcpyAsync(dst, src, bytes, stream.handle())
    })
}

/// Enqueues a strided copy on `stream` (`cuMemcpy2DAsync`, both sides
/// `CU_MEMORYTYPE_UNIFIED`): `height` rows of `width_bytes` bytes, row `i` from
/// `src + i*src_pitch` to `dst + i*dst_pitch`. For NVSHMEM's iput/iget: one element per
/// row, pitch = stride × element size. With more than one row each pitch must be at
/// least `width_bytes`; the driver also limits pitches (`CU_DEVICE_ATTRIBUTE_MAX_PITCH`)
/// and returns `CUDA_ERROR_INVALID_VALUE` beyond.
///
/// # Safety
///
/// Every row of both sides must be memory of this process valid until the copy has run,
/// as for [`memcpy_async`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn memcpy_2d_async(
    dst: u64,
    dst_pitch: usize,
    src: u64,
    src_pitch: usize,
    width_bytes: usize,
    height: usize,
    stream: &Stream,
) -> Result<()> {
    let empty = width_bytes == 0 || height == 0;
    if !empty {
        check_word("memcpy_2d_async", "destination", dst, 1)?;
        check_word("memcpy_2d_async", "source", src, 1)?;
        if height > 1 && (dst_pitch < width_bytes || src_pitch < width_bytes) {
            return Err(CudaError::BadArgument {
                what: format!(
                    "memcpy_2d_async: pitches (destination {dst_pitch}, source {src_pitch}) must be at least the row width {width_bytes}"
                ),
            });
        }
    }
    driver()?;
    if empty {
        return Ok(());
    }
    // One row: the pitches are not used, but the driver still wants them >= the width.
    let (dst_pitch, src_pitch) = if height == 1 {
        (dst_pitch.max(width_bytes), src_pitch.max(width_bytes))
    } else {
        (dst_pitch, src_pitch)
    };
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width_bytes,
        Height: height,
    };
    // SAFETY: `copy` is fully initialized and lives across the call (the driver reads it
    // before returning); the caller vouches for the memory and the stream.
    check("cuMemcpy2DAsync_v2", unsafe {
        sys::cuMemcpy2DAsync_v2(&copy, stream.handle())
    })
}

/// Copies `bytes` bytes from `src` to `dst` and returns when the copy is done: enqueued
/// on the calling thread's per-thread default stream (`CU_STREAM_PER_THREAD`), then
/// synchronized. That stream waits for earlier work of the *legacy* default stream (not
/// for other streams): where the application may keep the legacy stream busy (a kernel
/// waiting for this PE), prefer [`memcpy_async`] on an owned non-blocking [`Stream`] and
/// [`Stream::synchronize`].
///
/// # Safety
///
/// As [`memcpy_async`], for the duration of the call.
pub unsafe fn memcpy_sync(dst: u64, src: u64, bytes: usize) -> Result<()> {
    let stream = Stream::per_thread();
    // SAFETY: the caller vouches for both ranges; the per-thread stream always exists.
    unsafe { memcpy_async(dst, src, bytes, &stream) }?;
    if bytes == 0 {
        return Ok(());
    }
    stream.synchronize()
}

/// Enqueues setting `bytes` bytes at `dst` to `byte` on `stream` (`cuMemsetD8Async`).
///
/// # Safety
///
/// `dst..dst+bytes` must be device (or mapped) memory valid until the memset has run.
pub unsafe fn memset_d8_async(dst: u64, byte: u8, bytes: usize, stream: &Stream) -> Result<()> {
    if bytes > 0 {
        check_word("memset_d8_async", "destination", dst, 1)?;
    }
    driver()?;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller vouches for the range and the stream.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, byte, bytes, stream.handle())
    })
}

/// Enqueues a 4-byte store of `value` at `addr` on `stream` (`cuStreamWriteValue32`),
/// preceded by the driver's memory fence (`CU_STREAM_WRITE_VALUE_DEFAULT`), so the
/// stream's earlier writes are visible to whoever sees the value.
///
/// # Safety
///
/// `addr` must be a 4-aligned word of device memory (of this GPU or a mapped peer) or of
/// mapped pinned host memory, valid until the write has run; not managed memory.
pub unsafe fn write_value_32(stream: &Stream, addr: u64, value: u32) -> Result<()> {
    check_word("write_value_32", "word", addr, 4)?;
    driver()?;
    let flags = sys::CUstreamWriteValue_flags_enum::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
    // SAFETY: the caller vouches for the word and the stream.
    check("cuStreamWriteValue32_v2", unsafe {
        sys::cuStreamWriteValue32_v2(stream.handle(), addr, value, flags)
    })
}

/// Enqueues an 8-byte store of `value` at `addr` on `stream` (`cuStreamWriteValue64`),
/// fenced as [`write_value_32`]. Needs [`Device::supports_stream_mem_ops`].
///
/// # Safety
///
/// As [`write_value_32`], for an 8-aligned word.
pub unsafe fn write_value_64(stream: &Stream, addr: u64, value: u64) -> Result<()> {
    check_word("write_value_64", "word", addr, 8)?;
    driver()?;
    let flags = sys::CUstreamWriteValue_flags_enum::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
    // SAFETY: the caller vouches for the word and the stream.
    check("cuStreamWriteValue64_v2", unsafe {
        sys::cuStreamWriteValue64_v2(stream.handle(), addr, value, flags)
    })
}

/// Makes later work on `stream` wait until the 4-byte word at `addr` satisfies `cond`
/// against `value` (`cuStreamWaitValue32`); the host does not wait. No deadline: a wait
/// that never holds hangs the stream (see [`super::HostKernels::wait`] for one with).
///
/// # Safety
///
/// As [`write_value_32`]; the word must stay valid until the wait has been satisfied.
pub unsafe fn wait_value_32(stream: &Stream, addr: u64, value: u32, cond: WaitCond) -> Result<()> {
    check_word("wait_value_32", "word", addr, 4)?;
    driver()?;
    // SAFETY: the caller vouches for the word and the stream.
    check("cuStreamWaitValue32_v2", unsafe {
        sys::cuStreamWaitValue32_v2(stream.handle(), addr, value, cond.flags())
    })
}

/// As [`wait_value_32`] for an 8-byte word (`cuStreamWaitValue64`). Needs
/// [`Device::supports_stream_mem_ops`].
///
/// # Safety
///
/// As [`wait_value_32`], for an 8-aligned word.
pub unsafe fn wait_value_64(stream: &Stream, addr: u64, value: u64, cond: WaitCond) -> Result<()> {
    check_word("wait_value_64", "word", addr, 8)?;
    driver()?;
    // SAFETY: the caller vouches for the word and the stream.
    check("cuStreamWaitValue64_v2", unsafe {
        sys::cuStreamWaitValue64_v2(stream.handle(), addr, value, cond.flags())
    })
}

fn no_empty(op: &str, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(CudaError::BadArgument {
            what: format!("{op}: a buffer of 0 bytes"),
        });
    }
    Ok(())
}

/// Device memory for scratch (`cuMemAlloc`, or stream-ordered `cuMemAllocAsync`), freed
/// on drop.
pub struct DeviceBuffer {
    ptr: u64,
    len: usize,
    owner: Device,
    /// Allocated with `cuMemAllocAsync`: a plain free must wait for the context first.
    stream_ordered: bool,
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("device", &self.owner.ordinal())
            .finish()
    }
}

impl DeviceBuffer {
    /// Allocates `bytes` bytes in the calling thread's current (primary) context.
    pub fn alloc(bytes: usize) -> Result<DeviceBuffer> {
        no_empty("DeviceBuffer::alloc", bytes)?;
        let device = Device::current()?.ok_or(CudaError::NoContext)?;
        DeviceBuffer::alloc_on(&device, bytes)
    }

    /// Allocates `bytes` bytes of `device`'s memory (`cuMemAlloc`).
    pub fn alloc_on(device: &Device, bytes: usize) -> Result<DeviceBuffer> {
        no_empty("DeviceBuffer::alloc", bytes)?;
        let _bound = device.bind()?;
        let mut ptr = 0;
        // SAFETY: the device's context is current; the call writes the address.
        check("cuMemAlloc_v2", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, bytes)
        })?;
        Ok(DeviceBuffer {
            ptr,
            len: bytes,
            owner: device.clone(),
            stream_ordered: false,
        })
    }

    /// Allocates `bytes` bytes, ordered on `stream` (`cuMemAllocAsync`, from the device's
    /// default memory pool): usable by work enqueued on `stream` after this call (other
    /// streams after synchronizing with it). Free with [`DeviceBuffer::free_async`]; a
    /// plain drop waits for the whole context first, since pending work may still use it.
    /// The current context must be the stream's.
    pub fn alloc_async(bytes: usize, stream: &Stream) -> Result<DeviceBuffer> {
        no_empty("DeviceBuffer::alloc_async", bytes)?;
        let device = Device::current()?.ok_or(CudaError::NoContext)?;
        let mut ptr = 0;
        // SAFETY: the context is current; the stream handle is valid (owned or vouched
        // for); the call writes the address.
        check("cuMemAllocAsync", unsafe {
            sys::cuMemAllocAsync(&mut ptr, bytes, stream.handle())
        })?;
        Ok(DeviceBuffer {
            ptr,
            len: bytes,
            owner: device,
            stream_ordered: true,
        })
    }

    /// Frees the buffer ordered on `stream` (`cuMemFreeAsync`): after the work enqueued
    /// on `stream` so far, without waiting. Work on other streams must be done with it.
    pub fn free_async(mut self, stream: &Stream) -> Result<()> {
        let _bound = self.owner.bind()?;
        // SAFETY: the buffer is ours and freed once: `ptr` is cleared so drop skips it.
        check("cuMemFreeAsync", unsafe {
            sys::cuMemFreeAsync(self.ptr, stream.handle())
        })?;
        self.ptr = 0;
        Ok(())
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes (never: allocations of 0 bytes are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the memory belongs to.
    pub fn device(&self) -> &Device {
        &self.owner
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let Ok(_bound) = self.owner.bind() else {
            return;
        };
        if self.stream_ordered {
            // SAFETY: the context is current. `cuMemFree` does not wait for the stream
            // work that may still use a stream-ordered allocation: wait for it all.
            let _ = unsafe { sys::cuCtxSynchronize() };
        }
        // SAFETY: the buffer was allocated in this context and is freed once; work that
        // used it was ordered before the owner dropped it (stream-ordered: waited above).
        let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// Page-locked host memory mapped into the device's address space (`cuMemHostAlloc`
/// with `PORTABLE | DEVICEMAP`), zeroed, freed on drop: for small results that a kernel
/// or a copy writes and the host reads back (fetched AMO values, the wait kernel's
/// timeout record). The host side is accessed only through atomic or volatile
/// accessors, since the device may write it at any time.
///
/// [`HostPinned::register_on`] makes the same from pages of this library's own (an
/// anonymous mapping registered with `cuMemHostRegister`): for memory that a thread reads
/// while the process exits, after the CUDA driver may have released what it allocated.
pub struct HostPinned {
    host: *mut u8,
    device_ptr: u64,
    len: usize,
    owner: Device,
    /// Whether the pages are this value's own mapping (unregistered and unmapped on drop)
    /// rather than the driver's (`cuMemFreeHost`).
    own_pages: bool,
}

// SAFETY: the memory is owned by this value and the process; every host access goes
// through atomics or volatile copies, so sharing between threads cannot tear or race
// in ways Rust forbids; the driver handles are thread-safe.
unsafe impl Send for HostPinned {}
// SAFETY: as above.
unsafe impl Sync for HostPinned {}

impl fmt::Debug for HostPinned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostPinned")
            .field("host", &self.host)
            .field("device_ptr", &format_args!("{:#x}", self.device_ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl HostPinned {
    /// Allocates `bytes` bytes of mapped pinned memory in the calling thread's current
    /// (primary) context.
    pub fn alloc(bytes: usize) -> Result<HostPinned> {
        no_empty("HostPinned::alloc", bytes)?;
        let device = Device::current()?.ok_or(CudaError::NoContext)?;
        HostPinned::alloc_on(&device, bytes)
    }

    /// Allocates `bytes` bytes of mapped pinned memory for `device`.
    pub fn alloc_on(device: &Device, bytes: usize) -> Result<HostPinned> {
        no_empty("HostPinned::alloc", bytes)?;
        let _bound = device.bind()?;
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: the device's context is current; the call writes the host address.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut host, bytes, flags)
        })?;
        let mut pinned = HostPinned {
            host: host.cast(),
            device_ptr: 0,
            len: bytes,
            owner: device.clone(),
            own_pages: false,
        };
        // SAFETY: `host` is `bytes` bytes of fresh memory that only this value sees yet.
        unsafe { std::ptr::write_bytes(pinned.host, 0, bytes) };
        let mut device_ptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP in this context; flags must be 0.
        check("cuMemHostGetDevicePointer_v2", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut device_ptr, host, 0)
        })?;
        pinned.device_ptr = device_ptr;
        Ok(pinned)
    }

    /// Maps `bytes` bytes (rounded up to whole pages) of zeroed anonymous memory of this
    /// library's own and registers them for `device` as pinned, mapped and portable
    /// (`cuMemHostRegister`). The pages stay mapped until the value is dropped, whatever the
    /// driver does at process exit, so a thread may read them until then.
    pub fn register_on(device: &Device, bytes: usize) -> Result<HostPinned> {
        no_empty("HostPinned::register_on", bytes)?;
        // SAFETY: sysconf reads a constant of the system.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = bytes.div_ceil(page) * page;
        // SAFETY: a fresh private anonymous mapping; no pointer of ours is passed.
        let host = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if host == libc::MAP_FAILED {
            return Err(CudaError::BadArgument {
                what: format!(
                    "mapping {len} bytes of host memory: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        let registered = device.bind().and_then(|_bound| {
            // SAFETY: `host` is `len` bytes of page-aligned memory mapped above, alive
            // until `drop` unregisters it; the device's context is current.
            check("cuMemHostRegister_v2", unsafe {
                sys::cuMemHostRegister_v2(host, len, flags)
            })
        });
        if let Err(e) = registered {
            // SAFETY: the mapping made above, not registered, seen by nothing else.
            unsafe { libc::munmap(host, len) };
            return Err(e);
        }
        // Registered: from here `drop` unregisters and unmaps the pages.
        let mut pinned = HostPinned {
            host: host.cast(),
            device_ptr: 0,
            len,
            owner: device.clone(),
            own_pages: true,
        };
        let _bound = device.bind()?;
        // SAFETY: `host` was registered with DEVICEMAP in this context; flags must be 0.
        check("cuMemHostGetDevicePointer_v2", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut pinned.device_ptr, host, 0)
        })?;
        Ok(pinned)
    }

    /// The host address.
    pub fn host_ptr(&self) -> *mut u8 {
        self.host
    }

    /// The address by which kernels and stream operations reach the memory (equal to
    /// the host address under unified addressing).
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes (never: allocations of 0 bytes are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The host address of `size` bytes at `offset`, checked in range and aligned.
    fn at(&self, offset: usize, size: usize, align: usize) -> Result<*mut u8> {
        let end = offset.checked_add(size);
        if end.is_none_or(|end| end > self.len) {
            return Err(CudaError::BadArgument {
                what: format!(
                    "{size} bytes at offset {offset} do not fit in a pinned buffer of {} bytes",
                    self.len
                ),
            });
        }
        if offset % align != 0 {
            return Err(CudaError::BadArgument {
                what: format!("pinned buffer offset {offset} is not aligned to {align} bytes"),
            });
        }
        // SAFETY: `offset + size <= len`, inside the allocation.
        Ok(unsafe { self.host.add(offset) })
    }

    fn u32_at(&self, offset: usize) -> Result<&AtomicU32> {
        let p = self.at(offset, 4, 4)?;
        // SAFETY: `p` is 4 aligned bytes inside the live allocation (the base is page
        // aligned), accessed only atomically from the host.
        Ok(unsafe { &*p.cast::<AtomicU32>() })
    }

    fn u64_at(&self, offset: usize) -> Result<&AtomicU64> {
        let p = self.at(offset, 8, 8)?;
        // SAFETY: `p` is 8 aligned bytes inside the live allocation, as for `u32_at`.
        Ok(unsafe { &*p.cast::<AtomicU64>() })
    }

    /// Reads the `u32` at byte `offset` (acquire).
    pub fn load_u32(&self, offset: usize) -> Result<u32> {
        Ok(self.u32_at(offset)?.load(Ordering::Acquire))
    }

    /// Reads the `u64` at byte `offset` (acquire).
    pub fn load_u64(&self, offset: usize) -> Result<u64> {
        Ok(self.u64_at(offset)?.load(Ordering::Acquire))
    }

    /// Writes the `u32` at byte `offset` (release).
    pub fn store_u32(&self, offset: usize, value: u32) -> Result<()> {
        self.u32_at(offset)?.store(value, Ordering::Release);
        Ok(())
    }

    /// Writes the `u64` at byte `offset` (release).
    pub fn store_u64(&self, offset: usize, value: u64) -> Result<()> {
        self.u64_at(offset)?.store(value, Ordering::Release);
        Ok(())
    }

    /// Replaces the `u32` at byte `offset`, returning the old value (acquire-release).
    pub fn swap_u32(&self, offset: usize, value: u32) -> Result<u32> {
        Ok(self.u32_at(offset)?.swap(value, Ordering::AcqRel))
    }

    /// Copies `out.len()` bytes from byte `offset` into `out` (volatile reads).
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let p = self.at(offset, out.len(), 1)?;
        for (i, b) in out.iter_mut().enumerate() {
            let at = p.wrapping_add(i);
            // SAFETY: `at` is inside the checked range of the live allocation.
            *b = unsafe { at.read_volatile() };
        }
        Ok(())
    }

    /// Copies `data` to byte `offset` (volatile writes).
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<()> {
        let p = self.at(offset, data.len(), 1)?;
        for (i, b) in data.iter().enumerate() {
            let at = p.wrapping_add(i);
            // SAFETY: `at` is inside the checked range of the live allocation.
            unsafe { at.write_volatile(*b) };
        }
        Ok(())
    }
}

impl Drop for HostPinned {
    fn drop(&mut self) {
        if self.own_pages {
            if let Ok(_bound) = self.owner.bind() {
                // SAFETY: the pages were registered in this context by `register_on`,
                // and are unregistered once; the owner drops the value only when no
                // enqueued work uses them.
                let _ = unsafe { sys::cuMemHostUnregister(self.host.cast()) };
            }
            // SAFETY: the mapping `register_on` made, `len` bytes, unmapped once; no
            // reference into it outlives `self`.
            unsafe { libc::munmap(self.host.cast(), self.len) };
            return;
        }
        let Ok(_bound) = self.owner.bind() else {
            return;
        };
        // SAFETY: allocated by `cuMemHostAlloc` in this context, freed once; the owner
        // drops it only when no enqueued work uses it any more.
        let _ = unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver_present() -> bool {
        // SAFETY: only tries to load the driver library.
        unsafe { sys::is_culib_present() }
    }

    #[test]
    fn wait_conditions_are_the_drivers() {
        assert_eq!(WaitCond::Geq.flags(), 0);
        assert_eq!(WaitCond::Eq.flags(), 1);
        assert_eq!(WaitCond::And.flags(), 2);
        assert_eq!(WaitCond::Nor.flags(), 3);
    }

    #[test]
    fn bad_words_are_refused_before_the_driver_is_touched() {
        // These hold in both worlds: the arguments are checked first.
        let s = Stream::legacy();
        // SAFETY: refused before anything is enqueued.
        let e = unsafe { write_value_32(&s, 0x1002, 1) }.unwrap_err();
        assert_eq!(
            e.to_string(),
            "write_value_32: the word address 0x1002 is not aligned to 4 bytes"
        );
        // SAFETY: as above.
        assert!(unsafe { write_value_64(&s, 0x1004, 1) }.is_err());
        // SAFETY: as above.
        assert!(unsafe { wait_value_64(&s, 0, 1, WaitCond::Eq) }.is_err());
        // SAFETY: as above.
        assert!(unsafe { wait_value_32(&s, 0x1001, 1, WaitCond::Geq) }.is_err());
        // SAFETY: as above.
        assert!(unsafe { memcpy_async(0, 0x1000, 4, &s) }.is_err());
        // SAFETY: as above: pitch 2 < width 4 with 3 rows.
        let e = unsafe { memcpy_2d_async(0x1000, 2, 0x2000, 8, 4, 3, &s) }.unwrap_err();
        assert!(matches!(e, CudaError::BadArgument { .. }), "{e}");
        assert!(matches!(
            DeviceBuffer::alloc(0),
            Err(CudaError::BadArgument { .. })
        ));
        assert!(matches!(
            HostPinned::alloc(0),
            Err(CudaError::BadArgument { .. })
        ));
    }

    #[test]
    fn without_a_driver_everything_is_no_driver() {
        if driver_present() {
            return; // covered by `copies_and_stream_memory_operations_on_a_gpu`
        }
        let s = Stream::legacy();
        let no = Err(CudaError::NoDriver);
        // SAFETY: nothing is enqueued without a driver (the same for the blocks below).
        assert_eq!(unsafe { memcpy_async(8, 16, 4, &s) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { memcpy_async(0, 0, 0, &s) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { memcpy_sync(8, 16, 4) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { memcpy_2d_async(8, 8, 16, 8, 4, 2, &s) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { memset_d8_async(8, 0, 4, &s) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { write_value_64(&s, 8, 1) }, no);
        // SAFETY: as above.
        assert_eq!(unsafe { wait_value_32(&s, 8, 1, WaitCond::Eq) }, no);
        assert_eq!(DeviceBuffer::alloc(8).unwrap_err(), CudaError::NoDriver);
        assert_eq!(HostPinned::alloc(8).unwrap_err(), CudaError::NoDriver);
    }

    #[test]
    fn copies_and_stream_memory_operations_on_a_gpu() {
        if !driver_present() {
            return; // covered by `without_a_driver_everything_is_no_driver`
        }
        let d = Device::open(0).unwrap();
        d.make_current().unwrap();
        let s = Stream::create().unwrap();
        let buf = DeviceBuffer::alloc(256).unwrap();
        let pinned = HostPinned::alloc(256).unwrap();
        let src: Vec<u8> = (0..64u8).collect();
        // SAFETY: every range lies inside `buf`, `pinned` or `src` (here and below),
        // alive until the synchronization.
        unsafe { memset_d8_async(buf.ptr(), 0xAB, 256, &s) }.unwrap();
        // SAFETY: as above.
        unsafe { memcpy_async(buf.ptr(), src.as_ptr() as u64, 64, &s) }.unwrap();
        // Strided: every 4th byte of src (16 rows of 1 byte) into buf[128..144].
        // SAFETY: as above.
        unsafe { memcpy_2d_async(buf.ptr() + 128, 1, src.as_ptr() as u64, 4, 1, 16, &s) }.unwrap();
        // SAFETY: as above.
        unsafe { write_value_32(&s, buf.ptr() + 160, 0xDEAD_BEEF) }.unwrap();
        // SAFETY: as above.
        unsafe { memcpy_async(pinned.device_ptr(), buf.ptr(), 256, &s) }.unwrap();
        s.synchronize().unwrap();
        let mut got = [0u8; 256];
        pinned.read_bytes(0, &mut got).unwrap();
        assert_eq!(&got[..64], &src[..]);
        assert!(got[64..128].iter().all(|&b| b == 0xAB));
        let strided: Vec<u8> = (0..16).map(|i| i * 4).collect();
        assert_eq!(&got[128..144], &strided[..]);
        assert_eq!(pinned.load_u32(160).unwrap(), 0xDEAD_BEEF);
        if d.supports_stream_mem_ops().unwrap() {
            // A write, then waits that it satisfies.
            let word = buf.ptr() + 192;
            // SAFETY: a word inside `buf`, alive until the sync (here and below).
            unsafe { write_value_64(&s, word, 7) }.unwrap();
            // SAFETY: as above.
            unsafe { wait_value_64(&s, word, 7, WaitCond::Eq) }.unwrap();
            // SAFETY: as above.
            unsafe { wait_value_64(&s, word, 5, WaitCond::Geq) }.unwrap();
            s.synchronize().unwrap();
        }
        let mut back = [0u8; 16];
        // SAFETY: 16 bytes of `buf` into `back`.
        unsafe { memcpy_sync(back.as_mut_ptr() as u64, buf.ptr() + 128, 16) }.unwrap();
        assert_eq!(&back[..], &strided[..]);
        let scratch = DeviceBuffer::alloc_async(64, &s).unwrap();
        // SAFETY: `scratch` is 64 bytes, used only on `s`.
        unsafe { memset_d8_async(scratch.ptr(), 0, 64, &s) }.unwrap();
        scratch.free_async(&s).unwrap();
        s.synchronize().unwrap();
        assert!(pinned.load_u64(3).is_err() && pinned.load_u64(256).is_err());
        // Pages of our own, registered: the device writes them, the host reads them.
        let own = HostPinned::register_on(&d, 8).unwrap();
        assert!(own.len() >= 8 && own.len() % 4096 == 0, "{}", own.len());
        assert_eq!(own.load_u64(0).unwrap(), 0, "zeroed");
        // SAFETY: 4 bytes into the registered pages, on the stream `s`.
        unsafe { write_value_32(&s, own.device_ptr() + 4, 0x5157) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(own.load_u32(4).unwrap(), 0x5157);
        drop(own);
    }
}
