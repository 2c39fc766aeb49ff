//! Interop with [cudarc](https://docs.rs/cudarc) (re-exported as [`crate::cudarc`]: the
//! version niin-transport is built with, 0.19, driver API only, `libcuda` loaded at run
//! time), for a world on GPUs (the NCCL transport):
//!
//! - [`World::cudarc_stream`]: a cudarc [`CudaStream`] as a niin [`Stream`], for the
//!   `*_on_stream` operations, ordered with the application's cudarc work on that stream;
//! - [`World::cudarc_slice`]: this PE's part of a [`SymBuffer`] (device memory of the
//!   symmetric heap) as a cudarc slice, [`SymCudaSlice`], usable with cudarc's copies and
//!   kernel launches; cudarc never frees it (the heap belongs to the world).
//!
//! ```no_run
//! use niin_api::cudarc::driver::CudaContext;
//! use niin_api::World;
//!
//! let w = World::init()?;
//! let ctx = CudaContext::new(w.cuda_ordinal()?).expect("a GPU"); // niin-rs's context
//! let cu = ctx.default_stream();
//! let buf = w.calloc::<f32>(1024)?;
//! let mut dev = w.cudarc_slice(&buf, &cu)?;      // a cudarc view of this PE's buf
//! cu.memcpy_htod(&vec![1.0f32; 1024], &mut dev.as_view_mut()).expect("copy");
//! let s = w.cudarc_stream(&cu)?;                 // niin operations on the same stream
//! s.put(buf.all(), buf.all(), (w.my_pe() + 1) % w.n_pes())?;
//! s.synchronize()?;
//! # Ok::<(), niin_api::Error>(())
//! ```
//!
//! On the mock transport the heap is host memory and there is no CUDA stream: both calls
//! return [`Error::BadArgument`] saying so, and so does [`World::device_ptr`], the raw
//! device address these build on.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, RangeBounds};
use std::sync::Arc;

use cudarc::driver::sys::{CUcontext, CUdeviceptr};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};
use niin_transport::{AnyTransport, StreamHandle, SymAddr, Transport};

use crate::buffer::{SymBuffer, SymSlice};
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::types::RmaType;
use crate::world::World;

/// This PE's part of a [`SymBuffer`] as a cudarc [`CudaSlice`], from
/// [`World::cudarc_slice`]. It dereferences to `CudaSlice<T>` (read-only uses: kernel
/// arguments `&slice`, `memcpy_dtoh`, `slice(..)`); [`SymCudaSlice::as_view_mut`] and
/// [`SymCudaSlice::slice_mut`] give the writable views. Dropping it leaves the memory
/// alone (`CudaSlice::leak`): the heap is the world's.
///
/// It borrows the buffer, so the buffer cannot be freed while it lives. Its memory is
/// valid until the world is finalized; using it after `finalize` is a device-side
/// error, as for any `nvshmem_malloc` pointer.
#[derive(Debug)]
pub struct SymCudaSlice<'b, T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    /// Borrows the `SymBuffer`, so it cannot be freed meanwhile.
    _buffer: PhantomData<&'b ()>,
}

impl<T> Deref for SymCudaSlice<'_, T> {
    type Target = CudaSlice<T>;

    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> SymCudaSlice<'_, T> {
    /// The whole part as a writable cudarc view (a `DevicePtrMut`: a destination of
    /// `memcpy_htod`/`memcpy_dtod`, a `&mut` kernel argument).
    pub fn as_view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.slice.as_view_mut()
    }

    /// Elements `range` as a writable cudarc view; panics when out of range, as
    /// cudarc's `slice_mut` does.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> CudaViewMut<'_, T> {
        self.slice.slice_mut(range)
    }

    /// The whole part as a read-only cudarc view.
    pub fn as_view(&self) -> CudaView<'_, T> {
        self.slice.as_view()
    }
}

impl<T> Drop for SymCudaSlice<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `slice` is taken once, here, and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // Forget the allocation (cudarc must not free the world's heap); the events and
        // the stream reference are released.
        let _ = slice.leak();
    }
}

impl World {
    /// This PE's device (its ordinal and primary context), or the error that explains
    /// why there is none (a CPU world).
    fn cuda_device(&self, op: &'static str) -> Result<(usize, CUcontext)> {
        self.check_live()?;
        self.inner
            .transport
            .implementations()
            .iter()
            .find_map(|t| match t {
                AnyTransport::Lsa(lsa) => {
                    let device = lsa.shared().2;
                    Some((device.ordinal(), device.raw_context()))
                }
                _ => None,
            })
            .ok_or_else(|| Error::BadArgument {
                pe: self.my_pe(),
                op,
                what: "this world runs on the mock transport: its symmetric heap is host \
                       memory and it has no CUDA device or stream (cudarc interop needs a \
                       world on GPUs, NIIN_TRANSPORT=nccl)"
                    .into(),
            })
    }

    /// Checks that cudarc's `stream` belongs to this PE's device's primary context, the
    /// one niin-rs works in.
    fn check_cudarc_stream(&self, stream: &CudaStream, op: &'static str) -> Result<()> {
        let (_, ctx) = self.cuda_device(op)?;
        if stream.context().cu_ctx() != ctx {
            return Err(Error::BadArgument {
                pe: self.my_pe(),
                op,
                what: format!(
                    "the cudarc stream belongs to a context of device {} that is not this PE's \
                     device's primary context (make it with CudaContext::new on this PE's GPU)",
                    stream.context().ordinal()
                ),
            });
        }
        Ok(())
    }

    /// The ordinal of this PE's GPU (after `CUDA_VISIBLE_DEVICES`): open the same device,
    /// in the same primary context as niin-rs, with `CudaContext::new(ordinal)`. On the
    /// mock: an error.
    pub fn cuda_ordinal(&self) -> Result<usize> {
        Ok(self.cuda_device("cuda_ordinal")?.0)
    }

    /// The device address of this PE's part of `sym` (`nvshmem_ptr` to itself, as a
    /// `CUdeviceptr`), for handing symmetric memory to CUDA libraries. On the mock: an
    /// error (host memory).
    pub fn device_ptr<T: RmaType>(&self, sym: SymSlice<T>) -> Result<CUdeviceptr> {
        self.cuda_device("device_ptr")?;
        self.check_sym(&sym)?;
        let p = self
            .inner
            .transport
            .peer_ptr(self.my_pe(), SymAddr(sym.offset()));
        Ok(p as CUdeviceptr)
    }

    /// A niin [`Stream`] on cudarc's `stream` (borrowed: it is not destroyed; the `Stream`
    /// keeps the `Arc` alive). niin's `*_on_stream` operations on it are ordered with the
    /// cudarc work enqueued on `stream` before and after them. The stream must belong to
    /// this PE's device's primary context (`CudaContext::new(ordinal)`); on the mock: an
    /// error.
    pub fn cudarc_stream(&self, stream: &Arc<CudaStream>) -> Result<Stream<'_>> {
        self.check_cudarc_stream(stream, "cudarc_stream")?;
        let handle = StreamHandle(stream.cu_stream() as u64);
        Ok(self
            .borrow_stream(handle)
            .keeping(Arc::clone(stream) as Arc<dyn std::any::Any + Send + Sync>))
    }

    /// This PE's part of `buf` (device memory of the symmetric heap) as a cudarc slice
    /// whose work is ordered on `stream` ([`SymCudaSlice`]: cudarc never frees it). The
    /// stream must belong to this PE's device's primary context; on the mock: an error.
    pub fn cudarc_slice<'b, T: RmaType + DeviceRepr>(
        &self,
        buf: &'b SymBuffer<T>,
        stream: &Arc<CudaStream>,
    ) -> Result<SymCudaSlice<'b, T>> {
        self.check_cudarc_stream(stream, "cudarc_slice")?;
        let ptr = self.device_ptr(buf.all())?;
        // SAFETY: `ptr..ptr + len` is this PE's live allocation `buf` in the device heap of
        // `stream`'s context (checked above); the slice is leaked, never freed by cudarc,
        // and borrows `buf`, so the allocation cannot be freed while it lives.
        let slice = unsafe { stream.upgrade_device_ptr::<T>(ptr, buf.len()) };
        Ok(SymCudaSlice {
            slice: ManuallyDrop::new(slice),
            _buffer: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, WorldConfig, run_in_process};

    #[test]
    fn the_mock_has_no_device_memory() {
        let msgs = run_in_process(2, &WorldConfig::default(), |w| {
            let buf = w.calloc::<u32>(16)?;
            let err = w.device_ptr(buf.all()).unwrap_err();
            assert!(matches!(err, Error::BadArgument { .. }), "{err:?}");
            assert!(w.cuda_ordinal().is_err());
            w.free(buf)?;
            Ok(err.to_string())
        })
        .unwrap();
        for m in msgs {
            assert!(m.contains("mock transport"), "{m}");
            assert!(m.contains("host memory"), "{m}");
            assert!(m.contains("NIIN_TRANSPORT=nccl"), "{m}");
        }
    }
}
