//! NCCL version numbers and what a loaded library can do.

use std::cmp::Ordering;
use std::fmt;

/// An NCCL version, decoded from the integer that `ncclGetVersion` returns (the library's
/// `NCCL_VERSION_CODE`).
///
/// Two encodings exist (`NCCL_VERSION(X,Y,Z)` in `nccl.h`): up to 2.8,
/// `code = major*1000 + minor*100 + patch`; from 2.9 on, `code = major*10000 + minor*100 +
/// patch`. Every code of the second kind is ≥ 20900 and every code of the first kind is
/// below 10000, so [`NcclVersion::from_code`] tells them apart by size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NcclVersion {
    /// The integer as NCCL reports it (22803 for 2.28.3, 2708 for 2.7.8).
    pub code: u32,
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch level.
    pub patch: u32,
}

impl NcclVersion {
    /// The version `major.minor.patch`, with `code` encoded as NCCL's `NCCL_VERSION` macro
    /// does.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        let code = if major <= 2 && minor <= 8 {
            major * 1000 + minor * 100 + patch
        } else {
            major * 10000 + minor * 100 + patch
        };
        Self {
            code,
            major,
            minor,
            patch,
        }
    }

    /// Decodes an `ncclGetVersion` integer (negative values decode as 0.0.0).
    pub const fn from_code(code: i32) -> Self {
        let code = if code < 0 { 0 } else { code as u32 };
        if code >= 10000 {
            Self {
                code,
                major: code / 10000,
                minor: (code % 10000) / 100,
                patch: code % 100,
            }
        } else {
            Self {
                code,
                major: code / 1000,
                minor: (code % 1000) / 100,
                patch: code % 100,
            }
        }
    }

    /// The version of the headers `sys` was generated from (`NCCL_VERSION_CODE` there).
    pub const fn headers() -> Self {
        Self::from_code(super::sys::NCCL_VERSION_CODE as i32)
    }

    /// `self >= other`, usable in constants.
    pub const fn at_least(self, other: NcclVersion) -> bool {
        if self.major != other.major {
            return self.major > other.major;
        }
        if self.minor != other.minor {
            return self.minor > other.minor;
        }
        self.patch >= other.patch
    }
}

impl PartialOrd for NcclVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NcclVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch))
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The oldest NCCL niin-rs loads: the device API (`ncclDevCommCreate`, LSA pointers in
/// kernels) starts with 2.28.
pub const MIN_VERSION: NcclVersion = NcclVersion::new(2, 28, 0);
/// Host RMA (`ncclPutSignal`, `ncclSignal`, `ncclWaitSignal`) appears in 2.29.2; the
/// host-side window queries (`ncclGetPeerDevicePointer`, ...) and `ncclCommQueryProperties`
/// too, and `ncclCommWindowRegister` starts rejecting a NULL buffer or size 0.
pub const HOST_RMA_VERSION: NcclVersion = NcclVersion::new(2, 29, 2);
/// `NCCL_WIN_STRICT_ORDERING` is understood from 2.29.7 on.
pub const STRICT_ORDERING_VERSION: NcclVersion = NcclVersion::new(2, 29, 7);
/// Several ranks on one GPU (`NCCL_MULTI_RANK_GPU_ENABLE=1`, experimental) from 2.30.3.
pub const MULTI_RANK_GPU_VERSION: NcclVersion = NcclVersion::new(2, 30, 3);

/// What a loaded NCCL can do, decided from its version **and** from which symbols it
/// exports (a library may be built without a feature, and a feature is only usable through
/// the symbols it needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// The device API: NCCL ≥ 2.28 that exports `ncclDevCommCreate`.
    pub device_api: bool,
    /// `ncclCommQueryProperties` (2.29.2+).
    pub comm_properties: bool,
    /// The host learns peers' window addresses through `ncclGetPeerDevicePointer` (2.29.2+).
    /// Without it (2.28) the host must learn them another way, for example from a kernel
    /// calling the device-side `ncclGetPeerPointer`.
    pub host_peer_pointers: bool,
    /// Host-initiated RMA: NCCL ≥ 2.29 exporting `ncclPutSignal`, `ncclSignal` and
    /// `ncclWaitSignal`. Whether a given communicator supports it is
    /// `CommProperties::host_rma_support`.
    pub host_rma: bool,
    /// Several ranks on one GPU (2.30.3+, with `NCCL_MULTI_RANK_GPU_ENABLE=1`).
    pub multi_rank_gpu: bool,
    /// `NCCL_WIN_STRICT_ORDERING` can be passed to `ncclCommWindowRegister` (2.29.7+).
    pub strict_ordering_window_flag: bool,
}

impl Capabilities {
    /// The capabilities of a library of `version` whose exported symbols are those for
    /// which `has(name)` is true (`name` is the C name, such as `"ncclPutSignal"`).
    pub fn from_parts(version: NcclVersion, has: impl Fn(&str) -> bool) -> Self {
        Self {
            device_api: version >= MIN_VERSION && has("ncclDevCommCreate"),
            comm_properties: has("ncclCommQueryProperties"),
            host_peer_pointers: has("ncclGetPeerDevicePointer"),
            host_rma: version >= NcclVersion::new(2, 29, 0)
                && has("ncclPutSignal")
                && has("ncclSignal")
                && has("ncclWaitSignal"),
            multi_rank_gpu: version >= MULTI_RANK_GPU_VERSION,
            strict_ordering_window_flag: version >= STRICT_ORDERING_VERSION,
        }
    }

    /// Each capability with its name, in declaration order (for printing).
    pub fn list(&self) -> [(&'static str, bool); 6] {
        [
            ("device_api", self.device_api),
            ("comm_properties", self.comm_properties),
            ("host_peer_pointers", self.host_peer_pointers),
            ("host_rma", self.host_rma),
            ("multi_rank_gpu", self.multi_rank_gpu),
            (
                "strict_ordering_window_flag",
                self.strict_ordering_window_flag,
            ),
        ]
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, on) in self.list() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{name}={}", if on { "yes" } else { "no" })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_new_style_codes() {
        let v = NcclVersion::from_code(22803);
        assert_eq!((v.major, v.minor, v.patch, v.code), (2, 28, 3, 22803));
        assert_eq!(v.to_string(), "2.28.3");
        let v = NcclVersion::from_code(23102);
        assert_eq!((v.major, v.minor, v.patch), (2, 31, 2));
        assert_eq!(v.to_string(), "2.31.2");
        assert_eq!(NcclVersion::from_code(20903).to_string(), "2.9.3");
    }

    #[test]
    fn decodes_old_style_codes() {
        let v = NcclVersion::from_code(2708);
        assert_eq!((v.major, v.minor, v.patch, v.code), (2, 7, 8, 2708));
        assert_eq!(NcclVersion::from_code(2804).to_string(), "2.8.4");
        assert_eq!(NcclVersion::from_code(-1).to_string(), "0.0.0");
    }

    #[test]
    fn encodes_like_the_nccl_version_macro() {
        assert_eq!(NcclVersion::new(2, 28, 3).code, 22803);
        assert_eq!(NcclVersion::new(2, 7, 8).code, 2708);
        assert_eq!(NcclVersion::new(2, 9, 6).code, 20906);
        assert_eq!(NcclVersion::new(2, 31, 2), NcclVersion::from_code(23102));
    }

    #[test]
    fn orders_across_encodings() {
        assert!(NcclVersion::from_code(2708) < NcclVersion::from_code(20906));
        assert!(NcclVersion::new(2, 29, 7) > NcclVersion::new(2, 29, 2));
        assert!(NcclVersion::new(2, 30, 3).at_least(NcclVersion::new(2, 29, 7)));
        assert!(!NcclVersion::new(2, 28, 9).at_least(MIN_VERSION.max(HOST_RMA_VERSION)));
    }

    #[test]
    fn headers_version_is_the_generated_one() {
        assert_eq!(NcclVersion::headers(), NcclVersion::new(2, 31, 2));
    }

    /// The host symbols each version exports, as read from the real libraries (2.28.3,
    /// 2.28.9, 2.29.2, 2.29.7, 2.30.3 wheels and the 2.31.2 bundle, see `table.rs`).
    fn symbols_of(v: NcclVersion) -> Vec<&'static str> {
        let mut s = vec![
            "ncclDevCommCreate",
            "ncclDevCommDestroy",
            "ncclCommWindowRegister",
        ];
        if v >= HOST_RMA_VERSION {
            s.extend([
                "ncclCommQueryProperties",
                "ncclGetPeerDevicePointer",
                "ncclGetLsaDevicePointer",
                "ncclWinGetUserPtr",
                "ncclPutSignal",
                "ncclSignal",
                "ncclWaitSignal",
            ]);
        }
        s
    }

    fn caps(major: u32, minor: u32, patch: u32) -> Capabilities {
        let v = NcclVersion::new(major, minor, patch);
        let syms = symbols_of(v);
        Capabilities::from_parts(v, |name| syms.contains(&name))
    }

    #[test]
    fn capability_table() {
        let no = false;
        let yes = true;
        // (version, device_api, comm_properties, host_peer_pointers, host_rma,
        //  multi_rank_gpu, strict_ordering_window_flag)
        let table = [
            ((2, 28, 3), [yes, no, no, no, no, no]),
            ((2, 28, 9), [yes, no, no, no, no, no]),
            ((2, 29, 2), [yes, yes, yes, yes, no, no]),
            ((2, 29, 7), [yes, yes, yes, yes, no, yes]),
            ((2, 30, 3), [yes, yes, yes, yes, yes, yes]),
            ((2, 31, 2), [yes, yes, yes, yes, yes, yes]),
        ];
        for ((ma, mi, pa), want) in table {
            let got = caps(ma, mi, pa);
            let got = got.list().map(|(_, on)| on);
            assert_eq!(got, want, "capabilities of {ma}.{mi}.{pa}");
        }
    }

    #[test]
    fn capabilities_need_the_symbols_too() {
        let v = NcclVersion::new(2, 31, 2);
        let none = Capabilities::from_parts(v, |_| false);
        assert!(!none.device_api && !none.comm_properties && !none.host_peer_pointers);
        assert!(!none.host_rma);
        // Version-only capabilities stay.
        assert!(none.multi_rank_gpu && none.strict_ordering_window_flag);
        // Host RMA needs all three functions.
        let partial = Capabilities::from_parts(v, |n| n == "ncclPutSignal" || n == "ncclSignal");
        assert!(!partial.host_rma);
        // A pre-2.28 library never has the device API, whatever it exports.
        let old = Capabilities::from_parts(NcclVersion::new(2, 27, 7), |_| true);
        assert!(!old.device_api && !old.host_rma);
    }

    #[test]
    fn displays_capabilities() {
        let c = caps(2, 28, 9);
        assert_eq!(
            c.to_string(),
            "device_api=yes comm_properties=no host_peer_pointers=no host_rma=no \
             multi_rank_gpu=no strict_ordering_window_flag=no"
        );
    }
}
