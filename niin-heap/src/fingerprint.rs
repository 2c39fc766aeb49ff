//! A running digest of every allocator call, to detect PEs whose heaps diverged.
//!
//! The symmetric heap only works if every PE makes the same allocation calls in the same
//! order: then every PE computes the same offsets and a remote address is simply "the
//! same offset on the other PE". The [`Fingerprint`] makes that assumption checkable:
//! exchange it between PEs (for example at a barrier, or after `nvshmem_malloc` in a debug
//! build) and compare.
//!
//! The digest is 64-bit FNV-1a over the little-endian bytes of a stream of `u64` words.
//! [`crate::SymmetricHeap::new`] seeds it with the requested heap size; each call of
//! `malloc`, `calloc`, `align` and `free` then appends its operation tag, its arguments
//! and its outcome (the block it returned, "none", or the error code), and increments
//! the op count. Failed calls are recorded too — see the crate docs for why.

use std::fmt;

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Digest of a heap's call history: equal on two heaps iff (with overwhelming
/// probability) they were created with the same size and given the same calls in the
/// same order, failed calls included.
///
/// `Display` prints `ops=12 hash=0x0123456789abcdef`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// FNV-1a digest of the creation size and of every recorded call.
    pub hash: u64,
    /// Number of recorded calls (`malloc`, `calloc`, `align`, `free`; successful or
    /// not). Creation is not counted.
    pub ops: u64,
}

impl Fingerprint {
    /// The fingerprint of a fresh heap created with `size` bytes.
    pub(crate) fn seed(size: u64) -> Self {
        let mut fp = Self {
            hash: FNV_OFFSET,
            ops: 0,
        };
        fp.mix(&[OpTag::New as u64, size]);
        fp
    }

    /// Appends one call (its words: tag, arguments, outcome) and counts it.
    pub(crate) fn record(&mut self, words: &[u64]) {
        self.ops = self.ops.wrapping_add(1);
        self.mix(words);
    }

    /// Feeds `words` through FNV-1a, byte by byte.
    fn mix(&mut self, words: &[u64]) {
        for word in words {
            for byte in word.to_le_bytes() {
                self.hash ^= u64::from(byte);
                self.hash = self.hash.wrapping_mul(FNV_PRIME);
            }
        }
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ops={} hash={:#018x}", self.ops, self.hash)
    }
}

/// Digest of a heap's layout: its usable size and the set of its live blocks, whatever
/// calls led there. Two heaps with equal layouts hand out the same offsets for the same
/// later calls (placement depends only on the free ranges), so PEs whose layouts agree are
/// symmetric again even after a call that one of them undid; the history
/// [`Fingerprint`] never agrees again once it differed.
///
/// Maintained in O(1) per call: the hash is the XOR of a 64-bit mix of each live block
/// (and of the size), so adding and removing a block are the same operation.
///
/// `Display` prints `live=3 hash=0x0123456789abcdef`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// XOR of the mixes of the usable size and of every live block.
    pub hash: u64,
    /// Number of live blocks.
    pub live: u64,
}

impl Layout {
    /// The layout of an empty heap of `size` usable bytes.
    pub(crate) fn empty(size: u64) -> Self {
        Self {
            hash: splitmix64(size ^ 0x005e_ed0f_5eed),
            live: 0,
        }
    }

    /// Adds the block `[offset, offset + len)`.
    pub(crate) fn add(&mut self, offset: u64, len: u64) {
        self.hash ^= block_mix(offset, len);
        self.live += 1;
    }

    /// Removes the block `[offset, offset + len)` (added before).
    pub(crate) fn remove(&mut self, offset: u64, len: u64) {
        self.hash ^= block_mix(offset, len);
        self.live -= 1;
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "live={} hash={:#018x}", self.live, self.hash)
    }
}

/// The mix of one live block.
fn block_mix(offset: u64, len: u64) -> u64 {
    splitmix64(offset ^ splitmix64(len))
}

/// Operation tags fed into the digest (stable values: they define the hash).
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum OpTag {
    /// Heap creation (seed only, not counted in `ops`).
    New = 1,
    /// `malloc(size)`.
    Malloc = 2,
    /// `calloc(count, size)`.
    Calloc = 3,
    /// `align(alignment, size)`.
    Align = 4,
    /// `free(offset)`.
    Free = 5,
}

/// Outcome tags fed into the digest after the arguments.
pub(crate) mod outcome {
    /// The call returned no block (`Ok(None)`).
    pub(crate) const NONE: u64 = 0;
    /// The call returned (or freed) a block; its offset and len follow.
    pub(crate) const BLOCK: u64 = 1;
    /// The call failed; the error code follows.
    pub(crate) const ERROR: u64 = 2;
}

/// The splitmix64 finaliser: a fixed bijective 64-bit mix. Used for treap priorities.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vector() {
        // FNV-1a 64 of the single byte "a" is 0xaf63dc4c8601ec8c (published test vector);
        // check the byte loop against it via a one-byte stream.
        let mut h = FNV_OFFSET;
        h ^= u64::from(b'a');
        h = h.wrapping_mul(FNV_PRIME);
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn display_shows_ops_and_hex_hash() {
        let fp = Fingerprint {
            hash: 0xab,
            ops: 12,
        };
        assert_eq!(fp.to_string(), "ops=12 hash=0x00000000000000ab");
    }

    #[test]
    fn record_is_order_sensitive_and_counts() {
        let mut a = Fingerprint::seed(1 << 20);
        let mut b = Fingerprint::seed(1 << 20);
        assert_eq!(a, b);
        a.record(&[1, 2]);
        a.record(&[3]);
        b.record(&[3]);
        b.record(&[1, 2]);
        assert_eq!(a.ops, 2);
        assert_eq!(b.ops, 2);
        assert_ne!(a.hash, b.hash);
        assert_ne!(Fingerprint::seed(1 << 20), Fingerprint::seed(1 << 21));
    }

    #[test]
    fn layout_depends_on_the_live_set_only() {
        let mut a = Layout::empty(1 << 20);
        let mut b = Layout::empty(1 << 20);
        a.add(0, 256);
        a.add(512, 256);
        b.add(512, 256);
        b.add(0, 256);
        assert_eq!(a, b, "order does not matter");
        b.add(1024, 256);
        assert_ne!(a, b);
        b.remove(1024, 256);
        assert_eq!(a, b, "removing a block undoes adding it");
        assert_ne!(Layout::empty(1 << 20), Layout::empty(1 << 21));
        assert_eq!(a.to_string(), format!("live=2 hash={:#018x}", a.hash));
    }

    #[test]
    fn splitmix64_known_value() {
        // First output of the reference splitmix64 generator seeded with 0.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
