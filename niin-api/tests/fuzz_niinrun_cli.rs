//! Fuzzing of niinrun's command line ([`niin_api::launch::parse_args`]) on stable Rust:
//! proptest with a fixed seed and case count, so every CI run tries the same inputs.
//!
//! - Arbitrary argument vectors (any bytes, non-UTF-8 included, and vectors built from
//!   niinrun's own option spellings with fuzzed values) never panic; an error is one
//!   non-empty line that names what was wrong; a parsed job has a PE count in
//!   `1..=MAX_PES`, a positive timeout, and passes PROGRAM's arguments untouched.
//! - Every valid command line, written in any of its spellings, parses back to the job it
//!   describes.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

use niin_api::launch::{Cli, LaunchError, MAX_PES, parse_args};
use proptest::prelude::*;

#[path = "support/fuzz.rs"]
mod fuzz_support;
use fuzz_support::fuzz;

/// This file's inputs (support/fuzz.rs).
const SEED: u64 = 0x006e_6969_6e72_756e;

/// One argument: niinrun's option spellings, values of every shape, and raw bytes.
fn arg() -> impl Strategy<Value = OsString> {
    let words = prop::sample::select(vec![
        "-n",
        "-np",
        "--np",
        "--timeout",
        "--no-prefix",
        "-h",
        "--help",
        "-V",
        "--version",
        "--",
        "-",
        "--n",
        "-n=",
        "--np=",
        "--timeout=",
        "-n4",
        "-np2",
        "-n-1",
        "-n+3",
        "4",
        "0",
        "1024",
        "1025",
        "18446744073709551616",
        "-1",
        "0.5",
        "1e-3",
        "1e-10",
        "1e19",
        "1e400",
        "inf",
        "NaN",
        "prog",
        "",
    ]);
    prop_oneof![
        3 => words.prop_map(OsString::from),
        2 => "[-=a-z0-9.+ ]{0,12}".prop_map(OsString::from),
        1 => any::<String>().prop_map(OsString::from),
        1 => prop::collection::vec(any::<u8>(), 0..12).prop_map(OsString::from_vec),
        // An option glued to a value of any bytes: `--np=<bytes>`, `-n<bytes>`.
        1 => (
            prop::sample::select(vec!["--np=", "-n=", "--timeout=", "-n", "-np", "--no-prefix="]),
            prop::collection::vec(any::<u8>(), 0..8),
        )
            .prop_map(|(head, tail)| {
                let mut bytes = head.as_bytes().to_vec();
                bytes.extend(tail);
                OsString::from_vec(bytes)
            }),
    ]
}

/// The bytes of `s`, lossily as text (what an error message can show of a non-UTF-8 arg).
fn lossy(s: &OsString) -> String {
    s.to_string_lossy().into_owned()
}

/// Checks the parse of `args` against what niinrun promises; returns the error, if any.
fn check(args: &[OsString]) -> Result<Option<LaunchError>, TestCaseError> {
    let parsed = parse_args(args.iter().cloned());
    match parsed {
        Ok(Cli::Help) | Ok(Cli::Version) => {
            let first_flag = args.iter().position(|a| {
                let b = a.as_bytes();
                b == b"-h" || b == b"--help" || b == b"-V" || b == b"--version"
            });
            prop_assert!(
                first_flag.is_some(),
                "help/version without the flag: {args:?}"
            );
            Ok(None)
        }
        Ok(Cli::Run(spec)) => {
            prop_assert!(
                (1..=MAX_PES).contains(&spec.n_pes),
                "{args:?}: {}",
                spec.n_pes
            );
            if let Some(t) = spec.timeout {
                prop_assert!(!t.is_zero(), "{args:?}: zero timeout");
            }
            // PROGRAM is an argument, and everything after it is passed on as it is.
            let Some(at) = args.len().checked_sub(spec.args.len() + 1) else {
                return Err(TestCaseError::fail(format!(
                    "{args:?}: more PE arguments than arguments"
                )));
            };
            prop_assert_eq!(PathBuf::from(&args[at]), spec.program.clone(), "{:?}", args);
            prop_assert_eq!(&args[at + 1..], &spec.args[..], "{:?}", args);
            Ok(None)
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.is_empty(), "{args:?}: empty message");
            prop_assert!(
                !msg.contains('\n'),
                "{args:?}: message of several lines: {msg:?}"
            );
            prop_assert!(!msg.contains('\r'), "{args:?}: carriage return in {msg:?}");
            prop_assert!(e.is_usage(), "{args:?}: not a usage error: {e:?}");
            prop_assert_eq!(e.exit_code(), 2);
            // The message names the value it refuses (control characters escaped).
            let named = match &e {
                LaunchError::InvalidPeCount(v)
                | LaunchError::InvalidTimeout(v)
                | LaunchError::MissingValue(v)
                | LaunchError::UnexpectedValue(v)
                | LaunchError::UnknownOption(v) => Some(v.clone()),
                LaunchError::MissingProgram => None,
                other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
            };
            if let Some(v) = named {
                prop_assert!(
                    msg.contains(&escape_controls(&v)),
                    "{args:?}: {msg:?} does not name {v:?}"
                );
                let in_args = args.iter().any(|a| lossy(a).contains(&v));
                prop_assert!(in_args, "{args:?}: {v:?} is no part of the arguments");
            }
            Ok(Some(e))
        }
    }
}

/// `s` with control characters written as escapes (how niinrun's errors show values).
fn escape_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// How the PE count is written.
#[derive(Clone, Copy, Debug)]
enum PeSpelling {
    Separate(&'static str),
    Equals(&'static str),
    Attached(&'static str),
}

/// A valid command line: a job and one way of writing it.
#[derive(Clone, Debug)]
struct Valid {
    n_pes: Option<(usize, PeSpelling)>,
    timeout_ms: Option<(u64, bool)>,
    no_prefix: bool,
    dash_dash: bool,
    program: Vec<u8>,
    args: Vec<Vec<u8>>,
}

fn valid() -> impl Strategy<Value = Valid> {
    let spelling = prop_oneof![
        prop::sample::select(vec!["-n", "-np", "--np"]).prop_map(PeSpelling::Separate),
        prop::sample::select(vec!["-n", "-np", "--np"]).prop_map(PeSpelling::Equals),
        prop::sample::select(vec!["-n", "-np"]).prop_map(PeSpelling::Attached),
    ];
    (
        prop::option::of((1..=MAX_PES, spelling)),
        prop::option::of((1u64..10_000_000, any::<bool>())),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 1..10),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..5),
    )
        .prop_map(
            |(n_pes, timeout_ms, no_prefix, dash_dash, program, args)| Valid {
                n_pes,
                timeout_ms,
                no_prefix,
                dash_dash,
                program,
                args,
            },
        )
}

impl Valid {
    /// The argument vector; `None` when PROGRAM needs `--` but this one has none (a name
    /// that starts with `-`, or `--` itself) or contains a NUL.
    fn argv(&self) -> Option<Vec<OsString>> {
        let mut argv: Vec<OsString> = Vec::new();
        if let Some((n, spelling)) = self.n_pes {
            match spelling {
                PeSpelling::Separate(o) => argv.extend([o.into(), n.to_string().into()]),
                PeSpelling::Equals(o) => argv.push(format!("{o}={n}").into()),
                PeSpelling::Attached(o) => argv.push(format!("{o}{n}").into()),
            }
        }
        if let Some((ms, equals)) = self.timeout_ms {
            let secs = format!("{}.{:03}", ms / 1000, ms % 1000);
            if equals {
                argv.push(format!("--timeout={secs}").into());
            } else {
                argv.extend(["--timeout".into(), secs.into()]);
            }
        }
        if self.no_prefix {
            argv.push("--no-prefix".into());
        }
        if self.program.starts_with(b"-") && !self.dash_dash {
            return None;
        }
        if self.dash_dash {
            argv.push("--".into());
        }
        argv.push(OsString::from_vec(self.program.clone()));
        argv.extend(self.args.iter().cloned().map(OsString::from_vec));
        Some(argv)
    }
}

#[test]
fn arbitrary_command_lines_never_panic_and_fail_in_one_line() {
    let errors = std::cell::Cell::new(0u32);
    fuzz(SEED, 3000, prop::collection::vec(arg(), 0..6), |args| {
        if check(&args)?.is_some() {
            errors.set(errors.get() + 1);
        }
        Ok(())
    });
    // Both outcomes were exercised: the generator is not stuck on one side.
    let errors = errors.get();
    assert!(errors > 300, "only {errors} errors in 3000 command lines");
}

#[test]
fn valid_command_lines_round_trip() {
    fuzz(SEED, 2000, valid(), |v| {
        let Some(argv) = v.argv() else {
            return Ok(());
        };
        check(&argv)?;
        let Ok(Cli::Run(spec)) = parse_args(argv.clone()) else {
            return Err(TestCaseError::fail(format!("{argv:?} is not a job")));
        };
        prop_assert_eq!(spec.n_pes, v.n_pes.map_or(1, |(n, _)| n));
        prop_assert_eq!(
            spec.timeout,
            v.timeout_ms.map(|(ms, _)| Duration::from_millis(ms))
        );
        prop_assert_eq!(
            spec.output == niin_api::launch::OutputMode::Plain,
            v.no_prefix
        );
        prop_assert_eq!(spec.program.as_os_str().as_bytes(), &v.program[..]);
        let args: Vec<&[u8]> = spec.args.iter().map(|a| a.as_bytes()).collect();
        let want: Vec<&[u8]> = v.args.iter().map(|a| &a[..]).collect();
        prop_assert_eq!(args, want);
        Ok(())
    });
}

/// Regression (found by the fuzzing above): a value with a line break made an error of
/// two lines, `niinrun: invalid number of PEs `4` followed by the rest on the next line.
#[test]
fn values_with_control_characters_give_one_line_errors() {
    for args in [
        &["-n", "4\n5", "p"][..],
        &["--timeout=1\r\n", "p"],
        &["--bo\ngus", "p"],
        &["--no-prefix\n=x", "p"],
        &["-n\u{1b}[31m", "p"],
    ] {
        let e = parse_args(args.iter().copied()).unwrap_err();
        let msg = e.to_string();
        assert!(
            !msg.contains('\n') && !msg.contains('\r'),
            "{args:?}: {msg:?}"
        );
        assert!(!msg.contains('\u{1b}'), "{args:?}: {msg:?}");
    }
    let e = parse_args(["-n", "4\n5", "p"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid number of PEs `4\\n5`: expected an integer in 1..=1024"
    );
    assert!(matches!(e, LaunchError::InvalidPeCount(v) if v == "4\n5"));
}
