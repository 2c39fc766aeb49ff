//! The watchdog of device code: a thread of each PE that shares two mapped host words with
//! the PE's kernels (`device/include/niin/impl/sync_impl.h`, `barrier_stalled`).
//!
//! **Word 0, a dead peer.** Under niinrun the thread reads the job's status board and, once
//! another PE's process has died, writes that PE + 1 into word 0, which device barriers poll
//! while they wait. A kernel waiting for the dead PE then prints one `NIIN:` line naming it
//! and stops (`__trap()`), instead of spinning for ever; the world's communicator is marked
//! for `ncclCommAbort` at finalize, since a peer is gone. Host waits do not need the thread:
//! they read the board themselves while they sleep (`LsaTransport::peer_failure`). Device
//! code cannot read a file, and a kernel that spins in a barrier has no host code running
//! for it; the mapped word is the one thing both sides see.
//!
//! **Word 1, a stopped kernel.** A device barrier that gives up (a dead peer or
//! `NIIN_TIMEOUT`) sets word 1 just before its `__trap()`. The CUDA driver then normally
//! fails the program's next synchronization within about a second, and the program ends
//! or calls `nvshmem_finalize`. On the GPU it sometimes never does (session 26: H100, 4 PEs
//! sharing the GPU, 13 of 23 runs in which three PEs stopped their kernels together): the
//! kernel has stopped and printed its line, but one process's `cudaDeviceSynchronize` spins
//! in `cuCtxSynchronize` for ever. So once word 1 is set the thread asks the driver, from a
//! thread of its own that may block ([`Device::query_error`]), whether it has recorded the
//! context's error. If it has not within [`STOP_REPORT_GRACE`], the process would hang: the
//! watchdog prints one `NIIN:` line saying so and ends the process with status
//! [`UNREPORTED_STOP_STATUS`] (`_exit`, after flushing standard output). A program that got
//! its error keeps running as long as it likes; only one the driver left waiting is ended.
//!
//! The thread wakes every [`POLL`] (an atomic load of the board's failure count and one of
//! word 1) and ends when the transport is dropped. Every world has it; without niinrun
//! there is no board, and only word 1 is watched.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cuda_err;
use super::failed_peer;
use crate::TransportError;
use crate::cuda::{Device, HostPinned};
use crate::nccl::Comm;
use crate::status::StatusBoard;

/// How often the watchdog looks: a dead PE is seen by device barriers within this plus
/// their own poll period (about 1024 polls, well under a millisecond), inside niinrun's
/// report window (0.5 s) before it stops the survivors.
pub(crate) const POLL: Duration = Duration::from_millis(10);

/// How long after a kernel of this PE stopped the CUDA driver may take to record the
/// context's error before the watchdog ends the process (module docs). The driver took
/// 0.6 to 1.3 s in the runs that ended (session 26, H100).
pub(crate) const STOP_REPORT_GRACE: Duration = Duration::from_secs(10);

/// The exit status of a process the watchdog ends because the driver never reported its
/// stopped kernel.
pub(crate) const UNREPORTED_STOP_STATUS: i32 = 1;

/// How often the probe thread asks the driver.
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// Set to `true` (and notified) when the watchdog must end.
type StopFlag = Arc<(Mutex<bool>, Condvar)>;

/// The running watchdog of one PE; dropping it stops and joins the thread (a probe thread
/// it started is told to end but not joined: it may be blocked in the driver).
#[derive(Debug)]
pub(crate) struct Watchdog {
    /// The two words (module docs): 0, or 1 + a PE that died; non-zero once a kernel of
    /// this PE stopped.
    words: Arc<HostPinned>,
    stop: StopFlag,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog of PE `me` on `device`, over `board` (its own mapping of
    /// niinrun's board) where there is one; a dead peer it sees marks `comm` for
    /// `ncclCommAbort`.
    pub(crate) fn start(
        device: &Device,
        board: Option<StatusBoard>,
        me: usize,
        comm: Comm,
    ) -> Result<Watchdog, TransportError> {
        // Pages of the library's own: the thread reads them until the transport is dropped,
        // which a program that exits without nvshmem_finalize never does, while the CUDA
        // driver may release its own pinned memory at exit.
        let words = Arc::new(HostPinned::register_on(device, 8).map_err(cuda_err)?);
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let watched = Mapped {
            words: Arc::clone(&words),
            board,
            me,
            comm,
            device: device.clone(),
        };
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("niin-watchdog-{me}"))
            .spawn(move || watch(&watched, &thread_stop, POLL, STOP_REPORT_GRACE))
            .map_err(|e| TransportError::Os {
                what: "starting the watchdog thread".into(),
                cause: e.to_string(),
            })?;
        Ok(Watchdog {
            words,
            stop,
            thread: Some(thread),
        })
    }

    /// The device address of the two words (`niin_host_info.abort_word`).
    pub(crate) fn device_word(&self) -> u64 {
        self.words.device_ptr()
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

/// What the watchdog's loop reads and does, apart from its timing: [`Mapped`] for a PE,
/// a fake in the tests.
trait Watched {
    /// This PE.
    fn me(&self) -> usize;
    /// Another PE that failed (niinrun's board), if any.
    fn failed_peer(&self) -> Option<usize>;
    /// Tells device barriers that `pe` died, once.
    fn tell_device(&self, pe: usize);
    /// Whether a kernel of this PE stopped itself (word 1).
    fn kernel_stopped(&self) -> bool;
    /// Starts asking the driver, on a thread that may block, whether it has recorded the
    /// context's error; the answers go to `probe`, and the asking ends at the first error
    /// or once `probe.quit` is set.
    fn start_probe(&self, probe: Arc<Probe>);
    /// Ends the process after printing `line`; only the tests' fake returns.
    fn give_up(&self, line: &str);
}

/// What the probe thread has learnt, shared with the watchdog.
#[derive(Debug, Default)]
struct Probe {
    /// The driver's error for the context, once it reported one.
    error: Mutex<Option<String>>,
    /// How many queries returned without an error.
    quiet_answers: AtomicU32,
    /// Set when the watchdog ends: the probe thread stops asking.
    quit: AtomicBool,
}

impl Probe {
    /// Asks `query` every `every` until it returns an error or `quit` is set; the body of
    /// the probe thread.
    fn run(&self, every: Duration, query: impl Fn() -> Result<(), String>) {
        while !self.quit.load(Ordering::Acquire) {
            match query() {
                Ok(()) => {
                    self.quiet_answers.fetch_add(1, Ordering::AcqRel);
                }
                Err(e) => {
                    *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return;
                }
            }
            std::thread::sleep(every);
        }
    }

    fn reported(&self) -> bool {
        self.error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}

/// The watchdog's loop: every `poll` until `stop` is set, tells device barriers of the
/// first failed peer, and, once a kernel stopped, gives up on the process if the driver
/// has not reported the stop within `grace` (module docs).
fn watch(watched: &impl Watched, stop: &StopFlag, poll: Duration, grace: Duration) {
    let (lock, wake) = &**stop;
    let mut told = false;
    let mut stopped_at: Option<(Instant, Arc<Probe>)> = None;
    let mut settled = false;
    let mut ending = lock.lock().unwrap_or_else(|e| e.into_inner());
    while !*ending {
        if !told && let Some(dead) = watched.failed_peer() {
            watched.tell_device(dead);
            told = true;
        }
        if stopped_at.is_none() && watched.kernel_stopped() {
            let probe = Arc::new(Probe::default());
            watched.start_probe(Arc::clone(&probe));
            stopped_at = Some((Instant::now(), probe));
        }
        if let Some((at, probe)) = &stopped_at
            && !settled
        {
            if probe.reported() {
                settled = true;
            } else if at.elapsed() >= grace {
                settled = true;
                let answers = probe.quiet_answers.load(Ordering::Acquire);
                watched.give_up(&unreported_line(watched.me(), at.elapsed(), answers));
            }
        }
        ending = wake
            .wait_timeout(ending, poll)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    if let Some((_, probe)) = stopped_at {
        probe.quit.store(true, Ordering::Release);
    }
}

/// The line printed before the watchdog ends a process whose stopped kernel the driver
/// never reported: this PE, how long it waited, and what the driver said meanwhile.
fn unreported_line(pe: usize, waited: Duration, quiet_answers: u32) -> String {
    let driver = if quiet_answers == 0 {
        "a query of the context (cuStreamQuery) has not returned".to_owned()
    } else {
        format!("{quiet_answers} queries of the context (cuStreamQuery) returned no error")
    };
    format!(
        "NIIN: PE {pe}: a kernel of this PE stopped {:.1} s ago (its NIIN: line above), but \
         the CUDA driver has not reported the stop to this process ({driver}), so its \
         synchronization would wait for ever; the watchdog ends the process with status \
         {UNREPORTED_STOP_STATUS} (seen with several PEs sharing one GPU and stopping together)",
        waited.as_secs_f64()
    )
}

/// The real [`Watched`]: the mapped words, niinrun's board, the communicator and the device
/// of one PE.
struct Mapped {
    words: Arc<HostPinned>,
    board: Option<StatusBoard>,
    me: usize,
    comm: Comm,
    device: Device,
}

impl Watched for Mapped {
    fn me(&self) -> usize {
        self.me
    }

    fn failed_peer(&self) -> Option<usize> {
        let board = self.board.as_ref()?;
        failed_peer(board, self.me).map(|(pe, _how)| pe)
    }

    fn tell_device(&self, pe: usize) {
        // Offset 0 of 8 bytes: in range and aligned, so the store cannot fail.
        let _ = self
            .words
            .store_u32(0, u32::try_from(pe + 1).unwrap_or(u32::MAX));
        self.comm.abort_on_drop();
        if let Some(board) = &self.board {
            board.mark_consequence(self.me);
        }
    }

    fn kernel_stopped(&self) -> bool {
        self.words.load_u32(4).is_ok_and(|stopped| stopped != 0)
    }

    fn start_probe(&self, probe: Arc<Probe>) {
        let device = self.device.clone();
        // A thread that cannot start leaves the probe without answers: the watchdog then
        // gives up after the grace, as for a query that never returns.
        let _ = std::thread::Builder::new()
            .name(format!("niin-probe-{}", self.me))
            .spawn(move || {
                probe.run(PROBE_EVERY, || {
                    device.query_error().map_err(|e| e.to_string())
                })
            });
    }

    fn give_up(&self, line: &str) {
        // The program's main thread is waiting in the driver for a report that does not
        // come (module docs).
        super::exit_guard::end_now(Some(line), UNREPORTED_STOP_STATUS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::PeEnd;
    use std::sync::mpsc;

    /// How the fake's driver answers once a kernel stopped.
    #[derive(Clone, Copy)]
    enum Driver {
        /// Reports the error after this long.
        ReportsAfter(Duration),
        /// Answers "no error" for ever.
        NeverReports,
        /// Its query never returns.
        Blocks,
    }

    /// A [`Watched`] whose board, words and driver the test sets.
    struct Fake {
        dead: Mutex<Option<usize>>,
        told: Mutex<Vec<usize>>,
        stopped: AtomicBool,
        driver: Driver,
        lines: mpsc::Sender<String>,
    }

    impl Fake {
        fn new(driver: Driver) -> (Arc<Fake>, mpsc::Receiver<String>) {
            let (lines, rx) = mpsc::channel();
            let fake = Fake {
                dead: Mutex::new(None),
                told: Mutex::new(Vec::new()),
                stopped: AtomicBool::new(false),
                driver,
                lines,
            };
            (Arc::new(fake), rx)
        }
    }

    impl Watched for Arc<Fake> {
        fn me(&self) -> usize {
            3
        }
        fn failed_peer(&self) -> Option<usize> {
            *self.dead.lock().unwrap()
        }
        fn tell_device(&self, pe: usize) {
            self.told.lock().unwrap().push(pe);
        }
        fn kernel_stopped(&self) -> bool {
            self.stopped.load(Ordering::Acquire)
        }
        fn start_probe(&self, probe: Arc<Probe>) {
            let driver = self.driver;
            let since = Instant::now();
            std::thread::spawn(move || match driver {
                Driver::ReportsAfter(after) => probe.run(Duration::from_millis(5), || {
                    if since.elapsed() >= after {
                        Err("CUDA_ERROR_LAUNCH_FAILED".into())
                    } else {
                        Ok(())
                    }
                }),
                Driver::NeverReports => probe.run(Duration::from_millis(5), || Ok(())),
                Driver::Blocks => {}
            });
        }
        fn give_up(&self, line: &str) {
            self.lines.send(line.to_owned()).unwrap();
        }
    }

    /// Runs the loop over `fake` on a thread (poll 5 ms); the returned closure stops and
    /// joins it.
    fn run(fake: &Arc<Fake>, grace: Duration) -> impl FnOnce() {
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let (watched, thread_stop) = (Arc::clone(fake), Arc::clone(&stop));
        let t = std::thread::spawn(move || {
            watch(&watched, &thread_stop, Duration::from_millis(5), grace)
        });
        move || {
            *stop.0.lock().unwrap() = true;
            stop.1.notify_all();
            t.join().unwrap();
        }
    }

    #[test]
    fn a_dead_peer_on_the_board_is_told_to_the_device_once_and_promptly() {
        let (dir, launcher) = crate::status::test_board("watchdog-dead", 3);
        let (fake, _lines) = Fake::new(Driver::NeverReports);
        let end = run(&fake, Duration::from_secs(60));
        // The real board's rule through the real failed_peer: neither a clean exit nor
        // this PE's own failure is a dead peer.
        launcher.record(1, &PeEnd::Success);
        launcher.record(0, &PeEnd::Failed("exited with status 3".into()));
        *fake.dead.lock().unwrap() = failed_peer(&launcher, 0).map(|(pe, _)| pe);
        std::thread::sleep(Duration::from_millis(50));
        assert!(fake.told.lock().unwrap().is_empty());
        launcher.record(2, &PeEnd::Failed("killed by signal 9 (SIGKILL)".into()));
        let at = Instant::now();
        *fake.dead.lock().unwrap() = failed_peer(&launcher, 0).map(|(pe, _)| pe);
        while fake.told.lock().unwrap().is_empty() && at.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(at.elapsed() < Duration::from_secs(1), "{:?}", at.elapsed());
        std::thread::sleep(Duration::from_millis(50));
        end();
        assert_eq!(*fake.told.lock().unwrap(), vec![2], "told once");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stopping_ends_the_watch_at_once() {
        let (fake, lines) = Fake::new(Driver::NeverReports);
        let stop: StopFlag = Arc::new((Mutex::new(false), Condvar::new()));
        let (watched, thread_stop) = (Arc::clone(&fake), Arc::clone(&stop));
        // a long poll: only the notification can end the wait in time
        let t = std::thread::spawn(move || {
            watch(
                &watched,
                &thread_stop,
                Duration::from_secs(3600),
                Duration::ZERO,
            )
        });
        std::thread::sleep(Duration::from_millis(20));
        let at = Instant::now();
        *stop.0.lock().unwrap() = true;
        stop.1.notify_all();
        t.join().unwrap();
        assert!(at.elapsed() < Duration::from_secs(1));
        assert!(
            lines.try_recv().is_err(),
            "no kernel stopped: nothing to give up on"
        );
    }

    #[test]
    fn a_stop_the_driver_reports_leaves_the_process_alone() {
        let (fake, lines) = Fake::new(Driver::ReportsAfter(Duration::from_millis(30)));
        let end = run(&fake, Duration::from_millis(300));
        fake.stopped.store(true, Ordering::Release);
        // well past the grace: a program that got its error may run on as long as it likes
        assert!(lines.recv_timeout(Duration::from_millis(900)).is_err());
        end();
    }

    #[test]
    fn a_stop_the_driver_never_reports_ends_the_process_after_the_grace() {
        for (driver, says) in [
            (
                Driver::NeverReports,
                "queries of the context (cuStreamQuery) returned no error",
            ),
            (
                Driver::Blocks,
                "a query of the context (cuStreamQuery) has not returned",
            ),
        ] {
            let (fake, lines) = Fake::new(driver);
            let grace = Duration::from_millis(200);
            let end = run(&fake, grace);
            std::thread::sleep(Duration::from_millis(30));
            let at = Instant::now();
            fake.stopped.store(true, Ordering::Release);
            let line = lines.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(at.elapsed() >= grace, "{:?}", at.elapsed());
            assert!(
                line.starts_with("NIIN: PE 3: a kernel of this PE stopped"),
                "{line}"
            );
            assert!(line.contains(says), "{line}");
            assert!(line.contains("ends the process with status 1"), "{line}");
            std::thread::sleep(Duration::from_millis(100));
            end();
            assert!(lines.try_recv().is_err(), "given up once");
        }
    }

    #[test]
    fn the_probe_counts_quiet_answers_stops_at_the_first_error_and_quits_on_request() {
        let probe = Probe::default();
        let asked = AtomicU32::new(0);
        probe.run(Duration::ZERO, || {
            if asked.fetch_add(1, Ordering::AcqRel) < 3 {
                Ok(())
            } else {
                Err("CUDA_ERROR_LAUNCH_FAILED".into())
            }
        });
        assert_eq!(probe.quiet_answers.load(Ordering::Acquire), 3);
        assert_eq!(asked.load(Ordering::Acquire), 4, "no query after the error");
        assert!(probe.reported());

        let probe = Arc::new(Probe::default());
        let thread_probe = Arc::clone(&probe);
        let t = std::thread::spawn(move || thread_probe.run(Duration::from_millis(1), || Ok(())));
        std::thread::sleep(Duration::from_millis(20));
        probe.quit.store(true, Ordering::Release);
        t.join().unwrap();
        assert!(!probe.reported());
        assert!(probe.quiet_answers.load(Ordering::Acquire) > 0);
    }
}
