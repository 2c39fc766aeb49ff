//! Errors of the host API: every lower layer's error, plus misuse of the API itself.
//!
//! [`Error`] is what every fallible call returns. Its `Display` is one readable sentence that
//! starts with the PE it happened on (`PE 2: symmetric heap: ...`) where there is one; its
//! `Debug` (`{:?}`) is the same text plus any cause that the text does not already say, so
//! `fn main() -> Result<(), niin_api::Error>` prints the message, not a structure. The
//! alternate form (`{:#?}`) shows the variant and its fields.
//!
//! The lower layers' error types that [`Error`]'s variants carry are re-exported here, so
//! they can be named and matched from `niin_api` alone: [`HeapError`], [`SizeError`],
//! [`Layout`] (niin-heap), [`TeamError`] (niin-teams), [`TransportError`] and
//! [`Departure`] (niin-transport), and [`BootstrapError`](crate::bootstrap::BootstrapError).

use std::fmt;

pub use niin_heap::{HeapError, Layout, SizeError};
pub use niin_teams::TeamError;
pub use niin_transport::TransportError;
pub use niin_transport::error::Departure;

/// What went wrong in a niin-api call. Messages carry the values that explain them.
///
/// `Display` and `Debug` (`{:?}`) both print the message (see the [module docs](self));
/// `{:#?}` prints the variant and its fields.
#[derive(thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The symmetric heap refused (out of memory, bad alignment, bad free...).
    #[error("PE {pe}: symmetric heap: {source}")]
    Heap {
        /// This PE.
        pe: usize,
        /// The heap's error.
        source: HeapError,
    },
    /// A team operation was refused.
    #[error("PE {pe}: team: {source}")]
    Team {
        /// This PE.
        pe: usize,
        /// The team model's error.
        source: TeamError,
    },
    /// The transport failed.
    #[error("{}", with_pe(*pe, source))]
    Transport {
        /// This PE.
        pe: usize,
        /// The transport's error.
        source: TransportError,
    },
    /// A configuration value (environment variable) is wrong.
    #[error("configuration: {0}")]
    Config(String),
    /// `NVSHMEM_SYMMETRIC_SIZE` is wrong.
    #[error("configuration: {0}")]
    HeapSize(#[from] SizeError),
    /// The world was used after `finalize`.
    #[error("PE {pe}: the world is finalized")]
    Finalized {
        /// This PE.
        pe: usize,
    },
    /// A PE number outside the world.
    #[error("PE {pe}: target PE {target} is out of range: the world has {n_pes} PEs")]
    PeOutOfRange {
        /// This PE.
        pe: usize,
        /// The PE asked for.
        target: i64,
        /// The world's size.
        n_pes: usize,
    },
    /// A symmetric range that is not inside a live allocation of this world.
    #[error(
        "PE {pe}: {len} bytes at heap offset {offset:#x} are not inside a live symmetric allocation"
    )]
    NotSymmetric {
        /// This PE.
        pe: usize,
        /// Start of the range.
        offset: u64,
        /// Length of the range in bytes.
        len: u64,
    },
    /// A buffer of another world was used.
    #[error("PE {pe}: buffer belongs to world {buffer_world}, not to this world {world}")]
    ForeignBuffer {
        /// This PE.
        pe: usize,
        /// The buffer's world.
        buffer_world: u64,
        /// This world.
        world: u64,
    },
    /// Lengths that must agree do not.
    #[error("PE {pe}: {op}: {what}")]
    BadArgument {
        /// This PE.
        pe: usize,
        /// The operation.
        op: &'static str,
        /// What is wrong, with the values.
        what: String,
    },
    /// The PEs' symmetric heaps do not hold the same allocations.
    #[error(
        "PE {pe}: asymmetric symmetric-heap use: this PE's live allocations are {mine}, PE {other}'s are {theirs} (every PE must make the same nvshmem_malloc/align/free calls in the same order)"
    )]
    Asymmetric {
        /// This PE.
        pe: usize,
        /// The first PE whose heap differs.
        other: usize,
        /// This PE's heap layout.
        mine: Layout,
        /// The other PE's heap layout.
        theirs: Layout,
    },
    /// The PEs of a collective call did not make the same call: another collective, or the
    /// same one with other arguments ([`crate::check`] has the rules).
    #[error(
        "PE {pe}: collective mismatch: PE {pe} called {mine}, PE {other} called {theirs}{}",
        if *in_step {
            " (every PE of the team must make the same collective calls in the same order, \
             with the same arguments; this call was undone on every PE that saw it, and the \
             world stays usable)"
        } else {
            " (every PE of the team must make the same collective calls in the same order, \
             with the same arguments; a team collective took part, so the PEs' \
             synchronizations are out of step now: every later collective call of this PE \
             fails, finalize the world)"
        }
    )]
    CollectiveMismatch {
        /// This PE.
        pe: usize,
        /// This PE's call ([`crate::CollectiveCall`], as printed).
        mine: String,
        /// The PE whose call differs.
        other: usize,
        /// That PE's call, as printed.
        theirs: String,
        /// Whether every PE stopped at the same point (the world stays usable).
        in_step: bool,
    },
    /// An earlier collective mismatch left the PEs out of step.
    #[error(
        "PE {pe}: the world's collectives are out of step since an earlier mismatch ({cause}); only finalize is possible"
    )]
    OutOfStep {
        /// This PE.
        pe: usize,
        /// The mismatch, as reported then.
        cause: String,
    },
    /// Two threads of one PE were inside collective calls at once.
    #[error(
        "PE {pe}: {entering} was called while another thread of this PE is inside {running}: a PE's collective calls must come from one thread at a time (NVSHMEM_THREAD_SERIALIZED at most); the second call is refused"
    )]
    ConcurrentCollective {
        /// This PE.
        pe: usize,
        /// The refused call.
        entering: String,
        /// The call in progress.
        running: String,
    },
    /// The launcher's environment or the unique-id rendezvous failed.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] crate::bootstrap::BootstrapError),
    /// The requested transport is not available in this build or on this machine.
    #[error("transport: {0}")]
    TransportUnavailable(String),
    /// A PE thread of an in-process world panicked.
    #[error("PE {pe} panicked: {message}")]
    Panicked {
        /// The PE whose thread panicked.
        pe: usize,
        /// The panic message.
        message: String,
    },
}

/// Result of a niin-api call.
pub type Result<T> = std::result::Result<T, Error>;

/// `text` as a message of PE `pe`: `PE {pe}: {text}`, unless `text` already starts with
/// that prefix (a lower layer's message that names its PE, such as a transport timeout), so
/// that no message reads `PE 0: PE 0: ...`.
pub(crate) fn with_pe(pe: usize, text: impl fmt::Display) -> String {
    let text = text.to_string();
    let prefix = format!("PE {pe}: ");
    if text.starts_with(&prefix) {
        text
    } else {
        prefix + &text
    }
}

/// `text` without a leading `PE {pe}: ` (for a message that is quoted inside another
/// message of the same PE).
pub(crate) fn without_pe(pe: usize, text: &str) -> &str {
    text.strip_prefix(&format!("PE {pe}: ")).unwrap_or(text)
}

impl fmt::Debug for Error {
    /// `{:?}`: the `Display` message, then each cause in the source chain whose text the
    /// message does not already hold (what `main` returning `Err` prints). `{:#?}`: the
    /// variant and its fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return self.fmt_fields(f);
        }
        let message = self.to_string();
        f.write_str(&message)?;
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            let text = c.to_string();
            if !message.contains(&text) {
                write!(f, "\n  caused by: {text}")?;
            }
            cause = c.source();
        }
        Ok(())
    }
}

impl Error {
    /// The structural form of `{:#?}`: the variant's name and fields.
    fn fmt_fields(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Heap { pe, source } => f
                .debug_struct("Heap")
                .field("pe", pe)
                .field("source", source)
                .finish(),
            Error::Team { pe, source } => f
                .debug_struct("Team")
                .field("pe", pe)
                .field("source", source)
                .finish(),
            Error::Transport { pe, source } => f
                .debug_struct("Transport")
                .field("pe", pe)
                .field("source", source)
                .finish(),
            Error::Config(text) => f.debug_tuple("Config").field(text).finish(),
            Error::HeapSize(e) => f.debug_tuple("HeapSize").field(e).finish(),
            Error::Finalized { pe } => f.debug_struct("Finalized").field("pe", pe).finish(),
            Error::PeOutOfRange { pe, target, n_pes } => f
                .debug_struct("PeOutOfRange")
                .field("pe", pe)
                .field("target", target)
                .field("n_pes", n_pes)
                .finish(),
            Error::NotSymmetric { pe, offset, len } => f
                .debug_struct("NotSymmetric")
                .field("pe", pe)
                .field("offset", offset)
                .field("len", len)
                .finish(),
            Error::ForeignBuffer {
                pe,
                buffer_world,
                world,
            } => f
                .debug_struct("ForeignBuffer")
                .field("pe", pe)
                .field("buffer_world", buffer_world)
                .field("world", world)
                .finish(),
            Error::BadArgument { pe, op, what } => f
                .debug_struct("BadArgument")
                .field("pe", pe)
                .field("op", op)
                .field("what", what)
                .finish(),
            Error::Asymmetric {
                pe,
                other,
                mine,
                theirs,
            } => f
                .debug_struct("Asymmetric")
                .field("pe", pe)
                .field("other", other)
                .field("mine", mine)
                .field("theirs", theirs)
                .finish(),
            Error::CollectiveMismatch {
                pe,
                mine,
                other,
                theirs,
                in_step,
            } => f
                .debug_struct("CollectiveMismatch")
                .field("pe", pe)
                .field("mine", mine)
                .field("other", other)
                .field("theirs", theirs)
                .field("in_step", in_step)
                .finish(),
            Error::OutOfStep { pe, cause } => f
                .debug_struct("OutOfStep")
                .field("pe", pe)
                .field("cause", cause)
                .finish(),
            Error::ConcurrentCollective {
                pe,
                entering,
                running,
            } => f
                .debug_struct("ConcurrentCollective")
                .field("pe", pe)
                .field("entering", entering)
                .field("running", running)
                .finish(),
            Error::Bootstrap(e) => f.debug_tuple("Bootstrap").field(e).finish(),
            Error::TransportUnavailable(text) => {
                f.debug_tuple("TransportUnavailable").field(text).finish()
            }
            Error::Panicked { pe, message } => f
                .debug_struct("Panicked")
                .field("pe", pe)
                .field("message", message)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn timeout(pe: usize) -> Error {
        Error::Transport {
            pe,
            source: TransportError::Timeout {
                pe,
                op: "barrier",
                waited: Duration::from_secs(1),
                detail: "1 of 2 arrived".into(),
            },
        }
    }

    #[test]
    fn a_transport_message_that_names_the_pe_is_not_prefixed_again() {
        assert_eq!(
            timeout(0).to_string(),
            "PE 0: barrier did not complete within 1s (1 of 2 arrived)"
        );
        // Another PE's name in the source is kept: it says something.
        let gone = Error::Transport {
            pe: 0,
            source: TransportError::PeerGone {
                pe: 1,
                op: "barrier",
                why: Departure::Panicked,
            },
        };
        assert_eq!(
            gone.to_string(),
            "PE 0: PE 1 panicked; barrier cannot complete"
        );
        assert_eq!(with_pe(3, "PE 3: x"), "PE 3: x");
        assert_eq!(with_pe(3, "PE 30: x"), "PE 3: PE 30: x");
        assert_eq!(without_pe(3, "PE 3: x"), "x");
    }

    /// The real path: a mock barrier that times out (its PE 1 never arrives) reports
    /// `PE 0: ` once, though both niin-api and the transport name the PE.
    #[test]
    fn a_timed_out_barrier_names_its_pe_once() {
        let config = crate::WorldConfig {
            timeout: Duration::from_millis(200),
            ..crate::WorldConfig::default()
        };
        let worlds = crate::World::in_process(2, &config).unwrap();
        let e = worlds[0].barrier_all().unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Transport {
                    source: TransportError::Timeout { .. },
                    ..
                }
            ),
            "{e:#?}"
        );
        let msg = e.to_string();
        assert!(msg.starts_with("PE 0: "), "{msg}");
        assert_eq!(msg.matches("PE 0: ").count(), 1, "{msg}");
        assert_eq!(format!("{e:?}"), msg);
    }

    #[test]
    fn debug_is_the_message_and_alternate_debug_the_fields() {
        let e = Error::Heap {
            pe: 2,
            source: HeapError::ZeroHeap,
        };
        let shown = format!("{e:?}");
        assert_eq!(shown, e.to_string(), "the source is in the message already");
        assert!(shown.starts_with("PE 2: symmetric heap: "), "{shown}");
        let fields = format!("{e:#?}");
        assert!(
            fields.starts_with("Heap {") && fields.contains("pe: 2"),
            "{fields}"
        );
        assert_eq!(format!("{:?}", timeout(1)), timeout(1).to_string());
    }
}
