//! The unique-id exchange through the launcher's PMIx server (`NIIN_RENDEZVOUS=pmix`, and
//! the default of a job on several nodes whose launcher runs one: Open MPI's `mpirun`,
//! `srun --mpi=pmix`, PRRTE). libpmix is opened at run time (`libpmix.so.2`, else
//! `libpmix.so`), never linked, so the library loads where there is none.
//!
//! Rank 0 puts the 128 bytes under the key `niin.nccl.uid` (global scope) and commits;
//! every rank fences over the job's namespace; the others get the key from rank 0. PMIx is
//! initialized for the exchange and finalized after it (PMIx counts its initializations, so
//! an MPI library that holds its own keeps it). The fence waits for the whole job: a rank
//! that never comes leaves the others waiting until the launcher ends the job (PMIx's own
//! rule); the timeout bounds the get.
//!
//! The C types, from OpenPMIx's `pmix_common.h` (the layout of PMIx 3 to 5 on LP64 Linux,
//! checked against 4.2's: `pmix_proc_t` 260 bytes, rank at 256; `pmix_value_t` 32 bytes,
//! data at 8; a byte object's pointer at 0 and size at 8 of the data).

use std::ffi::{CStr, c_char, c_int};
use std::time::Duration;

use super::BootstrapError;
use super::rendezvous::UID_BYTES;

const PMIX_MAX_NSLEN: usize = 255;
const PMIX_SUCCESS: c_int = 0;
const PMIX_GLOBAL: u8 = 3;
const PMIX_BYTE_OBJECT: u16 = 27;
const PMIX_TIMEOUT: &[u8] = b"pmix.timeout\0";
const PMIX_INT: u16 = 6;
/// The key rank 0 publishes the id under.
const KEY: &[u8] = b"niin.nccl.uid\0";

/// `pmix_proc_t`.
#[repr(C)]
struct Proc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// `pmix_value_t`: the type and a 24-byte union, of which niin-rs uses the byte object and
/// the int.
#[repr(C)]
struct Value {
    kind: u16,
    data: ValueData,
}

#[repr(C)]
union ValueData {
    bo: ByteObject,
    integer: c_int,
    /// The union's size (its largest member, `pmix_envar_t`, is 24 bytes).
    _size: [u64; 3],
}

/// `pmix_info_t`: a key of up to 511 bytes, the directives, the value.
#[repr(C)]
struct Info {
    key: [c_char; 512],
    flags: u32,
    value: Value,
}

const _: () = assert!(size_of::<Proc>() == 260 && std::mem::offset_of!(Proc, rank) == 256);
const _: () = assert!(size_of::<Value>() == 32 && std::mem::offset_of!(Value, data) == 8);
const _: () = assert!(size_of::<Info>() == 552 && std::mem::offset_of!(Info, value) == 520);

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// libpmix's client functions.
struct Pmix {
    _lib: libloading::Library,
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    error_string: ErrorStringFn,
}

impl Pmix {
    fn open() -> Result<Pmix, BootstrapError> {
        let mut last = String::new();
        for name in ["libpmix.so.2", "libpmix.so"] {
            // SAFETY: loading libpmix runs its initializers, which only set up the library.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Pmix::resolve(lib, name),
                Err(e) => last = e.to_string(),
            }
        }
        Err(BootstrapError::Pmix {
            what: format!("libpmix could not be opened (libpmix.so.2, libpmix.so): {last}"),
        })
    }

    fn resolve(lib: libloading::Library, name: &str) -> Result<Pmix, BootstrapError> {
        fn sym<T: Copy>(
            lib: &libloading::Library,
            lib_name: &str,
            s: &str,
        ) -> Result<T, BootstrapError> {
            // SAFETY: `T` is the C signature of `s` in OpenPMIx's pmix.h.
            unsafe { lib.get::<T>(s.as_bytes()) }
                .map(|f| *f)
                .map_err(|e| BootstrapError::Pmix {
                    what: format!("{lib_name} has no {s}: {e}"),
                })
        }
        Ok(Pmix {
            init: sym(&lib, name, "PMIx_Init")?,
            finalize: sym(&lib, name, "PMIx_Finalize")?,
            put: sym(&lib, name, "PMIx_Put")?,
            commit: sym(&lib, name, "PMIx_Commit")?,
            fence: sym(&lib, name, "PMIx_Fence")?,
            get: sym(&lib, name, "PMIx_Get")?,
            error_string: sym(&lib, name, "PMIx_Error_string")?,
            _lib: lib,
        })
    }

    /// `what` failed with `status`, named with PMIx's words.
    fn fail(&self, what: &str, status: c_int) -> BootstrapError {
        // SAFETY: PMIx_Error_string returns a static string for any status.
        let text = unsafe { (self.error_string)(status) };
        let text = if text.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        BootstrapError::Pmix {
            what: format!("{what} failed: {text} ({status})"),
        }
    }
}

/// The exchange of the module docs, for the job's `rank` of `size`.
pub(super) fn exchange(
    rank: usize,
    size: usize,
    make: impl FnOnce() -> Result<[u8; UID_BYTES], String>,
    timeout: Duration,
) -> Result<[u8; UID_BYTES], BootstrapError> {
    let p = Pmix::open()?;
    let mut me = Proc {
        nspace: [0; PMIX_MAX_NSLEN + 1],
        rank: 0,
    };
    // SAFETY: `me` is a pmix_proc_t to fill; no info.
    let status = unsafe { (p.init)(&mut me, std::ptr::null_mut(), 0) };
    if status != PMIX_SUCCESS {
        return Err(p.fail("PMIx_Init", status));
    }
    let result = exchange_in(&p, &me, (rank, size), make, timeout);
    // SAFETY: balances the PMIx_Init above.
    unsafe { (p.finalize)(std::ptr::null(), 0) };
    result
}

fn exchange_in(
    p: &Pmix,
    me: &Proc,
    (rank, size): (usize, usize),
    make: impl FnOnce() -> Result<[u8; UID_BYTES], String>,
    timeout: Duration,
) -> Result<[u8; UID_BYTES], BootstrapError> {
    if me.rank as usize != rank {
        return Err(BootstrapError::Pmix {
            what: format!(
                "PMIx says this process is rank {}, the launcher's variables say {rank} of {size}",
                me.rank
            ),
        });
    }
    let mut uid = [0u8; UID_BYTES];
    if rank == 0 {
        uid = make().map_err(BootstrapError::MakeFailed)?;
        let mut value = Value {
            kind: PMIX_BYTE_OBJECT,
            data: ValueData {
                bo: ByteObject {
                    bytes: uid.as_mut_ptr().cast(),
                    size: UID_BYTES,
                },
            },
        };
        // SAFETY: a NUL-terminated key and a byte-object value PMIx copies.
        let status = unsafe { (p.put)(PMIX_GLOBAL, KEY.as_ptr().cast(), &mut value) };
        if status != PMIX_SUCCESS {
            return Err(p.fail("PMIx_Put", status));
        }
    }
    // SAFETY: no arguments.
    let status = unsafe { (p.commit)() };
    if status != PMIX_SUCCESS {
        return Err(p.fail("PMIx_Commit", status));
    }
    // SAFETY: no procs (every process of this namespace), no info.
    let status = unsafe { (p.fence)(std::ptr::null(), 0, std::ptr::null(), 0) };
    if status != PMIX_SUCCESS {
        return Err(p.fail("PMIx_Fence", status));
    }
    if rank == 0 {
        return Ok(uid);
    }
    let root = Proc {
        nspace: me.nspace,
        rank: 0,
    };
    let mut info = Info {
        key: [0; 512],
        flags: 0,
        value: Value {
            kind: PMIX_INT,
            data: ValueData {
                integer: c_int::try_from(timeout.as_secs().max(1)).unwrap_or(c_int::MAX),
            },
        },
    };
    for (d, s) in info.key.iter_mut().zip(PMIX_TIMEOUT) {
        *d = *s as c_char;
    }
    let mut out: *mut Value = std::ptr::null_mut();
    // SAFETY: rank 0 of this namespace, a NUL-terminated key, one info, a result pointer.
    let status = unsafe { (p.get)(&root, KEY.as_ptr().cast(), &info, 1, &mut out) };
    if status != PMIX_SUCCESS || out.is_null() {
        return Err(p.fail("PMIx_Get of rank 0's niin.nccl.uid", status));
    }
    // SAFETY: PMIx_Get returned a value it allocated (malloc), which stays valid until freed
    // below.
    let v = unsafe { &*out };
    let bo = if v.kind == PMIX_BYTE_OBJECT {
        // SAFETY: the union holds a byte object where the type says so.
        Some(unsafe { v.data.bo })
    } else {
        None
    };
    let result = match bo {
        Some(bo) if bo.size == UID_BYTES && !bo.bytes.is_null() => {
            // SAFETY: the byte object holds `size` readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(bo.bytes.cast::<u8>(), UID_BYTES) };
            uid.copy_from_slice(bytes);
            Ok(uid)
        }
        _ => Err(BootstrapError::Pmix {
            what: format!(
                "rank 0's niin.nccl.uid is not {UID_BYTES} bytes (type {}, {} bytes)",
                v.kind,
                bo.map_or(0, |b| b.size)
            ),
        }),
    };
    if let Some(bo) = bo {
        // SAFETY: PMIx allocated the bytes with malloc; nothing reads them after this.
        unsafe { libc::free(bo.bytes.cast()) };
    }
    // SAFETY: PMIx allocated the value with malloc; `v` is not used after this.
    unsafe { libc::free(out.cast()) };
    result
}
