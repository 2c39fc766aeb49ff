//! Device contexts for CUDA modules loaded through the driver API:
//! `nvshmemx_cumodule_init` / `nvshmemx_cumodule_finalize` and
//! `nvshmemx_culibrary_init` / `nvshmemx_culibrary_finalize`.
//!
//! # The problem
//!
//! A translation unit (TU) of the program registers its device context from a static
//! initializer ([`crate::modules`]). A cubin, fatbin or PTX module built from a TU that
//! includes `nvshmem.h` and loaded with `cuModuleLoad` (or `cuLibraryLoad*`) has no host
//! code: nothing registers, and its kernels would find no context.
//!
//! # The mechanism
//!
//! `device/include/niin/impl/cumodule_impl.h` gives every TU with a device context a kernel
//! `niin_cumodule_entry(unsigned op, niin_cumodule_io *io)` with internal linkage, so
//! whole-program, `-rdc` and `nvlink`ed builds each hold one per TU without clashing. Its
//! name is mangled with a TU-specific prefix, so [`nvshmemx_cumodule_init`] enumerates the
//! module's functions (`cuModuleEnumerateFunctions`, `cuFuncGetName`: a CUDA 12.4 driver)
//! and takes every one whose name contains [`ENTRY_NAME`]. For each entry, on one thread,
//! with the `niin_cumodule_io` block ([`CumoduleIo`]) in mapped host memory:
//!
//! 1. `QUERY`: the TU's header ABI (module ABI version, `sizeof(niin_host_info)`,
//!    `NCCL_VERSION_CODE`, `sizeof(ncclDevComm)`, `sizeof(ncclDevCommRequirements)`), checked
//!    as a registered module's ([`modules::check_abi`]: a refusal names both NCCL versions),
//!    and whether its context is already set up (a module of the program itself, which its
//!    own registration set up: left alone);
//! 2. the device communicator of that ABI: the one the registered modules of the same
//!    headers share (`modules::cumodule_dev_comm`), or, when no module of the process has
//!    these headers, a new one: `REQUIREMENTS` fills an `ncclDevCommRequirements` from the
//!    TU's own headers, and this library calls the loaded NCCL's `ncclDevCommCreate` with it
//!    (collective: every PE must then initialize a module of these headers at the same
//!    point, which every PE loading the same module does);
//! 3. `SETUP`: the TU builds its context around a copy of that devComm, fills its LSA table
//!    (device memory owned here) and writes the context into a buffer of this library;
//! 4. the context is in constant memory, which kernels cannot write: this library copies
//!    the buffer into the TU's `niin_ctx_value`, found with `cuModuleGetGlobal` by a name
//!    derived from the entry's ([`context_variable_name`]).
//!
//! [`nvshmemx_cumodule_finalize`] zeroes the context and frees the table. Init counts, as
//! NVSHMEM's does: each init needs a finalize, the last one clears.
//! `nvshmem_finalize` clears the contexts of the modules still initialized (`detach`,
//! before the device communicators are destroyed) and keeps them registered; a later
//! `nvshmem_init` sets them up again (`attach`), as NVSHMEM keeps registered modules
//! across a re-initialization. So a module must be finalized before it is unloaded.
//!
//! A library (`CUlibrary`) is its module in the current context (`cuLibraryGetModule`).
//!
//! # What is refused
//!
//! - Before `nvshmem_init` (as NVSHMEM), and on the mock transport (no device contexts).
//! - A module without an entry: not compiled with niin-rs's headers (or with
//!   `NIIN_NO_DEVICE_CONTEXT`; or built for NVRTC, where the entry is left out).
//! - Headers of another niin-rs (module ABI or `niin_host_info` size differ), or NCCL headers
//!   that cannot work with the loaded NCCL.
//! - Worlds that need GIN (PEs outside the NVLink domain, or `NIIN_GIN_LOOPBACK=1`): a
//!   module's GIN path needs a GIN queue and the host proxy's `gin_poll` hook, which only
//!   registered modules have.
//! - A module loaded in a context other than the primary context of this PE's device.
//!
//! # Return values
//!
//! As NVSHMEM 3.4.5: 0, or `NVSHMEMX_ERROR_INTERNAL` whatever the reason (NVSHMEM turns
//! every failure, a module never initialized included, into that value), after one `NIIN:`
//! line that names it.

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::{addr_of, addr_of_mut};
use std::sync::{Mutex, MutexGuard};

use niin_transport::cuda::{self, Device, DeviceBuffer, HostPinned, Stream, sys};
use niin_transport::nccl::NcclVersion;

use crate::abi::NVSHMEMX_ERROR_INTERNAL;
use crate::error::{FfiError, FfiResult, report, run};
use crate::modules::{self, MODULE_ABI_VERSION, ModuleAbi, NiinHostInfo};
use crate::state;

/// `NIIN_CUMODULE_IO_VERSION` of `cumodule_impl.h`.
pub const IO_VERSION: c_uint = 2;

/// The part of every entry's (mangled) name this library looks for: the name and the
/// parameter types `(unsigned int, niin_cumodule_io *)` in the Itanium mangling, which the
/// TU-specific prefix (`_ZN<n>_GLOBAL__N__<TU>...`, and `__nv_static_...` after `nvlink`)
/// does not change.
pub const ENTRY_NAME: &str = "19niin_cumodule_entryEjP16niin_cumodule_io";

/// `NIIN_CUMODULE_QUERY`.
pub const OP_QUERY: c_uint = 0;
/// `NIIN_CUMODULE_REQUIREMENTS`.
pub const OP_REQUIREMENTS: c_uint = 1;
/// `NIIN_CUMODULE_SETUP`.
pub const OP_SETUP: c_uint = 2;

/// The entry's `io->status` values (`NIIN_CUMODULE_E_*`).
pub mod status {
    use std::ffi::c_int;
    /// Done.
    pub const OK: c_int = 0;
    /// The io block's version or size is not the module's.
    pub const E_IO: c_int = 1;
    /// An unknown operation.
    pub const E_OP: c_int = 2;
    /// The devComm's rank and rank count are not the PE's.
    pub const E_RANKS: c_int = 3;
    /// The devComm's LSA team is not the library's.
    pub const E_LSA: c_int = 4;
    /// No devComm where one is needed.
    pub const E_NO_DEV_COMM: c_int = 5;
    /// NCCL's mapping of an LSA peer's heap is not contiguous.
    pub const E_MAPPING: c_int = 6;
    /// The world needs GIN.
    pub const E_GIN: c_int = 7;
    /// An LSA team of more than one without a table.
    pub const E_TABLE: c_int = 8;
    /// Headers without GIN in a world that needs it.
    pub const E_GIN_HEADERS: c_int = 9;
    /// SETUP without an output buffer.
    pub const E_OUTPUT: c_int = 10;
}

/// `niin_cumodule_io` of `cumodule_impl.h`, field for field (checked by layout asserts on
/// both sides). It lives in mapped host memory; the library writes the inputs before a
/// launch and reads the outputs after the launch's stream has synchronized.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CumoduleIo {
    /// In: [`IO_VERSION`].
    pub version: c_uint,
    /// In: `size_of::<CumoduleIo>()`.
    pub size: c_uint,
    /// Out: a [`status`] value.
    pub status: c_int,
    /// Out: the values that explain a failure.
    pub detail: [c_int; 5],
    /// QUERY out: `NIIN_MODULE_ABI_VERSION`.
    pub module_abi_version: c_uint,
    /// QUERY out: `sizeof(niin_host_info)`.
    pub host_info_size: c_uint,
    /// QUERY out: `NCCL_VERSION_CODE`.
    pub nccl_version_code: c_int,
    /// QUERY out: `sizeof(ncclDevComm)`.
    pub dev_comm_size: c_uint,
    /// QUERY out: `sizeof(ncclDevCommRequirements)`.
    pub dev_comm_reqs_size: c_uint,
    /// QUERY out: `sizeof(niin_device_context)`.
    pub context_size: c_uint,
    /// QUERY out: the context is set up already.
    pub already_set_up: c_int,
    /// SETUP in: `dev_comm` holds a devComm.
    pub has_dev_comm: c_int,
    /// SETUP in: device address of the LSA table (`lsa_size + 1` entries).
    pub lsa_table: u64,
    /// SETUP in: device address of `context_size` bytes, where SETUP writes the context.
    pub context_out: u64,
    /// Unused.
    pub reserved: [u8; 48],
    /// REQUIREMENTS and SETUP in: the [`NiinHostInfo`] bytes.
    pub host_info: [u8; 512],
    /// REQUIREMENTS out: an `ncclDevCommRequirements` of the module's headers.
    pub reqs: [u8; 1024],
    /// SETUP in: the devComm.
    pub dev_comm: [u8; 4096],
}

const _: () = {
    assert!(size_of::<CumoduleIo>() == 5760);
    assert!(std::mem::offset_of!(CumoduleIo, module_abi_version) == 32);
    assert!(std::mem::offset_of!(CumoduleIo, lsa_table) == 64);
    assert!(std::mem::offset_of!(CumoduleIo, context_out) == 72);
    assert!(std::mem::offset_of!(CumoduleIo, host_info) == 128);
    assert!(std::mem::offset_of!(CumoduleIo, reqs) == 640);
    assert!(std::mem::offset_of!(CumoduleIo, dev_comm) == 1664);
    assert!(size_of::<NiinHostInfo>() <= 512);
    assert!(modules::DEV_COMM_CAPACITY <= 4096);
};

impl CumoduleIo {
    /// An io block with its header set and everything else zero.
    pub fn new() -> CumoduleIo {
        CumoduleIo {
            version: IO_VERSION,
            size: size_of::<CumoduleIo>() as c_uint,
            status: 0,
            detail: [0; 5],
            module_abi_version: 0,
            host_info_size: 0,
            nccl_version_code: 0,
            dev_comm_size: 0,
            dev_comm_reqs_size: 0,
            context_size: 0,
            already_set_up: 0,
            has_dev_comm: 0,
            lsa_table: 0,
            context_out: 0,
            reserved: [0; 48],
            host_info: [0; 512],
            reqs: [0; 1024],
            dev_comm: [0; 4096],
        }
    }

    /// Stores `info`'s bytes in `host_info`.
    pub fn set_host_info(&mut self, info: &NiinHostInfo) {
        // SAFETY: copies size_of::<NiinHostInfo>() (<= 512, asserted above) bytes of a live
        // #[repr(C)] value into this block's array; a byte copy of any value is defined.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (info as *const NiinHostInfo).cast::<u8>(),
                self.host_info.as_mut_ptr(),
                size_of::<NiinHostInfo>(),
            );
        }
    }

    /// The module's header ABI from a QUERY.
    pub fn abi(&self) -> ModuleAbi {
        ModuleAbi {
            headers: NcclVersion::from_code(self.nccl_version_code),
            dev_comm_size: self.dev_comm_size,
            reqs_size: self.dev_comm_reqs_size,
        }
    }
}

impl Default for CumoduleIo {
    fn default() -> Self {
        CumoduleIo::new()
    }
}

/// What a failed operation's status and details mean, for the `NIIN:` line; `label` names
/// the module.
pub fn status_message(label: &str, op: c_uint, status: c_int, d: [c_int; 5]) -> String {
    let what = match status {
        status::E_IO => format!(
            "its niin_cumodule_io is version {} of {} bytes, this library's version {IO_VERSION} \
             of {} bytes: it was compiled with the headers of another niin-rs",
            d[0],
            d[1],
            size_of::<CumoduleIo>()
        ),
        status::E_OP => format!("operation {} is unknown to its headers", d[0]),
        status::E_RANKS => format!(
            "the devComm is rank {} of {}, but this is PE {} of {}",
            d[0], d[1], d[2], d[3]
        ),
        status::E_LSA => format!(
            "NCCL puts this PE at rank {} of an LSA team of {}, the host library at rank {} of {}",
            d[0], d[1], d[2], d[3]
        ),
        status::E_NO_DEV_COMM => format!(
            "no device communicator in a world of {} PEs (LSA team of {}, rank {}, GIN {}): only \
             a one-PE world goes without",
            d[0],
            d[1],
            d[2],
            if d[3] != 0 { "on" } else { "off" }
        ),
        status::E_MAPPING => format!(
            "NCCL's mapping of LSA peer {}'s heap (PE {}) is not one contiguous range: the \
             device API addresses peers as heap offset + a per-peer distance",
            d[0], d[1]
        ),
        status::E_GIN => gin_refusal(d[1] != 0),
        status::E_TABLE => format!("SETUP for an LSA team of {} was given no LSA table", d[0]),
        status::E_OUTPUT => "SETUP was given no buffer for the context".to_string(),
        status::E_GIN_HEADERS => format!(
            "this world needs GIN, which NCCL {}'s device API does not have (it arrives in \
             2.28.7)",
            NcclVersion::from_code(d[0])
        ),
        other => format!("unknown status {other} (details {d:?})"),
    };
    let op = match op {
        OP_QUERY => "QUERY",
        OP_REQUIREMENTS => "REQUIREMENTS",
        OP_SETUP => "SETUP",
        _ => "?",
    };
    format!("{label}: its device context ({op}): {what}")
}

/// Why a world that needs GIN (`loopback`: the NIIN_GIN_LOOPBACK test mode) is refused.
fn gin_refusal(loopback: bool) -> String {
    let why = if loopback {
        "NIIN_GIN_LOOPBACK=1 routes peers through the GIN proxy"
    } else {
        "this world has PEs outside this PE's NVLink (LSA) domain, which need GIN"
    };
    format!(
        "{why}, and driver-API modules have no GIN proxy (its queue and the host's gin_poll \
         hook belong to the registered modules of the program): compile these kernels into the \
         program, or run inside one NVLink domain"
    )
}

// ---- the driver calls (niin-transport's cuda::foreign) ------------------------------------

/// A failed driver call as this library reports it: a driver too old for the call is
/// NOT_SUPPORTED, anything else an internal error.
fn driver_error(e: cuda::CudaError) -> FfiError {
    match e {
        cuda::CudaError::DriverLacks { .. } => FfiError::NotSupported(e.to_string()),
        e => FfiError::Os(e.to_string()),
    }
}

/// The module of `library` in the current context.
fn library_module(library: sys::CUlibrary) -> FfiResult<sys::CUmodule> {
    // SAFETY: the caller's library handle: a loaded library, by NVSHMEM's contract for
    // nvshmemx_culibrary_init/finalize.
    unsafe { cuda::library_module(library) }.map_err(driver_error)
}

/// The entries of `module`: every function whose name contains [`ENTRY_NAME`], with its name.
fn entries(module: sys::CUmodule) -> FfiResult<Vec<(sys::CUfunction, String)>> {
    // SAFETY: the caller's module handle: a loaded module, by NVSHMEM's contract for
    // nvshmemx_cumodule_init/finalize.
    let functions = unsafe { cuda::module_functions(module) }.map_err(driver_error)?;
    Ok(functions
        .into_iter()
        .filter(|(_, name)| is_entry_name(name))
        .collect())
}

/// Whether `name` is the mangled name of a TU's entry.
pub fn is_entry_name(name: &str) -> bool {
    name.contains(ENTRY_NAME)
}

/// The mangled name of the `niin_ctx_value` of the TU whose entry is `entry`, or `None` if
/// `entry` is not mangled as nvcc mangles an entry in an anonymous namespace.
///
/// Both are in the TU's anonymous namespace, `_GLOBAL__N__<tu>`, and nvcc puts a variable
/// with internal linkage in one more namespace, `_INTERNAL_<tu>`, with the same `<tu>`
/// (nvcc 13.0, whole-program and nvlink'ed `-rdc` cubins, measured with `cuobjdump -elf`):
/// `[P]_ZN<n>_GLOBAL__N__<tu>19niin_cumodule_entryE...` (P: `-rdc`'s `__nv_static_..._`)
/// has its context at `[P]_ZN<m>_INTERNAL_<tu><n>_GLOBAL__N__<tu>14niin_ctx_valueE`.
pub fn context_variable_name(entry: &str) -> Option<String> {
    const GLOBAL: &str = "_GLOBAL__N__";
    const ENTRY: &str = "19niin_cumodule_entryE";
    let g = entry.find(GLOBAL)?;
    // the length of the namespace's name, in decimal, right before it, after "_ZN"
    let digits = entry[..g]
        .bytes()
        .rev()
        .take_while(u8::is_ascii_digit)
        .count();
    let (head, len) = entry[..g].split_at(g - digits);
    let prefix = head.strip_suffix("_ZN")?;
    let ns_len: usize = len.parse().ok()?;
    let ns = entry.get(g..g + ns_len)?;
    if !entry[g + ns_len..].starts_with(ENTRY) {
        return None;
    }
    let internal = format!("_INTERNAL_{}", &ns[GLOBAL.len()..]);
    Some(format!(
        "{prefix}_ZN{}{internal}{ns_len}{ns}14niin_ctx_valueE",
        internal.len()
    ))
}

/// A mapped host block holding one [`CumoduleIo`], and a stream to run the entry on.
struct IoBlock {
    mem: HostPinned,
    stream: Stream,
}

impl IoBlock {
    fn new(device: &Device) -> FfiResult<IoBlock> {
        let mem = HostPinned::alloc_on(device, size_of::<CumoduleIo>())
            .map_err(|e| FfiError::Os(format!("cuMemHostAlloc of the module's io block: {e}")))?;
        let stream = Stream::create_on(device)
            .map_err(|e| FfiError::Os(format!("a stream for the module's entry: {e}")))?;
        Ok(IoBlock { mem, stream })
    }

    fn ptr(&self) -> *mut CumoduleIo {
        self.mem.host_ptr().cast()
    }

    /// Writes `io`, runs `op` of the entry `func` on one thread, waits, and reads the block
    /// back; a failed status is an error that `status_message` explains.
    fn run(
        &self,
        func: sys::CUfunction,
        op: c_uint,
        io: &mut CumoduleIo,
        label: &str,
    ) -> FfiResult<()> {
        // SAFETY: the block is page-aligned mapped host memory of size_of::<CumoduleIo>()
        // bytes, and no kernel uses it now (each launch is waited for before returning).
        unsafe { self.ptr().write_volatile(*io) };
        let mut op_arg = op;
        let mut io_arg: u64 = self.mem.device_ptr();
        let mut params: [*mut c_void; 2] =
            [addr_of_mut!(op_arg).cast(), addr_of_mut!(io_arg).cast()];
        // SAFETY: `func` is an entry of a loaded module (enumerated from it, and the module is
        // finalized before it is unloaded, by NVSHMEM's contract), whose parameters are
        // (unsigned int, niin_cumodule_io *): `params` points at a c_uint and at the block's
        // device address, alive across the call; the stream is ours, in the module's context.
        unsafe { cuda::launch_single_thread(func, &self.stream, &mut params) }.map_err(|e| {
            FfiError::Os(format!("{label}: launching its niin_cumodule_entry: {e}"))
        })?;
        self.stream
            .synchronize()
            .map_err(|e| FfiError::Os(format!("{label}: its niin_cumodule_entry failed: {e}")))?;
        // SAFETY: as above; the kernel has finished (synchronized).
        *io = unsafe { self.ptr().read_volatile() };
        if io.status != status::OK {
            return Err(FfiError::Os(status_message(
                label, op, io.status, io.detail,
            )));
        }
        Ok(())
    }

    /// The address of the requirements the last REQUIREMENTS wrote (host side).
    fn reqs_ptr(&self) -> *const c_void {
        // SAFETY: a field address within the live block (no read).
        unsafe { addr_of!((*self.ptr()).reqs) }.cast()
    }
}

// ---- the registry ----------------------------------------------------------------------

/// One TU of a module.
struct Entry {
    /// The entry kernel (a `CUfunction`, as an address: valid while the module is loaded).
    func: usize,
    /// Its mangled name (for messages).
    name: String,
    /// Set up by its own host registration (a module of the program): never touched here.
    external: bool,
    /// Its context is set up here.
    set_up: bool,
    /// Its LSA table.
    table: Option<DeviceBuffer>,
    /// Device address and size of its `niin_ctx_value` (found when set up here).
    context: (u64, usize),
}

/// A module given to `nvshmemx_cumodule_init` (or a library's module).
struct CuModule {
    /// The `CUmodule`, as an address.
    handle: usize,
    /// How many inits are not matched by a finalize yet.
    count: u32,
    entries: Vec<Entry>,
}

static MODULES: Mutex<Vec<CuModule>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<CuModule>> {
    MODULES.lock().unwrap_or_else(|e| e.into_inner())
}

/// How `handle` is named in messages.
fn label(what: &str, handle: usize, entry: usize, entries: usize) -> String {
    if entries > 1 {
        format!(
            "{what} {handle:#x} (translation unit {} of {entries})",
            entry + 1
        )
    } else {
        format!("{what} {handle:#x}")
    }
}

/// Makes the world's device current on this thread, checking that the caller's current
/// context (if any) is that device's primary context, where the module must be.
fn use_world_device(world: &modules::CumoduleWorld) -> FfiResult<()> {
    let device = world.info.cuda_device;
    match Device::current() {
        Ok(Some(d)) if d.same_device(&world.device) => Ok(()),
        Ok(Some(d)) => Err(FfiError::BadArgument(format!(
            "the current CUDA context is device {}'s, but this PE runs on device {device}: load \
             the module in device {device}'s primary context (cudaSetDevice({device}))",
            d.ordinal()
        ))),
        Ok(None) => world
            .device
            .make_current()
            .map_err(|e| FfiError::Os(format!("making device {device} current: {e}"))),
        Err(e) => Err(FfiError::BadArgument(format!(
            "{e}: a module for NVSHMEM must be loaded in the primary context of device \
             {device} (the CUDA runtime's)"
        ))),
    }
}

/// The device address of the `niin_ctx_value` of the TU whose entry is `name` in `module`,
/// checked to be `size` bytes.
fn context_variable(module: sys::CUmodule, name: &str, size: usize, label: &str) -> FfiResult<u64> {
    let var = context_variable_name(name).ok_or_else(|| {
        FfiError::NotSupported(format!(
            "{label}: its entry's name {name} is not mangled as nvcc 13 mangles it, so its \
             device context cannot be found"
        ))
    })?;
    // SAFETY: the caller's loaded module (the one `name` was enumerated from).
    let (address, bytes) = unsafe { cuda::module_global(module, &var) }.map_err(|e| {
        FfiError::NotSupported(format!(
            "{label}: its device context {var} was not found in the module: {e}"
        ))
    })?;
    if bytes != size {
        return Err(FfiError::Os(format!(
            "{label}: its device context {var} is {bytes} bytes, but its headers say {size}"
        )));
    }
    Ok(address)
}

/// Sets up the TU of `func` (in `module`) for `world`.
fn set_up_entry(
    world: &modules::CumoduleWorld,
    module: sys::CUmodule,
    func: sys::CUfunction,
    name: String,
    label: &str,
) -> FfiResult<Entry> {
    let block = IoBlock::new(&world.device)?;
    let mut io = CumoduleIo::new();
    block.run(func, OP_QUERY, &mut io, label)?;
    let mut entry = Entry {
        func: func as usize,
        name,
        external: io.already_set_up != 0,
        set_up: false,
        table: None,
        context: (0, 0),
    };
    if entry.external {
        return Ok(entry);
    }
    if io.module_abi_version != MODULE_ABI_VERSION
        || io.host_info_size as usize != size_of::<NiinHostInfo>()
    {
        return Err(FfiError::NotSupported(format!(
            "{label} was compiled with the headers of another niin-rs: module ABI version {} \
             (sizeof(niin_host_info) = {}), but this libnvshmem_host speaks version \
             {MODULE_ABI_VERSION} ({} bytes); compile it with this niin-rs's include directory",
            io.module_abi_version,
            io.host_info_size,
            size_of::<NiinHostInfo>()
        )));
    }
    let info = world.info;
    let abi = io.abi();
    modules::check_abi(&abi, world.runtime, info.gin_wanted != 0).map_err(|refusal| {
        FfiError::NotSupported(modules::refusal_message(
            label,
            &abi,
            world.runtime,
            &world.library,
            &refusal,
        ))
    })?;
    if info.gin_wanted != 0 || info.gin_loopback != 0 {
        return Err(FfiError::NotSupported(format!(
            "{label}: {}",
            gin_refusal(info.gin_loopback != 0)
        )));
    }
    io.set_host_info(&info);
    let key = (
        io.nccl_version_code,
        io.dev_comm_size,
        io.dev_comm_reqs_size,
    );
    let dev_comm = modules::cumodule_dev_comm(key, label, |_| {
        let mut reqs_io = io;
        block.run(func, OP_REQUIREMENTS, &mut reqs_io, label)?;
        Ok(block.reqs_ptr())
    })?;
    match &dev_comm {
        Some(bytes) => {
            io.dev_comm[..bytes.len()].copy_from_slice(bytes);
            io.has_dev_comm = 1;
        }
        None => io.has_dev_comm = 0,
    }
    let bytes = size_of::<i64>() * (info.lsa_size.max(1) as usize + 1);
    let table = DeviceBuffer::alloc_on(&world.device, bytes)
        .map_err(|e| FfiError::Os(format!("{label}: cuMemAlloc of its LSA table: {e}")))?;
    io.lsa_table = table.ptr();
    entry.table = Some(table);
    let size = io.context_size as usize;
    let address = context_variable(module, &entry.name, size, label)?;
    let built = DeviceBuffer::alloc_on(&world.device, size).map_err(|e| {
        FfiError::Os(format!(
            "{label}: cuMemAlloc of a buffer for its context: {e}"
        ))
    })?;
    io.context_out = built.ptr();
    block.run(func, OP_SETUP, &mut io, label)?;
    // SAFETY: `address` is the module's variable of `size` bytes (checked), `built` a live
    // device buffer of `size` bytes that SETUP has written (its stream synchronized); no
    // kernel of the module runs with this context yet.
    unsafe { cuda::memcpy_sync(address, built.ptr(), size) }.map_err(|e| {
        FfiError::Os(format!(
            "{label}: copying its context into constant memory: {e}"
        ))
    })?;
    entry.context = (address, size);
    entry.set_up = true;
    Ok(entry)
}

/// Clears the context of `entry` if this library set it up.
fn tear_down_entry(device: &Device, entry: &mut Entry, label: &str) -> FfiResult<()> {
    if !std::mem::take(&mut entry.set_up) {
        return Ok(());
    }
    let (address, size) = entry.context;
    let stream = Stream::create_on(device)
        .map_err(|e| FfiError::Os(format!("{label}: a stream to clear its context: {e}")))?;
    // SAFETY: `address` is the module's context variable of `size` bytes (found at set-up;
    // the module stays loaded until finalized); the memset is waited for below.
    let cleared = unsafe { cuda::memset_d8_async(address, 0, size, &stream) }
        .and_then(|()| stream.synchronize())
        .map_err(|e| FfiError::Os(format!("{label}: clearing its context: {e}")));
    // The table goes only once no kernel of the module can read it any more.
    if cleared.is_ok() {
        entry.table = None;
    }
    cleared
}

/// Sets up every entry of `module`; on failure, tears down those set up so far.
fn set_up_module(
    world: &modules::CumoduleWorld,
    what: &str,
    module: &mut CuModule,
    found: Vec<(sys::CUfunction, String)>,
) -> FfiResult<()> {
    let n = found.len();
    for (i, (func, name)) in found.into_iter().enumerate() {
        let label = label(what, module.handle, i, n);
        match set_up_entry(world, module.handle as sys::CUmodule, func, name, &label) {
            Ok(e) => module.entries.push(e),
            Err(e) => {
                if let Err(cleanup) = tear_down_module(&world.device, what, module) {
                    report("nvshmemx_cumodule_init", cleanup);
                }
                module.entries.clear();
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Tears down every entry of `module` set up here; returns the first failure after trying
/// them all.
fn tear_down_module(device: &Device, what: &str, module: &mut CuModule) -> FfiResult<()> {
    let n = module.entries.len();
    let handle = module.handle;
    let mut first = Ok(());
    for (i, e) in module.entries.iter_mut().enumerate() {
        let r = tear_down_entry(device, e, &label(what, handle, i, n));
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// The attached NCCL world for `what` at `handle`: the library must be initialized, on the
/// NCCL transport.
fn attached_world(what: &str, handle: *mut c_void) -> FfiResult<modules::CumoduleWorld> {
    state::world()?;
    if handle.is_null() {
        return Err(FfiError::Null(if what == "CUlibrary" {
            "library"
        } else {
            "module"
        }));
    }
    modules::cumodule_world().ok_or_else(|| {
        FfiError::NotSupported(format!(
            "{what} {handle:p}: this world runs on the mock transport (NIIN_TRANSPORT), which \
             gives CUDA modules no device context; driver-API modules need the NCCL transport"
        ))
    })
}

fn init_module(what: &str, world: &modules::CumoduleWorld, handle: sys::CUmodule) -> FfiResult<()> {
    let mut reg = registry();
    if let Some(m) = reg.iter_mut().find(|m| m.handle == handle as usize) {
        m.count += 1;
        return Ok(());
    }
    use_world_device(world)?;
    let found = entries(handle)?;
    if found.is_empty() {
        return Err(FfiError::NotSupported(format!(
            "{what} {handle:p} has no niin_cumodule_entry: it was not compiled from a \
             translation unit that includes niin-rs's nvshmem.h (or it was compiled with \
             NIIN_NO_DEVICE_CONTEXT, or by NVRTC); a module built against NVSHMEM's own headers \
             needs NVSHMEM"
        )));
    }
    let mut module = CuModule {
        handle: handle as usize,
        count: 1,
        entries: Vec::new(),
    };
    set_up_module(world, what, &mut module, found)?;
    reg.push(module);
    Ok(())
}

fn finalize_module(what: &str, handle: sys::CUmodule) -> FfiResult<()> {
    let mut reg = registry();
    let Some(index) = reg.iter().position(|m| m.handle == handle as usize) else {
        return Err(FfiError::BadArgument(format!(
            "{what} {handle:p} is not initialized: nvshmemx_cumodule_init / \
             nvshmemx_culibrary_init was not called for it, or as many finalizes already were"
        )));
    };
    reg[index].count -= 1;
    if reg[index].count > 0 {
        return Ok(());
    }
    let mut module = reg.remove(index);
    if module.entries.iter().all(|e| !e.set_up) {
        return Ok(());
    }
    let world = modules::cumodule_world().ok_or_else(|| {
        FfiError::Os(format!(
            "{what} {handle:p}: its context is set up but no world is attached"
        ))
    })?;
    use_world_device(&world)?;
    tear_down_module(&world.device, what, &mut module)
}

/// The C entry points' wrapper: 0, or `NVSHMEMX_ERROR_INTERNAL` after the `NIIN:` line (as
/// NVSHMEM 3.4.5, whose four functions return that value for every failure).
fn internal_status(function: &str, body: impl FnOnce() -> FfiResult<()>) -> c_int {
    match run(function, body) {
        Ok(()) => 0,
        Err(_) => NVSHMEMX_ERROR_INTERNAL,
    }
}

/// Gives a module loaded with the driver API its device context (`nvshmemx_cumodule_init`):
/// every translation unit of it that includes niin-rs's `nvshmem.h`. Needs an initialized
/// library on the NCCL transport and the module in the primary context of this PE's
/// device; counts (each init needs a [`nvshmemx_cumodule_finalize`]). Returns 0, or
/// `NVSHMEMX_ERROR_INTERNAL` after a `NIIN:` line.
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_cumodule_init(module: sys::CUmodule) -> c_int {
    internal_status("nvshmemx_cumodule_init", || {
        let world = attached_world("CUmodule", module.cast())?;
        init_module("CUmodule", &world, module)
    })
}

/// Counts down an [`nvshmemx_cumodule_init`]; the last one clears the module's contexts
/// (`nvshmemx_cumodule_finalize`). Call it before unloading the module. Returns 0, or
/// `NVSHMEMX_ERROR_INTERNAL` after a `NIIN:` line (a module that was not initialized).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_cumodule_finalize(module: sys::CUmodule) -> c_int {
    internal_status("nvshmemx_cumodule_finalize", || {
        finalize_module("CUmodule", module)
    })
}

/// [`nvshmemx_cumodule_init`] for the module of `library` in the current context
/// (`nvshmemx_culibrary_init`; `cuLibraryGetModule`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_culibrary_init(library: sys::CUlibrary) -> c_int {
    internal_status("nvshmemx_culibrary_init", || {
        let world = attached_world("CUlibrary", library.cast())?;
        use_world_device(&world)?;
        init_module("CUlibrary", &world, library_module(library)?)
    })
}

/// [`nvshmemx_cumodule_finalize`] for the module of `library` in the current context
/// (`nvshmemx_culibrary_finalize`).
#[unsafe(no_mangle)]
pub extern "C" fn nvshmemx_culibrary_finalize(library: sys::CUlibrary) -> c_int {
    internal_status("nvshmemx_culibrary_finalize", || {
        if library.is_null() {
            return Err(FfiError::Null("library"));
        }
        finalize_module("CUlibrary", library_module(library)?)
    })
}

/// At the last `nvshmem_finalize`, before the device communicators are destroyed: waits for
/// this PE's device work, then clears the context of every module still initialized. The
/// modules stay registered ([`attach`] sets them up again at the next init). Returns the
/// first error after doing all of it.
pub(crate) fn detach() -> FfiResult<()> {
    let mut reg = registry();
    if reg.iter().all(|m| m.entries.iter().all(|e| !e.set_up)) {
        return Ok(());
    }
    let Some(world) = modules::cumodule_world() else {
        return Ok(());
    };
    let mut first = world.device.synchronize().map_err(|e| {
        FfiError::Os(format!(
            "waiting for this PE's kernels before clearing the driver-API modules' contexts: {e}"
        ))
    });
    if first.is_ok() {
        first = use_world_device(&world);
    }
    for m in reg.iter_mut() {
        let r = tear_down_module(&world.device, "CUmodule", m);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// At the end of an init: sets up again the modules that are still initialized from an
/// earlier world. A module that fails is reported (a `NIIN:` line under
/// `nvshmem_init`) and left without a context; init goes on.
pub(crate) fn attach() {
    let mut reg = registry();
    if reg.is_empty() {
        return;
    }
    let Some(world) = modules::cumodule_world() else {
        return;
    };
    if let Err(e) = use_world_device(&world) {
        report("nvshmem_init", e);
        return;
    }
    for m in reg.iter_mut() {
        let found: Vec<(sys::CUfunction, String)> = m
            .entries
            .drain(..)
            .map(|e| (e.func as sys::CUfunction, e.name))
            .collect();
        if let Err(e) = set_up_module(&world, "CUmodule", m, found) {
            report("nvshmem_init", e);
        }
    }
}

/// How many modules are initialized, and how many translation units of them have a
/// context set up here (for tests and diagnostics).
pub fn cumodule_counts() -> (usize, usize) {
    let reg = registry();
    let set_up = reg
        .iter()
        .flat_map(|m| m.entries.iter())
        .filter(|e| e.set_up)
        .count();
    (reg.len(), set_up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_of_every_build() {
        // Whole program / -cubin, and an nvlink'ed -rdc cubin (nvcc 13.0, measured).
        assert!(is_entry_name(
            "_ZN29_GLOBAL__N__8a6004e4_4_t_cu_k19niin_cumodule_entryEjP16niin_cumodule_io"
        ));
        assert!(is_entry_name(
            "__nv_static_25__39342b0a_4_a_cu_38808196__ZN36_GLOBAL__N__39342b0a_4_a_cu_\
             3880819619niin_cumodule_entryEjP16niin_cumodule_io"
        ));
        assert!(!is_entry_name(
            "_ZN29_GLOBAL__N__8a6004e4_4_t_cu_k25niin_module_write_contextE19niin_device_contextPx"
        ));
        assert!(!is_entry_name("niin_cumodule_entry"));
        assert!(!is_entry_name("user_kernel"));
    }

    #[test]
    fn context_variable_names_of_every_build() {
        // Whole program / -cubin, and an nvlink'ed -rdc cubin of two TUs (nvcc 13.0: the
        // symbol tables of tests/gpu/cumodule_kernels.cu's cubins, cuobjdump -elf).
        let tu = "2b5cf400_19_cumodule_kernels_cu_d0b81f48";
        let whole = format!("_ZN52_GLOBAL__N__{tu}19niin_cumodule_entryEjP16niin_cumodule_io");
        assert_eq!(
            context_variable_name(&whole).as_deref(),
            Some(format!("_ZN50_INTERNAL_{tu}52_GLOBAL__N__{tu}14niin_ctx_valueE").as_str())
        );
        let p = format!("__nv_static_41__{tu}_");
        let rdc = format!("{p}_ZN52_GLOBAL__N__{tu}19niin_cumodule_entryEjP16niin_cumodule_io");
        assert_eq!(
            context_variable_name(&rdc).as_deref(),
            Some(format!("{p}_ZN50_INTERNAL_{tu}52_GLOBAL__N__{tu}14niin_ctx_valueE").as_str())
        );
        // not an entry, or not mangled so
        assert_eq!(context_variable_name("niin_cumodule_entry"), None);
        assert_eq!(
            context_variable_name(&format!("_ZN52_GLOBAL__N__{tu}13other_kernelEv")),
            None
        );
        assert_eq!(
            context_variable_name(&format!("_ZN99_GLOBAL__N__{tu}19niin_cumodule_entryEj")),
            None
        );
        assert_eq!(
            context_variable_name(&format!("X52_GLOBAL__N__{tu}19niin_cumodule_entryEj")),
            None
        );
    }

    #[test]
    fn the_io_block_starts_valid() {
        let io = CumoduleIo::new();
        assert_eq!(io.version, IO_VERSION);
        assert_eq!(io.size as usize, size_of::<CumoduleIo>());
        assert_eq!(io.status, status::OK);
        let mut io = io;
        io.nccl_version_code = 23102;
        io.dev_comm_size = 248;
        io.dev_comm_reqs_size = 120;
        assert_eq!(
            io.abi(),
            ModuleAbi {
                headers: NcclVersion::new(2, 31, 2),
                dev_comm_size: 248,
                reqs_size: 120
            }
        );
    }

    #[test]
    fn host_info_is_copied_byte_for_byte() {
        let mut io = CumoduleIo::new();
        let info = NiinHostInfo {
            abi_version: MODULE_ABI_VERSION,
            struct_size: size_of::<NiinHostInfo>() as c_uint,
            nccl_comm: std::ptr::null_mut(),
            window: std::ptr::null_mut(),
            heap_base: 0x7000_0000_0000usize as *mut c_void,
            heap_size: 1 << 30,
            my_pe: 3,
            n_pes: 4,
            lsa_size: 4,
            lsa_rank: 3,
            gin_wanted: 0,
            barrier_count: 264,
            gin_signal_count: 0,
            gin_counter_count: 0,
            nccl_version_code: 23102,
            cuda_device: 1,
            dev_comm_create: None,
            dev_comm_destroy: None,
            get_error_string: None,
            get_last_error: None,
            put_signal_mode: 1,
            team_slots: 0,
            team_table: std::ptr::null_mut(),
            gin_loopback: 0,
            gin_queue_slots: 1024,
            team_sync_offset: 0x1_0000_0400,
            registered_slots: 1024,
            registered_table: std::ptr::null_mut(),
            coll_ll_offset: 0x5000,
            coll_ll_slots: 16,
            coll_ll_ring_bytes: 131072,
            lsa_multimem: 1,
            reserved6: 0,
            world_sync_offset: 0x2_0000_0010,
            abort_word: 0x7f00_0000_1000usize as *mut c_uint,
            timeout_ns: 60_000_000_000,
        };
        io.set_host_info(&info);
        let word = |at: usize| i32::from_ne_bytes(io.host_info[at..at + 4].try_into().unwrap());
        assert_eq!(word(0) as c_uint, MODULE_ABI_VERSION);
        assert_eq!(word(40), 3, "my_pe at 40");
        assert_eq!(word(44), 4, "n_pes at 44");
        assert_eq!(word(60), 264, "barrier_count at 60");
        assert_eq!(word(72), 23102, "nccl_version_code at 72");
        assert_eq!(word(112), 1, "put_signal_mode at 112");
        assert_eq!(word(132), 1024, "gin_queue_slots at 132");
        let offset = u64::from_ne_bytes(io.host_info[136..144].try_into().unwrap());
        assert_eq!(offset, 0x1_0000_0400, "team_sync_offset at 136");
        let ll = u64::from_ne_bytes(io.host_info[160..168].try_into().unwrap());
        assert_eq!(ll, 0x5000, "coll_ll_offset at 160");
        assert_eq!(word(168), 16, "coll_ll_slots at 168");
        assert_eq!(word(172), 131072, "coll_ll_ring_bytes at 172");
        assert_eq!(word(176), 1, "lsa_multimem at 176");
        let at = |a: usize| u64::from_ne_bytes(io.host_info[a..a + 8].try_into().unwrap());
        assert_eq!(at(184), 0x2_0000_0010, "world_sync_offset at 184");
        assert_eq!(at(192), 0x7f00_0000_1000, "abort_word at 192");
        assert_eq!(at(200), 60_000_000_000, "timeout_ns at 200");
        assert!(
            io.host_info[size_of::<NiinHostInfo>()..]
                .iter()
                .all(|&b| b == 0)
        );
    }

    #[test]
    fn every_status_has_its_message() {
        let m = |s, d| status_message("CUmodule 0x10", OP_SETUP, s, d);
        assert_eq!(
            m(status::E_RANKS, [1, 2, 3, 4, 0]),
            "CUmodule 0x10: its device context (SETUP): the devComm is rank 1 of 2, but this is \
             PE 3 of 4"
        );
        assert!(m(status::E_IO, [7, 100, 0, 0, 0]).contains("version 7 of 100 bytes"));
        assert!(m(status::E_LSA, [0, 2, 1, 2, 0]).contains("rank 0 of an LSA team of 2"));
        assert!(m(status::E_NO_DEV_COMM, [2, 2, 0, 0, 0]).contains("world of 2 PEs"));
        assert!(m(status::E_MAPPING, [1, 5, 0, 0, 0]).contains("peer 1's heap (PE 5)"));
        assert!(m(status::E_GIN, [1, 0, 0, 0, 0]).contains("outside this PE's NVLink"));
        assert!(m(status::E_GIN, [0, 1, 0, 0, 0]).contains("NIIN_GIN_LOOPBACK=1"));
        assert!(m(status::E_TABLE, [4, 0, 0, 0, 0]).contains("LSA team of 4"));
        assert!(m(status::E_GIN_HEADERS, [22803, 0, 0, 0, 0]).contains("NCCL 2.28.3"));
        assert!(m(status::E_OUTPUT, [0; 5]).contains("no buffer for the context"));
        assert!(m(status::E_OP, [9, 0, 0, 0, 0]).contains("operation 9"));
        assert!(m(42, [0; 5]).contains("unknown status 42"));
        assert!(
            status_message("x", OP_QUERY, status::E_IO, [0; 5]).contains("(QUERY)"),
            "the operation is named"
        );
    }

    #[test]
    fn labels_name_the_translation_unit_when_there_are_several() {
        assert_eq!(label("CUmodule", 0x1000, 0, 1), "CUmodule 0x1000");
        assert_eq!(
            label("CUlibrary", 0x1000, 1, 2),
            "CUlibrary 0x1000 (translation unit 2 of 2)"
        );
    }

    #[test]
    fn null_and_unknown_modules_are_refused_with_nvshmems_value() {
        // Not initialized (no world in this test process), NULL, never initialized: each
        // NVSHMEMX_ERROR_INTERNAL after its NIIN: line.
        let before = crate::error::report_count();
        assert_eq!(
            nvshmemx_cumodule_init(std::ptr::null_mut()),
            NVSHMEMX_ERROR_INTERNAL
        );
        assert_eq!(
            nvshmemx_cumodule_finalize(0x1234usize as sys::CUmodule),
            NVSHMEMX_ERROR_INTERNAL
        );
        assert_eq!(
            nvshmemx_culibrary_finalize(std::ptr::null_mut()),
            NVSHMEMX_ERROR_INTERNAL
        );
        assert!(crate::error::report_count() >= before + 3);
        let e = finalize_module("CUmodule", 0x1234usize as sys::CUmodule).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("CUmodule 0x1234 is not initialized: nvshmemx_cumodule_init"),
            "{e}"
        );
        assert!(matches!(
            attached_world("CUlibrary", 0x10usize as *mut c_void),
            Err(FfiError::NotInitialized | FfiError::NotSupported(_))
        ));
        assert_eq!(cumodule_counts(), (0, 0));
    }
}
