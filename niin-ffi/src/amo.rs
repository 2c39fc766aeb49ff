//! The host atomics of NVSHMEM's C ABI, `nvshmem_<T>_atomic_<op>`:
//!
//! - fetch, set, swap for the 12 standard and 2 extended AMO types;
//! - compare_swap, inc, fetch_inc, add, fetch_add for the standard types;
//! - and, or, xor and their fetch forms for the 7 bitwise types
//!
//! (the rows of [`for_each_nvshmem_type!`](niin_api::for_each_nvshmem_type) marked `amo`,
//! `ext` and `bitwise`; one module per type name). NVSHMEM 3.4.5 declares them for the host
//! but prints "not implemented" when a host program calls them; here they run, to this PE
//! and to every other PE the transport reaches ([`World::atomic_fetch_add`] and its kind:
//! on the mock, to any PE; on NCCL, to this PE and its LSA peers, with the transport's
//! error, naming the PE, for others). They are atomic with respect to the device's
//! atomics on the same word (system scope) and to each other. `dest` must be a
//! naturally aligned element of the symmetric heap. A fetching function returns zero
//! after its `NIIN:` line on error.

use std::ffi::{c_int, c_void};

use niin_api::{RmaType, SymSlice, World};

use crate::convert::{self, element};
use crate::error::{FfiResult, value_call};
use crate::state;

/// Runs `op` on the symmetric element `dest` of `pe` (the checks every atomic shares: the
/// library's state, the PE, `dest` in the heap and aligned for `T`).
fn on_element<T: RmaType, R>(
    dest: *const c_void,
    pe: c_int,
    op: impl FnOnce(&World, SymSlice<T>, usize) -> niin_api::Result<R>,
) -> FfiResult<R> {
    let w = state::world()?;
    let pe = convert::pe(&w, pe)?;
    let dest = element::<T>(&w, dest, "dest")?;
    Ok(op(&w, dest, pe)?)
}

/// The C name `nvshmem_<name>_atomic_<op>`.
macro_rules! amo_name {
    ($name:ident, $op:literal) => {
        concat!("nvshmem_", stringify!($name), "_atomic_", $op)
    };
}

/// An atomic that returns nothing: `$fn(dest[, value])`, World's `$method`.
macro_rules! amo_void {
    ($name:ident, $t:ty, $fn:ident, $op:literal, $doc:literal, $method:ident($($arg:ident),*)) => {
        #[doc = concat!("`", amo_name!($name, $op), "`: ", $doc)]
        #[unsafe(export_name = amo_name!($name, $op))]
        pub extern "C" fn $fn(dest: *mut $t, $($arg: $t,)* pe: c_int) {
            value_call(amo_name!($name, $op), (), || {
                on_element::<$t, ()>(dest.cast_const().cast(), pe, |w, d, pe| w.$method(d, $($arg,)* pe))
            })
        }
    };
}

/// An atomic that returns the element's old value (zero on error).
macro_rules! amo_fetch {
    ($name:ident, $t:ty, $fn:ident, $op:literal, $doc:literal, $method:ident($($arg:ident),*)) => {
        #[doc = concat!("`", amo_name!($name, $op), "`: ", $doc, " Returns the old value.")]
        #[unsafe(export_name = amo_name!($name, $op))]
        pub extern "C" fn $fn(dest: *mut $t, $($arg: $t,)* pe: c_int) -> $t {
            value_call(amo_name!($name, $op), <$t>::default(), || {
                on_element::<$t, $t>(dest.cast_const().cast(), pe, |w, d, pe| w.$method(d, $($arg,)* pe))
            })
        }
    };
}

/// fetch, set and swap (every AMO type).
macro_rules! amo_move {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`", amo_name!($name, "fetch"), "`: atomically reads the element `source` \
                         on `pe`; zero after a `NIIN:` line on error.")]
        #[unsafe(export_name = amo_name!($name, "fetch"))]
        pub extern "C" fn fetch(source: *const $t, pe: c_int) -> $t {
            value_call(amo_name!($name, "fetch"), <$t>::default(), || {
                on_element::<$t, $t>(source.cast(), pe, |w, d, pe| w.atomic_fetch(d, pe))
            })
        }
        amo_void!(
            $name,
            $t,
            set,
            "set",
            "atomically writes `value` to `dest` on `pe`.",
            atomic_set(value)
        );
        amo_fetch!(
            $name,
            $t,
            swap,
            "swap",
            "atomically writes `value` to `dest` on `pe`.",
            atomic_swap(value)
        );
    };
}

/// compare_swap and the arithmetic (the standard AMO types).
macro_rules! amo_standard {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`", amo_name!($name, "compare_swap"), "`: atomically writes `value` to \
                         `dest` on `pe` if it equals `cond`. Returns the old value (zero after \
                         a `NIIN:` line on error).")]
        #[unsafe(export_name = amo_name!($name, "compare_swap"))]
        pub extern "C" fn compare_swap(dest: *mut $t, cond: $t, value: $t, pe: c_int) -> $t {
            value_call(amo_name!($name, "compare_swap"), <$t>::default(), || {
                on_element::<$t, $t>(dest.cast_const().cast(), pe, |w, d, pe| {
                    w.atomic_compare_swap(d, cond, value, pe)
                })
            })
        }
        amo_void!($name, $t, inc, "inc", "atomically adds 1 to `dest` on `pe`.", atomic_inc());
        amo_fetch!($name, $t, fetch_inc, "fetch_inc", "atomically adds 1 to `dest` on `pe`.", atomic_fetch_inc());
        amo_void!($name, $t, add, "add", "atomically adds `value` to `dest` on `pe`.", atomic_add(value));
        amo_fetch!($name, $t, fetch_add, "fetch_add", "atomically adds `value` to `dest` on `pe`.", atomic_fetch_add(value));
    };
}

/// and, or, xor and their fetch forms (the bitwise AMO types).
macro_rules! amo_bitwise {
    ($name:ident, $t:ty) => {
        amo_void!(
            $name,
            $t,
            and,
            "and",
            "atomically ands `value` into `dest` on `pe`.",
            atomic_and(value)
        );
        amo_fetch!(
            $name,
            $t,
            fetch_and,
            "fetch_and",
            "atomically ands `value` into `dest` on `pe`.",
            atomic_fetch_and(value)
        );
        amo_void!(
            $name,
            $t,
            or,
            "or",
            "atomically ors `value` into `dest` on `pe`.",
            atomic_or(value)
        );
        amo_fetch!(
            $name,
            $t,
            fetch_or,
            "fetch_or",
            "atomically ors `value` into `dest` on `pe`.",
            atomic_fetch_or(value)
        );
        amo_void!(
            $name,
            $t,
            xor,
            "xor",
            "atomically xors `value` into `dest` on `pe`.",
            atomic_xor(value)
        );
        amo_fetch!(
            $name,
            $t,
            fetch_xor,
            "fetch_xor",
            "atomically xors `value` into `dest` on `pe`.",
            atomic_fetch_xor(value)
        );
    };
}

/// One module per AMO type: the standard types' (with the bitwise ones where marked) and
/// the extended types'.
macro_rules! amo_modules {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        if_marked!(amo, [$($list),*]
            #[doc = concat!("`nvshmem_", stringify!($name), "_atomic_*` (C type `", $c, "`).")]
            pub mod $name {
                use super::*;
                amo_move!($name, $t);
                amo_standard!($name, $t);
                if_marked!(bitwise, [$($list),*] amo_bitwise!($name, $t););
            }
        );
        if_marked!(ext, [$($list),*]
            #[doc = concat!("`nvshmem_", stringify!($name), "_atomic_{fetch,set,swap}` (C type `",
                            $c, "`).")]
            pub mod $name {
                use super::*;
                amo_move!($name, $t);
            }
        );
    )*};
}

niin_api::for_each_nvshmem_type! { amo_modules }
