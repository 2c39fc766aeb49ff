//! The contents of `nvshmemx_uniqueid_t` (128 bytes: an `int` version, then 124 bytes
//! `internal`) as niin-rs fills them.
//!
//! ```text
//! internal[0..2]    b"NI"        marks an ID made by niin-rs
//! internal[2]       kind         1 = mock transport, 2 = NCCL
//! internal[3]       format       1 (this layout)
//! internal[4..124]  payload      120 bytes, by kind:
//!   mock:  payload[0..16]  16 random bytes (niin-api's `World::new_unique_id`); the
//!          rest zero. niin-api names the mock job "uid-" and their 32 hex digits.
//!   NCCL:  payload[0..120] = ncclUniqueId[0..120]; ncclUniqueId[120..128] must be zero.
//! ```
//!
//! `ncclUniqueId` is 128 bytes, but NCCL fills only its bootstrap handle at the start (a
//! 64-bit magic and a socket address, about 40 bytes) and leaves the rest zero, so 120
//! bytes carry it whole; an ID with non-zero bytes past 120 is refused rather than cut.
//! The 4-byte header costs nothing NCCL uses and lets a PE tell apart, with a clear
//! message, an ID that never arrived (all zero: `NVSHMEMX_UNIQUEID_INITIALIZER`), one of
//! another library, and one made for another transport than this PE's.
//!
//! The `version` field keeps NVSHMEM's meaning (`(1 << 16) + 128`); it is not checked.

use std::fmt::Write as _;

use crate::abi::UNIQUEID_PADDING;

/// Bytes of an `ncclUniqueId`.
pub const NCCL_UNIQUE_ID_BYTES: usize = 128;
/// Bytes of the payload, after the 4-byte header.
pub const PAYLOAD_BYTES: usize = UNIQUEID_PADDING - HEADER_BYTES;
/// Bytes of random job identity in a mock ID.
pub const MOCK_ID_BYTES: usize = 16;

const HEADER_BYTES: usize = 4;
const MAGIC: [u8; 2] = *b"NI";
const FORMAT: u8 = 1;
const KIND_MOCK: u8 = 1;
const KIND_NCCL: u8 = 2;

/// A decoded unique ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uid {
    /// A job of the mock transport, named by 16 random bytes.
    Mock([u8; MOCK_ID_BYTES]),
    /// An NCCL `ncclUniqueId` (its last 8 bytes are zero).
    Nccl(Box<[u8; NCCL_UNIQUE_ID_BYTES]>),
}

/// Why 124 bytes are not a unique ID niin-rs can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UidError {
    /// All zero: the initializer's contents, never filled.
    #[error(
        "the unique ID is empty (all zero, as NVSHMEMX_UNIQUEID_INITIALIZER leaves it): rank 0's \
         nvshmemx_get_uniqueid result did not reach this PE"
    )]
    Empty,
    /// No `NI` mark.
    #[error(
        "the unique ID was not made by niin-rs's nvshmemx_get_uniqueid (it starts with \
         {0:02x?}, not \"NI\"); every PE must use the same libnvshmem_host"
    )]
    Foreign([u8; 2]),
    /// A format this build does not know.
    #[error("the unique ID has format {0}, but this niin-rs reads format {FORMAT}")]
    Format(u8),
    /// A kind this build does not know.
    #[error("the unique ID names transport kind {0}, which this niin-rs does not know")]
    Kind(u8),
    /// Bytes that must be zero are not.
    #[error("the unique ID is corrupt: {0}")]
    Corrupt(&'static str),
}

impl Uid {
    /// Wraps an `ncclUniqueId`; refused if its bytes 120..128 are not zero.
    pub fn from_nccl(id: &[u8; NCCL_UNIQUE_ID_BYTES]) -> Result<Uid, UidError> {
        if id[PAYLOAD_BYTES..].iter().any(|&b| b != 0) {
            return Err(UidError::Corrupt(
                "the ncclUniqueId uses bytes past 120, which nvshmemx_uniqueid_t cannot carry",
            ));
        }
        Ok(Uid::Nccl(Box::new(*id)))
    }

    /// The 124 `internal` bytes of this ID.
    pub fn encode(&self) -> [u8; UNIQUEID_PADDING] {
        let mut out = [0u8; UNIQUEID_PADDING];
        let kind = match self {
            Uid::Mock(bytes) => {
                out[HEADER_BYTES..HEADER_BYTES + MOCK_ID_BYTES].copy_from_slice(bytes);
                KIND_MOCK
            }
            Uid::Nccl(id) => {
                out[HEADER_BYTES..].copy_from_slice(&id[..PAYLOAD_BYTES]);
                KIND_NCCL
            }
        };
        out[..2].copy_from_slice(&MAGIC);
        out[2] = kind;
        out[3] = FORMAT;
        out
    }

    /// Reads the 124 `internal` bytes of an ID.
    pub fn decode(internal: &[u8; UNIQUEID_PADDING]) -> Result<Uid, UidError> {
        if internal.iter().all(|&b| b == 0) {
            return Err(UidError::Empty);
        }
        if internal[..2] != MAGIC {
            return Err(UidError::Foreign([internal[0], internal[1]]));
        }
        if internal[3] != FORMAT {
            return Err(UidError::Format(internal[3]));
        }
        let payload = &internal[HEADER_BYTES..];
        match internal[2] {
            KIND_MOCK => {
                if payload[MOCK_ID_BYTES..].iter().any(|&b| b != 0) {
                    return Err(UidError::Corrupt(
                        "a mock ID has non-zero bytes after its 16 random bytes",
                    ));
                }
                let mut bytes = [0u8; MOCK_ID_BYTES];
                bytes.copy_from_slice(&payload[..MOCK_ID_BYTES]);
                Ok(Uid::Mock(bytes))
            }
            KIND_NCCL => {
                let mut id = [0u8; NCCL_UNIQUE_ID_BYTES];
                id[..PAYLOAD_BYTES].copy_from_slice(payload);
                Ok(Uid::Nccl(Box::new(id)))
            }
            other => Err(UidError::Kind(other)),
        }
    }

    /// The transport this ID was made for, in `NIIN_TRANSPORT`'s words.
    pub fn transport_name(&self) -> &'static str {
        match self {
            Uid::Mock(_) => "mock",
            Uid::Nccl(_) => "nccl",
        }
    }

    /// The mock job id niin-api derives from a mock ID (`uid-` and 32 hex digits), for
    /// cleaning up after a failed job.
    pub fn mock_job_id(&self) -> Option<String> {
        match self {
            Uid::Mock(bytes) => {
                let mut id = String::from("uid-");
                for b in bytes {
                    let _ = write!(id, "{b:02x}");
                }
                Some(id)
            }
            Uid::Nccl(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_ids_round_trip_and_name_a_valid_job() {
        let uid = Uid::Mock(*b"0123456789abcdef");
        let bytes = uid.encode();
        assert_eq!(&bytes[..4], &[b'N', b'I', 1, 1]);
        assert_eq!(Uid::decode(&bytes).unwrap(), uid);
        let job = uid.mock_job_id().unwrap();
        assert_eq!(job.len(), 4 + 32);
        assert!(job.starts_with("uid-30313233"), "{job}");
        assert!(job.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    }

    #[test]
    fn nccl_ids_keep_their_first_120_bytes() {
        let mut id = [0u8; NCCL_UNIQUE_ID_BYTES];
        for (i, b) in id[..40].iter_mut().enumerate() {
            *b = i as u8 + 1;
        }
        let uid = Uid::from_nccl(&id).unwrap();
        assert_eq!(Uid::decode(&uid.encode()).unwrap(), uid);
        assert_eq!(uid.mock_job_id(), None);
        id[125] = 1;
        assert!(matches!(Uid::from_nccl(&id), Err(UidError::Corrupt(_))));
    }

    #[test]
    fn bad_ids_are_told_apart() {
        assert_eq!(Uid::decode(&[0; UNIQUEID_PADDING]), Err(UidError::Empty));
        let mut b = Uid::Mock([7; 16]).encode();
        b[0] = b'X';
        assert!(matches!(Uid::decode(&b), Err(UidError::Foreign(_))));
        let mut b = Uid::Mock([7; 16]).encode();
        b[3] = 9;
        assert_eq!(Uid::decode(&b), Err(UidError::Format(9)));
        let mut b = Uid::Mock([7; 16]).encode();
        b[2] = 5;
        assert_eq!(Uid::decode(&b), Err(UidError::Kind(5)));
        let mut b = Uid::Mock([7; 16]).encode();
        b[100] = 1;
        assert!(matches!(Uid::decode(&b), Err(UidError::Corrupt(_))));
        assert!(UidError::Empty.to_string().contains("did not reach"));
    }
}
