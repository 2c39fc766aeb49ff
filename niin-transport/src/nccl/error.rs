//! Errors of the NCCL loader and its wrappers.

use std::fmt::Write as _;

use super::version::NcclVersion;

/// What went wrong while loading NCCL or calling it. Every variant carries the values that
/// explain it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NcclError {
    /// No usable libnccl.so.2 was found. `tried` lists every place looked at and why it
    /// was not used, in search order.
    #[error(
        "no usable NCCL found (niin-rs needs libnccl.so.2, NCCL >= 2.28; set \
         NIIN_NCCL_LIBRARY to its path); tried: {}",
        list_tried(.tried)
    )]
    NotFound {
        /// `(place, reason)` for each candidate.
        tried: Vec<(String, String)>,
    },
    /// The library found first (and which must be used) is older than niin-rs supports.
    #[error("NCCL {version} at {path} is too old: niin-rs needs NCCL >= {need}")]
    TooOld {
        /// The library's file.
        path: String,
        /// Its version.
        version: NcclVersion,
        /// The oldest version niin-rs accepts.
        need: NcclVersion,
    },
    /// The loaded library does not export a function that a feature in use needs.
    #[error("NCCL {version} at {path} has no {symbol} (NCCL >= {since}), needed for {feature}")]
    MissingSymbol {
        /// The library's file.
        path: String,
        /// Its version.
        version: NcclVersion,
        /// The C name of the missing function.
        symbol: &'static str,
        /// The first NCCL version that has it.
        since: &'static str,
        /// The feature that needs it.
        feature: &'static str,
    },
    /// An NCCL function returned an error.
    #[error("{func} failed: {name} (ncclResult_t {code}){}", detail_suffix(.detail))]
    Call {
        /// The C function.
        func: &'static str,
        /// Its `ncclResult_t`.
        code: i32,
        /// `ncclGetErrorString(code)`.
        name: String,
        /// `ncclGetLastError(comm)`: NCCL's own message (may be empty, or about an earlier
        /// asynchronous error).
        detail: String,
    },
    /// `ncclCommWindowRegister` returned success without a window: since 2.29.2 that is
    /// how NCCL says the communicator cannot register symmetric memory (no CUDA VMM/P2P
    /// support, `NCCL_WIN_ENABLE=0`, memory not from `ncclMemAlloc`/cuMem, ...).
    #[error(
        "NCCL {version} registered no window for {size} bytes at {ptr:#x} (window flags \
         {flags:#x}): symmetric registration is not supported by this communicator (needs \
         CUDA VMM memory such as ncclMemAlloc's, P2P/NVLink between the ranks, and \
         NCCL_WIN_ENABLE not 0)"
    )]
    WindowNotSymmetric {
        /// The library's version.
        version: NcclVersion,
        /// The buffer's device address.
        ptr: u64,
        /// Its size in bytes.
        size: usize,
        /// The `NCCL_WIN_*` flags passed.
        flags: i32,
    },
    /// An argument rejected before calling NCCL.
    #[error("invalid argument: {what}")]
    InvalidArgument {
        /// What is wrong, with the values.
        what: String,
    },
}

/// `NcclError`'s result.
pub type Result<T, E = NcclError> = std::result::Result<T, E>;

fn list_tried(tried: &[(String, String)]) -> String {
    if tried.is_empty() {
        return "nothing".to_owned();
    }
    let mut s = String::new();
    for (i, (place, why)) in tried.iter().enumerate() {
        if i > 0 {
            s.push_str("; ");
        }
        let _ = write!(s, "{place}: {why}");
    }
    s
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_every_place() {
        let e = NcclError::NotFound {
            tried: vec![
                ("libnccl.so.2 (already loaded)".into(), "not loaded".into()),
                (
                    "/opt/nccl/lib/libnccl.so.2 (NCCL_HOME)".into(),
                    "no such file".into(),
                ),
            ],
        };
        let s = e.to_string();
        assert!(
            s.contains("libnccl.so.2 (already loaded): not loaded"),
            "{s}"
        );
        assert!(
            s.contains("/opt/nccl/lib/libnccl.so.2 (NCCL_HOME): no such file"),
            "{s}"
        );
        assert!(s.contains("NIIN_NCCL_LIBRARY"), "{s}");
    }

    #[test]
    fn too_old_names_path_version_and_need() {
        let e = NcclError::TooOld {
            path: "/usr/lib/libnccl.so.2".into(),
            version: NcclVersion::new(2, 21, 5),
            need: NcclVersion::new(2, 28, 0),
        };
        assert_eq!(
            e.to_string(),
            "NCCL 2.21.5 at /usr/lib/libnccl.so.2 is too old: niin-rs needs NCCL >= 2.28.0"
        );
    }

    #[test]
    fn missing_symbol_names_everything() {
        let e = NcclError::MissingSymbol {
            path: "/x/libnccl.so.2".into(),
            version: NcclVersion::new(2, 28, 9),
            symbol: "ncclGetPeerDevicePointer",
            since: "2.29.2",
            feature: "host-side peer addresses of a window (LSA)",
        };
        let s = e.to_string();
        for part in [
            "2.28.9",
            "/x/libnccl.so.2",
            "ncclGetPeerDevicePointer",
            "2.29.2",
            "LSA",
        ] {
            assert!(s.contains(part), "{s} lacks {part}");
        }
    }

    #[test]
    fn call_error_with_and_without_detail() {
        let mut e = NcclError::Call {
            func: "ncclCommWindowRegister",
            code: 4,
            name: "invalid argument".into(),
            detail: "window size is 0".into(),
        };
        assert_eq!(
            e.to_string(),
            "ncclCommWindowRegister failed: invalid argument (ncclResult_t 4): window size is 0"
        );
        if let NcclError::Call { detail, .. } = &mut e {
            detail.clear();
        }
        assert_eq!(
            e.to_string(),
            "ncclCommWindowRegister failed: invalid argument (ncclResult_t 4)"
        );
    }
}
