//! `niinrun`: the single-node job launcher of niin-rs, like `mpirun -np N` for one node.
//!
//! `niinrun [OPTIONS] [--] PROGRAM [ARGS...]` — see `niinrun --help` and
//! [`niin_api::launch`], which does all the work; this binary parses the command line,
//! takes the job id from `NIIN_JOB_ID` when set, registers the mock-transport cleanup,
//! handles SIGINT/SIGTERM/SIGHUP and turns the outcome into its exit status.

use std::io::Write as _;
use std::process::ExitCode;

use niin_api::launch::{self, CleanupHook, Cli, LaunchError};

fn main() -> ExitCode {
    let code = match launch::parse_args(std::env::args_os().skip(1)) {
        Ok(Cli::Help) => {
            let _ = std::io::stdout().write_all(launch::USAGE.as_bytes());
            0
        }
        Ok(Cli::Version) => {
            let _ = writeln!(std::io::stdout(), "niinrun {}", launch::VERSION);
            0
        }
        Ok(Cli::Run(spec)) => match run(spec) {
            Ok(code) => code,
            Err(e) => report(&e),
        },
        Err(e) => report(&e),
    };
    let _ = std::io::stdout().flush();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Runs the job; returns the exit status.
fn run(mut spec: launch::LaunchSpec) -> Result<i32, LaunchError> {
    if spec.job_id.is_none() {
        spec.job_id = launch::job_id_from_env()?;
    }
    spec.cleanup.push(CleanupHook::mock_transport());
    launch::install_signal_handlers()?;
    let outcome = launch::run(&spec)?;
    if let Some(message) = outcome.message() {
        let _ = writeln!(std::io::stderr(), "niinrun: {message}");
    }
    Ok(outcome.exit_code())
}

/// Prints `e` on stderr; returns its exit status. (Output errors are ignored here and
/// above: `print!` would panic on a closed pipe.)
fn report(e: &LaunchError) -> i32 {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "niinrun: {e}");
    if e.is_usage() {
        let _ = writeln!(stderr, "Try `niinrun --help`.");
    }
    e.exit_code()
}
