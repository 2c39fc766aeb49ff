//! Fuzzing of the unique-ID decoding ([`Uid::decode`], the 124 `internal` bytes of
//! `nvshmemx_uniqueid_t`) on stable Rust: proptest with a fixed seed and case count.
//!
//! - Any 124 bytes (random, and valid IDs with bytes changed) decode to an ID or to the
//!   error the layout of `uid.rs` prescribes for them, never a panic; an error is one line.
//! - Valid IDs round-trip: `decode(encode(id)) == id`, for mock IDs and for every
//!   `ncclUniqueId` whose bytes 120..128 are zero (the others are refused by `from_nccl`).
//! - A decoded mock ID names a valid job id.

use nvshmem_host::abi::UNIQUEID_PADDING;
use nvshmem_host::uid::{MOCK_ID_BYTES, NCCL_UNIQUE_ID_BYTES, PAYLOAD_BYTES, Uid, UidError};
use proptest::prelude::*;

#[path = "../../niin-api/tests/support/fuzz.rs"]
mod fuzz_support;
use fuzz_support::fuzz;

/// This file's inputs (support/fuzz.rs).
const SEED: u64 = 0x006e_6969_6e75_6964;

/// 124 bytes: random, all zero but a few, or a valid ID with some bytes changed.
fn internal() -> impl Strategy<Value = [u8; UNIQUEID_PADDING]> {
    let random = prop::collection::vec(any::<u8>(), UNIQUEID_PADDING);
    let valid = prop_oneof![
        any::<[u8; MOCK_ID_BYTES]>().prop_map(|b| Uid::Mock(b).encode().to_vec()),
        prop::collection::vec(any::<u8>(), PAYLOAD_BYTES).prop_map(|p| {
            let mut id = [0u8; NCCL_UNIQUE_ID_BYTES];
            id[..PAYLOAD_BYTES].copy_from_slice(&p);
            Uid::from_nccl(&id).unwrap().encode().to_vec()
        }),
        Just(vec![0u8; UNIQUEID_PADDING]),
    ];
    let edits = prop::collection::vec((0..UNIQUEID_PADDING, any::<u8>()), 0..4);
    prop_oneof![
        1 => random,
        3 => (valid, edits).prop_map(|(mut bytes, edits)| {
            for (at, b) in edits {
                bytes[at] = b;
            }
            bytes
        }),
    ]
    .prop_map(|v| v.try_into().unwrap())
}

/// What `uid.rs`'s layout says these bytes are.
fn expected(b: &[u8; UNIQUEID_PADDING]) -> Result<(), UidError> {
    if b.iter().all(|&x| x == 0) {
        return Err(UidError::Empty);
    }
    if &b[..2] != b"NI" {
        return Err(UidError::Foreign([b[0], b[1]]));
    }
    if b[3] != 1 {
        return Err(UidError::Format(b[3]));
    }
    match b[2] {
        1 if b[4 + MOCK_ID_BYTES..].iter().any(|&x| x != 0) => Err(UidError::Corrupt("mock tail")),
        1 | 2 => Ok(()),
        k => Err(UidError::Kind(k)),
    }
}

#[test]
fn any_bytes_decode_as_the_layout_says() {
    fuzz(SEED, 5000, internal(), |bytes| {
        let decoded = Uid::decode(&bytes);
        match (&decoded, expected(&bytes)) {
            (Ok(uid), Ok(())) => {
                prop_assert_eq!(
                    &uid.encode(),
                    &bytes,
                    "decode then encode gives the bytes back"
                );
                if let Some(job) = uid.mock_job_id() {
                    prop_assert!(niin_api::launch::validate_job_id(&job).is_ok(), "{job}");
                    prop_assert_eq!(uid.transport_name(), "mock");
                } else {
                    prop_assert_eq!(uid.transport_name(), "nccl");
                }
            }
            (Err(UidError::Corrupt(_)), Err(UidError::Corrupt(_))) => {}
            (Err(got), Err(want)) => prop_assert_eq!(got, &want),
            (got, want) => {
                return Err(TestCaseError::fail(format!(
                    "{bytes:?}: got {got:?}, want {want:?}"
                )));
            }
        }
        if let Err(e) = decoded {
            let msg = e.to_string();
            prop_assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
        }
        Ok(())
    });
}

#[test]
fn valid_ids_round_trip() {
    let mock = any::<[u8; MOCK_ID_BYTES]>().prop_map(Uid::Mock);
    fuzz(SEED, 2000, mock, |uid| {
        prop_assert_eq!(Uid::decode(&uid.encode()), Ok(uid));
        Ok(())
    });
    let nccl = (
        prop::collection::vec(any::<u8>(), NCCL_UNIQUE_ID_BYTES),
        any::<bool>(),
    );
    fuzz(SEED, 2000, nccl, |(bytes, clear_tail)| {
        let mut id: [u8; NCCL_UNIQUE_ID_BYTES] = bytes.try_into().unwrap();
        if clear_tail {
            id[PAYLOAD_BYTES..].fill(0);
        }
        match Uid::from_nccl(&id) {
            Ok(uid) => {
                prop_assert!(id[PAYLOAD_BYTES..].iter().all(|&b| b == 0));
                prop_assert_eq!(Uid::decode(&uid.encode()), Ok(uid.clone()));
                prop_assert_eq!(uid, Uid::Nccl(Box::new(id)));
            }
            Err(e) => {
                prop_assert!(id[PAYLOAD_BYTES..].iter().any(|&b| b != 0));
                prop_assert!(matches!(e, UidError::Corrupt(_)));
            }
        }
        Ok(())
    });
}
