//! The command line of `niinrun`, parsed by hand.
//!
//! Options come before PROGRAM; the first argument that does not start with `-` (or the
//! argument after `--`) is PROGRAM, and everything after it is passed to the PEs
//! untouched, even when it looks like an option. Options may be repeated; the last one
//! wins. Values may follow as the next argument (`-n 4`), after `=` (`--np=4`,
//! `--timeout=2.5`) or, for `-n`/`-np`, attached (`-n4`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::{LaunchError, LaunchSpec, MAX_PES, OutputMode};

/// The version of niinrun (the version of niin-api).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The text printed by `niinrun --help`.
pub const USAGE: &str = "\
niinrun: start an SPMD job of N processing elements (PEs) on this node

Usage: niinrun [OPTIONS] [--] PROGRAM [ARGS...]

Options:
  -n, -np, --np N    number of PEs to start, 1..=1024 (default 1); also -nN, --np=N
      --timeout SECS stop the job after SECS seconds (fractions allowed) and exit 124
      --no-prefix    forward output lines unchanged instead of as `[pe N] line`
  -h, --help         print this help and exit
  -V, --version      print the version and exit
      --             end of options: the next argument is PROGRAM

Environment of every PE (besides niinrun's own environment):
  NIIN_PE              world rank of the PE, 0..N-1
  NIIN_NPES            number of PEs, N
  NIIN_LOCAL_PE        rank of the PE on this node (= NIIN_PE: one node)
  NIIN_LOCAL_NPES      number of PEs on this node (= NIIN_NPES: one node)
  NIIN_JOB_ID          job id, [A-Za-z0-9_.-]; kept from niinrun's environment if set
  NIIN_RENDEZVOUS_DIR  fresh private directory of the job, removed at exit
  NIIN_LAUNCHER        niinrun

Output: each line a PE writes is printed whole, as `[pe N] line`, on niinrun's stdout
or stderr. Standard input of the PEs is /dev/null.

When a PE fails, or on timeout, SIGINT, SIGTERM or SIGHUP, niinrun sends SIGTERM (or the
signal it received) to every PE's process group and SIGKILL 2 s later. After the job it
removes the rendezvous directory and /dev/shm/niin-mock-<NIIN_JOB_ID> and
$TMPDIR/niin-mock-<NIIN_JOB_ID> if a PE left them.

Exit status:
  0          every PE exited with status 0
  1-255      status of the first PE that failed; 128+SIG if it was killed by signal SIG
  124        timeout
  129,130,143  niinrun received SIGHUP, SIGINT, SIGTERM
  125        niinrun itself failed
  127        PROGRAM could not be started
  2          invalid command line or NIIN_JOB_ID
";

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Cli {
    /// Run a job.
    Run(LaunchSpec),
    /// Print [`USAGE`] (`-h`, `--help`).
    Help,
    /// Print [`VERSION`] (`-V`, `--version`).
    Version,
}

/// Parses niinrun's arguments, *without* the program name (`std::env::args_os().skip(1)`).
///
/// `-h`/`--help` and `-V`/`--version` return at once, ignoring what follows. The returned
/// [`LaunchSpec`] has no job id and no cleanup hooks; the binary adds them.
///
/// # Errors
///
/// A [`LaunchError`] naming the bad value: invalid PE count or timeout, an option without
/// its value, an unknown option, or no PROGRAM.
pub fn parse_args<I>(args: I) -> Result<Cli, LaunchError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut args = args.into_iter().map(Into::into);
    let mut n_pes = 1;
    let mut timeout = None;
    let mut output = OutputMode::Prefixed;
    let program = loop {
        let Some(arg) = args.next() else {
            return Err(LaunchError::MissingProgram);
        };
        let bytes = arg.as_encoded_bytes();
        if bytes == b"--" {
            break args.next().ok_or(LaunchError::MissingProgram)?;
        }
        if !bytes.starts_with(b"-") {
            break arg;
        }
        let Some(text) = arg.to_str() else {
            return Err(LaunchError::UnknownOption(
                arg.to_string_lossy().into_owned(),
            ));
        };
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        match name {
            "-h" | "--help" => return no_value(name, inline).map(|()| Cli::Help),
            "-V" | "--version" => return no_value(name, inline).map(|()| Cli::Version),
            "--no-prefix" => {
                no_value(name, inline)?;
                output = OutputMode::Plain;
            }
            "-n" | "-np" | "--np" => n_pes = parse_pe_count(&value(name, inline, &mut args)?)?,
            "--timeout" => timeout = Some(parse_timeout(&value(name, inline, &mut args)?)?),
            _ => match attached_pe_count(text) {
                Some(count) => n_pes = parse_pe_count(count)?,
                None => return Err(LaunchError::UnknownOption(text.to_owned())),
            },
        }
    };
    let mut spec = LaunchSpec::new(n_pes, PathBuf::from(program));
    spec.args = args.collect();
    spec.timeout = timeout;
    spec.output = output;
    Ok(Cli::Run(spec))
}

/// The value of `-n4` / `-np4` (not `--np4`), if `arg` has that form.
fn attached_pe_count(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix("-np").or_else(|| arg.strip_prefix("-n"))?;
    rest.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-')
        .then_some(rest)
}

/// Fails when an option without value was written as `--option=value`.
fn no_value(name: &str, inline: Option<&str>) -> Result<(), LaunchError> {
    match inline {
        Some(_) => Err(LaunchError::UnexpectedValue(name.to_owned())),
        None => Ok(()),
    }
}

/// The value of option `name`: the text after `=`, else the next argument.
fn value(
    name: &str,
    inline: Option<&str>,
    rest: &mut impl Iterator<Item = OsString>,
) -> Result<String, LaunchError> {
    match inline {
        Some(value) => Ok(value.to_owned()),
        None => match rest.next() {
            Some(value) => value.into_string().map_err(|v| {
                // Neither a count nor a timeout can be non-UTF-8; report what was given.
                let shown = v.to_string_lossy().into_owned();
                match name {
                    "--timeout" => LaunchError::InvalidTimeout(shown),
                    _ => LaunchError::InvalidPeCount(shown),
                }
            }),
            None => Err(LaunchError::MissingValue(name.to_owned())),
        },
    }
}

/// Parses a PE count: decimal digits only (no sign, no spaces), a value in `1..=MAX_PES`.
pub(super) fn parse_pe_count(text: &str) -> Result<usize, LaunchError> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<usize>() {
        Ok(n) if digits && (1..=MAX_PES).contains(&n) => Ok(n),
        _ => Err(LaunchError::InvalidPeCount(text.to_owned())),
    }
}

/// Parses a timeout: a positive, finite decimal number of seconds (`10`, `0.5`, `1e-3`).
pub(super) fn parse_timeout(text: &str) -> Result<Duration, LaunchError> {
    let invalid = || LaunchError::InvalidTimeout(text.to_owned());
    let secs: f64 = text.parse().map_err(|_| invalid())?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(invalid());
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: &[&str]) -> LaunchSpec {
        match parse_args(args.iter().copied()) {
            Ok(Cli::Run(spec)) => spec,
            other => panic!("{args:?}: expected a job, got {other:?}"),
        }
    }

    fn error(args: &[&str]) -> LaunchError {
        match parse_args(args.iter().copied()) {
            Err(e) => e,
            Ok(cli) => panic!("{args:?}: expected an error, got {cli:?}"),
        }
    }

    #[test]
    fn defaults() {
        let s = spec(&["prog"]);
        assert_eq!(s.n_pes, 1);
        assert_eq!(s.program, PathBuf::from("prog"));
        assert!(s.args.is_empty());
        assert_eq!(s.timeout, None);
        assert_eq!(s.output, OutputMode::Prefixed);
        assert_eq!(s.job_id, None);
        assert!(s.cleanup.is_empty());
    }

    #[test]
    fn every_pe_count_spelling() {
        for args in [
            &["-n", "4", "p"][..],
            &["-np", "4", "p"],
            &["--np", "4", "p"],
            &["--np=4", "p"],
            &["-n=4", "p"],
            &["-n4", "p"],
            &["-np4", "p"],
            &["-n", "1", "-n", "4", "p"],
        ] {
            assert_eq!(spec(args).n_pes, 4, "{args:?}");
        }
        assert_eq!(spec(&["-n", "1024", "p"]).n_pes, 1024);
        assert_eq!(spec(&["-n", "1", "p"]).n_pes, 1);
    }

    #[test]
    fn bad_pe_counts_name_the_value() {
        for bad in ["0", "-1", "abc", "2000", "1025", "", "4.0", " 4"] {
            let e = error(&["-n", bad, "prog"]);
            assert!(
                matches!(&e, LaunchError::InvalidPeCount(v) if v == bad),
                "{bad:?}: {e:?}"
            );
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
            assert!(e.is_usage());
            assert_eq!(e.exit_code(), 2);
        }
        assert!(matches!(error(&["-n0", "p"]), LaunchError::InvalidPeCount(v) if v == "0"));
        assert!(matches!(error(&["--np=abc", "p"]), LaunchError::InvalidPeCount(v) if v == "abc"));
        // A sign is not a count, though Rust's integer parser takes `+`.
        assert!(matches!(error(&["-n", "+4", "p"]), LaunchError::InvalidPeCount(v) if v == "+4"));
        assert!(matches!(error(&["-n+4", "p"]), LaunchError::InvalidPeCount(v) if v == "+4"));
    }

    #[test]
    fn timeouts() {
        assert_eq!(
            spec(&["--timeout", "10", "p"]).timeout,
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            spec(&["--timeout=0.5", "p"]).timeout,
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            spec(&["--timeout", "1e-3", "p"]).timeout,
            Some(Duration::from_millis(1))
        );
        for bad in ["0", "-1", "abc", "inf", "NaN", "", "1e400", "1e-12", "10s"] {
            let e = error(&["--timeout", bad, "p"]);
            assert!(
                matches!(&e, LaunchError::InvalidTimeout(v) if v == bad),
                "{bad:?}: {e:?}"
            );
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
    }

    #[test]
    fn flags() {
        assert_eq!(spec(&["--no-prefix", "p"]).output, OutputMode::Plain);
        assert!(matches!(parse_args(["-h"]), Ok(Cli::Help)));
        assert!(matches!(parse_args(["--help", "--bogus"]), Ok(Cli::Help)));
        assert!(matches!(
            parse_args(["-n", "2", "--help", "p"]),
            Ok(Cli::Help)
        ));
        assert!(matches!(parse_args(["--version"]), Ok(Cli::Version)));
        assert!(matches!(parse_args(["-V"]), Ok(Cli::Version)));
        let e = error(&["--no-prefix=1", "p"]);
        assert!(matches!(e, LaunchError::UnexpectedValue(v) if v == "--no-prefix"));
    }

    #[test]
    fn missing_values_and_program() {
        for opt in ["-n", "-np", "--np", "--timeout"] {
            let e = error(&[opt]);
            assert!(
                matches!(&e, LaunchError::MissingValue(v) if v == opt),
                "{e:?}"
            );
            assert!(e.to_string().contains(opt));
        }
        assert!(matches!(error(&[]), LaunchError::MissingProgram));
        assert!(matches!(error(&["-n", "2"]), LaunchError::MissingProgram));
        assert!(matches!(
            error(&["-n", "2", "--"]),
            LaunchError::MissingProgram
        ));
        let e = error(&["--bogus", "p"]);
        assert!(
            matches!(&e, LaunchError::UnknownOption(v) if v == "--bogus"),
            "{e:?}"
        );
        assert!(matches!(error(&["-", "p"]), LaunchError::UnknownOption(v) if v == "-"));
        assert!(matches!(
            error(&["--n", "2", "p"]),
            LaunchError::UnknownOption(_)
        ));
    }

    #[test]
    fn program_arguments_are_untouched() {
        let s = spec(&["-n", "2", "prog", "-n", "5", "--", "--help", "x"]);
        assert_eq!(s.n_pes, 2);
        assert_eq!(s.program, PathBuf::from("prog"));
        assert_eq!(s.args, ["-n", "5", "--", "--help", "x"].map(OsString::from));
    }

    #[test]
    fn double_dash() {
        let s = spec(&["-n", "3", "--", "-weird", "--np", "9"]);
        assert_eq!(s.n_pes, 3);
        assert_eq!(s.program, PathBuf::from("-weird"));
        assert_eq!(s.args, ["--np", "9"].map(OsString::from));
        let s = spec(&["--", "--"]);
        assert_eq!(s.program, PathBuf::from("--"));
    }

    #[test]
    fn non_utf8_program_and_arguments_pass_through() {
        use std::os::unix::ffi::OsStringExt;
        let prog = OsString::from_vec(b"pr\xffog".to_vec());
        let arg = OsString::from_vec(b"\xfe".to_vec());
        let Ok(Cli::Run(s)) = parse_args([OsString::from("-n2"), prog.clone(), arg.clone()]) else {
            panic!("expected a job");
        };
        assert_eq!(s.program, PathBuf::from(prog));
        assert_eq!(s.args, [arg]);
        let bad = OsString::from_vec(b"\xff".to_vec());
        assert!(matches!(
            parse_args([OsString::from("-n"), bad, OsString::from("p")]),
            Err(LaunchError::InvalidPeCount(_))
        ));
    }

    #[test]
    fn usage_lists_options_and_variables() {
        for needle in [
            "--np",
            "--timeout",
            "--no-prefix",
            "--help",
            "--version",
            "--",
        ] {
            assert!(USAGE.contains(needle), "{needle}");
        }
        for var in crate::launch::env::ALL {
            assert!(USAGE.contains(var), "{var}");
        }
    }
}
