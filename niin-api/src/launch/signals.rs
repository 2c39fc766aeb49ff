//! SIGINT/SIGTERM/SIGHUP received by the launcher.
//!
//! Signals are process-wide, so this is the one piece of global state of the launcher:
//! the handler only records the signal in atomics (async-signal-safe), and [`run`]
//! polls them. Nothing is recorded unless [`install_signal_handlers`] was called.
//!
//! [`run`]: super::run

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use super::LaunchError;

/// The signals niinrun handles by stopping the job.
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The most recent signal received.
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How many signals were received so far.
static COUNT: AtomicU64 = AtomicU64::new(0);

/// Records the signal; only lock-free atomic operations, which are async-signal-safe.
extern "C" fn on_signal(signal: libc::c_int) {
    LAST_SIGNAL.store(signal, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Makes SIGINT, SIGTERM and SIGHUP stop the running job instead of killing this process:
/// [`run`](super::run) then forwards the signal to every PE's process group, SIGKILLs
/// them after the grace period (at once on a second signal) and ends with
/// [`JobEnd::Interrupted`](super::JobEnd::Interrupted) (exit status 128 + signal). Only
/// signals that arrive while `run` is running count. Meant for the `niinrun` binary; it
/// replaces the process's handlers of these signals.
///
/// # Errors
///
/// [`LaunchError::Io`] when `sigaction` fails.
pub fn install_signal_handlers() -> Result<(), LaunchError> {
    for signal in HANDLED {
        // SAFETY: `sigaction` is a plain C struct; all-zero bytes are a valid value (empty
        // mask, no flags, SIG_DFL), and every field that matters is set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action.sa_mask` is a valid, writable `sigset_t`.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is fully initialised and outlives the call; the handler only
        // performs async-signal-safe atomic operations; a null old-action pointer is allowed.
        let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(LaunchError::Io {
                what: "cannot install signal handlers",
                source: io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

/// A point in the stream of received signals, to ask later what arrived since.
#[derive(Debug, Clone, Copy)]
pub(super) struct SignalMark(u64);

impl SignalMark {
    /// The current point.
    pub(super) fn now() -> Self {
        Self(COUNT.load(Ordering::SeqCst))
    }

    /// How many signals arrived since this mark, and the last of them (0 when none).
    pub(super) fn since(self) -> (u64, libc::c_int) {
        let count = COUNT.load(Ordering::SeqCst).saturating_sub(self.0);
        let signal = if count == 0 {
            0
        } else {
            LAST_SIGNAL.load(Ordering::SeqCst)
        };
        (count, signal)
    }
}

/// The name of a signal (`"SIGKILL"`), or `"unknown signal"`.
pub(super) fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => "unknown signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(1000), "unknown signal");
    }
}
