//! Errors of the heap ([`HeapError`]) and of `NVSHMEM_SYMMETRIC_SIZE` parsing
//! ([`SizeError`]). Every message carries the values that explain it.

use crate::DEFAULT_ALIGNMENT;
use crate::units::Bytes;

/// Why a [`crate::SymmetricHeap`] call failed. A failed call leaves the heap's blocks
/// untouched (it is still recorded in the [`crate::Fingerprint`]).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum HeapError {
    /// No free block can hold the request. `requested` is the size the caller asked for
    /// (before rounding up to the 256-byte granule).
    #[error(
        "out of symmetric heap memory: requested {requested} bytes ({}), largest free block \
         {largest_free} bytes ({})",
        Bytes(*requested),
        Bytes(*largest_free)
    )]
    OutOfMemory {
        /// Bytes asked for (`count * size` for `calloc`).
        requested: u64,
        /// Length of the largest free block at the time of the call.
        largest_free: u64,
    },

    /// No free block can hold the request at the requested alignment (an aligned request
    /// can fail even when `largest_free >= requested`, if no large block has a suitably
    /// aligned start).
    #[error(
        "out of symmetric heap memory: requested {requested} bytes ({}) aligned to \
         {alignment}, largest free block {largest_free} bytes ({})",
        Bytes(*requested),
        Bytes(*largest_free)
    )]
    OutOfMemoryAligned {
        /// Bytes asked for.
        requested: u64,
        /// Alignment asked for.
        alignment: u64,
        /// Length of the largest free block at the time of the call.
        largest_free: u64,
    },

    /// `free` of an offset that lies in free space: the block was already freed (double
    /// free) or was never allocated. The heap keeps no history, so it cannot tell these
    /// two apart.
    #[error(
        "free of offset {offset}: not the start of a live block; it lies in free space \
         (double free, or never allocated)"
    )]
    NotABlockStart {
        /// The offset passed to `free`.
        offset: u64,
    },

    /// `free` of an offset inside a live block but not at its start.
    #[error(
        "free of offset {offset}: interior pointer into the live block at offset \
         {block_start} ({block_len} bytes); free needs the block's start"
    )]
    InteriorPointer {
        /// The offset passed to `free`.
        offset: u64,
        /// Start of the live block that contains `offset`.
        block_start: u64,
        /// Length of that block.
        block_len: u64,
    },

    /// `free` of an offset at or past the end of the heap.
    #[error("free of offset {offset}: past the end of the {size}-byte heap ({})", Bytes(*size))]
    OffsetOutOfRange {
        /// The offset passed to `free`.
        offset: u64,
        /// The heap's (usable) size.
        size: u64,
    },

    /// `align` with an alignment that is 0 or not a power of two.
    #[error("alignment {alignment} is not a power of two")]
    BadAlignment {
        /// The alignment passed to `align`.
        alignment: u64,
    },

    /// The request does not fit in a `u64`: `count * size` overflows, or rounding the size
    /// up to the 256-byte granule does. `count` is 1 for `malloc` and `align`.
    #[error("{}", overflow_message(*count, *size))]
    SizeOverflow {
        /// Element count (1 unless the call was `calloc`).
        count: u64,
        /// Element size in bytes.
        size: u64,
    },

    /// [`crate::SymmetricHeap::new`] with size 0.
    #[error("symmetric heap size is 0 bytes")]
    ZeroHeap,

    /// [`crate::SymmetricHeap::new`] with a size below one 256-byte granule.
    #[error(
        "symmetric heap size {size} bytes is smaller than one {DEFAULT_ALIGNMENT}-byte granule"
    )]
    HeapTooSmall {
        /// The size passed to `new`.
        size: u64,
    },
}

impl HeapError {
    /// True for both out-of-memory variants.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            Self::OutOfMemory { .. } | Self::OutOfMemoryAligned { .. }
        )
    }

    /// Stable numeric code of the variant, fed into the fingerprint.
    pub(crate) fn code(&self) -> u64 {
        match self {
            Self::OutOfMemory { .. } => 1,
            Self::OutOfMemoryAligned { .. } => 2,
            Self::NotABlockStart { .. } => 3,
            Self::InteriorPointer { .. } => 4,
            Self::OffsetOutOfRange { .. } => 5,
            Self::BadAlignment { .. } => 6,
            Self::SizeOverflow { .. } => 7,
            Self::ZeroHeap => 8,
            Self::HeapTooSmall { .. } => 9,
        }
    }
}

/// Message of [`HeapError::SizeOverflow`].
fn overflow_message(count: u64, size: u64) -> String {
    match count.checked_mul(size) {
        None => format!("allocation size overflows u64: count {count} * size {size} bytes"),
        Some(bytes) if count == 1 => format!(
            "allocation size overflows u64: {bytes} bytes rounded up to the \
             {DEFAULT_ALIGNMENT}-byte granule"
        ),
        Some(bytes) => format!(
            "allocation size overflows u64: count {count} * size {size} = {bytes} bytes rounded \
             up to the {DEFAULT_ALIGNMENT}-byte granule"
        ),
    }
}

/// Why an `NVSHMEM_SYMMETRIC_SIZE` value was rejected. Each variant names the variable
/// and quotes the value as given, so the message can be shown to the user unchanged.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SizeError {
    /// Not of the form `<number>[K|M|G|T][B|iB]`.
    #[error(
        "{var}={value:?} is not a size: expected bytes or a number with K/M/G/T suffix \
         (e.g. 1073741824, 512M, 1.5G)"
    )]
    Malformed {
        /// Name of the variable (`NVSHMEM_SYMMETRIC_SIZE`).
        var: &'static str,
        /// The value as given.
        value: String,
    },
    /// The size is zero.
    #[error("{var}={value:?} is zero: the symmetric heap needs at least one byte")]
    Zero {
        /// Name of the variable.
        var: &'static str,
        /// The value as given.
        value: String,
    },
    /// The size is negative (starts with `-`).
    #[error("{var}={value:?} is negative: a size must be positive")]
    Negative {
        /// Name of the variable.
        var: &'static str,
        /// The value as given.
        value: String,
    },
    /// The size does not fit in 64 bits.
    #[error("{var}={value:?} is too large: it exceeds {} bytes (16 EiB)", u64::MAX)]
    Overflow {
        /// Name of the variable.
        var: &'static str,
        /// The value as given.
        value: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_message_carries_values_and_units() {
        let e = HeapError::OutOfMemory {
            requested: 3 << 30,
            largest_free: 1 << 30,
        };
        assert_eq!(
            e.to_string(),
            "out of symmetric heap memory: requested 3221225472 bytes (3 GiB), largest free \
             block 1073741824 bytes (1 GiB)"
        );
        assert!(e.is_out_of_memory());
        assert!(!HeapError::ZeroHeap.is_out_of_memory());
    }

    #[test]
    fn overflow_messages() {
        let m = HeapError::SizeOverflow {
            count: 1,
            size: u64::MAX,
        }
        .to_string();
        assert!(m.contains("18446744073709551615 bytes rounded up"), "{m}");
        let c = HeapError::SizeOverflow {
            count: 3,
            size: u64::MAX / 2,
        }
        .to_string();
        assert!(c.contains("count 3 * size 9223372036854775807"), "{c}");
    }

    #[test]
    fn free_error_messages_distinguish_cases() {
        let ns = HeapError::NotABlockStart { offset: 4096 }.to_string();
        assert!(ns.contains("4096") && ns.contains("double free"), "{ns}");
        let ip = HeapError::InteriorPointer {
            offset: 300,
            block_start: 256,
            block_len: 512,
        }
        .to_string();
        assert!(
            ip.contains("interior pointer") && ip.contains("offset 256"),
            "{ip}"
        );
    }

    #[test]
    fn size_error_message_names_variable_and_value() {
        let e = SizeError::Malformed {
            var: "NVSHMEM_SYMMETRIC_SIZE",
            value: "12Q".to_owned(),
        };
        assert!(
            e.to_string().starts_with(
                "NVSHMEM_SYMMETRIC_SIZE=\"12Q\" is not a size: expected bytes or a number with \
                 K/M/G/T suffix"
            ),
            "{e}"
        );
    }

    #[test]
    fn error_codes_are_distinct() {
        let all = [
            HeapError::OutOfMemory {
                requested: 0,
                largest_free: 0,
            },
            HeapError::OutOfMemoryAligned {
                requested: 0,
                alignment: 0,
                largest_free: 0,
            },
            HeapError::NotABlockStart { offset: 0 },
            HeapError::InteriorPointer {
                offset: 0,
                block_start: 0,
                block_len: 0,
            },
            HeapError::OffsetOutOfRange { offset: 0, size: 0 },
            HeapError::BadAlignment { alignment: 0 },
            HeapError::SizeOverflow { count: 0, size: 0 },
            HeapError::ZeroHeap,
            HeapError::HeapTooSmall { size: 0 },
        ];
        let mut codes: Vec<u64> = all.iter().map(HeapError::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
