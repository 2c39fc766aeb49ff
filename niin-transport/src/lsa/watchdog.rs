//! The watchdog of device barriers: under niinrun, a thread of each PE reads the job's
//! status board and, once another PE's process has died, writes that PE into a mapped host
//! word that device barriers poll while they wait (`device/include/niin/impl/sync_impl.h`,
//! `barrier_stalled`). A kernel waiting for the dead PE then prints one `NIIN:` line naming
//! it and stops (`__trap()`), instead of spinning for ever; the world's communicator is
//! marked for `ncclCommAbort` at finalize, since a peer is gone.
//!
//! Host waits do not need the thread: they read the board themselves while they sleep
//! (`LsaTransport::peer_failure`). Device code cannot read a file, and a kernel that spins
//! in a barrier has no host code running for it; the mapped word is the one thing both
//! sides see. The thread wakes every [`POLL`] (one atomic load of the board's failure
//! count) and ends at the first failure it reports, or when the transport is dropped.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::cuda_err;
use super::failed_peer;
use crate::TransportError;
use crate::cuda::{Device, HostPinned};
use crate::nccl::Comm;
use crate::status::StatusBoard;

/// How often the watchdog reads the board: a dead PE is seen by device barriers within
/// this plus their own poll period (about 1024 polls, well under a millisecond), inside
/// niinrun's report window (0.5 s) before it stops the survivors.
pub(crate) const POLL: Duration = Duration::from_millis(10);

/// Set to `true` (and notified) when the watchdog must end.
type StopFlag = Arc<(Mutex<bool>, Condvar)>;

/// The running watchdog of one PE; dropping it stops and joins the thread.
#[derive(Debug)]
pub(crate) struct Watchdog {
    /// The word device barriers poll: 0, or 1 + the PE that died.
    word: Arc<HostPinned>,
    stop: StopFlag,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog of PE `me` over `board` (its own mapping of niinrun's board);
    /// a failure it sees marks `comm` for `ncclCommAbort`.
    pub(crate) fn start(
        device: &Device,
        board: StatusBoard,
        me: usize,
        comm: Comm,
    ) -> Result<Watchdog, TransportError> {
        let word = Arc::new(HostPinned::alloc_on(device, 4).map_err(cuda_err)?);
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let (thread_word, thread_stop) = (Arc::clone(&word), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name(format!("niin-watchdog-{me}"))
            .spawn(move || {
                watch(&board, me, &thread_stop, POLL, |dead| {
                    // SAFETY: the word is 4 bytes of mapped pinned memory, 4-aligned (a
                    // fresh allocation), alive while `thread_word` is; the device only
                    // reads it.
                    let flag = unsafe { AtomicU32::from_ptr(thread_word.host_ptr().cast()) };
                    flag.store(
                        u32::try_from(dead + 1).unwrap_or(u32::MAX),
                        Ordering::Release,
                    );
                    comm.abort_on_drop();
                    board.mark_consequence(me);
                });
            })
            .map_err(|e| TransportError::Os {
                what: "starting the watchdog thread".into(),
                cause: e.to_string(),
            })?;
        Ok(Watchdog {
            word,
            stop,
            thread: Some(thread),
        })
    }

    /// The device address of the word device barriers poll.
    pub(crate) fn device_word(&self) -> u64 {
        self.word.device_ptr()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The watchdog's loop: every `poll`, until `stop` is set, looks for another PE that failed
/// on `board`; calls `report` with the first one found, once, and returns.
fn watch(
    board: &StatusBoard,
    me: usize,
    stop: &StopFlag,
    poll: Duration,
    report: impl FnOnce(usize),
) {
    let (lock, wake) = &**stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if *stopped {
            return;
        }
        if let Some((dead, _how)) = failed_peer(board, me) {
            drop(stopped);
            report(dead);
            return;
        }
        stopped = wake
            .wait_timeout(stopped, poll)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::PeEnd;
    use std::sync::mpsc;
    use std::time::Instant;

    fn board(tag: &str, n_pes: usize) -> (std::path::PathBuf, StatusBoard) {
        crate::status::test_board(&format!("watchdog-{tag}"), n_pes)
    }

    #[test]
    fn a_dead_peer_is_reported_once_and_promptly() {
        let (dir, launcher) = board("dead", 3);
        let pe0 = StatusBoard::open(&dir.join(crate::status::STATUS_FILE_NAME), 3).unwrap();
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let (tx, rx) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            watch(&pe0, 0, &thread_stop, Duration::from_millis(5), |dead| {
                tx.send(dead).unwrap()
            })
        });
        launcher.record(1, &PeEnd::Success);
        launcher.record(0, &PeEnd::Failed("exited with status 3".into()));
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "neither a clean exit nor this PE's own failure is a dead peer"
        );
        let at = Instant::now();
        launcher.record(2, &PeEnd::Failed("killed by signal 9 (SIGKILL)".into()));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(2));
        assert!(at.elapsed() < Duration::from_secs(1), "{:?}", at.elapsed());
        t.join().unwrap();
        assert!(rx.try_recv().is_err(), "reported once");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stopping_ends_the_watch_without_a_report() {
        let (dir, launcher) = board("stop", 2);
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let thread_stop = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            let mut reported = false;
            // a long poll: only the notification can end the wait in time
            watch(
                &launcher,
                0,
                &thread_stop,
                Duration::from_secs(3600),
                |_| reported = true,
            );
            reported
        });
        std::thread::sleep(Duration::from_millis(20));
        let at = Instant::now();
        *stop.0.lock().unwrap() = true;
        stop.1.notify_all();
        assert!(!t.join().unwrap());
        assert!(at.elapsed() < Duration::from_secs(1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
