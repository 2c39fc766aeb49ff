//! Host-initiated RMA (`ncclPutSignal`, `ncclSignal`, `ncclWaitSignal`, NCCL 2.29.2+),
//! stream-ordered.
//!
//! Signals are NCCL-managed counters, not user memory: `ncclWaitSignal` waits for a number
//! of arrivals from a peer, and a signal implies that its data and every earlier put or
//! signal to that peer (same context) have landed. In 2.29.2–2.30.7 the signal index, the
//! context and the flags must be 0 — these wrappers always pass 0 — and the source buffer
//! of a put must lie in a window registered with `NCCL_WIN_COLL_SYMMETRIC`. Whether a
//! communicator supports host RMA at all is `CommProperties::host_rma_support`.

use std::os::raw::c_void;

use super::comm::Comm;
use super::error::{NcclError, Result};
use super::result;
use super::sys;
use super::table::CudaStream;
use super::window::Window;

/// One entry of [`Comm::wait_signal`]: wait for `count` signals from `peer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitSignal {
    /// The rank the signals come from.
    pub peer: i32,
    /// How many signal operations to wait for (`opCnt`).
    pub count: i32,
}

/// The size in bytes of one element of `datatype` (`None` for values outside `nccl.h`'s
/// list).
pub fn datatype_size(datatype: sys::ncclDataType_t) -> Option<usize> {
    use sys::ncclDataType_t as T;
    Some(match datatype {
        T::ncclInt8 | T::ncclUint8 | T::ncclFloat8e4m3 | T::ncclFloat8e5m2 => 1,
        T::ncclFloat16 | T::ncclBfloat16 => 2,
        T::ncclInt32 | T::ncclUint32 | T::ncclFloat32 => 4,
        T::ncclInt64 | T::ncclUint64 | T::ncclFloat64 => 8,
        _ => return None,
    })
}

impl Comm {
    fn check_peer(&self, peer: i32) -> Result<()> {
        if peer < 0 || peer >= self.n_ranks() {
            return Err(NcclError::InvalidArgument {
                what: format!("peer {peer} of a {}-rank communicator", self.n_ranks()),
            });
        }
        Ok(())
    }

    /// Puts `count` elements of `datatype` from the local device buffer `local` into
    /// `peer`'s part of `window` at byte `offset`, then signals `peer` (`ncclPutSignal`
    /// with signal index 0, context 0, flags 0), enqueued on `stream`.
    ///
    /// # Safety
    /// `local` is device memory of `count` elements valid until the operation completes on
    /// `stream` (with NCCL 2.29.2–2.30.7, inside a window registered with
    /// `NCCL_WIN_COLL_SYMMETRIC`); `stream` is a valid stream of the communicator's device;
    /// `peer` registered `window` with at least `offset` + the payload bytes (checked
    /// against this rank's registration, which symmetric use makes the same).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal(
        &self,
        local: *const c_void,
        count: usize,
        datatype: sys::ncclDataType_t,
        peer: i32,
        window: &Window,
        offset: usize,
        stream: CudaStream,
    ) -> Result<()> {
        self.check_peer(peer)?;
        if !window.comm().same_as(self) {
            return Err(NcclError::InvalidArgument {
                what: "the window belongs to another communicator".to_owned(),
            });
        }
        let Some(elem) = datatype_size(datatype) else {
            return Err(NcclError::InvalidArgument {
                what: format!("unknown ncclDataType_t {}", datatype.0),
            });
        };
        let end = count
            .checked_mul(elem)
            .and_then(|bytes| bytes.checked_add(offset));
        if end.is_none_or(|end| end > window.size()) {
            return Err(NcclError::InvalidArgument {
                what: format!(
                    "{count} elements of {elem} bytes at offset {offset:#x} do not fit in the \
                     {}-byte window",
                    window.size()
                ),
            });
        }
        let _guard = self.lock();
        // SAFETY: forwarded from the caller; the communicator and the window are live.
        unsafe {
            result::put_signal(
                self.nccl(),
                local,
                count,
                datatype,
                peer,
                window.raw(),
                offset,
                0,
                0,
                0,
                self.raw(),
                stream,
            )
        }?;
        self.settle()
    }

    /// Signals `peer` without data (`ncclSignal` with signal index 0, context 0, flags 0),
    /// enqueued on `stream`.
    ///
    /// # Safety
    /// `stream` is a valid stream of the communicator's device.
    pub unsafe fn signal(&self, peer: i32, stream: CudaStream) -> Result<()> {
        self.check_peer(peer)?;
        let _guard = self.lock();
        // SAFETY: forwarded from the caller; the communicator is live.
        unsafe { result::signal(self.nccl(), peer, 0, 0, 0, self.raw(), stream) }?;
        self.settle()
    }

    /// Makes `stream` wait until each `waits[i].peer` has signalled `waits[i].count` times
    /// (`ncclWaitSignal`, signal index 0, context 0).
    ///
    /// # Safety
    /// `stream` is a valid stream of the communicator's device.
    pub unsafe fn wait_signal(&self, waits: &[WaitSignal], stream: CudaStream) -> Result<()> {
        let mut descs = Vec::with_capacity(waits.len());
        for w in waits {
            self.check_peer(w.peer)?;
            if w.count < 0 {
                return Err(NcclError::InvalidArgument {
                    what: format!("wait for {} signals from peer {}", w.count, w.peer),
                });
            }
            descs.push(sys::ncclWaitSignalDesc_t {
                opCnt: w.count,
                peer: w.peer,
                sigIdx: 0,
                ctx: 0,
            });
        }
        let _guard = self.lock();
        // SAFETY: forwarded from the caller; the communicator is live.
        unsafe { result::wait_signal(self.nccl(), &mut descs, self.raw(), stream) }?;
        self.settle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_sizes() {
        use sys::ncclDataType_t as T;
        assert_eq!(datatype_size(T::ncclChar), Some(1));
        assert_eq!(datatype_size(T::ncclHalf), Some(2));
        assert_eq!(datatype_size(T::ncclFloat), Some(4));
        assert_eq!(datatype_size(T::ncclUint64), Some(8));
        assert_eq!(datatype_size(T::ncclBfloat16), Some(2));
        assert_eq!(datatype_size(T::ncclNumTypes), None);
    }

    #[test]
    fn wait_descriptor_layout() {
        assert_eq!(std::mem::size_of::<sys::ncclWaitSignalDesc_t>(), 16);
    }
}
