//! Blocking one-sided operations of [`World`]: put/get (contiguous, strided, scalar),
//! put-with-signal, signals, point-to-point waits and atomics.
//!
//! "Blocking" is NVSHMEM's host meaning: when the call returns, the local buffer may be
//! reused (put) or holds the data (get). Remote completion of puts is
//! [`World::quiet`]'s business. Stream-ordered forms are on [`crate::Stream`]; both are
//! thin forms of the order-generic implementation in `ordered`.

use niin_transport::{AmoOp, Cmp, Order, SignalOp, SymAddr, Transport};

use crate::buffer::SymSlice;
use crate::error::Result;
use crate::ordered::{Local, strided_span, width_of};
use crate::types::{AmoFetchType, AmoType, BitwiseAmoType, RmaType, WaitType};
use crate::world::World;

impl World {
    /// Copies `src` into `dst` on `pe` (`nvshmem_<T>_put`); `dst` must hold at least
    /// `src.len()` elements.
    pub fn put<T: RmaType>(&self, dst: SymSlice<T>, src: &[T], pe: usize) -> Result<()> {
        // SAFETY: `src` is borrowed for the whole call and Order::Now completes the copy
        // before it returns.
        unsafe { self.put_in(Order::Now, dst, Local::of(src), pe) }
    }

    /// Copies `src` on `pe` into `dst` (`nvshmem_<T>_get`); `src` must hold at least
    /// `dst.len()` elements.
    pub fn get<T: RmaType>(&self, dst: &mut [T], src: SymSlice<T>, pe: usize) -> Result<()> {
        // SAFETY: `dst` is borrowed mutably for the whole call, which completes the copy
        // before it returns (Order::Now).
        unsafe { self.get_in(Order::Now, Local::of_mut(dst), src, pe) }
    }

    /// Strided put (`nvshmem_<T>_iput`): `src[i * src_stride]` to element `i * dst_stride`
    /// of `dst` on `pe`, for `i < nelems`. Strides are in elements and at least 1.
    pub fn iput<T: RmaType>(
        &self,
        dst: SymSlice<T>,
        dst_stride: usize,
        src: &[T],
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: as in `put`.
        unsafe {
            self.iput_in(
                Order::Now,
                (dst, dst_stride),
                (Local::of(src), src_stride),
                nelems,
                pe,
            )
        }
    }

    /// Strided get (`nvshmem_<T>_iget`): element `i * src_stride` of `src` on `pe` to
    /// `dst[i * dst_stride]`, for `i < nelems`.
    pub fn iget<T: RmaType>(
        &self,
        dst: &mut [T],
        dst_stride: usize,
        src: SymSlice<T>,
        src_stride: usize,
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: as in `get`.
        unsafe {
            self.iget_in(
                Order::Now,
                (Local::of_mut(dst), dst_stride),
                (src, src_stride),
                nelems,
                pe,
            )
        }
    }

    /// Stores one element at `dst` on `pe` (`nvshmem_<T>_p`).
    pub fn p<T: RmaType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<()> {
        self.p_in(Order::Now, dst, value, pe)
    }

    /// Reads one element at `src` on `pe` (`nvshmem_<T>_g`).
    pub fn g<T: RmaType>(&self, src: SymSlice<T>, pe: usize) -> Result<T> {
        self.g_in(Order::Now, src, pe)
    }

    /// Puts `src` into `dst` on `pe`, then updates the signal word `sig` on `pe` by `op`
    /// with `value` (`nvshmem_<T>_put_signal`): a PE that sees the signal sees the data.
    pub fn put_signal<T: RmaType>(
        &self,
        dst: SymSlice<T>,
        src: &[T],
        sig: SymSlice<u64>,
        value: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: as in `put`.
        unsafe { self.put_signal_in(Order::Now, (dst, Local::of(src)), (sig, value, op), pe) }
    }

    /// Updates the signal word `sig` on `pe` by `op` with `value` (`nvshmemx_signal_op`).
    pub fn signal_op(&self, sig: SymSlice<u64>, value: u64, op: SignalOp, pe: usize) -> Result<()> {
        self.signal_op_in(Order::Now, sig, value, op, pe)
    }

    /// Reads this PE's signal word atomically (`nvshmem_signal_fetch`).
    pub fn signal_fetch(&self, sig: SymSlice<u64>) -> Result<u64> {
        self.check_live()?;
        self.check_sym(&sig)?;
        self.check_len("signal_fetch", "signal", sig.len(), 1)?;
        self.transport_result(self.inner.transport.signal_fetch(SymAddr(sig.offset)))
    }

    /// Waits until this PE's signal word satisfies `word <cmp> value`, and returns the
    /// word's value then (`nvshmem_signal_wait_until`).
    pub fn signal_wait_until(&self, sig: SymSlice<u64>, cmp: Cmp, value: u64) -> Result<u64> {
        self.wait_until(sig, cmp, value)?;
        self.signal_fetch(sig)
    }

    /// Waits until this PE's `ivar` satisfies `ivar <cmp> value` (`nvshmem_<T>_wait_until`).
    pub fn wait_until<T: WaitType>(&self, ivar: SymSlice<T>, cmp: Cmp, value: T) -> Result<()> {
        self.wait_until_in(Order::Now, ivar, cmp, value)
    }

    /// Waits until every element of `ivars` whose `status` entry is 0 (all, without
    /// `status`) satisfies `<cmp> value` (`nvshmem_<T>_wait_until_all`).
    pub fn wait_until_all<T: WaitType>(
        &self,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.wait_until_all_in(Order::Now, ivars, status, cmp, value)
    }

    /// Waits until element `i` of `ivars` satisfies `<cmp> values[i]` for every `i` whose
    /// `status` entry is 0 (`nvshmem_<T>_wait_until_all_vector`).
    pub fn wait_until_all_vector<T: WaitType>(
        &self,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        self.wait_until_all_vector_in(Order::Now, ivars, status, cmp, values)
    }

    fn amo<T: AmoFetchType>(
        &self,
        dst: SymSlice<T>,
        op: AmoOp,
        operand: T,
        compare: T,
        pe: usize,
    ) -> Result<T> {
        self.check_remote(&dst, pe)?;
        self.check_len("atomic", "destination", dst.len(), 1)?;
        let old = self.transport_result(self.inner.transport.atomic(
            pe,
            SymAddr(dst.offset),
            op,
            width_of::<T>(),
            operand.to_bits(),
            compare.to_bits(),
        ))?;
        Ok(T::from_bits(old))
    }

    /// Atomically reads `dst` on `pe` (`nvshmem_<T>_atomic_fetch`).
    pub fn atomic_fetch<T: AmoFetchType>(&self, dst: SymSlice<T>, pe: usize) -> Result<T> {
        self.amo(dst, AmoOp::Fetch, T::from_bits(0), T::from_bits(0), pe)
    }

    /// Atomically stores `value` at `dst` on `pe` (`nvshmem_<T>_atomic_set`).
    pub fn atomic_set<T: AmoFetchType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<()> {
        self.amo(dst, AmoOp::Set, value, T::from_bits(0), pe)
            .map(drop)
    }

    /// Atomically stores `value` at `dst` on `pe`, returning the old value
    /// (`nvshmem_<T>_atomic_swap`).
    pub fn atomic_swap<T: AmoFetchType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<T> {
        self.amo(dst, AmoOp::Swap, value, T::from_bits(0), pe)
    }

    /// Atomically stores `value` at `dst` on `pe` if it holds `cond`; returns the old value
    /// (`nvshmem_<T>_atomic_compare_swap`).
    pub fn atomic_compare_swap<T: AmoType>(
        &self,
        dst: SymSlice<T>,
        cond: T,
        value: T,
        pe: usize,
    ) -> Result<T> {
        self.amo(dst, AmoOp::CompareSwap, value, cond, pe)
    }

    /// Atomically adds `value`, returning the old value (`nvshmem_<T>_atomic_fetch_add`).
    pub fn atomic_fetch_add<T: AmoType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<T> {
        self.amo(dst, AmoOp::FetchAdd, value, T::from_bits(0), pe)
    }

    /// Atomically adds `value` (`nvshmem_<T>_atomic_add`).
    pub fn atomic_add<T: AmoType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<()> {
        self.amo(dst, AmoOp::Add, value, T::from_bits(0), pe)
            .map(drop)
    }

    /// Atomically adds one (`nvshmem_<T>_atomic_inc`).
    pub fn atomic_inc<T: AmoType>(&self, dst: SymSlice<T>, pe: usize) -> Result<()> {
        self.amo(dst, AmoOp::Inc, T::from_bits(0), T::from_bits(0), pe)
            .map(drop)
    }

    /// Atomically adds one, returning the old value (`nvshmem_<T>_atomic_fetch_inc`).
    pub fn atomic_fetch_inc<T: AmoType>(&self, dst: SymSlice<T>, pe: usize) -> Result<T> {
        self.amo(dst, AmoOp::FetchInc, T::from_bits(0), T::from_bits(0), pe)
    }
}

/// The bitwise AMOs: `and`, `or`, `xor`, each with a fetching form.
macro_rules! bitwise_amos {
    ($($plain:ident, $fetch:ident, $op:ident, $fop:ident, $sym:literal);* $(;)?) => {
        impl World {$(
            #[doc = concat!("Atomically applies `", $sym, " value` to `dst` on `pe` (`nvshmem_<T>_atomic_", stringify!($plain), "`).")]
            pub fn $plain<T: BitwiseAmoType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<()> {
                self.amo(dst, AmoOp::$op, value, T::from_bits(0), pe).map(drop)
            }

            #[doc = concat!("As [`World::", stringify!($plain), "`], returning the old value.")]
            pub fn $fetch<T: BitwiseAmoType>(&self, dst: SymSlice<T>, value: T, pe: usize) -> Result<T> {
                self.amo(dst, AmoOp::$fop, value, T::from_bits(0), pe)
            }
        )*}
    };
}

bitwise_amos! {
    atomic_and, atomic_fetch_and, And, FetchAnd, "&";
    atomic_or, atomic_fetch_or, Or, FetchOr, "|";
    atomic_xor, atomic_fetch_xor, Xor, FetchXor, "^";
}

impl World {
    /// Copies `bytes` bytes at local address `src` (host or, on a GPU transport, device
    /// memory) into `dst` on `pe` (the C ABI's `nvshmem_putmem`).
    ///
    /// # Safety
    /// `src..src+bytes` must be readable for the duration of the call.
    pub unsafe fn putmem(
        &self,
        dst: SymSlice<u8>,
        src: *const u8,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded; Order::Now completes before returning.
        unsafe {
            self.put_in(
                Order::Now,
                dst,
                Local {
                    ptr: src,
                    len: bytes,
                },
                pe,
            )
        }
    }

    /// Copies `bytes` bytes of `src` on `pe` to local address `dst` (`nvshmem_getmem`).
    ///
    /// # Safety
    /// `dst..dst+bytes` must be writable, and not otherwise accessed, during the call.
    pub unsafe fn getmem(
        &self,
        dst: *mut u8,
        src: SymSlice<u8>,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded; Order::Now completes before returning.
        unsafe {
            self.get_in(
                Order::Now,
                Local {
                    ptr: dst,
                    len: bytes,
                },
                src,
                pe,
            )
        }
    }
}

impl World {
    /// Strided put from local memory at `src` (host or, on a GPU transport, device
    /// memory): as [`World::iput`] with a raw source, for the C ABI's `nvshmem_<T>_iput`.
    ///
    /// # Safety
    /// The `(nelems - 1) * src_stride + 1` elements at `src` (none for `nelems == 0`) must
    /// be readable for the duration of the call.
    pub unsafe fn iput_from<T: RmaType>(
        &self,
        dst: (SymSlice<T>, usize),
        src: (*const T, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded; Order::Now completes before returning.
        unsafe { self.iput_raw_in(Order::Now, dst, src, nelems, pe) }
    }

    /// Strided get into local memory at `dst`: as [`World::iget`] with a raw destination,
    /// for the C ABI's `nvshmem_<T>_iget`.
    ///
    /// # Safety
    /// The `(nelems - 1) * dst_stride + 1` elements at `dst` must be writable, and not
    /// otherwise accessed, for the duration of the call.
    pub unsafe fn iget_into<T: RmaType>(
        &self,
        dst: (*mut T, usize),
        src: (SymSlice<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // SAFETY: forwarded; Order::Now completes before returning.
        unsafe { self.iget_raw_in(Order::Now, dst, src, nelems, pe) }
    }

    /// The strided put of a raw local source in `order` (the world's and a stream's
    /// `iput_from`).
    ///
    /// # Safety
    /// The elements of `src` the strides reach must stay readable until `order` has run it.
    pub(crate) unsafe fn iput_raw_in<T: RmaType>(
        &self,
        order: Order,
        (dst, dst_stride): (SymSlice<T>, usize),
        (src, src_stride): (*const T, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        // A span that overflows is refused by the stride check, which sees it as `None`.
        let len = strided_span(nelems, src_stride).unwrap_or(usize::MAX);
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.iput_in(
                order,
                (dst, dst_stride),
                (Local { ptr: src, len }, src_stride),
                nelems,
                pe,
            )
        }
    }

    /// The strided get into a raw local destination in `order` (the world's and a stream's
    /// `iget_into`).
    ///
    /// # Safety
    /// The elements of `dst` the strides reach must stay writable, and not otherwise
    /// accessed, until `order` has run it.
    pub(crate) unsafe fn iget_raw_in<T: RmaType>(
        &self,
        order: Order,
        (dst, dst_stride): (*mut T, usize),
        (src, src_stride): (SymSlice<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        let len = strided_span(nelems, dst_stride).unwrap_or(usize::MAX);
        let dst = Local {
            ptr: dst.cast_const(),
            len,
        };
        // SAFETY: forwarded from this function's contract.
        unsafe { self.iget_in(order, (dst, dst_stride), (src, src_stride), nelems, pe) }
    }
}
