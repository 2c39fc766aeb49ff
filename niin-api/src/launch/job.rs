//! Starting and supervising the PEs of a job.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use niin_transport::status::{PeEnd, STATUS_FILE_NAME, StatusBoard};

use super::cleanup::{HookGuard, RendezvousDir, remove_if_exists, sweep_stale};
use super::output::{Forwarder, StreamKind};
use super::signals::{SignalMark, signal_name};
use super::{
    EXIT_INTERNAL, EXIT_TIMEOUT, LaunchError, LaunchSpec, MAX_PES, env, generate_job_id,
    validate_job_id,
};

/// How often the launcher checks its PEs, signals and the timeout.
const TICK: Duration = Duration::from_millis(10);

/// How long, after the last PE exited, the launcher waits for its pipes to close before
/// it kills what is left in the PEs' process groups.
const LINGER: Duration = Duration::from_millis(50);

/// How long, after a PE failed, the launcher lets the others end by themselves (and say
/// why: "PE 3 died (killed by signal 9 (SIGKILL))") before it stops them with SIGTERM.
pub const REPORT_WINDOW: Duration = Duration::from_millis(500);

/// What a job is, as told to [`CleanupHook`](super::CleanupHook)s and kept in the
/// [`JobOutcome`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job id (`NIIN_JOB_ID` of the PEs).
    pub job_id: String,
    /// The number of PEs (`NIIN_NPES`).
    pub n_pes: usize,
    /// The rendezvous directory (`NIIN_RENDEZVOUS_DIR`); it no longer exists once
    /// [`run`] returned.
    pub rendezvous_dir: PathBuf,
}

/// How the process of one PE ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeStatus {
    /// It exited with this status.
    Exited(i32),
    /// It was killed by a signal.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// Its status could not be collected (someone else reaped it).
    Unknown,
}

impl PeStatus {
    /// Whether the PE exited with status 0.
    pub fn success(self) -> bool {
        self == Self::Exited(0)
    }

    /// The exit status a shell would report: the status, 128 + signal, or
    /// [`EXIT_INTERNAL`] when unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Exited(code) => code,
            Self::Signaled { signal, .. } => 128 + signal,
            Self::Unknown => EXIT_INTERNAL,
        }
    }

    fn from_exit_status(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Signaled {
                signal,
                core_dumped: status.core_dumped(),
            },
            (None, None) => Self::Unknown,
        }
    }
}

impl fmt::Display for PeStatus {
    /// `exited with status 3`, `killed by signal 9 (SIGKILL)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Exited(code) => write!(f, "exited with status {code}"),
            Self::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "killed by signal {signal} ({})", signal_name(signal))?;
                if core_dumped {
                    f.write_str(" (core dumped)")
                } else {
                    Ok(())
                }
            }
            Self::Unknown => f.write_str("ended with an unknown status"),
        }
    }
}

/// What happened to one PE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeReport {
    /// How its process ended.
    pub status: PeStatus,
    /// Whether the launcher signalled it to stop (it was still running when the job was
    /// stopped).
    pub stopped_by_launcher: bool,
    /// Its raw standard output, with [`OutputMode::Capture`](super::OutputMode::Capture);
    /// empty otherwise.
    pub stdout: Vec<u8>,
    /// Its raw standard error, with [`OutputMode::Capture`](super::OutputMode::Capture);
    /// empty otherwise.
    pub stderr: Vec<u8>,
}

/// Why a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// Every PE exited with status 0.
    Completed,
    /// PE `pe` was the first to exit with a non-zero status or to be killed by a signal;
    /// the others were stopped.
    PeFailed {
        /// The PE.
        pe: usize,
        /// How it ended.
        status: PeStatus,
    },
    /// The timeout expired; the PEs still running were stopped.
    TimedOut {
        /// The timeout.
        after: Duration,
        /// How many PEs were still running.
        stopped: usize,
    },
    /// The launcher received a signal (see
    /// [`install_signal_handlers`](super::install_signal_handlers)) and stopped the job.
    Interrupted {
        /// The signal.
        signal: i32,
        /// How many PEs were still running.
        stopped: usize,
    },
}

impl JobEnd {
    /// The exit status of niinrun for this end: 0, the failed PE's
    /// [`PeStatus::exit_code`], [`EXIT_TIMEOUT`], or 128 + the signal received.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Completed => 0,
            Self::PeFailed { status, .. } => status.exit_code(),
            Self::TimedOut { .. } => EXIT_TIMEOUT,
            Self::Interrupted { signal, .. } => 128 + signal,
        }
    }
}

/// `count PE` or `count PEs`.
fn count_pes(count: usize) -> String {
    if count == 1 {
        "1 PE".to_owned()
    } else {
        format!("{count} PEs")
    }
}

impl fmt::Display for JobEnd {
    /// `PE 2 exited with status 3`, `timeout after 0.5s; killed 3 PEs`,
    /// `received SIGINT; stopped 4 PEs`, `every PE exited with status 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Completed => f.write_str("every PE exited with status 0"),
            Self::PeFailed { pe, status } => write!(f, "PE {pe} {status}"),
            Self::TimedOut { after, stopped } => {
                write!(
                    f,
                    "timeout after {}s; killed {}",
                    after.as_secs_f64(),
                    count_pes(stopped)
                )
            }
            Self::Interrupted { signal, stopped } => {
                write!(
                    f,
                    "received {}; stopped {}",
                    signal_name(signal),
                    count_pes(stopped)
                )
            }
        }
    }
}

/// The result of a job that was started.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// The job.
    pub job: JobInfo,
    /// Why it ended.
    pub end: JobEnd,
    /// What happened to each PE, by rank.
    pub pes: Vec<PeReport>,
    /// Time from the start of [`run`] to the end of the last PE and its output.
    pub elapsed: Duration,
}

impl JobOutcome {
    /// The exit status of niinrun ([`JobEnd::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.end.exit_code()
    }

    /// Whether every PE exited with status 0.
    pub fn success(&self) -> bool {
        self.end == JobEnd::Completed
    }

    /// The PE whose failure ended the job, if one did.
    pub fn failed_pe(&self) -> Option<usize> {
        match self.end {
            JobEnd::PeFailed { pe, .. } => Some(pe),
            _ => None,
        }
    }

    /// Whether the timeout ended the job.
    pub fn timed_out(&self) -> bool {
        matches!(self.end, JobEnd::TimedOut { .. })
    }

    /// The line niinrun prints on stderr (after `niinrun: `) when the job did not
    /// complete, e.g. `PE 2 exited with status 3`; `None` when it completed.
    pub fn message(&self) -> Option<String> {
        (!self.success()).then(|| self.end.to_string())
    }
}

/// Runs a job: starts `spec.n_pes` processes of `spec.program` with the
/// [`env`](mod@super::env) variables, forwards (or captures) their output, waits until all
/// of them ended or the job is stopped (a PE failed, timeout, signal — see the [module
/// docs](super)), then runs the cleanup hooks and removes the rendezvous directory.
/// Blocks until all that is done. Safe to call from several threads at once.
///
/// # Errors
///
/// [`LaunchError::InvalidPeCount`] or [`LaunchError::InvalidJobId`] for a bad spec,
/// [`LaunchError::Rendezvous`] when the rendezvous directory cannot be created,
/// [`LaunchError::Spawn`] when a PE cannot be started (the PEs already started are
/// killed and the cleanup hooks run), [`LaunchError::Io`] when the output thread cannot
/// be started. Failures of PEs are no error: they are in the [`JobOutcome`].
pub fn run(spec: &LaunchSpec) -> Result<JobOutcome, LaunchError> {
    let n_pes = spec.n_pes;
    if !(1..=MAX_PES).contains(&n_pes) {
        return Err(LaunchError::InvalidPeCount(n_pes.to_string()));
    }
    let job_id = match &spec.job_id {
        Some(id) => {
            validate_job_id(id)?;
            id.clone()
        }
        None => generate_job_id(),
    };
    let start = Instant::now();
    let signals = SignalMark::now();
    // Two pipes and a pidfd per PE.
    raise_fd_limit(3 * n_pes + 256);

    // What niinruns killed by SIGKILL left behind; then a stale job file of this job id
    // (a job of that id whose niinrun was killed before its PE 0 unlinked it).
    let sweep = sweep_stale(&std::env::temp_dir());
    if !sweep.live.contains(&job_id) {
        for path in super::mock_transport_paths(&job_id) {
            let _ = remove_if_exists(&path);
        }
    }

    // Dropped in reverse order: PEs killed (on early return), hooks run, directory removed.
    let rendezvous = RendezvousDir::create(&job_id)?;
    let job = JobInfo {
        job_id,
        n_pes,
        rendezvous_dir: rendezvous.path().to_owned(),
    };
    let _hooks = HookGuard {
        hooks: &spec.cleanup,
        job: &job,
    };
    // The PEs read how a peer ended from it; without it they only learn that it died.
    let board = StatusBoard::create(&rendezvous.path().join(STATUS_FILE_NAME), n_pes).ok();
    let mut procs = Procs {
        procs: Vec::with_capacity(n_pes),
        board,
        reaped: 0,
    };

    let mut pipes = Vec::with_capacity(2 * n_pes);
    for pe in 0..n_pes {
        let mut child = command(spec, &job, pe)
            .spawn()
            .map_err(|source| LaunchError::Spawn {
                pe,
                program: spec.program.clone(),
                source,
            })?;
        if let Some(out) = child.stdout.take() {
            pipes.push((pe, StreamKind::Stdout, File::from(OwnedFd::from(out))));
        }
        if let Some(err) = child.stderr.take() {
            pipes.push((pe, StreamKind::Stderr, File::from(OwnedFd::from(err))));
        }
        procs.procs.push(Proc {
            pid: child.id(),
            pidfd: pidfd_open(child.id()),
            child,
            status: None,
            stopped: false,
            reaped_at: 0,
        });
    }
    let forwarder =
        Forwarder::start(pipes, spec.output, n_pes).map_err(|source| LaunchError::Io {
            what: "cannot start the output thread",
            source,
        })?;

    let end = supervise(&mut procs, spec, start, signals);

    // The PEs are gone; processes they left in their groups may hold the pipes open.
    let linger_until = Instant::now() + LINGER;
    while !forwarder.is_finished() && Instant::now() < linger_until {
        thread::sleep(Duration::from_millis(2));
    }
    if !forwarder.is_finished() {
        procs.signal_groups(libc::SIGKILL, true);
        let until = Instant::now() + LINGER;
        while !forwarder.is_finished() && Instant::now() < until {
            thread::sleep(Duration::from_millis(2));
        }
    }
    let mut captured = forwarder.finish().into_iter();
    let pes = procs
        .procs
        .iter()
        .map(|p| {
            let (stdout, stderr) = captured.next().unwrap_or_default();
            PeReport {
                status: p.status.unwrap_or(PeStatus::Unknown),
                stopped_by_launcher: p.stopped,
                stdout,
                stderr,
            }
        })
        .collect();
    Ok(JobOutcome {
        job: job.clone(),
        end,
        pes,
        elapsed: start.elapsed(),
    })
}

/// Waits until every PE ended, stopping the job on the first failure, a signal or the
/// timeout.
fn supervise(procs: &mut Procs, spec: &LaunchSpec, start: Instant, signals: SignalMark) -> JobEnd {
    let deadline = spec.timeout.and_then(|t| start.checked_add(t));
    let mut end = None;
    // When the job was stopped: SIGKILL time, and the signal count then.
    let mut stopping: Option<(Instant, u64)> = None;
    let mut killed = false;
    // After a PE failed: when the others get SIGTERM unless they ended by then.
    let mut term_at: Option<Instant> = None;
    loop {
        let failure = procs.reap();
        let running = procs.running();
        let (signal_count, signal) = signals.since();
        let now = Instant::now();
        if let Some(at) = term_at
            && (now >= at || signal_count > 0 || deadline.is_some_and(|d| now >= d))
        {
            term_at = None;
            procs.signal_groups(libc::SIGTERM, false);
            stopping = Some((now + spec.grace, signal_count));
        }
        match stopping {
            None if term_at.is_some() => {}
            None => {
                if let Some((pe, status)) = failure {
                    // The others may end by themselves, reporting this PE's failure.
                    end = Some(JobEnd::PeFailed { pe, status });
                    term_at = Some(now + REPORT_WINDOW);
                }
                let stop = if failure.is_some() {
                    None
                } else if signal_count > 0 {
                    Some((
                        JobEnd::Interrupted {
                            signal,
                            stopped: running,
                        },
                        signal,
                    ))
                } else if deadline.is_some_and(|d| now >= d) {
                    let after = spec.timeout.unwrap_or_default();
                    Some((
                        JobEnd::TimedOut {
                            after,
                            stopped: running,
                        },
                        libc::SIGTERM,
                    ))
                } else {
                    None
                };
                if let Some((why, signal)) = stop {
                    procs.signal_groups(signal, false);
                    stopping = Some((now + spec.grace, signal_count));
                    end = Some(why);
                }
            }
            Some((kill_at, count_then)) => {
                if !killed && (now >= kill_at || signal_count > count_then) {
                    procs.signal_groups(libc::SIGKILL, false);
                    killed = true;
                }
            }
        }
        if running == 0 {
            return end.unwrap_or(JobEnd::Completed);
        }
        procs.wait_any(TICK);
    }
}

/// A pidfd of process `pid` (Linux 5.3+), readable once it ends; `None` where there is
/// none (the launcher then looks every [`TICK`]).
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd as _;
        // SAFETY: pidfd_open takes a pid and flags, no pointers; `pid` is our unreaped child.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let fd = libc::c_int::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // Not inherited by the PEs started later.
        // SAFETY: fcntl on a descriptor we own; FD_CLOEXEC is a plain flag.
        unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                libc::F_SETFD,
                libc::FD_CLOEXEC,
            )
        };
        Some(fd)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// The command that starts PE `pe`.
fn command(spec: &LaunchSpec, job: &JobInfo, pe: usize) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, value) in &spec.extra_env {
        cmd.env(key, value);
    }
    let (rank, n) = (pe.to_string(), job.n_pes.to_string());
    cmd.env(env::PE, &rank)
        .env(env::NPES, &n)
        .env(env::LOCAL_PE, &rank)
        .env(env::LOCAL_NPES, &n)
        .env(env::JOB_ID, &job.job_id)
        .env(env::RENDEZVOUS_DIR, &job.rendezvous_dir)
        .env(env::LAUNCHER, env::LAUNCHER_NAME);
    #[cfg(target_os = "linux")]
    die_with_parent(&mut cmd);
    cmd
}

/// Makes the child get SIGKILL when the launcher dies (`PR_SET_PDEATHSIG`).
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    let zero: libc::c_ulong = 0;
    let hook = move || -> io::Result<()> {
        // SAFETY: prctl(PR_SET_PDEATHSIG) is a plain system call (async-signal-safe); its
        // arguments are integers, no pointers.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                zero,
                zero,
                zero,
            )
        };
        if rc == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid is async-signal-safe and cannot fail.
        let ppid = unsafe { libc::getppid() };
        if u32::try_from(ppid) != Ok(parent) {
            // The launcher died before prctl took effect: the signal will never come.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the hook runs in the child between fork and exec; it only makes the
    // async-signal-safe system calls prctl and getppid, and builds `io::Error`s from OS
    // error codes (no allocation, no locks), which is sound even in a multi-threaded parent.
    unsafe { cmd.pre_exec(hook) };
}

/// Raises the soft limit on open files to `needed` (at most the hard limit): the launcher
/// holds two pipes per PE, and `poll` refuses more descriptors than the limit.
fn raise_fd_limit(needed: usize) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable `rlimit` for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let needed = libc::rlim_t::try_from(needed).unwrap_or(libc::rlim_t::MAX);
    if limit.rlim_cur >= needed {
        return;
    }
    limit.rlim_cur = needed.min(limit.rlim_max);
    // SAFETY: `limit` is a valid `rlimit` whose soft limit does not exceed its hard limit.
    // Failure only leaves the old limit, which spawning or polling then reports.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
}

/// A started PE.
struct Proc {
    child: Child,
    /// Its pid, which is also its process group id.
    pid: u32,
    /// Its pidfd, readable once it ended (where the kernel has pidfds).
    pidfd: Option<OwnedFd>,
    /// Set once it was reaped.
    status: Option<PeStatus>,
    /// Whether the launcher signalled it while it ran.
    stopped: bool,
    /// In which call of [`Procs::reap`] it was reaped (1, 2, ...; 0 while running).
    reaped_at: u64,
}

/// The PEs of a job; kills and reaps those still running when dropped (early return,
/// panic).
struct Procs {
    procs: Vec<Proc>,
    /// The status board the PEs read (`pe-status` in the rendezvous directory).
    board: Option<StatusBoard>,
    /// How many times [`Procs::reap`] ran.
    reaped: u64,
}

impl Procs {
    /// Reaps the PEs that ended and records how on the status board; returns the one that
    /// failed first of those that just failed. The launcher wakes as soon as a PE ends
    /// ([`Procs::wait_any`]), so PEs that end together are rare; among them, a PE whose
    /// failure is its own comes before one that marked its failure a consequence of
    /// another's (on the board), a PE killed by a signal before one that exited (PEs that
    /// find a peer dead exit with an error), then by rank.
    fn reap(&mut self) -> Option<(usize, PeStatus)> {
        self.reaped += 1;
        let mut failures = Vec::new();
        for (pe, proc) in self.procs.iter_mut().enumerate() {
            if proc.status.is_some() {
                continue;
            }
            let status = match proc.child.try_wait() {
                Ok(Some(status)) => PeStatus::from_exit_status(status),
                Ok(None) => continue,
                Err(_) => PeStatus::Unknown,
            };
            proc.status = Some(status);
            proc.reaped_at = self.reaped;
            proc.pidfd = None;
            if let Some(board) = &self.board {
                let end = if status.success() {
                    PeEnd::Success
                } else {
                    PeEnd::Failed(status.to_string())
                };
                board.record(pe, &end);
            }
            if !status.success() {
                failures.push((pe, status));
            }
        }
        let consequence = |pe: usize| self.board.as_ref().is_some_and(|b| b.is_consequence(pe));
        failures.into_iter().min_by_key(|&(pe, status)| {
            (
                consequence(pe),
                !matches!(status, PeStatus::Signaled { .. }),
                pe,
            )
        })
    }

    /// Sleeps until a PE ends (its pidfd becomes readable) or `tick` passed.
    fn wait_any(&self, tick: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .procs
            .iter()
            .filter(|p| p.status.is_none())
            .filter_map(|p| p.pidfd.as_ref())
            .map(|fd| libc::pollfd {
                fd: std::os::fd::AsRawFd::as_raw_fd(fd),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if fds.len() < self.running() {
            // Some PE has no pidfd: look every tick.
            thread::sleep(tick);
            return;
        }
        let ms = libc::c_int::try_from(tick.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds, alive across the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }

    /// How many PEs have not been reaped.
    fn running(&self) -> usize {
        self.procs.iter().filter(|p| p.status.is_none()).count()
    }

    /// Sends `signal` to the process group of every PE still running (of every PE, also
    /// the reaped ones, when `all`: what is left of their groups).
    fn signal_groups(&mut self, signal: libc::c_int, all: bool) {
        for proc in &mut self.procs {
            if proc.status.is_some() && !all {
                continue;
            }
            let Ok(pgid) = libc::pid_t::try_from(proc.pid) else {
                continue;
            };
            if proc.status.is_none() {
                proc.stopped = true;
            }
            // SAFETY: kill has no memory-safety preconditions. The PE was started with
            // `process_group(0)`, so `-pgid` names the group it leads; it is not reaped
            // yet (or, with `all`, was reaped a moment ago), so the id was not reused.
            let rc = unsafe { libc::kill(-pgid, signal) };
            if rc != 0 && proc.status.is_none() {
                let _ = proc.child.kill();
            }
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        if self.running() == 0 {
            return;
        }
        self.signal_groups(libc::SIGKILL, false);
        for proc in &mut self.procs {
            if proc.status.is_none() {
                proc.status = Some(
                    proc.child
                        .wait()
                        .map_or(PeStatus::Unknown, PeStatus::from_exit_status),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CleanupHook, OutputMode};
    use super::*;
    use std::sync::{Arc, Mutex};

    fn sh(n_pes: usize, script: &str) -> LaunchSpec {
        let mut spec = LaunchSpec::new(n_pes, "/bin/sh");
        spec.args = vec!["-c".into(), script.into()];
        spec.output = OutputMode::Capture;
        spec
    }

    #[test]
    fn captures_output_and_statuses() {
        let mut spec = sh(3, r#"echo "out $NIIN_PE"; printf "err $NIIN_LAUNCHER" >&2"#);
        spec.extra_env.push(("NIIN_PE".into(), "overridden".into()));
        spec.extra_env.push(("EXTRA".into(), "x".into()));
        let outcome = run(&spec).unwrap();
        assert!(outcome.success(), "{outcome:?}");
        assert_eq!(outcome.exit_code(), 0);
        assert_eq!(outcome.message(), None);
        assert_eq!(outcome.pes.len(), 3);
        for (pe, report) in outcome.pes.iter().enumerate() {
            assert_eq!(report.status, PeStatus::Exited(0));
            assert!(!report.stopped_by_launcher);
            assert_eq!(report.stdout, format!("out {pe}\n").as_bytes());
            assert_eq!(report.stderr, b"err niinrun");
        }
        assert!(!outcome.job.rendezvous_dir.exists());
    }

    #[test]
    fn failure_stops_the_others_and_hooks_run() {
        let seen = Arc::new(Mutex::new(None));
        let mut spec = sh(3, r#"[ "$NIIN_PE" = 1 ] && exit 7; exec sleep 30"#);
        spec.job_id = Some(format!("unit-{}-fail", std::process::id()));
        let log = Arc::clone(&seen);
        spec.cleanup.push(CleanupHook::new("probe", move |job| {
            *log.lock().unwrap() = Some((job.clone(), job.rendezvous_dir.is_dir()));
            Ok(())
        }));
        let outcome = run(&spec).unwrap();
        assert_eq!(
            outcome.end,
            JobEnd::PeFailed {
                pe: 1,
                status: PeStatus::Exited(7)
            }
        );
        assert_eq!(outcome.exit_code(), 7);
        assert_eq!(outcome.failed_pe(), Some(1));
        assert_eq!(outcome.message().unwrap(), "PE 1 exited with status 7");
        assert!(outcome.elapsed < Duration::from_secs(10));
        for pe in [0, 2] {
            let report = &outcome.pes[pe];
            assert!(report.stopped_by_launcher);
            assert_eq!(
                report.status,
                PeStatus::Signaled {
                    signal: 15,
                    core_dumped: false
                }
            );
        }
        let (job, dir_existed) = seen.lock().unwrap().clone().expect("hook ran");
        assert_eq!(job, outcome.job);
        assert!(
            dir_existed,
            "hooks run before the rendezvous directory is removed"
        );
        assert!(!job.rendezvous_dir.exists());
    }

    #[test]
    fn grace_then_sigkill_for_pes_ignoring_sigterm() {
        // PE 0 fails once PE 1 ignores SIGTERM (which its `sleep` inherits).
        let mut spec = sh(
            2,
            r#"trap '' TERM; ready="$NIIN_RENDEZVOUS_DIR/ready"
            if [ "$NIIN_PE" = 0 ]; then
                while [ ! -e "$ready" ]; do sleep 0.01; done; exit 1
            fi
            touch "$ready"; sleep 30"#,
        );
        spec.grace = Duration::from_millis(200);
        let outcome = run(&spec).unwrap();
        assert_eq!(outcome.exit_code(), 1);
        assert_eq!(
            outcome.pes[1].status,
            PeStatus::Signaled {
                signal: 9,
                core_dumped: false
            }
        );
        assert!(
            outcome.elapsed < Duration::from_secs(5),
            "{:?}",
            outcome.elapsed
        );
    }

    #[test]
    fn spawn_failure_runs_hooks() {
        let ran = Arc::new(Mutex::new(false));
        let mut spec = LaunchSpec::new(2, "/nonexistent/niinrun-test-program");
        let flag = Arc::clone(&ran);
        spec.cleanup.push(CleanupHook::new("probe", move |_| {
            *flag.lock().unwrap() = true;
            Ok(())
        }));
        let err = run(&spec).unwrap_err();
        assert!(matches!(&err, LaunchError::Spawn { pe: 0, .. }), "{err:?}");
        assert_eq!(err.exit_code(), 127);
        assert!(
            err.to_string()
                .starts_with("cannot start /nonexistent/niinrun-test-program: ")
        );
        assert!(*ran.lock().unwrap());
    }

    #[test]
    fn invalid_specs() {
        for n in [0, MAX_PES + 1] {
            let err = run(&sh(n, "true")).unwrap_err();
            assert!(matches!(err, LaunchError::InvalidPeCount(v) if v == n.to_string()));
        }
        let mut spec = sh(1, "true");
        spec.job_id = Some("a/b".into());
        assert!(matches!(run(&spec), Err(LaunchError::InvalidJobId(v)) if v == "a/b"));
    }

    #[test]
    fn end_messages_and_codes() {
        let killed = PeStatus::Signaled {
            signal: 9,
            core_dumped: false,
        };
        assert_eq!(
            JobEnd::PeFailed {
                pe: 2,
                status: killed
            }
            .to_string(),
            "PE 2 killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            JobEnd::PeFailed {
                pe: 2,
                status: killed
            }
            .exit_code(),
            137
        );
        let core = PeStatus::Signaled {
            signal: 11,
            core_dumped: true,
        };
        assert_eq!(
            core.to_string(),
            "killed by signal 11 (SIGSEGV) (core dumped)"
        );
        let t = JobEnd::TimedOut {
            after: Duration::from_secs(10),
            stopped: 4,
        };
        assert_eq!(t.to_string(), "timeout after 10s; killed 4 PEs");
        assert_eq!(t.exit_code(), 124);
        let t = JobEnd::TimedOut {
            after: Duration::from_millis(500),
            stopped: 1,
        };
        assert_eq!(t.to_string(), "timeout after 0.5s; killed 1 PE");
        let i = JobEnd::Interrupted {
            signal: libc::SIGINT,
            stopped: 3,
        };
        assert_eq!(i.to_string(), "received SIGINT; stopped 3 PEs");
        assert_eq!(i.exit_code(), 130);
        assert_eq!(
            JobEnd::Interrupted {
                signal: libc::SIGTERM,
                stopped: 0
            }
            .exit_code(),
            143
        );
        assert_eq!(JobEnd::Completed.exit_code(), 0);
        assert_eq!(PeStatus::Unknown.exit_code(), 125);
    }
}
