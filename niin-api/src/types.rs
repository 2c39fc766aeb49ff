//! NVSHMEM's element types as Rust types, and the one list they come from.
//!
//! NVSHMEM 3.4 generates its typed API from four lists (its `NVSHMEMI_REPT_FOR_*`
//! macros): 25 standard RMA types (the OpenSHMEM 1.5 list without `long double`, plus
//! `bfloat16` and `half`), 12 standard AMO types, 7 bitwise AMO types, 2 extended AMO
//! types (`float`, `double`: fetch, set and swap only) and 14 wait types. Here the same
//! facts are one table, [`for_each_nvshmem_type!`](crate::for_each_nvshmem_type): one row per NVSHMEM type name with its
//! C type, the Rust type it maps to on LP64 Linux, and the lists it belongs to. The C ABI
//! generates its `nvshmem_<name>_*` functions from that table, and tests run every
//! operation over every row.
//!
//! Several NVSHMEM names share one Rust type (`int` and `int32` are both `i32`). The
//! sealed traits below are implemented per Rust type, for the union of the lists its
//! names belong to; a type outside a list is a compile error, not a run-time trap.
//! (Where names of one Rust type disagree — `int32` is bitwise, `int` is not — the Rust
//! type gets the capability: the C ABI, which works by name, keeps NVSHMEM's exact sets.)

/// Calls `$callback!` with the table of NVSHMEM element types, one row per name:
/// `(name, "C type", RustType, [lists])`, where the lists are among `rma`, `amo`
/// (standard AMO), `bitwise` (bitwise AMO), `ext` (extended AMO: fetch, set, swap),
/// `wait`, `reduce` (min, max, sum and prod reductions: 24 types) and `reduce_bitwise`
/// (and, or and xor reductions: 14 types). device/include/niin/types.h has the same
/// table, with the same lists. The rows follow a bracketed group of the extra tokens given after the
/// callback's name (`for_each_nvshmem_type!(cb, a, b)` calls `cb! { [a, b] (row), ... }`),
/// so a callback can carry its own arguments.
#[macro_export]
macro_rules! for_each_nvshmem_type {
    ($callback:ident) => {
        $crate::for_each_nvshmem_type! { @rows $callback, [] }
    };
    ($callback:ident, $($args:tt)+) => {
        $crate::for_each_nvshmem_type! { @rows $callback, [$($args)+] }
    };
    (@rows $callback:ident, [$($args:tt)*]) => {
        $callback! {
            [$($args)*]
            (bfloat16,  "__nv_bfloat16",      $crate::types::Bf16, [rma, reduce]),
            (half,      "half",               $crate::types::Half, [rma, reduce]),
            (float,     "float",              f32,   [rma, ext, reduce]),
            (double,    "double",             f64,   [rma, ext, reduce]),
            (char,      "char",               i8,    [rma, reduce]),
            (short,     "short",              i16,   [rma, wait, reduce]),
            (schar,     "signed char",        i8,    [rma, reduce]),
            (int,       "int",                i32,   [rma, amo, wait, reduce]),
            (long,      "long",               i64,   [rma, amo, wait, reduce]),
            (longlong,  "long long",          i64,   [rma, amo, wait, reduce]),
            (uchar,     "unsigned char",      u8,    [rma, reduce, reduce_bitwise]),
            (ushort,    "unsigned short",     u16,   [rma, wait, reduce, reduce_bitwise]),
            (uint,      "unsigned int",       u32,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (ulong,     "unsigned long",      u64,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (ulonglong, "unsigned long long", u64,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (int8,      "int8_t",             i8,    [rma, reduce, reduce_bitwise]),
            (int16,     "int16_t",            i16,   [rma, reduce, reduce_bitwise]),
            (int32,     "int32_t",            i32,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (int64,     "int64_t",            i64,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (uint8,     "uint8_t",            u8,    [rma, reduce, reduce_bitwise]),
            (uint16,    "uint16_t",           u16,   [rma, reduce, reduce_bitwise]),
            (uint32,    "uint32_t",           u32,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (uint64,    "uint64_t",           u64,   [rma, amo, bitwise, wait, reduce, reduce_bitwise]),
            (size,      "size_t",             usize, [rma, amo, wait, reduce, reduce_bitwise]),
            (ptrdiff,   "ptrdiff_t",          isize, [rma, amo, wait]),
        }
    };
}

/// IEEE binary16 (`half`), stored as its bits: niin-rs moves it, it does no arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Half(pub u16);

/// bfloat16 (`__nv_bfloat16`), stored as its bits: niin-rs moves it, it does no arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Bf16(pub u16);

mod sealed {
    /// Only this crate implements the element-type traits.
    // Unnameable on purpose: that is what seals the traits.
    #[allow(unnameable_types)]
    pub trait Sealed {}
}

/// A type that symmetric memory holds and RMA moves (NVSHMEM's standard RMA types).
///
/// # Safety
/// Implemented only for plain-old-data types whose every bit pattern is a valid value,
/// so bytes copied from any PE's heap are a valid `Self`.
pub unsafe trait RmaType: sealed::Sealed + Copy + Send + Sync + 'static {
    /// NVSHMEM's name of the type (one of them, where several share the Rust type).
    const NAME: &'static str;
    /// The value as little-endian bits (for scalar puts), zero-extended.
    fn to_bits(self) -> u64;
    /// The value from bits produced by [`RmaType::to_bits`] or read from memory.
    fn from_bits(bits: u64) -> Self;
}

/// A type NVSHMEM's fetch, set and swap AMOs take (standard and extended AMO types).
pub trait AmoFetchType: RmaType {}

/// A type every standard NVSHMEM AMO takes (add, inc, compare-swap, ...).
pub trait AmoType: AmoFetchType {}

/// A type the bitwise AMOs (and, or, xor) take.
pub trait BitwiseAmoType: AmoType {}

/// A type `wait_until` and `test` compare (NVSHMEM's wait types).
pub trait WaitType: RmaType {
    /// Compared as a signed integer.
    const SIGNED: bool;
}

macro_rules! impl_int_rma {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: a primitive integer: every bit pattern is a valid value.
        unsafe impl RmaType for $t {
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 {
                // Same-width reinterpretation, then zero-extension to 64 bits.
                let mut bytes = [0u8; 8];
                bytes[..size_of::<$t>()].copy_from_slice(&self.to_le_bytes());
                u64::from_le_bytes(bytes)
            }
            fn from_bits(bits: u64) -> Self {
                let mut bytes = [0u8; size_of::<$t>()];
                bytes.copy_from_slice(&bits.to_le_bytes()[..size_of::<$t>()]);
                <$t>::from_le_bytes(bytes)
            }
        }
    )*};
}

impl_int_rma!(
    i8 => "int8", i16 => "int16", i32 => "int32", i64 => "int64", isize => "ptrdiff",
    u8 => "uint8", u16 => "uint16", u32 => "uint32", u64 => "uint64", usize => "size",
    f32 => "float", f64 => "double",
);

macro_rules! impl_bits16_rma {
    ($($t:ident => $name:literal),*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: a transparent wrapper of u16: every bit pattern is a valid value.
        unsafe impl RmaType for $t {
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 {
                u64::from(self.0)
            }
            fn from_bits(bits: u64) -> Self {
                $t(bits as u16)
            }
        }
    )*};
}

impl_bits16_rma!(Half => "half", Bf16 => "bfloat16");

macro_rules! impl_marker {
    ($tr:ident: $($t:ty),*) => {$( impl $tr for $t {} )*};
}

impl_marker!(AmoFetchType: i32, i64, isize, u32, u64, usize, f32, f64);
impl_marker!(AmoType: i32, i64, isize, u32, u64, usize);
impl_marker!(BitwiseAmoType: i32, i64, u32, u64);

/// A type NVSHMEM's reductions take (reduce, reducescatter): its integer and floating
/// types except `ptrdiff_t`. Bitwise operators are defined on the integer ones only
/// ([`crate::ReduceOp::is_bitwise`]; a bitwise reduction of a floating type is an error
/// naming both).
pub trait ReduceType: RmaType {
    /// How the reduction reads the type.
    const ELEM: niin_transport::Elem;
}

macro_rules! impl_reduce {
    ($($t:ty => $e:ident),*) => {$( impl ReduceType for $t { const ELEM: niin_transport::Elem = niin_transport::Elem::$e; } )*};
}

impl_reduce!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
             u64 => U64, usize => U64, f32 => F32, f64 => F64, Half => F16, Bf16 => Bf16);

macro_rules! impl_wait {
    ($($t:ty => $signed:literal),*) => {$( impl WaitType for $t { const SIGNED: bool = $signed; } )*};
}

impl_wait!(i16 => true, i32 => true, i64 => true, isize => true,
           u16 => false, u32 => false, u64 => false, usize => false);

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the table's rows per list, so a wrong edit of the table shows.
    macro_rules! count_lists {
        ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {{
            let mut counts = std::collections::BTreeMap::<&str, usize>::new();
            $( $( *counts.entry(stringify!($list)).or_default() += 1; )* )*
            let names = [$(stringify!($name)),*];
            (counts, names.len())
        }};
    }

    #[test]
    fn table_matches_nvshmem_3_4_lists() {
        let (counts, rows) = for_each_nvshmem_type!(count_lists);
        assert_eq!(rows, 25);
        assert_eq!(counts["rma"], 25);
        assert_eq!(counts["amo"], 12);
        assert_eq!(counts["bitwise"], 7);
        assert_eq!(counts["ext"], 2);
        assert_eq!(counts["wait"], 14);
        assert_eq!(counts["reduce"], 24);
        assert_eq!(counts["reduce_bitwise"], 14);
    }

    /// Every row's Rust type has the C type's size and the traits of its lists.
    macro_rules! check_rows {
        ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {
            $( $( check_rows!(@list $list, $t); )* )*
        };
        (@list rma, $t:ty) => { fn_rma::<$t>() };
        (@list amo, $t:ty) => { fn_amo::<$t>() };
        (@list bitwise, $t:ty) => { fn_bitwise::<$t>() };
        (@list ext, $t:ty) => { fn_ext::<$t>() };
        (@list wait, $t:ty) => { fn_wait::<$t>() };
        (@list reduce, $t:ty) => { fn_reduce::<$t>() };
        (@list reduce_bitwise, $t:ty) => { fn_reduce_bitwise::<$t>() };
    }
    fn fn_reduce<T: ReduceType>() {}
    fn fn_reduce_bitwise<T: ReduceType>() {
        assert!(!T::ELEM.is_float(), "{} is in reduce_bitwise", T::NAME);
    }
    fn fn_rma<T: RmaType>() {}
    fn fn_amo<T: AmoType>() {}
    fn fn_bitwise<T: BitwiseAmoType>() {}
    fn fn_ext<T: AmoFetchType>() {}
    fn fn_wait<T: WaitType>() {}

    #[test]
    fn every_row_has_its_traits() {
        for_each_nvshmem_type!(check_rows);
    }

    #[test]
    fn bits_round_trip() {
        assert_eq!(i16::from_bits((-2i16).to_bits()), -2);
        assert_eq!((-1i8).to_bits(), 0xFF);
        assert_eq!(f64::from_bits(1.5f64.to_bits()), 1.5);
        assert_eq!(Half::from_bits(Half(0x3C00).to_bits()), Half(0x3C00));
        assert_eq!(usize::from_bits(u64::MAX), usize::MAX);
    }
}
