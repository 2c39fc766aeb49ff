//! The single-node job launcher behind `niinrun` (like `mpirun -np N`, for one node).
//!
//! `niinrun [OPTIONS] [--] PROGRAM [ARGS...]` starts `N` processes of `PROGRAM` — the
//! processing elements (PEs) of one SPMD job — forwards their output line by line, waits
//! for all of them and exits with a status that tells how the job ended. The binary is a
//! thin layer over this module: [`parse_args`] turns the command line into a [`Cli`], and
//! [`run`] starts and supervises a job described by a [`LaunchSpec`]. Tests in other
//! crates call [`run`] directly (usually with [`OutputMode::Capture`]) to start a worker
//! binary as a multi-process job.
//!
//! # Environment contract
//!
//! Every PE inherits niinrun's environment plus [`LaunchSpec::extra_env`], and then the
//! following variables, which always win over inherited or extra values. They are read by
//! niin-api's SPMD initialisation and, later, by GPU programs. The names are the
//! constants of [`env`](mod@env).
//!
//! | variable              | value                                                        |
//! |-----------------------|--------------------------------------------------------------|
//! | `NIIN_PE`             | world rank of this PE, `0..N`                                |
//! | `NIIN_NPES`           | `N`, the number of PEs in the job                            |
//! | `NIIN_LOCAL_PE`       | rank of this PE on this node (one node: equal to `NIIN_PE`)  |
//! | `NIIN_LOCAL_NPES`     | number of PEs on this node (one node: equal to `N`)          |
//! | `NIIN_JOB_ID`         | job id, unique per job: 1 to 64 characters `[A-Za-z0-9_.-]`  |
//! | `NIIN_RENDEZVOUS_DIR` | a fresh private (0700) directory of the job, removed at exit |
//! | `NIIN_LAUNCHER`       | `niinrun`                                                    |
//!
//! The job id is `<niinrun pid>-<nanoseconds since the epoch, hex>` unless
//! [`LaunchSpec::job_id`] names one; the binary takes it from `NIIN_JOB_ID` when that is
//! already set in its own environment (after validating it with [`validate_job_id`]).
//! The rendezvous directory is `std::env::temp_dir()/niinrun-<job id>` (with a `-<k>`
//! suffix when that name is taken). Standard input of every PE is `/dev/null`.
//!
//! # Output
//!
//! Each line a PE writes to stdout is written to niinrun's stdout as `[pe N] line`, and
//! likewise for stderr ([`OutputMode::Prefixed`]). Lines are written whole under the
//! stream's lock, so lines of different PEs never interleave; bytes are passed through
//! unchanged (no UTF-8 is assumed); a final line without a newline is still printed (and
//! terminated by a newline); lines longer than 64 KiB are split. [`OutputMode::Plain`]
//! (`--no-prefix`) forwards the same lines without prefix and without adding newlines.
//! When niinrun's stdout (stderr) is a closed pipe (`niinrun ... | head`), the PEs' stdout
//! (stderr) pipes are closed too, so PEs that keep writing get SIGPIPE, as in a pipeline.
//!
//! # Exit status
//!
//! | status        | meaning                                                            |
//! |---------------|--------------------------------------------------------------------|
//! | `0`           | every PE exited with status 0                                      |
//! | `1..=255`     | the first PE that failed exited with this status                   |
//! | `128 + sig`   | the first PE that failed was killed by signal `sig` (137: SIGKILL) |
//! | `124`         | `--timeout` expired; the job was stopped                           |
//! | `129/130/143` | niinrun received SIGHUP/SIGINT/SIGTERM and stopped the job         |
//! | `125`         | niinrun itself failed (rendezvous directory, threads, ...)         |
//! | `127`         | `PROGRAM` could not be started (not found, not executable, ...)    |
//! | `2`           | invalid command line or invalid `NIIN_JOB_ID`                      |
//!
//! When a PE fails, niinrun reports it on stderr (`niinrun: PE 2 exited with status 3`,
//! `niinrun: PE 1 killed by signal 9 (SIGKILL)`), records how it ended on the job's status
//! board (below), lets the others end by themselves for [`REPORT_WINDOW`] (PEs of the
//! mock transport waiting for the failed PE then report it, "PE 1 died (killed by signal 9
//! (SIGKILL)); barrier cannot complete", and exit), and then stops those left: SIGTERM to
//! each PE's process group, then SIGKILL after a grace period of [`DEFAULT_GRACE`].
//!
//! The PE blamed is the one whose failure came first: niinrun sleeps on a pidfd per PE
//! and wakes as soon as one ends, so a PE that exits because it found a dead peer ends
//! after the dead PE was reaped. Among PEs found ended at the same wake, one that did not
//! mark its failure as a consequence of another's on the status board comes first, then
//! one killed by a signal before one that exited, then the lowest rank.
//!
//! The status board is the file `pe-status` in the rendezvous directory
//! ([`niin_transport::status::StatusBoard`]): how each PE ended, written when it is reaped,
//! read by the PEs still running.
//!
//! A timeout
//! (`niinrun: timeout after 10s; killed 4 PEs`) and SIGINT/SIGTERM/SIGHUP received by
//! niinrun (forwarded to every PE's process group) stop the job the same way; a second
//! signal during that grace period sends SIGKILL at once.
//!
//! # Process hygiene and cleanup
//!
//! Each PE is the leader of its own process group, so stopping a PE also stops the
//! processes it started; on Linux each PE also gets `PR_SET_PDEATHSIG(SIGKILL)`, so PEs
//! die when niinrun dies without cleaning up (e.g. SIGKILL; their own children are then
//! not reached). When all PEs have ended but something still holds their output pipes
//! open after 50 ms, niinrun sends SIGKILL to what is left in their process groups. Then the
//! [`CleanupHook`]s of [`LaunchSpec::cleanup`] run, in order, whatever way the job ended
//! (including failures to start a PE), and finally the rendezvous directory is removed.
//! The binary registers [`CleanupHook::mock_transport`], which removes the files a
//! crashed mock-transport PE may leave behind (see [`MOCK_SHM_PREFIX`]). Nothing can run
//! when niinrun itself is killed by SIGKILL; so [`run`] first tidies up after niinruns
//! that were: it holds an exclusive `flock` on `niinrun.lock` (holding the job id) in its
//! rendezvous directory while the job runs, and removes every `niinrun-*` directory in the
//! temporary directory whose lock nobody holds, with its job's mock-transport files; then
//! it removes a mock-transport file of its own job id that no running niinrun holds (a
//! stale file would make the job's PE 0 fail).

mod cleanup;
mod cli;
mod error;
mod job;
mod job_id;
mod output;
mod signals;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use cleanup::{CleanupHook, MOCK_SHM_PREFIX, mock_transport_paths};
pub use cli::{Cli, USAGE, VERSION, parse_args};
pub use error::LaunchError;
pub use job::{JobEnd, JobInfo, JobOutcome, PeReport, PeStatus, REPORT_WINDOW, run};
pub use job_id::{generate_job_id, job_id_from_env, validate_job_id};
pub use signals::install_signal_handlers;

/// Names of the environment variables niinrun sets for every PE (see the [module
/// docs](self#environment-contract)).
pub mod env {
    /// World rank of the PE, `0..NIIN_NPES`.
    pub const PE: &str = "NIIN_PE";
    /// Number of PEs in the job.
    pub const NPES: &str = "NIIN_NPES";
    /// Rank of the PE on this node; niinrun runs on one node, so it equals [`PE`].
    pub const LOCAL_PE: &str = "NIIN_LOCAL_PE";
    /// Number of PEs on this node; niinrun runs on one node, so it equals [`NPES`].
    pub const LOCAL_NPES: &str = "NIIN_LOCAL_NPES";
    /// Identifier of the job, unique per job: 1 to 64 characters of `[A-Za-z0-9_.-]`.
    pub const JOB_ID: &str = "NIIN_JOB_ID";
    /// A fresh private directory for the job (e.g. for rendezvous files); removed at exit.
    pub const RENDEZVOUS_DIR: &str = "NIIN_RENDEZVOUS_DIR";
    /// Name of the launcher that started the PE; niinrun sets it to [`LAUNCHER_NAME`].
    pub const LAUNCHER: &str = "NIIN_LAUNCHER";
    /// The value of [`LAUNCHER`] in PEs started by niinrun.
    pub const LAUNCHER_NAME: &str = "niinrun";
    /// Every variable niinrun sets, in the order of the module docs.
    pub const ALL: [&str; 7] = [
        PE,
        NPES,
        LOCAL_PE,
        LOCAL_NPES,
        JOB_ID,
        RENDEZVOUS_DIR,
        LAUNCHER,
    ];
}

/// The largest number of PEs one job may have.
pub const MAX_PES: usize = 1024;

/// Time between SIGTERM and SIGKILL when niinrun stops the PEs of a job.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Exit status for a job stopped by `--timeout` (as GNU `timeout`).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status when niinrun itself fails (rendezvous directory, threads, ...).
pub const EXIT_INTERNAL: i32 = 125;
/// Exit status when `PROGRAM` cannot be started.
pub const EXIT_CANNOT_START: i32 = 127;
/// Exit status for an invalid command line or job id.
pub const EXIT_USAGE: i32 = 2;

/// Where the output of the PEs goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Forward every line to niinrun's stdout/stderr, prefixed with `[pe N] `.
    #[default]
    Prefixed,
    /// Forward every line to niinrun's stdout/stderr unchanged (`--no-prefix`).
    Plain,
    /// Forward nothing; keep each PE's raw output in [`PeReport::stdout`] and
    /// [`PeReport::stderr`] (for tests).
    Capture,
}

/// Everything [`run`] needs to start a job. Build one with [`LaunchSpec::new`] and adjust
/// the public fields.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Number of PEs to start, `1..=MAX_PES`.
    pub n_pes: usize,
    /// The program every PE runs; a name without `/` is looked up in `PATH`.
    pub program: PathBuf,
    /// Arguments passed to every PE.
    pub args: Vec<OsString>,
    /// Stop the job after this time (exit status [`EXIT_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when the job is stopped; [`DEFAULT_GRACE`].
    pub grace: Duration,
    /// Where the output of the PEs goes.
    pub output: OutputMode,
    /// Environment variables added for every PE (the [`env`](mod@env) variables override them).
    pub extra_env: Vec<(OsString, OsString)>,
    /// The job id; `None` generates one with [`generate_job_id`].
    pub job_id: Option<String>,
    /// Actions run after the job ended, however it ended (see [`CleanupHook`]).
    pub cleanup: Vec<CleanupHook>,
}

impl LaunchSpec {
    /// A job of `n_pes` PEs running `program` without arguments, prefixed output, no
    /// timeout, a generated job id and no cleanup hooks.
    pub fn new(n_pes: usize, program: impl Into<PathBuf>) -> Self {
        Self {
            n_pes,
            program: program.into(),
            args: Vec::new(),
            timeout: None,
            grace: DEFAULT_GRACE,
            output: OutputMode::default(),
            extra_env: Vec::new(),
            job_id: None,
            cleanup: Vec::new(),
        }
    }
}
