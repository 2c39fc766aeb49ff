//! The CUDA layer of niin-rs: the driver API, loaded at run time, as thin `Result`
//! wrappers and RAII handles, plus niin-rs's own host-side kernels.
//!
//! Everything here goes through `cudarc::driver::sys`, cudarc's raw table of driver
//! functions, which `dlopen`s `libcuda.so` on first use (feature `dynamic-loading`; API
//! level CUDA 12.2, feature `cuda-12020`, so any driver from 12.2 on will do). Nothing
//! needs the CUDA toolkit, at build time or at run time: only the driver (and, for the
//! transports, NCCL).
//!
//! # Never a panic
//!
//! cudarc's loader panics when `libcuda` is missing or lacks a symbol. So every entry
//! point here first calls [`driver()`], which, once per process, checks
//! `is_culib_present()`, checks that every driver symbol this module calls exists
//! (see `driver::REQUIRED_SYMBOLS`, kept complete by a test), runs `cuInit(0)` and
//! checks the driver's CUDA version. Without a driver every call returns
//! [`CudaError::NoDriver`].
//!
//! # The primary context
//!
//! [`Device`] retains the device's *primary* context (`cuDevicePrimaryCtxRetain`,
//! released in `Drop`), the context that the CUDA runtime of the application uses
//! (`cudaSetDevice`). Device memory, streams, events and modules of the application and
//! of niin-rs are then in one context: pointers and `cudaStream_t` values pass between
//! them freely, and a kernel of the application sees what niin-rs wrote (see DESIGN.md,
//! "The device context reaches every CUDA module"). [`Device::current`] refuses a
//! current context that is not a primary one.
//!
//! cudarc's safe layer (`CudaContext`, `CudaStream`, `CudaSlice`) retains the primary
//! context too, but it is not used here: its streams are always owned and destroyed,
//! while NVSHMEM hands us the caller's `cudaStream_t`s to borrow ([`Stream::borrow_raw`]);
//! its slices record events on every use for cross-stream safety, extra work on every
//! operation of a transport whose buffers are the symmetric heap that NCCL owns; and it
//! panics where this layer must return an error. The raw table plus the handles here is
//! the same layering (`sys` → `Result` → RAII) at the size niin-rs needs.
//!
//! Handles make their context current around their own calls when they must
//! (creation in a given device, `Drop`), with a push/pop that restores the caller's
//! context. Free functions ([`memcpy_async`] and the like) take the stream's context
//! from the calling thread, as the driver API does: call [`Device::make_current`] (or
//! `cudaSetDevice`) on each thread first.
//!
//! # Which driver operation serves which NVSHMEM need (DESIGN.md, "Fast paths" #6)
//!
//! | NVSHMEM need | here |
//! | --- | --- |
//! | put / get (contiguous) | [`memcpy_async`]: `cuMemcpyAsync` on unified addresses, the copy engines |
//! | iput / iget (strided) | [`memcpy_2d_async`]: `cuMemcpy2DAsync`, one element per row, pitch = stride |
//! | blocking copies | [`memcpy_sync`] |
//! | p of 4 or 8 bytes, signal SET | [`write_value_32`] / [`write_value_64`]: `cuStreamWriteValue*` |
//! | stream wait, EQ or cyclic GE | [`wait_value_32`] / [`wait_value_64`]: `cuStreamWaitValue*` |
//! | p of 1 or 2 bytes | [`HostKernels::store`] (a kernel: no driver operation stores 1 or 2 bytes) |
//! | signal ADD | [`HostKernels::signal_add`]: a system-scope atomic add |
//! | AMOs | [`HostKernels::amo`] |
//! | other waits (NE, GT, LT, LE, signed, 2 bytes, vectors, with a deadline) | [`HostKernels::wait`] |
//! | heap zeroing | [`memset_d8_async`] |
//!
//! # niin-rs's own kernels: hand-written PTX
//!
//! The library must run where there is only the driver and NCCL (no nvcc, no NVRTC), so
//! its few kernels are PTX text written by hand (`niin-transport/src/cuda/host_ops.ptx`, embedded
//! with `include_str!` as [`HOST_OPS_PTX`]). [`HostKernels::load`] hands it to
//! `cuModuleLoadDataEx`: the driver JIT-compiles it for the device (PTX ISA 7.0, target
//! sm_70, so any Volta or newer GPU) and caches the result in its compute cache
//! (`~/.nv/ComputeCache`, `CUDA_CACHE_PATH`), so the compile cost is paid once per
//! machine and driver, the load once per context: keep one [`HostKernels`] per
//! [`Device`]. A JIT failure returns the driver's error log ([`CudaError::Jit`]).
//! CPU tests check that the PTX declares every kernel, with the parameter types, that
//! the Rust side launches, and run `ptxas` on it when `NIIN_PTXAS` names one.
//!
//! # Memory ordering
//!
//! - [`write_value_32`]/[`write_value_64`] use `CU_STREAM_WRITE_VALUE_DEFAULT`: the driver
//!   puts a memory fence before the write, like `__threadfence_system()` scoped to the
//!   stream, so a peer that sees the value also sees the stream's earlier writes (a put
//!   followed by its signal). `NO_MEMORY_BARRIER` would drop that and is not offered.
//! - [`wait_value_32`]/[`wait_value_64`] pass only the condition: no
//!   `CU_STREAM_WAIT_VALUE_FLUSH`, which flushes remote writes of a NIC (GPUDirect RDMA)
//!   and needs `CAN_FLUSH_REMOTE_WRITES`; stores of NVLink peers and of this GPU are
//!   already visible to the work after the wait. Note the driver's `GEQ` is *cyclic*:
//!   it holds when `(int32_t)(*addr - value) >= 0` (`int64_t` at 64 bits), which is
//!   NVSHMEM's GE only while the two values are less than 2^31 (2^63) apart.
//! - The kernels use strong, system-scope accesses (`.relaxed.sys`, `fence.*.sys`)
//!   because the other side is another GPU or the host: `signal_add` is a release
//!   (`fence.acq_rel.sys` then the atomic), AMOs are relaxed (NVSHMEM orders them only
//!   through fence/quiet), stores are single strong stores, and a wait ends with
//!   `fence.acq_rel.sys` (an acquire, with the load that saw the value).
//!
//! # The wait kernel's deadline
//!
//! A wait on a GPU that never completes hangs the stream, and with it the program. The
//! wait kernel reads `%globaltimer` (ns) when it starts running and gives up when the
//! time is past start + [`WaitSpec::timeout_ns`] (0: never): it writes a timeout record
//! (the word's address, the last value seen, the value waited for) to pinned host memory
//! mapped for the device, and exits, so the stream goes on. The host learns of it at its
//! next synchronization point from [`HostKernels::check_timeout`], which returns
//! [`CudaError::KernelTimeout`] with those values, and clears the record.
//! `cuStreamWaitValue` waits have no deadline; choose the kernel where one is needed.

mod coll_kernels;
mod device;
mod driver;
mod error;
mod foreign;
mod kernels;
mod memory;
mod module;
mod stream;
mod vmm;

pub use cudarc::driver::sys;

pub use coll_kernels::{CollKernels, ReduceLaunch, coll_ptx, has_reduce_kernel};
pub use device::Device;
pub use driver::{choose_device, device_count, driver, driver_version};
pub use error::{CudaError, Result};
pub use foreign::{launch_single_thread, library_module, module_functions, module_global};
pub use kernels::{HOST_OPS_PTX, HostKernels, WaitSpec, amo_code};
pub use memory::{
    DeviceBuffer, HostPinned, WaitCond, memcpy_2d_async, memcpy_async, memcpy_sync,
    memset_d8_async, wait_value_32, wait_value_64, write_value_32, write_value_64,
};
pub use module::{Function, Module};
pub use stream::{Event, Stream};
pub use vmm::{AliasMapping, VaRange, address_range, check_vmm, granularity, round_up};
