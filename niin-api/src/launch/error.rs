//! The error type of the launcher.

use std::io;
use std::path::PathBuf;

use super::{EXIT_CANNOT_START, EXIT_INTERNAL, EXIT_USAGE, MAX_PES};

/// Why a command line could not be parsed or a job could not be run. Every message names
/// the offending value.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The number of PEs is not an integer in `1..=MAX_PES`.
    #[error("invalid number of PEs `{}`: expected an integer in 1..={MAX_PES}", shown(.0))]
    InvalidPeCount(String),
    /// The timeout is not a positive, finite number of seconds.
    #[error("invalid timeout `{}`: expected a positive number of seconds, e.g. 10 or 0.5", shown(.0))]
    InvalidTimeout(String),
    /// An option that takes a value was the last argument.
    #[error("option `{}` requires a value", shown(.0))]
    MissingValue(String),
    /// An option that takes no value was given one (`--no-prefix=x`).
    #[error("option `{}` takes no value", shown(.0))]
    UnexpectedValue(String),
    /// An argument before PROGRAM starts with `-` but is no known option.
    #[error(
        "unknown option `{}` (use `--` before a PROGRAM whose name starts with `-`)",
        shown(.0)
    )]
    UnknownOption(String),
    /// No PROGRAM was given.
    #[error("no PROGRAM given")]
    MissingProgram,
    /// A job id is empty, too long or contains characters outside `[A-Za-z0-9_.-]`.
    #[error(
        "invalid job id `{}`: expected 1 to 64 characters from [A-Za-z0-9_.-] \
         (check NIIN_JOB_ID)",
        shown(.0)
    )]
    InvalidJobId(String),
    /// PE `pe` could not be started (program not found, not executable, fork failed, ...).
    #[error("cannot start {}{}: {source}", program.display(), as_pe(*pe))]
    Spawn {
        /// The PE whose process failed to start (the PEs before it were stopped).
        pe: usize,
        /// The program that was to be started.
        program: PathBuf,
        /// The error of `fork`/`exec`.
        source: io::Error,
    },
    /// The rendezvous directory could not be created.
    #[error("cannot create rendezvous directory {}: {source}", path.display())]
    Rendezvous {
        /// The directory niinrun tried to create.
        path: PathBuf,
        /// The error of `mkdir`.
        source: io::Error,
    },
    /// Another operation of the launcher itself failed.
    #[error("{what}: {source}")]
    Io {
        /// What niinrun was doing.
        what: &'static str,
        /// The underlying error.
        source: io::Error,
    },
}

/// `value` as a message shows it: control characters (a line break, an escape sequence)
/// as Rust escapes (`\n`, `\u{1b}`), so that every message stays one line.
fn shown(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// ` as PE 3` for a PE after the first (the first failing is the usual case).
fn as_pe(pe: usize) -> String {
    if pe == 0 {
        String::new()
    } else {
        format!(" as PE {pe}")
    }
}

impl LaunchError {
    /// The exit status niinrun exits with for this error: [`EXIT_USAGE`] for invalid
    /// arguments or job ids, [`EXIT_CANNOT_START`] when PROGRAM cannot be started,
    /// [`EXIT_INTERNAL`] otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::InvalidPeCount(_)
            | Self::InvalidTimeout(_)
            | Self::MissingValue(_)
            | Self::UnexpectedValue(_)
            | Self::UnknownOption(_)
            | Self::MissingProgram
            | Self::InvalidJobId(_) => EXIT_USAGE,
            Self::Spawn { .. } => EXIT_CANNOT_START,
            Self::Rendezvous { .. } | Self::Io { .. } => EXIT_INTERNAL,
        }
    }

    /// Whether the error is about the command line (the binary then points to `--help`).
    pub fn is_usage(&self) -> bool {
        self.exit_code() == EXIT_USAGE && !matches!(self, Self::InvalidJobId(_))
    }
}
