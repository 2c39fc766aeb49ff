//! The launcher's status board: a small shared file in which the launcher (niinrun)
//! records how each PE's process ended, as soon as it reaps it, and in which a PE marks
//! its own failure as a consequence of another's. The PEs still running read it to say
//! *how* a peer died ("PE 3 died (killed by signal 9 (SIGKILL))") instead of only that it
//! is gone; the launcher reads it to blame the PE whose failure came first.
//!
//! niinrun creates it as [`STATUS_FILE_NAME`] in the job's rendezvous directory
//! (`NIIN_RENDEZVOUS_DIR`) before it starts the PEs; a PE started by niinrun
//! (`NIIN_LAUNCHER=niinrun`) maps it at attach ([`StatusBoard::from_env`]): the mock
//! transport's peer checks and the LSA (NCCL) transport's host waits read it. Without it
//! (another launcher, in-process worlds) everything works the same, with less detail.
//!
//! ```text
//! offset 0     u64 magic "NIINSTAT"    u64 n_pes    u64 failures recorded    u64 0
//! 32 + 64*pe   u32 end (0 running, 1 exited with status 0, 2 failed: the text says how)
//!              u32 consequence (1: the PE's own failure reports another PE's)
//!              u32 text length, then up to 52 bytes of UTF-8 text ("exited with status 3")
//! ```
//!
//! `end` is stored with release after the text, and loaded with acquire before it.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;

/// The name of the board in the launcher's rendezvous directory.
pub const STATUS_FILE_NAME: &str = "pe-status";

const MAGIC: u64 = u64::from_le_bytes(*b"NIINSTAT");
const HEADER: usize = 32;
const SLOT: usize = 64;
const TEXT_AT: usize = 12;
const TEXT_MAX: usize = SLOT - TEXT_AT;

/// How a PE's process ended, as the launcher saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeEnd {
    /// It exited with status 0.
    Success,
    /// It failed; the text says how ("exited with status 3", "killed by signal 9
    /// (SIGKILL)"), at most 52 bytes (longer text is cut).
    Failed(String),
}

/// A mapped status board (see the module docs).
pub struct StatusBoard {
    /// Keeps the mapping alive; accessed only through `base`.
    _map: MmapMut,
    base: *mut u8,
    n_pes: usize,
}

// SAFETY: the board is shared memory that the launcher and the PEs access concurrently by
// design: the words only through atomics, the text bytes only before the release store
// (writer) or after the acquire load (reader) of their slot's `end` word.
unsafe impl Send for StatusBoard {}
// SAFETY: as for `Send`; no method hands out references into the mapping.
unsafe impl Sync for StatusBoard {}

impl std::fmt::Debug for StatusBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusBoard")
            .field("n_pes", &self.n_pes)
            .finish_non_exhaustive()
    }
}

fn size(n_pes: usize) -> usize {
    HEADER + SLOT * n_pes
}

impl StatusBoard {
    /// The launcher: creates the board of an `n_pes`-PE job at `path` (a new file).
    pub fn create(path: &Path, n_pes: usize) -> std::io::Result<StatusBoard> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        file.set_len(size(n_pes) as u64)?;
        let board = StatusBoard::map(&file, n_pes)?;
        board.word64(8).store(n_pes as u64, Ordering::Relaxed);
        board.word64(0).store(MAGIC, Ordering::Release);
        Ok(board)
    }

    /// A PE: maps the board at `path` if it is one of an `n_pes`-PE job; `None` otherwise.
    pub fn open(path: &Path, n_pes: usize) -> Option<StatusBoard> {
        let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
        if file.metadata().ok()?.len() != size(n_pes) as u64 {
            return None;
        }
        let board = StatusBoard::map(&file, n_pes).ok()?;
        let ok = board.word64(0).load(Ordering::Acquire) == MAGIC
            && board.word64(8).load(Ordering::Relaxed) == n_pes as u64;
        ok.then_some(board)
    }

    /// A PE started by niinrun (`NIIN_LAUNCHER=niinrun`): the board in
    /// `NIIN_RENDEZVOUS_DIR`, if it is there and fits `n_pes`.
    pub fn from_env(n_pes: usize) -> Option<StatusBoard> {
        if std::env::var("NIIN_LAUNCHER").ok()? != "niinrun" {
            return None;
        }
        let dir = std::env::var_os("NIIN_RENDEZVOUS_DIR")?;
        StatusBoard::open(&Path::new(&dir).join(STATUS_FILE_NAME), n_pes)
    }

    fn map(file: &std::fs::File, n_pes: usize) -> std::io::Result<StatusBoard> {
        // SAFETY: the board is private to the job: created by its launcher, never
        // truncated, and accessed only as described in the module docs; its size was
        // checked (or set) to hold `n_pes` slots.
        let mut map = unsafe { MmapMut::map_mut(file) }?;
        if map.len() < size(n_pes) {
            return Err(std::io::Error::other("the status board is too short"));
        }
        let base = map.as_mut_ptr();
        Ok(StatusBoard {
            _map: map,
            base,
            n_pes,
        })
    }

    fn word64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is one of the header's 8-byte aligned words, inside the mapping
        // (page-aligned), which lives as long as `self`; the word is only used atomically.
        unsafe { AtomicU64::from_ptr(self.base.wrapping_add(offset).cast()) }
    }

    fn word32(&self, pe: usize, field: usize) -> &AtomicU32 {
        assert!(pe < self.n_pes && field < TEXT_AT);
        // SAFETY: `pe < n_pes`, so the slot lies inside the mapping; `field` is 0, 4 or 8,
        // so the word is 4-byte aligned; it is only used atomically.
        unsafe { AtomicU32::from_ptr(self.base.wrapping_add(HEADER + SLOT * pe + field).cast()) }
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// The launcher: records how `pe` ended (once; later calls are ignored).
    pub fn record(&self, pe: usize, end: &PeEnd) {
        let end_word = self.word32(pe, 0);
        if end_word.load(Ordering::Acquire) != 0 {
            return;
        }
        match end {
            PeEnd::Success => end_word.store(1, Ordering::Release),
            PeEnd::Failed(text) => {
                let mut len = text.len().min(TEXT_MAX);
                while !text.is_char_boundary(len) {
                    len -= 1;
                }
                // SAFETY: the slot's text area holds TEXT_MAX bytes inside the mapping;
                // readers read it only after the release store below.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        text.as_ptr(),
                        self.base.wrapping_add(HEADER + SLOT * pe + TEXT_AT),
                        len,
                    );
                }
                self.word32(pe, 8).store(len as u32, Ordering::Relaxed);
                end_word.store(2, Ordering::Release);
                self.word64(16).fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// How `pe` ended, once the launcher recorded it.
    pub fn ended(&self, pe: usize) -> Option<PeEnd> {
        match self.word32(pe, 0).load(Ordering::Acquire) {
            1 => Some(PeEnd::Success),
            2 => {
                let len = (self.word32(pe, 8).load(Ordering::Relaxed) as usize).min(TEXT_MAX);
                let mut text = vec![0u8; len];
                // SAFETY: the text was written before the release store of `end`, which
                // the acquire load above saw; `len` bytes lie inside the slot.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.base.wrapping_add(HEADER + SLOT * pe + TEXT_AT),
                        text.as_mut_ptr(),
                        len,
                    );
                }
                Some(PeEnd::Failed(String::from_utf8_lossy(&text).into_owned()))
            }
            _ => None,
        }
    }

    /// How many failures the launcher recorded: a cheap test for news.
    pub fn failures(&self) -> u64 {
        self.word64(16).load(Ordering::Acquire)
    }

    /// A PE: marks its own failure as a consequence of another PE's.
    pub fn mark_consequence(&self, pe: usize) {
        self.word32(pe, 4).store(1, Ordering::Release);
    }

    /// Whether `pe` marked its failure as a consequence of another's.
    pub fn is_consequence(&self, pe: usize) -> bool {
        self.word32(pe, 4).load(Ordering::Acquire) != 0
    }
}

/// A fresh board of `n_pes` PEs in its own temporary folder named after `tag` (for tests of
/// the board's readers); returns the folder, which the test removes.
#[cfg(test)]
pub(crate) fn test_board(tag: &str, n_pes: usize) -> (std::path::PathBuf, StatusBoard) {
    let dir = std::env::temp_dir().join(format!("niin-board-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let board = StatusBoard::create(&dir.join(STATUS_FILE_NAME), n_pes).unwrap();
    (dir, board)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_records_and_a_pe_reads() {
        let dir = std::env::temp_dir().join(format!("niin-status-unit-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let launcher = StatusBoard::create(&dir, 3).unwrap();
        assert!(
            StatusBoard::create(&dir, 3).is_err(),
            "create is create_new"
        );
        assert!(
            StatusBoard::open(&dir, 4).is_none(),
            "a board of another size"
        );
        let pe = StatusBoard::open(&dir, 3).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(pe.ended(1), None);
        assert_eq!(pe.failures(), 0);
        launcher.record(1, &PeEnd::Failed("killed by signal 9 (SIGKILL)".into()));
        launcher.record(1, &PeEnd::Success);
        launcher.record(2, &PeEnd::Success);
        assert_eq!(
            pe.ended(1),
            Some(PeEnd::Failed("killed by signal 9 (SIGKILL)".into()))
        );
        assert_eq!(pe.ended(2), Some(PeEnd::Success));
        assert_eq!(pe.failures(), 1);
        let long = "é".repeat(40);
        launcher.record(0, &PeEnd::Failed(long));
        assert_eq!(pe.ended(0), Some(PeEnd::Failed("é".repeat(26))));
        assert!(!launcher.is_consequence(2));
        pe.mark_consequence(2);
        assert!(launcher.is_consequence(2));
    }
}
