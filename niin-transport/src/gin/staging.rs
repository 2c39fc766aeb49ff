//! The staging window's layout: where the 8-byte word slots (values of `p` and signal
//! SET) and the chunk slots (staged put data) lie, and the rings that hand them out.
//!
//! ```text
//! base                      word slot 0 .. word slot W-1   (8 bytes each)
//! base + words_bytes        chunk slot 0 .. chunk slot C-1 (chunk_bytes each)
//! ```
//!
//! `words_bytes` is `8 * W` rounded up to 4096 (`NCCL_WIN_REQUIRED_ALIGNMENT`), so every
//! chunk starts page-aligned. Slot *indices* (which name the slot's reuse event in the
//! backend) are `0..W` for the word slots and `W..W+C` for the chunk slots.

use crate::error::{Result, TransportError};

/// Alignment of the chunk area inside the staging window.
const CHUNK_ALIGN: usize = 4096;

/// The largest element of a strided transfer: a chunk must hold at least one.
const MAX_ELEM: usize = 16;

/// Where the slots of the staging window lie. See the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StagingLayout {
    /// Device address of the staging window's first byte.
    pub base: u64,
    /// Number of 8-byte word slots, at the start of the window (at least 1).
    pub word_slots: usize,
    /// Bytes of one chunk slot (at least 16, a multiple of 16).
    pub chunk_bytes: usize,
    /// Number of chunk slots (at least 1).
    pub chunk_slots: usize,
}

/// One slot of the staging window: its index (naming its reuse event) and address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Index among all slots: word slots first, then chunk slots.
    pub index: usize,
    /// Device address of the slot's first byte.
    pub addr: u64,
}

impl StagingLayout {
    /// Default number of word slots (4 KiB of words).
    pub const DEFAULT_WORD_SLOTS: usize = 512;
    /// Default chunk size: 1 MiB, large enough that a staged put is bandwidth-bound
    /// rather than bound by the proxy's round trip per `ncclPutSignal`.
    pub const DEFAULT_CHUNK_BYTES: usize = 1 << 20;
    /// Default number of chunk slots: streams that stage at the same time rarely wait
    /// for each other.
    pub const DEFAULT_CHUNK_SLOTS: usize = 4;

    /// The default layout of a window at `base` (4 MiB + 4 KiB in all).
    pub const fn default_at(base: u64) -> StagingLayout {
        StagingLayout {
            base,
            word_slots: Self::DEFAULT_WORD_SLOTS,
            chunk_bytes: Self::DEFAULT_CHUNK_BYTES,
            chunk_slots: Self::DEFAULT_CHUNK_SLOTS,
        }
    }

    /// `Ok` when the counts are usable (see the field docs) and the window's size does
    /// not overflow.
    pub fn check(&self) -> Result<()> {
        let bad = |what: String| {
            Err(TransportError::BadArgument {
                op: "GIN staging window",
                what,
            })
        };
        if self.word_slots == 0 || self.chunk_slots == 0 {
            return bad(format!(
                "{} word slots and {} chunk slots: both must be at least 1",
                self.word_slots, self.chunk_slots
            ));
        }
        if self.chunk_bytes < MAX_ELEM || self.chunk_bytes % MAX_ELEM != 0 {
            return bad(format!(
                "chunks of {} bytes: they must be a multiple of {MAX_ELEM} bytes, at least one",
                self.chunk_bytes
            ));
        }
        if self.checked_size().is_none() {
            return bad(format!("{self:?} overflows the address space"));
        }
        Ok(())
    }

    fn words_bytes(&self) -> Option<usize> {
        let raw = self.word_slots.checked_mul(8)?;
        raw.checked_next_multiple_of(CHUNK_ALIGN)
    }

    fn checked_size(&self) -> Option<usize> {
        let chunks = self.chunk_bytes.checked_mul(self.chunk_slots)?;
        let size = self.words_bytes()?.checked_add(chunks)?;
        self.base.checked_add(size as u64)?;
        Some(size)
    }

    /// Size in bytes of the whole window (valid after [`StagingLayout::check`]).
    pub fn size(&self) -> usize {
        self.checked_size().unwrap_or(usize::MAX)
    }

    /// Number of slots, words and chunks together.
    pub fn slots(&self) -> usize {
        self.word_slots + self.chunk_slots
    }

    /// Word slot `i` (taken modulo the number of word slots).
    pub fn word(&self, i: usize) -> Slot {
        let i = i % self.word_slots;
        Slot {
            index: i,
            addr: self.base + 8 * i as u64,
        }
    }

    /// Chunk slot `j` (taken modulo the number of chunk slots).
    pub fn chunk(&self, j: usize) -> Slot {
        let j = j % self.chunk_slots;
        let words = self.words_bytes().unwrap_or(0);
        Slot {
            index: self.word_slots + j,
            addr: self.base + (words + j * self.chunk_bytes) as u64,
        }
    }
}

/// The next slot of each ring. Held under the transport's staging lock for the whole of
/// one operation's enqueueing, so that "wait for the slot's last user, use it, record
/// the new last user" is never interleaved with another thread's use of the same slot.
#[derive(Debug, Default)]
pub(crate) struct Rings {
    next_word: usize,
    next_chunk: usize,
}

impl Rings {
    /// The next word slot, round-robin.
    pub(crate) fn word(&mut self, layout: &StagingLayout) -> Slot {
        let s = layout.word(self.next_word);
        self.next_word = (self.next_word + 1) % layout.word_slots;
        s
    }

    /// The next chunk slot, round-robin.
    pub(crate) fn chunk(&mut self, layout: &StagingLayout) -> Slot {
        let s = layout.chunk(self.next_chunk);
        self.next_chunk = (self.next_chunk + 1) % layout.chunk_slots;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gin_staging_layout_places_words_then_page_aligned_chunks() {
        let l = StagingLayout::default_at(0x10_0000);
        l.check().unwrap();
        assert_eq!(l.size(), 4096 + 4 * (1 << 20));
        assert_eq!(l.slots(), 516);
        assert_eq!(
            l.word(0),
            Slot {
                index: 0,
                addr: 0x10_0000
            }
        );
        assert_eq!(l.word(511).addr, 0x10_0000 + 8 * 511);
        assert_eq!(l.word(512), l.word(0));
        assert_eq!(
            l.chunk(0),
            Slot {
                index: 512,
                addr: 0x10_1000
            }
        );
        assert_eq!(l.chunk(3).addr, 0x10_1000 + 3 * (1 << 20));
        assert_eq!(l.chunk(4), l.chunk(0));
    }

    #[test]
    fn gin_staging_rings_cycle() {
        let l = StagingLayout {
            base: 0,
            word_slots: 2,
            chunk_bytes: 16,
            chunk_slots: 3,
        };
        let mut r = Rings::default();
        let words: Vec<_> = (0..5).map(|_| r.word(&l).index).collect();
        assert_eq!(words, [0, 1, 0, 1, 0]);
        let chunks: Vec<_> = (0..4).map(|_| r.chunk(&l).index).collect();
        assert_eq!(chunks, [2, 3, 4, 2]);
    }

    #[test]
    fn gin_staging_layout_rejects_unusable_shapes() {
        let ok = StagingLayout::default_at(0);
        for bad in [
            StagingLayout {
                word_slots: 0,
                ..ok
            },
            StagingLayout {
                chunk_slots: 0,
                ..ok
            },
            StagingLayout {
                chunk_bytes: 8,
                ..ok
            },
            StagingLayout {
                chunk_bytes: 24,
                ..ok
            },
            StagingLayout {
                chunk_slots: usize::MAX,
                ..ok
            },
            StagingLayout {
                base: u64::MAX - 4096,
                ..ok
            },
        ] {
            assert!(
                matches!(bad.check(), Err(TransportError::BadArgument { .. })),
                "{bad:?}"
            );
        }
    }
}
