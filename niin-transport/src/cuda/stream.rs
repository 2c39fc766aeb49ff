//! Streams (owned or borrowed from the application) and events.

use std::fmt;

use cudarc::driver::sys;

use super::device::Device;
use super::driver::driver;
use super::error::{CudaError, Result, call_error, check};

/// `CU_STREAM_LEGACY`: the legacy default stream, synchronizing with blocking streams.
const STREAM_LEGACY: u64 = 0x1;
/// `CU_STREAM_PER_THREAD`: the calling thread's implicit default stream.
const STREAM_PER_THREAD: u64 = 0x2;

/// A CUDA stream: either owned (created non-blocking by [`Stream::create`]; synchronized
/// and destroyed on drop) or borrowed (a `CUstream` value from the application, for
/// example NVSHMEM's `cudaStream_t` arguments; never destroyed here).
pub struct Stream {
    raw: sys::CUstream,
    /// `Some` for an owned stream: its device, which keeps the context alive.
    owner: Option<Device>,
}

// SAFETY: a `CUstream` is a handle the driver lets any thread use, concurrently too
// (work from several threads is ordered by the driver).
unsafe impl Send for Stream {}
// SAFETY: as above; `&Stream` only passes the handle to the driver.
unsafe impl Sync for Stream {}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &format_args!("{:#x}", self.raw()))
            .field("owned", &self.owner.is_some())
            .finish()
    }
}

impl Stream {
    /// Creates a non-blocking stream (`CU_STREAM_NON_BLOCKING`: no implicit
    /// synchronization with the legacy default stream) in the calling thread's current
    /// context, which must be a primary one ([`Device::current`]).
    pub fn create() -> Result<Stream> {
        let device = Device::current()?.ok_or(CudaError::NoContext)?;
        Stream::create_on(&device)
    }

    /// Creates a non-blocking stream in `device`'s primary context, whatever is current.
    pub fn create_on(device: &Device) -> Result<Stream> {
        let _bound = device.bind()?;
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: the device's context is current; the call writes the new stream.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut raw, flags)
        })?;
        Ok(Stream {
            raw,
            owner: Some(device.clone()),
        })
    }

    /// Borrows the stream whose `CUstream` value is `raw` (0: the legacy default stream).
    ///
    /// # Safety
    ///
    /// `raw` must be 0, `CU_STREAM_LEGACY` (1), `CU_STREAM_PER_THREAD` (2) or a stream of
    /// a context of this process that stays alive while the returned `Stream` is used.
    pub unsafe fn borrow_raw(raw: u64) -> Stream {
        Stream {
            raw: raw as usize as sys::CUstream,
            owner: None,
        }
    }

    /// The legacy default stream of the current context (`CU_STREAM_LEGACY`; handle 0
    /// names it too), borrowed.
    pub fn legacy() -> Stream {
        // SAFETY: the default stream always exists (0 names it in every context).
        unsafe { Stream::borrow_raw(STREAM_LEGACY) }
    }

    /// The calling thread's per-thread default stream (`CU_STREAM_PER_THREAD`), borrowed.
    pub fn per_thread() -> Stream {
        // SAFETY: the per-thread default stream always exists.
        unsafe { Stream::borrow_raw(STREAM_PER_THREAD) }
    }

    /// The `CUstream` value (for an NVSHMEM `cudaStream_t`).
    pub fn raw(&self) -> u64 {
        self.raw as usize as u64
    }

    pub(crate) fn handle(&self) -> sys::CUstream {
        self.raw
    }

    /// Whether this stream was created here (and is destroyed on drop).
    pub fn is_owned(&self) -> bool {
        self.owner.is_some()
    }

    /// Waits until all work enqueued on the stream has finished (`cuStreamSynchronize`);
    /// an error of that work (an illegal address in a kernel...) is returned here.
    pub fn synchronize(&self) -> Result<()> {
        driver()?;
        // SAFETY: the handle is valid (owned, or vouched for by `borrow_raw`'s caller).
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.raw)
        })
    }

    /// Whether the stream is being captured into a CUDA graph (`cuStreamIsCapturing`:
    /// active, or invalidated by an earlier error of the capture).
    pub fn is_capturing(&self) -> Result<bool> {
        driver()?;
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: the handle is valid, as for `synchronize`; `status` is written.
        check("cuStreamIsCapturing", unsafe {
            sys::cuStreamIsCapturing(self.raw, &mut status)
        })?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Whether all work enqueued on the stream has finished, without waiting
    /// (`cuStreamQuery`).
    pub fn query_done(&self) -> Result<bool> {
        driver()?;
        // SAFETY: the handle is valid, as for `synchronize`.
        let status = unsafe { sys::cuStreamQuery(self.raw) };
        match status {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(call_error("cuStreamQuery", other)),
        }
    }

    /// Makes later work on this stream wait for `event`'s recorded work
    /// (`cuStreamWaitEvent`); the host does not wait.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        driver()?;
        // SAFETY: both handles are valid; flags 0 is the only defined value.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(self.raw, event.raw, 0)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let Some(device) = &self.owner else {
            return;
        };
        let Ok(_bound) = device.bind() else {
            return;
        };
        // SAFETY: an owned stream, created in `device`'s context (current now); work
        // still enqueued finishes first; nothing uses the handle after this. Errors of
        // the stream's work or of a driver shutting down cannot be reported from drop.
        let _ = unsafe { sys::cuStreamSynchronize(self.raw) };
        // SAFETY: as above; the stream is destroyed exactly once.
        let _ = unsafe { sys::cuStreamDestroy_v2(self.raw) };
    }
}

/// A CUDA event (`cuEventCreate`), destroyed on drop: for cross-stream ordering
/// ([`Stream::wait_event`]) and timing ([`Event::elapsed_ms`]).
pub struct Event {
    raw: sys::CUevent,
    owner: Device,
}

// SAFETY: a `CUevent` is a handle the driver lets any thread use.
unsafe impl Send for Event {}
// SAFETY: as above; `&Event` only passes the handle to the driver.
unsafe impl Sync for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("raw", &self.raw)
            .field("device", &self.owner.ordinal())
            .finish()
    }
}

impl Event {
    /// Creates an event with timing in the calling thread's current (primary) context.
    pub fn create() -> Result<Event> {
        let device = Device::current()?.ok_or(CudaError::NoContext)?;
        Event::create_on(&device, true)
    }

    /// Creates an event in `device`'s primary context; `timing: false` makes a cheaper
    /// event for ordering only (`CU_EVENT_DISABLE_TIMING`).
    pub fn create_on(device: &Device, timing: bool) -> Result<Event> {
        let _bound = device.bind()?;
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: the device's context is current; the call writes the new event.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags as u32)
        })?;
        Ok(Event {
            raw,
            owner: device.clone(),
        })
    }

    /// Records the event at the current end of `stream` (`cuEventRecord`).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        driver()?;
        // SAFETY: both handles are valid.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.raw, stream.handle())
        })
    }

    /// Waits until the recorded work has finished (`cuEventSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        driver()?;
        // SAFETY: the event is valid.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.raw)
        })
    }

    /// Whether the recorded work has finished, without waiting (`cuEventQuery`).
    pub fn query_done(&self) -> Result<bool> {
        driver()?;
        // SAFETY: the event is valid.
        let status = unsafe { sys::cuEventQuery(self.raw) };
        match status {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(call_error("cuEventQuery", other)),
        }
    }

    /// Milliseconds between two recorded, completed events with timing
    /// (`cuEventElapsedTime`, about 0.5 µs resolution).
    pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f32> {
        driver()?;
        let mut ms = 0.0f32;
        // SAFETY: both events are valid; the call writes one float.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, start.raw, end.raw)
        })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let Ok(_bound) = self.owner.bind() else {
            return;
        };
        // SAFETY: the event was created in the owner's context and is destroyed once
        // (the driver defers the release if recorded work is pending).
        let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_streams_keep_their_handle_and_are_not_owned() {
        // SAFETY: the handle is only stored and read back, never used with the driver.
        let s = unsafe { Stream::borrow_raw(0xdead_beef) };
        assert_eq!(s.raw(), 0xdead_beef);
        assert!(!s.is_owned());
        assert_eq!(Stream::legacy().raw(), 1);
        assert_eq!(Stream::per_thread().raw(), 2);
        drop(s); // nothing to destroy
    }

    #[test]
    fn streams_without_a_driver_fail_cleanly_and_work_with_one() {
        // SAFETY: only tries to load the driver library.
        if !unsafe { sys::is_culib_present() } {
            assert_eq!(Stream::create().unwrap_err(), CudaError::NoDriver);
            assert_eq!(Stream::legacy().synchronize(), Err(CudaError::NoDriver));
            assert_eq!(Stream::legacy().query_done(), Err(CudaError::NoDriver));
            assert_eq!(Event::create().unwrap_err(), CudaError::NoDriver);
            return;
        }
        let d = Device::open(0).unwrap();
        d.make_current().unwrap();
        let s = Stream::create().unwrap();
        assert!(s.is_owned() && s.raw() != 0);
        let (a, b) = (Event::create().unwrap(), Event::create().unwrap());
        a.record(&s).unwrap();
        b.record(&s).unwrap();
        s.synchronize().unwrap();
        assert!(s.query_done().unwrap());
        b.synchronize().unwrap();
        assert!(b.query_done().unwrap());
        assert!(Event::elapsed_ms(&a, &b).unwrap() >= 0.0);
        let other = Stream::create_on(&d).unwrap();
        other.wait_event(&b).unwrap();
        other.synchronize().unwrap();
    }
}
