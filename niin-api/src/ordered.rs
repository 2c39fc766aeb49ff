//! The one implementation of every typed operation, generic over where it is ordered
//! ([`Order::Now`] for [`World`]'s blocking calls, [`Order::Stream`] for [`crate::Stream`]'s):
//! argument checks, then the transport call. The public forms in `rma` and `stream` only
//! choose the order and where the local operand lives.

use niin_teams::TeamId;
use niin_transport::{Cmp, Order, Scalar, SignalOp, Strided, SymAddr, Transport, WaitKind, Width};

use crate::buffer::SymSlice;
use crate::error::{Error, Result};
use crate::types::{RmaType, WaitType};
use crate::world::World;

pub(crate) fn width_of<T: RmaType>() -> Width {
    Width::from_bytes(size_of::<T>()).expect("every RMA type is 1, 2, 4 or 8 bytes")
}

pub(crate) fn wait_kind<T: WaitType>() -> WaitKind {
    WaitKind {
        width: width_of::<T>(),
        signed: T::SIGNED,
    }
}

/// How many elements `nelems` elements at `stride` span, from the first to the last
/// (both included): what a strided operand (`iput`, `iget`) must hold. `None` where that
/// overflows `usize`.
pub fn strided_span(nelems: usize, stride: usize) -> Option<usize> {
    if nelems == 0 {
        Some(0)
    } else {
        (nelems - 1).checked_mul(stride)?.checked_add(1)
    }
}

/// A local operand: a pointer to `len` elements of `T` in this process.
#[derive(Clone, Copy)]
pub(crate) struct Local<T> {
    pub(crate) ptr: *const T,
    pub(crate) len: usize,
}

impl<T> Local<T> {
    pub(crate) fn of(s: &[T]) -> Self {
        Local {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    pub(crate) fn of_mut(s: &mut [T]) -> Self {
        Local {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }
}

impl World {
    /// Validates a remote operation's target: live world, PE in range, view symmetric.
    pub(crate) fn check_remote<T: RmaType>(&self, sym: &SymSlice<T>, pe: usize) -> Result<()> {
        self.check_live()?;
        self.check_pe(pe)?;
        self.check_sym(sym)
    }

    /// Validates a view of this PE's own heap (waits, signal reads).
    fn check_local_sym<T: RmaType>(&self, sym: &SymSlice<T>) -> Result<()> {
        self.check_live()?;
        self.check_sym(sym)
    }

    pub(crate) fn check_len(
        &self,
        op: &'static str,
        what: &str,
        have: usize,
        need: usize,
    ) -> Result<()> {
        if have >= need {
            Ok(())
        } else {
            Err(Error::BadArgument {
                pe: self.my_pe(),
                op,
                what: format!("{what} holds {have} elements, {need} needed"),
            })
        }
    }

    fn check_status(&self, op: &'static str, status: Option<&[i32]>, n: usize) -> Result<()> {
        match status {
            Some(s) if s.len() != n => Err(Error::BadArgument {
                pe: self.my_pe(),
                op,
                what: format!("status has {} entries for {n} words", s.len()),
            }),
            _ => Ok(()),
        }
    }

    /// Builds a strided shape and checks both sides' spans against their lengths.
    fn strided<T: RmaType>(
        &self,
        op: &'static str,
        nelems: usize,
        (dst_stride, dst_len): (usize, usize),
        (src_stride, src_len): (usize, usize),
    ) -> Result<Strided> {
        let bad = |what: String| Error::BadArgument {
            pe: self.my_pe(),
            op,
            what,
        };
        if dst_stride == 0 || src_stride == 0 {
            return Err(bad(format!(
                "strides must be at least 1 (dst {dst_stride}, src {src_stride})"
            )));
        }
        let need = |stride: usize| strided_span(nelems, stride);
        match (need(dst_stride), need(src_stride)) {
            (Some(d), Some(s)) if d <= dst_len && s <= src_len => {}
            (dn, sn) => {
                return Err(bad(format!(
                    "{nelems} elements at strides {dst_stride}/{src_stride} need {dn:?}/{sn:?} elements; destination holds {dst_len}, source {src_len}"
                )));
            }
        }
        Ok(Strided {
            elem_size: size_of::<T>(),
            nelems,
            dst_stride,
            src_stride,
        })
    }

    /// Put of `src` into `dst` on `pe`.
    ///
    /// # Safety
    /// `src` must be readable until the operation has run (see `Transport::put`).
    pub(crate) unsafe fn put_in<T: RmaType>(
        &self,
        order: Order,
        dst: SymSlice<T>,
        src: Local<T>,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&dst, pe)?;
        self.check_len("put", "destination", dst.len(), src.len)?;
        // SAFETY: forwarded from this function's contract.
        let r = unsafe {
            self.inner
                .transport
                .put(order, pe, SymAddr(dst.offset), src.ptr.cast(), src.bytes())
        };
        self.transport_result(r)
    }

    /// Get of `src` on `pe` into `dst`.
    ///
    /// # Safety
    /// `dst` must be writable, and not otherwise accessed, until the operation has run.
    pub(crate) unsafe fn get_in<T: RmaType>(
        &self,
        order: Order,
        dst: Local<T>,
        src: SymSlice<T>,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&src, pe)?;
        self.check_len("get", "source", src.len(), dst.len)?;
        // SAFETY: forwarded from this function's contract; any bit pattern is a valid `T`
        // (RmaType's contract), so filling `dst` with heap bytes is sound.
        let r = unsafe {
            self.inner.transport.get(
                order,
                pe,
                dst.ptr.cast_mut().cast(),
                SymAddr(src.offset),
                dst.bytes(),
            )
        };
        self.transport_result(r)
    }

    /// Strided put.
    ///
    /// # Safety
    /// As [`World::put_in`].
    pub(crate) unsafe fn iput_in<T: RmaType>(
        &self,
        order: Order,
        (dst, dst_stride): (SymSlice<T>, usize),
        (src, src_stride): (Local<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&dst, pe)?;
        let shape = self.strided::<T>(
            "iput",
            nelems,
            (dst_stride, dst.len()),
            (src_stride, src.len),
        )?;
        // SAFETY: forwarded; the source span was checked against `src.len`.
        let r = unsafe {
            self.inner
                .transport
                .iput(order, pe, SymAddr(dst.offset), src.ptr.cast(), shape)
        };
        self.transport_result(r)
    }

    /// Strided get.
    ///
    /// # Safety
    /// As [`World::get_in`].
    pub(crate) unsafe fn iget_in<T: RmaType>(
        &self,
        order: Order,
        (dst, dst_stride): (Local<T>, usize),
        (src, src_stride): (SymSlice<T>, usize),
        nelems: usize,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&src, pe)?;
        let shape = self.strided::<T>(
            "iget",
            nelems,
            (dst_stride, dst.len),
            (src_stride, src.len()),
        )?;
        // SAFETY: forwarded; the destination span was checked against `dst.len`.
        let r = unsafe {
            self.inner.transport.iget(
                order,
                pe,
                dst.ptr.cast_mut().cast(),
                SymAddr(src.offset),
                shape,
            )
        };
        self.transport_result(r)
    }

    /// Put with signal.
    ///
    /// # Safety
    /// As [`World::put_in`].
    pub(crate) unsafe fn put_signal_in<T: RmaType>(
        &self,
        order: Order,
        (dst, src): (SymSlice<T>, Local<T>),
        (sig, value, op): (SymSlice<u64>, u64, SignalOp),
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&dst, pe)?;
        self.check_sym(&sig)?;
        self.check_len("put_signal", "destination", dst.len(), src.len)?;
        self.check_len("put_signal", "signal", sig.len(), 1)?;
        // SAFETY: forwarded from this function's contract.
        let r = unsafe {
            self.inner.transport.put_signal(
                order,
                pe,
                SymAddr(dst.offset),
                src.ptr.cast(),
                src.bytes(),
                SymAddr(sig.offset),
                value,
                op,
            )
        };
        self.transport_result(r)
    }

    pub(crate) fn p_in<T: RmaType>(
        &self,
        order: Order,
        dst: SymSlice<T>,
        value: T,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&dst, pe)?;
        self.check_len("p", "destination", dst.len(), 1)?;
        let value = Scalar {
            bits: value.to_bits(),
            width: width_of::<T>(),
        };
        self.transport_result(
            self.inner
                .transport
                .p(order, pe, SymAddr(dst.offset), value),
        )
    }

    pub(crate) fn g_in<T: RmaType>(&self, order: Order, src: SymSlice<T>, pe: usize) -> Result<T> {
        self.check_remote(&src, pe)?;
        self.check_len("g", "source", src.len(), 1)?;
        let bits = self.transport_result(self.inner.transport.g(
            order,
            pe,
            SymAddr(src.offset),
            width_of::<T>(),
        ))?;
        Ok(T::from_bits(bits))
    }

    pub(crate) fn signal_op_in(
        &self,
        order: Order,
        sig: SymSlice<u64>,
        value: u64,
        op: SignalOp,
        pe: usize,
    ) -> Result<()> {
        self.check_remote(&sig, pe)?;
        self.check_len("signal_op", "signal", sig.len(), 1)?;
        self.transport_result(self.inner.transport.signal_op(
            order,
            pe,
            SymAddr(sig.offset),
            value,
            op,
        ))
    }

    pub(crate) fn wait_until_in<T: WaitType>(
        &self,
        order: Order,
        ivar: SymSlice<T>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.check_local_sym(&ivar)?;
        self.check_len("wait_until", "ivar", ivar.len(), 1)?;
        let r = self.inner.transport.wait_until(
            order,
            SymAddr(ivar.offset),
            wait_kind::<T>(),
            cmp,
            value.to_bits(),
        );
        self.transport_result(r)
    }

    pub(crate) fn wait_until_all_in<T: WaitType>(
        &self,
        order: Order,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.check_local_sym(&ivars)?;
        self.check_status("wait_until_all", status, ivars.len())?;
        let r = self.inner.transport.wait_until_all(
            order,
            SymAddr(ivars.offset),
            ivars.len(),
            wait_kind::<T>(),
            status,
            cmp,
            value.to_bits(),
        );
        self.transport_result(r)
    }

    pub(crate) fn wait_until_all_vector_in<T: WaitType>(
        &self,
        order: Order,
        ivars: SymSlice<T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        self.check_local_sym(&ivars)?;
        self.check_status("wait_until_all_vector", status, ivars.len())?;
        if values.len() != ivars.len() {
            return Err(Error::BadArgument {
                pe: self.my_pe(),
                op: "wait_until_all_vector",
                what: format!(
                    "{} comparison values for {} words",
                    values.len(),
                    ivars.len()
                ),
            });
        }
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        let r = self.inner.transport.wait_until_all_vector(
            order,
            SymAddr(ivars.offset),
            wait_kind::<T>(),
            status,
            cmp,
            &bits,
        );
        self.transport_result(r)
    }

    pub(crate) fn barrier_in(&self, order: Order, team: TeamId) -> Result<()> {
        self.check_live()?;
        let sync = self.team_sync(team)?;
        self.transport_result(self.inner.transport.barrier(order, sync))
    }

    pub(crate) fn quiet_in(&self, order: Order) -> Result<()> {
        self.check_live()?;
        self.transport_result(self.inner.transport.quiet(order))
    }
}

#[cfg(test)]
mod tests {
    use super::strided_span;

    #[test]
    fn strided_spans_count_first_to_last() {
        assert_eq!(strided_span(0, 5), Some(0));
        assert_eq!(strided_span(1, 5), Some(1));
        assert_eq!(strided_span(3, 2), Some(5));
        assert_eq!(strided_span(4, 1), Some(4));
        assert_eq!(strided_span(3, usize::MAX / 2 + 1), None);
    }
}
