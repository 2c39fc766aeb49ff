//! The typed and sized host-initiated RMA of NVSHMEM's C ABI:
//!
//! - for the 25 standard RMA types (one module per type name, generated from
//!   [`for_each_nvshmem_type!`](niin_api::for_each_nvshmem_type)):
//!   `nvshmem_<T>_{put,get}[_nbi]`, `nvshmem_<T>_{iput,iget}` and `nvshmem_<T>_{p,g}`;
//! - for 8 ... 128 bits: `nvshmem_{put,get}<BITS>[_nbi]` and `nvshmem_{iput,iget}<BITS>`.
//!
//! NVSHMEM declares these for host and device code alike; the device side is the headers'
//! inline code, this is the host side. They have the host meaning of "blocking" of
//! [`nvshmem_putmem`](crate::nvshmem_putmem) and its kind: a put returns when `source` may
//! be reused, a get when `dest` holds the data, and the `_nbi` forms are the blocking ones
//! (complete before `nvshmem_quiet`, which NVSHMEM allows). The array forms are the `mem`
//! forms of `nelems * size` bytes (a count whose byte size overflows `size_t` is an error
//! naming both numbers). The strided forms take `ptrdiff_t` strides in elements, at least 1;
//! the symmetric operand must hold every element the strides reach. `p`, `g` and the
//! strided forms need the element's natural alignment (the strided rules: the crate's
//! `strided` module).

use std::ffi::{c_int, c_void};

use niin_api::{RmaType, World};

use crate::convert::{self, bytes_of, element};
use crate::error::{FfiResult, value_call};
use crate::rma::{getmem, putmem};
use crate::state;
use crate::strided::{self, Direction};

/// `mem` (the untyped put or get) of `nelems` elements of `size` bytes.
///
/// # Safety
/// As `mem` for `nelems * size` bytes.
unsafe fn elems(
    mem: unsafe fn(*mut c_void, *const c_void, usize, c_int) -> FfiResult<()>,
    dest: *mut c_void,
    source: *const c_void,
    (nelems, size): (usize, usize),
    pe: c_int,
) -> FfiResult<()> {
    let bytes = bytes_of(nelems, size)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { mem(dest, source, bytes, pe) }
}

/// Stores `value` into the symmetric `dest` on `pe`.
fn p_elem<T: RmaType>(dest: *const c_void, value: T, pe: c_int) -> FfiResult<()> {
    let w = state::world()?;
    let pe = convert::pe(&w, pe)?;
    Ok(w.p(element::<T>(&w, dest, "dest")?, value, pe)?)
}

/// The element at the symmetric `source` on `pe`.
fn g_elem<T: RmaType>(source: *const c_void, pe: c_int) -> FfiResult<T> {
    let w = state::world()?;
    let pe = convert::pe(&w, pe)?;
    Ok(w.g(element::<T>(&w, source, "source")?, pe)?)
}

/// The C name of an entry: `typed <name>` gives `nvshmem_<name>_<op><nbi>`, `sized <bits>`
/// gives `nvshmem_<op><bits><nbi>`.
macro_rules! c_name {
    (typed $name:ident, $op:literal, $nbi:literal) => {
        concat!("nvshmem_", stringify!($name), "_", $op, $nbi)
    };
    (sized $bits:literal, $op:literal, $nbi:literal) => {
        concat!("nvshmem_", $op, $bits, $nbi)
    };
}

/// One contiguous entry point: `$op` `put` or `get`, `$nbi` `""` or `"_nbi"`, `$mem` the
/// `mem` form that does it; `$t` the element (`c_void` with `$size` for the sized forms).
macro_rules! rma_entry {
    ($kind:ident $n:tt, $t:ty, $size:expr, $fn:ident, $op:literal, $nbi:literal, $mem:ident, $what:literal) => {
        #[doc = concat!("`", c_name!($kind $n, $op, $nbi), "`: ", $what, " of `nelems` elements \
                         of ", stringify!($size), " bytes, complete when it returns (the `mem` \
                         form's checks).")]
        ///
        /// # Safety
        /// The local buffer (`source` of a put, `dest` of a get) must be valid for
        /// `nelems` elements, and a get's `dest` not otherwise accessed, during the call.
        #[unsafe(export_name = c_name!($kind $n, $op, $nbi))]
        pub unsafe extern "C" fn $fn(dest: *mut $t, source: *const $t, nelems: usize, pe: c_int) {
            value_call(c_name!($kind $n, $op, $nbi), (), || {
                // SAFETY: this entry's contract.
                unsafe { elems($mem, dest.cast(), source.cast(), (nelems, $size), pe) }
            })
        }
    };
}

/// The four contiguous entry points of one element: put and get, each also `_nbi`.
macro_rules! rma_entries {
    ($kind:ident $n:tt, $t:ty, $size:expr) => {
        rma_entry!($kind $n, $t, $size, put, "put", "", putmem, "copies local `source` into the symmetric `dest` on `pe`");
        rma_entry!($kind $n, $t, $size, put_nbi, "put", "_nbi", putmem, "copies local `source` into the symmetric `dest` on `pe`");
        rma_entry!($kind $n, $t, $size, get, "get", "", getmem, "copies the symmetric `source` on `pe` into local `dest`");
        rma_entry!($kind $n, $t, $size, get_nbi, "get", "_nbi", getmem, "copies the symmetric `source` on `pe` into local `dest`");
    };
}

/// One strided entry point (`$op` `iput` or `iget`, `$dir` its [`Direction`], `$run` the
/// mover of the element: [`strided::elements`] or [`strided::elements128`], on the world,
/// so complete when it returns).
macro_rules! strided_entry {
    ($kind:ident $n:tt, $t:ty, $fn:ident, $op:literal, $dir:ident, $run:expr) => {
        #[doc = concat!("`", c_name!($kind $n, $op, ""), "`: element `i` at `dest + i * dst` from \
                         `source + i * sst` (strides in elements, at least 1), `i` below \
                         `nelems`, one side the symmetric object on `pe`; complete when it \
                         returns.")]
        ///
        /// # Safety
        /// The local operand must be valid for the elements the strides reach, and a get's
        /// not otherwise accessed, during the call.
        #[unsafe(export_name = c_name!($kind $n, $op, ""))]
        pub unsafe extern "C" fn $fn(
            dest: *mut $t,
            source: *const $t,
            dst: isize,
            sst: isize,
            nelems: usize,
            pe: c_int,
        ) {
            value_call(c_name!($kind $n, $op, ""), (), || {
                let w = state::world()?;
                let ends = (dest.cast(), source.cast());
                // SAFETY: this entry's contract.
                unsafe { $run((&w, &w), Direction::$dir, ends, (dst, sst), nelems, pe) }
            })
        }
    };
}

/// One module per NVSHMEM type name (the rows of `for_each_nvshmem_type!`).
macro_rules! typed_modules {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        #[doc = concat!("`nvshmem_", stringify!($name), "_{put,get,iput,iget,p,g}[_nbi]` (C type `",
                        $c, "`).")]
        pub mod $name {
            use super::*;
            rma_entries!(typed $name, $t, size_of::<$t>());
            strided_entry!(typed $name, $t, iput, "iput", Put, strided::elements::<$t, World>);
            strided_entry!(typed $name, $t, iget, "iget", Get, strided::elements::<$t, World>);

            #[doc = concat!("`", c_name!(typed $name, "p", ""), "`: stores `value` into the \
                             symmetric `dest` on `pe`.")]
            #[unsafe(export_name = c_name!(typed $name, "p", ""))]
            pub extern "C" fn p(dest: *mut $t, value: $t, pe: c_int) {
                value_call(c_name!(typed $name, "p", ""), (), || p_elem::<$t>(dest.cast(), value, pe))
            }

            #[doc = concat!("`", c_name!(typed $name, "g", ""), "`: the element at the symmetric \
                             `source` on `pe`; zero after a `NIIN:` line on error.")]
            #[unsafe(export_name = c_name!(typed $name, "g", ""))]
            pub extern "C" fn g(source: *const $t, pe: c_int) -> $t {
                value_call(c_name!(typed $name, "g", ""), <$t>::default(), || g_elem::<$t>(source.cast(), pe))
            }
        }
    )*};
}

niin_api::for_each_nvshmem_type! { typed_modules }

/// The sized forms: element sizes 1, 2, 4, 8 and 16 bytes (`$t` the element of the strided
/// forms, `$run` what moves them).
macro_rules! sized_modules {
    ($(($module:ident, $bits:literal, $size:literal, $run:expr)),* $(,)?) => {$(
        #[doc = concat!("`nvshmem_{put,get}", $bits, "[_nbi]` and `nvshmem_{iput,iget}", $bits, "`.")]
        pub mod $module {
            use super::*;
            rma_entries!(sized $bits, c_void, $size);
            strided_entry!(sized $bits, c_void, iput, "iput", Put, $run);
            strided_entry!(sized $bits, c_void, iget, "iget", Get, $run);
        }
    )*};
}

sized_modules!(
    (bits8, "8", 1, strided::elements::<u8, World>),
    (bits16, "16", 2, strided::elements::<u16, World>),
    (bits32, "32", 4, strided::elements::<u32, World>),
    (bits64, "64", 8, strided::elements::<u64, World>),
    (bits128, "128", 16, strided::elements128::<World>),
);
