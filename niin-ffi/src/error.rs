//! The error policy of the C ABI: what a failed call returns, and the one `NIIN:` line it
//! writes on stderr.
//!
//! Every exported function runs its body through `status_call` or `value_call`: the
//! body returns `Result<_, FfiError>`, and a panic inside it is caught (nothing unwinds
//! into C). On an error the wrapper writes exactly one line, `NIIN: <function>: <what>`,
//! with a single `write` on stderr, and returns NVSHMEM's value for a failure:
//!
//! | function returns | on error |
//! | --- | --- |
//! | `int` status (`nvshmemx_init_attr`, `nvshmem_barrier`, ...) | [`FfiError::status`]: an `NVSHMEMX_ERROR_*` value |
//! | `int` number (`nvshmem_my_pe`, `nvshmem_team_n_pes`, ...) | `-1` |
//! | pointer (`nvshmem_malloc`, `nvshmem_ptr`, ...) | `NULL` |
//! | `void` | nothing: the `NIIN:` line is the only report |
//!
//! The last report is also kept for Rust callers and tests ([`last_report`],
//! [`report_count`]).

use std::ffi::c_int;
use std::fmt::Display;
use std::io::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use niin_api::Error;
use niin_transport::TransportError;

use crate::abi::{
    NVSHMEMX_ERROR_INTERNAL, NVSHMEMX_ERROR_INVALID_VALUE, NVSHMEMX_ERROR_NOT_SUPPORTED,
    NVSHMEMX_ERROR_OUT_OF_MEMORY, NVSHMEMX_ERROR_SYMMETRY,
};

/// Why a call of the C ABI failed.
#[derive(Debug, thiserror::Error)]
pub enum FfiError {
    /// A call that needs the library before `nvshmem_init`.
    #[error("NVSHMEM is not initialized: call nvshmem_init or nvshmemx_init_attr first")]
    NotInitialized,
    /// A call while another thread of this process runs `nvshmem_init`.
    #[error("NVSHMEM is being initialized by another thread of this process")]
    Initializing,
    /// A call after the last `nvshmem_finalize`.
    #[error("NVSHMEM is finalized: nvshmem_finalize ended it (nvshmem_init may start it again)")]
    Finalized,
    /// A pointer argument that must not be NULL is.
    #[error("{0} is NULL")]
    Null(&'static str),
    /// An argument out of its domain.
    #[error("{0}")]
    BadArgument(String),
    /// A feature this build or transport does not have.
    #[error("{0}")]
    NotSupported(String),
    /// The operating system refused something the library needs.
    #[error("{0}")]
    Os(String),
    /// niin-api refused or failed.
    #[error("{0}")]
    Api(#[from] Error),
    /// A bug: the body panicked (the panic was caught at the C boundary).
    #[error("internal error: {0} (a bug in niin-rs; please report it)")]
    Panic(String),
}

impl FfiError {
    /// The `NVSHMEMX_ERROR_*` value an `int`-status function returns for this error:
    /// wrong use and bad arguments are `INVALID_VALUE`, heap exhaustion `OUT_OF_MEMORY`,
    /// what this build cannot do `NOT_SUPPORTED`, asymmetric allocation `SYMMETRY`, and
    /// transport failures and bugs `INTERNAL`.
    pub fn status(&self) -> c_int {
        match self {
            FfiError::NotInitialized
            | FfiError::Initializing
            | FfiError::Finalized
            | FfiError::Null(_)
            | FfiError::BadArgument(_) => NVSHMEMX_ERROR_INVALID_VALUE,
            FfiError::NotSupported(_) => NVSHMEMX_ERROR_NOT_SUPPORTED,
            FfiError::Api(e) => api_status(e),
            FfiError::Os(_) | FfiError::Panic(_) => NVSHMEMX_ERROR_INTERNAL,
        }
    }
}

fn api_status(e: &Error) -> c_int {
    use niin_heap::HeapError;
    match e {
        Error::Heap {
            source: HeapError::OutOfMemory { .. } | HeapError::OutOfMemoryAligned { .. },
            ..
        } => NVSHMEMX_ERROR_OUT_OF_MEMORY,
        Error::Asymmetric { .. } | Error::CollectiveMismatch { .. } | Error::OutOfStep { .. } => {
            NVSHMEMX_ERROR_SYMMETRY
        }
        Error::TransportUnavailable(_) => NVSHMEMX_ERROR_NOT_SUPPORTED,
        Error::Transport { source, .. } => transport_status(source),
        Error::Panicked { .. } => NVSHMEMX_ERROR_INTERNAL,
        _ => NVSHMEMX_ERROR_INVALID_VALUE,
    }
}

fn transport_status(e: &TransportError) -> c_int {
    match e {
        TransportError::PeOutOfRange { .. }
        | TransportError::OutOfHeap { .. }
        | TransportError::Misaligned { .. }
        | TransportError::BadWidth { .. }
        | TransportError::BadArgument { .. }
        | TransportError::BadComparison { .. }
        | TransportError::BadSignalOp { .. }
        | TransportError::UnknownStream(_) => NVSHMEMX_ERROR_INVALID_VALUE,
        TransportError::NotImplemented { .. } => NVSHMEMX_ERROR_NOT_SUPPORTED,
        _ => NVSHMEMX_ERROR_INTERNAL,
    }
}

/// Result of a call's body.
pub(crate) type FfiResult<T> = Result<T, FfiError>;

static REPORTS: AtomicU64 = AtomicU64::new(0);
static LAST_REPORT: Mutex<Option<String>> = Mutex::new(None);

/// Writes `NIIN: <function>: <what>` as one line on stderr (newlines inside `what` become
/// `; `) and keeps it as the [`last_report`].
pub(crate) fn report(function: &str, what: impl Display) {
    let what = what.to_string().trim_end().replace('\n', "; ");
    let line = format!("NIIN: {function}: {what}\n");
    // One write of the whole line, so lines of several threads never interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    *LAST_REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(line.trim_end().to_owned());
    REPORTS.fetch_add(1, Ordering::AcqRel);
}

/// The last `NIIN:` line the library wrote (without the newline), if any.
pub fn last_report() -> Option<String> {
    LAST_REPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// How many `NIIN:` lines the library has written in this process.
pub fn report_count() -> u64 {
    REPORTS.load(Ordering::Acquire)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Runs `body` with panics caught; on an error, reports it and hands it back.
pub(crate) fn run<T>(function: &str, body: impl FnOnce() -> FfiResult<T>) -> FfiResult<T> {
    let result = panic::catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(FfiError::Panic(panic_message(payload.as_ref()))));
    if let Err(e) = &result {
        report(function, e);
    }
    result
}

/// The wrapper of functions that return an `int` status: 0, or [`FfiError::status`].
pub(crate) fn status_call(function: &str, body: impl FnOnce() -> FfiResult<()>) -> c_int {
    match run(function, body) {
        Ok(()) => 0,
        Err(e) => e.status(),
    }
}

/// The wrapper of functions that return a value: the body's, or `on_error` (`-1`, NULL,
/// `()` for `void` functions) after the report.
pub(crate) fn value_call<T>(function: &str, on_error: T, body: impl FnOnce() -> FfiResult<T>) -> T {
    run(function, body).unwrap_or(on_error)
}

/// Defines `void` C entry points, each forwarding its arguments to an internal
/// `unsafe fn(...) -> FfiResult<()>` and reporting errors under its own name (one body
/// for NVSHMEM's blocking and `_nbi` spellings of the same operation). Each entry's doc
/// comment must carry its `# Safety` section: the contract is the inner function's.
macro_rules! void_entries {
    ($(
        $(#[$attr:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $inner:ident;
    )*) => {$(
        $(#[$attr])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            $crate::error::value_call(stringify!($name), (), || {
                // SAFETY: forwarded from this entry's contract, which is `$inner`'s.
                unsafe { $inner($($arg),*) }
            });
        }
    )*};
}
pub(crate) use void_entries;
