//! The typed and sized stream-ordered operations of NVSHMEM's host API:
//!
//! - for the 25 standard RMA types (one module per type name, generated from
//!   [`for_each_nvshmem_type!`](niin_api::for_each_nvshmem_type)):
//!   `nvshmemx_<T>_{put,get,put_signal}[_nbi]_on_stream`, `nvshmemx_<T>_{iput,iget}_on_stream`
//!   and `nvshmemx_<T>_{p,g}_on_stream`;
//! - for 8 ... 128 bits: `nvshmemx_{put,get}<BITS>[_nbi]_on_stream` and
//!   `nvshmemx_put<BITS>_signal[_nbi]_on_stream`;
//! - for the 14 wait types: `nvshmemx_<T>_wait_until_on_stream` (module [`wait_until`]).
//!
//! The array forms are their `mem` forms
//! ([`nvshmemx_putmem_on_stream`](crate::nvshmemx_putmem_on_stream), ...) of `nelems`
//! elements: the same checks, the same enqueueing, `nelems * size` bytes; a count whose
//! byte size does not fit in `size_t` is an error naming both numbers. As for the `mem`
//! forms, the `_nbi` forms are the blocking ones (stream-ordered either way). The strided
//! forms take NVSHMEM's `ptrdiff_t` strides in elements; a stride below 1 is an error
//! naming it, and the symmetric operand must hold every element the strides reach. `p` captures
//! the value at the call; `g` is synchronous, as NVSHMEM's: it returns the element once
//! the stream's earlier work has run. `p`, `g`, the wait and the symmetric operand of the
//! typed put, get and put-with-signal need `T`'s natural alignment.

use std::ffi::{c_int, c_void};

use niin_api::{RmaType, WaitType};

use crate::convert::{self, bytes_of, element};
use crate::error::{FfiError, FfiResult, value_call};
use crate::stream::{
    CudaStream, getmem_on_stream, on_stream, putmem_on_stream, putmem_signal_on_stream,
};
use crate::strided::{self, Direction};

/// A `mem` form: [`putmem_on_stream`] or [`getmem_on_stream`].
type MemOnStream = unsafe fn(*mut c_void, *const c_void, usize, c_int, CudaStream) -> FfiResult<()>;

/// `mem` of `nelems` elements of `size` bytes.
///
/// # Safety
/// As `mem` for `nelems * size` bytes.
unsafe fn elems(
    mem: MemOnStream,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe: c_int,
    cstrm: CudaStream,
) -> FfiResult<()> {
    let bytes = bytes_of(nelems, size)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { mem(dest, source, bytes, pe, cstrm) }
}

/// Refuses a symmetric operand (argument `what`) that is not aligned for `T`, as `p` and
/// `g` refuse theirs.
fn aligned<T>(ptr: *const c_void, what: &'static str) -> FfiResult<()> {
    if (ptr as usize) % align_of::<T>() != 0 {
        return Err(FfiError::BadArgument(format!(
            "{what} {ptr:p} is not aligned for its {}-byte elements",
            align_of::<T>()
        )));
    }
    Ok(())
}

/// The alignment check of an entry's symmetric operand: `dest` of a put, `source` of a
/// get, for the typed forms (the sized forms take `void *`).
macro_rules! sym_aligned {
    (typed, $t:ty, putmem_on_stream, $dest:expr, $source:expr) => {
        aligned::<$t>($dest, "dest")
    };
    (typed, $t:ty, getmem_on_stream, $dest:expr, $source:expr) => {
        aligned::<$t>($source, "source")
    };
    (sized, $t:ty, $mem:ident, $dest:expr, $source:expr) => {
        FfiResult::Ok(())
    };
}

/// Enqueues the store of `value` into the symmetric `dest` on `pe`.
fn p_elem<T: RmaType>(
    dest: *const c_void,
    value: T,
    pe: c_int,
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        let pe = convert::pe(w, pe)?;
        Ok(s.p(element::<T>(w, dest, "dest")?, value, pe)?)
    })
}

/// The element at the symmetric `source` on `pe`, after the stream's earlier work.
fn g_elem<T: RmaType>(source: *const c_void, pe: c_int, cstrm: CudaStream) -> FfiResult<T> {
    on_stream(cstrm, |w, s| {
        let pe = convert::pe(w, pe)?;
        Ok(s.g(element::<T>(w, source, "source")?, pe)?)
    })
}

/// The C name of an entry: `typed <name>` gives `nvshmemx_<name>_<op><tail><nbi>_on_stream`,
/// `sized <bits>` gives `nvshmemx_<op><bits><tail><nbi>_on_stream` (`op`: `put`, `get`, ...;
/// `tail` `""` or `"_signal"`; for the sized forms the size follows the operation).
macro_rules! c_name {
    (typed $name:ident, $op:literal, $tail:literal, $nbi:literal) => {
        concat!(
            "nvshmemx_",
            stringify!($name),
            "_",
            $op,
            $tail,
            $nbi,
            "_on_stream"
        )
    };
    (sized $bits:literal, $op:literal, $tail:literal, $nbi:literal) => {
        concat!("nvshmemx_", $op, $bits, $tail, $nbi, "_on_stream")
    };
}

/// One entry point: `$op` is `put` or `get`, `$nbi` `""` or `"_nbi"`, `$mem` the `mem`
/// form that does it.
macro_rules! stream_rma_entry {
    ($kind:ident $n:tt, $t:ty, $fn:ident, $op:literal, $nbi:literal, $mem:ident, $what:literal) => {
        #[doc = concat!("`", c_name!($kind $n, $op, "", $nbi), "`: enqueues ", $what, " of `nelems` `",
                        stringify!($t), "` elements (the `mem` form's checks and ordering).")]
        ///
        /// # Safety
        /// The local buffer (`source` of a put, `dest` of a get) must stay valid for
        /// `nelems` elements, and a get's `dest` otherwise unaccessed, until the stream has
        /// run the operation.
        #[unsafe(export_name = c_name!($kind $n, $op, "", $nbi))]
        pub unsafe extern "C" fn $fn(
            dest: *mut $t,
            source: *const $t,
            nelems: usize,
            pe: c_int,
            cstrm: CudaStream,
        ) {
            value_call(c_name!($kind $n, $op, "", $nbi), (), || {
                sym_aligned!($kind, $t, $mem, dest.cast(), source.cast())?;
                // SAFETY: this entry's contract.
                unsafe {
                    elems($mem, dest.cast(), source.cast(), nelems, size_of::<$t>(), pe, cstrm)
                }
            })
        }
    };
}

/// One put-with-signal entry point (`$nbi` `""` or `"_nbi"`): `putmem_signal_on_stream` of
/// `nelems` elements.
macro_rules! stream_put_signal_entry {
    ($kind:ident $n:tt, $t:ty, $fn:ident, $nbi:literal) => {
        #[doc = concat!("`", c_name!($kind $n, "put", "_signal", $nbi), "`: enqueues a put of \
                         `nelems` `", stringify!($t), "` elements, then the update of the \
                         signal word `sig_addr` on `pe` by `sig_op` with `signal` (the `mem` \
                         form's checks and ordering).")]
        ///
        /// # Safety
        /// `source` must stay readable for `nelems` elements until the stream has run it.
        #[unsafe(export_name = c_name!($kind $n, "put", "_signal", $nbi))]
        #[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
        pub unsafe extern "C" fn $fn(
            dest: *mut $t,
            source: *const $t,
            nelems: usize,
            sig_addr: *mut u64,
            signal: u64,
            sig_op: c_int,
            pe: c_int,
            cstrm: CudaStream,
        ) {
            value_call(c_name!($kind $n, "put", "_signal", $nbi), (), || {
                sym_aligned!($kind, $t, putmem_on_stream, dest.cast(), source.cast())?;
                let bytes = bytes_of(nelems, size_of::<$t>())?;
                // SAFETY: this entry's contract, for `bytes` bytes.
                unsafe {
                    putmem_signal_on_stream(
                        dest.cast(),
                        source.cast(),
                        bytes,
                        sig_addr,
                        signal,
                        sig_op,
                        pe,
                        cstrm,
                    )
                }
            })
        }
    };
}

/// The six entry points of one element type: put, get and put-with-signal, each also
/// `_nbi`.
macro_rules! stream_rma_entries {
    ($kind:ident $n:tt, $t:ty) => {
        stream_rma_entry!($kind $n, $t, put_on_stream, "put", "", putmem_on_stream, "a put");
        stream_rma_entry!($kind $n, $t, put_nbi_on_stream, "put", "_nbi", putmem_on_stream, "a put");
        stream_rma_entry!($kind $n, $t, get_on_stream, "get", "", getmem_on_stream, "a get");
        stream_rma_entry!($kind $n, $t, get_nbi_on_stream, "get", "_nbi", getmem_on_stream, "a get");
        stream_put_signal_entry!($kind $n, $t, put_signal_on_stream, "");
        stream_put_signal_entry!($kind $n, $t, put_signal_nbi_on_stream, "_nbi");
    };
}

/// One strided entry point (`$op` `iput` or `iget`, `$dir` its [`Direction`], `$run` the
/// mover of the element: [`strided::elements`] or [`strided::elements128`]).
macro_rules! stream_strided_entry {
    ($kind:ident $n:tt, $t:ty, $fn:ident, $op:literal, $dir:ident, $run:expr, $what:literal) => {
        #[doc = concat!("`", c_name!($kind $n, $op, "", ""), "`: enqueues ", $what,
                        " on `pe`: element `i` at `dest + i * dst` from `source + i * sst` \
                         (strides in elements, at least 1), `i` below `nelems`.")]
        ///
        /// # Safety
        /// The local operand must stay valid for the elements the operation touches, and a
        /// get's otherwise unaccessed, until the stream has run it.
        #[unsafe(export_name = c_name!($kind $n, $op, "", ""))]
        #[allow(clippy::too_many_arguments)] // NVSHMEM's argument list
        pub unsafe extern "C" fn $fn(
            dest: *mut $t,
            source: *const $t,
            dst: isize,
            sst: isize,
            nelems: usize,
            pe: c_int,
            cstrm: CudaStream,
        ) {
            value_call(c_name!($kind $n, $op, "", ""), (), || {
                let ends = (dest.cast(), source.cast());
                // SAFETY: this entry's contract: the local operand stays valid until the
                // stream has run the transfer.
                on_stream(cstrm, |w, s| unsafe {
                    $run((w, s), Direction::$dir, ends, (dst, sst), nelems, pe)
                })
            })
        }
    };
}

/// One module per NVSHMEM type name (the rows of `for_each_nvshmem_type!`).
macro_rules! typed_modules {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        #[doc = concat!("`nvshmemx_", stringify!($name), "_{put,get,iput,iget,p,g,...}_on_stream` (C type `",
                        $c, "`).")]
        pub mod $name {
            use super::*;
            stream_rma_entries!(typed $name, $t);

            #[doc = concat!("`", c_name!(typed $name, "p", "", ""), "`: enqueues the store of `value` \
                             into the symmetric `dest` on `pe` (the value is taken now).")]
            #[unsafe(export_name = c_name!(typed $name, "p", "", ""))]
            pub extern "C" fn p_on_stream(dest: *mut $t, value: $t, pe: c_int, cstrm: CudaStream) {
                value_call(c_name!(typed $name, "p", "", ""), (), || {
                    p_elem::<$t>(dest.cast(), value, pe, cstrm)
                })
            }

            stream_strided_entry!(typed $name, $t, iput_on_stream, "iput", Put,
                                  strided::elements::<$t, _>,
                                  "a strided put from local `source` to the symmetric `dest`");
            stream_strided_entry!(typed $name, $t, iget_on_stream, "iget", Get,
                                  strided::elements::<$t, _>,
                                  "a strided get from the symmetric `source` to local `dest`");

            #[doc = concat!("`", c_name!(typed $name, "g", "", ""), "`: the element at the symmetric \
                             `source` on `pe` once the stream's earlier work has run \
                             (synchronous); zero after a `NIIN:` line on error.")]
            #[unsafe(export_name = c_name!(typed $name, "g", "", ""))]
            pub extern "C" fn g_on_stream(source: *const $t, pe: c_int, cstrm: CudaStream) -> $t {
                value_call(c_name!(typed $name, "g", "", ""), <$t>::default(), || {
                    g_elem::<$t>(source.cast(), pe, cstrm)
                })
            }
        }
    )*};
}

niin_api::for_each_nvshmem_type! { typed_modules }

/// Enqueues the wait of this PE's `ivar` for `ivar <cmp> value`.
fn wait_elem<T: WaitType>(
    ivar: *const c_void,
    cmp: c_int,
    value: T,
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        let cmp = convert::cmp(cmp)?;
        Ok(s.wait_until(element::<T>(w, ivar, "ivar")?, cmp, value)?)
    })
}

/// `nvshmemx_<T>_wait_until_on_stream` for the wait types, in each type's module.
macro_rules! wait_entries {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        if_marked!(wait, [$($list),*]
            impl_wait_entry!($name, $t);
        );
    )*};
}

macro_rules! impl_wait_entry {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`", c_name!(typed $name, "wait_until", "", ""), "`: enqueues a wait: the \
                         stream's later operations run once this PE's symmetric `ivar` \
                         satisfies `ivar <cmp> cmp_value` (`cmp` an `NVSHMEM_CMP_*` value).")]
        #[unsafe(export_name = c_name!(typed $name, "wait_until", "", ""))]
        pub extern "C" fn $name(ivar: *mut $t, cmp: c_int, cmp_value: $t, cstrm: CudaStream) {
            value_call(c_name!(typed $name, "wait_until", "", ""), (), || {
                wait_elem::<$t>(ivar.cast(), cmp, cmp_value, cstrm)
            })
        }
    };
}

/// The wait entries, one function per wait type (named after it).
pub mod wait_until {
    use super::*;
    niin_api::for_each_nvshmem_type! { wait_entries }
}

/// Enqueues the wait of this PE's `nelems` words at `ivars` with the `status` and `values`
/// arrays read when the stream reaches it ([`niin_api::Stream::wait_until_all_deferred`]).
///
/// # Safety
/// As that function's, for `nelems` entries.
unsafe fn wait_all_elems<T: WaitType>(
    (ivars, nelems): (*const c_void, usize),
    status: *const c_int,
    cmp: c_int,
    (value, values): (T, *const T),
    cstrm: CudaStream,
) -> FfiResult<()> {
    on_stream(cstrm, |w, s| {
        let cmp = convert::cmp(cmp)?;
        let ivars = convert::elements::<T>(w, ivars, nelems, "ivars")?;
        // SAFETY: this function's contract.
        Ok(unsafe { s.wait_until_all_deferred(ivars, status, cmp, (value, values)) }?)
    })
}

/// `nvshmemx_<T>_wait_until_all_on_stream` and `_all_vector_on_stream` for the wait types.
macro_rules! wait_all_entries {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        if_marked!(wait, [$($list),*]
            impl_wait_all_entries!($name, $t);
        );
    )*};
}

macro_rules! impl_wait_all_entries {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`", c_name!(typed $name, "wait_until_all", "", ""), "`: enqueues a wait: \
                         the stream's later operations run once every word of this PE's \
                         symmetric `ivars` whose `status` entry is 0 (every word where `status` \
                         is NULL) satisfies `word <cmp> cmp_value`. `status` is read on the \
                         device when the stream gets there, as NVSHMEM's is.")]
        ///
        /// # Safety
        /// `status`, where not NULL, is `nelems` `int`s of device-readable memory (host
        /// memory on the mock) that stays valid until the stream has run the wait.
        #[unsafe(export_name = c_name!(typed $name, "wait_until_all", "", ""))]
        pub unsafe extern "C" fn $name(
            ivars: *mut $t,
            nelems: usize,
            status: *const c_int,
            cmp: c_int,
            cmp_value: $t,
            cstrm: CudaStream,
        ) {
            value_call(c_name!(typed $name, "wait_until_all", "", ""), (), || {
                // SAFETY: this entry's contract.
                unsafe {
                    wait_all_elems::<$t>((ivars.cast(), nelems), status, cmp,
                                         (cmp_value, std::ptr::null()), cstrm)
                }
            })
        }

        #[doc = concat!("`", c_name!(typed $name, "wait_until_all_vector", "", ""), "`.")]
        pub mod $name {
            use super::*;

            #[doc = concat!("`", c_name!(typed $name, "wait_until_all_vector", "", ""), "`: as \
                             `", c_name!(typed $name, "wait_until_all", "", ""), "` with word \
                             `i` compared with `cmp_values[i]`; both arrays are read on the \
                             device when the stream gets there.")]
            ///
            /// # Safety
            /// `status` (where not NULL) and `cmp_values` are `nelems` entries of
            /// device-readable memory (host memory on the mock) that stay valid until the
            /// stream has run the wait.
            #[unsafe(export_name = c_name!(typed $name, "wait_until_all_vector", "", ""))]
            pub unsafe extern "C" fn vector(
                ivars: *mut $t,
                nelems: usize,
                status: *const c_int,
                cmp: c_int,
                cmp_values: *mut $t,
                cstrm: CudaStream,
            ) {
                value_call(c_name!(typed $name, "wait_until_all_vector", "", ""), (), || {
                    convert::local(cmp_values, nelems, "cmp_values")?;
                    // SAFETY: this entry's contract.
                    unsafe {
                        wait_all_elems::<$t>((ivars.cast(), nelems), status, cmp,
                                             (<$t>::default(), cmp_values.cast_const()), cstrm)
                    }
                })
            }
        }
    };
}

/// The `wait_until_all` entries, one function per wait type (named after it), and its
/// `_vector` form in a module of the same name.
pub mod wait_until_all {
    use super::*;
    niin_api::for_each_nvshmem_type! { wait_all_entries }
}

/// The sized forms: element sizes 1, 2, 4, 8 and 16 bytes.
macro_rules! sized_modules {
    ($(($module:ident, $bits:literal, $t:ty, $run:expr)),* $(,)?) => {$(
        #[doc = concat!("`nvshmemx_{put,get}", $bits, "[_nbi]_on_stream` and `nvshmemx_{iput,iget}",
                        $bits, "_on_stream`.")]
        pub mod $module {
            use super::*;
            stream_rma_entries!(sized $bits, $t);
            stream_strided_entry!(sized $bits, c_void, iput_on_stream, "iput", Put, $run,
                                  "a strided put from local `source` to the symmetric `dest`");
            stream_strided_entry!(sized $bits, c_void, iget_on_stream, "iget", Get, $run,
                                  "a strided get from the symmetric `source` to local `dest`");
        }
    )*};
}

sized_modules!(
    (bits8, "8", u8, strided::elements::<u8, _>),
    (bits16, "16", u16, strided::elements::<u16, _>),
    (bits32, "32", u32, strided::elements::<u32, _>),
    (bits64, "64", u64, strided::elements::<u64, _>),
    (bits128, "128", u128, strided::elements128),
);
