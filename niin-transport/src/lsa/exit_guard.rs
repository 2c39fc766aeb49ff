//! How the process ends after finalize aborted NCCL on a failed CUDA context.
//!
//! A device barrier that stops its kernel for a dead or missing PE (`__trap()`) leaves the
//! CUDA context with a sticky error, and `LsaTransport::finalize` then aborts the
//! communicators. `ncclCommAbort` on such a context fails in its first CUDA calls, before
//! it stops its proxy service thread ("NCCL Service"), which keeps running. When another
//! process of the job ends later, that thread frees the connection's buffers through the
//! CUDA runtime linked into libnccl; if this process is inside `exit()` by then, the
//! runtime's own exit handler has already torn it down and the thread dies of SIGSEGV, so
//! the process ends with status 139 instead of its own. Seen in session 25 (H100, NCCL
//! 2.31.2, 4 PEs sharing the GPU, one stalled): 10 of the 15 survivor exits recorded over
//! six runs, each in `ncclProxyService` → `p2pRecvProxyFree`/`p2pSendProxyFree` →
//! `ncclCudaFree` → the CUDA runtime, at address 0 or 8 (`scripts/gpu/segv-trace.c`).
//!
//! [`arm`] therefore registers, once per process, a glibc `on_exit` handler. Registered at
//! finalize, after NCCL and its CUDA runtime registered theirs, it runs first when the
//! program calls `exit` (or returns from `main`): it prints one `NIIN:` line, flushes C's
//! and Rust's standard output, and ends the process with `_exit(status)`. The program's
//! status is kept; the exit handlers registered before that finalize, and the libraries'
//! destructors, do not run. The CUDA context can run nothing by then, and the kernel
//! releases the process's GPU memory, files and sockets as it always does. With
//! `NIIN_FAULT_EXIT=full` the handler is not registered and exit runs everything, at the
//! risk above. Only glibc has `on_exit` (it passes the exit status); elsewhere [`arm`]
//! does nothing. On the GPU (session 26, same setup): 29 survivor exits with the guard, all
//! with the program's status and none crashed; under `full`, 3 of 7 died of SIGSEGV.

use std::sync::OnceLock;

use crate::error::TransportError;

/// The variable that chooses how the process ends after a faulted finalize.
pub const FAULT_EXIT_VAR: &str = "NIIN_FAULT_EXIT";

/// How the process ends after finalize aborted NCCL on a failed CUDA context
/// (`NIIN_FAULT_EXIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultExit {
    /// `quick` (the default): `exit` ends the process at once with its status, after
    /// flushing standard output (module documentation).
    Quick,
    /// `full`: `exit` runs every exit handler and destructor; NCCL's proxy thread may then
    /// crash the process (SIGSEGV).
    Full,
}

impl FaultExit {
    /// Parses the variable's value (unset or empty: `Quick`); an error names a bad value.
    pub fn parse(value: Option<&str>) -> Result<FaultExit, TransportError> {
        let modes = [("quick", FaultExit::Quick), ("full", FaultExit::Full)];
        Ok(crate::env::choice(FAULT_EXIT_VAR, value, &modes)?)
    }
}

/// What the handler reports: the first faulted finalize of the process, and whether the
/// handler was registered for it.
struct Armed {
    pe: usize,
    cause: String,
    registered: bool,
}

static ARMED: OnceLock<Armed> = OnceLock::new();

/// Makes `exit` end the process at once (module documentation) after PE `pe`'s finalize
/// found the CUDA context failed with `cause`. Later calls keep the first PE and cause.
/// Returns whether the handler is registered (false under [`FaultExit::Full`], where
/// glibc's `on_exit` is missing, or when glibc refused it).
pub(crate) fn arm(mode: FaultExit, pe: usize, cause: &str) -> bool {
    if mode == FaultExit::Full {
        return false;
    }
    ARMED
        .get_or_init(|| Armed {
            pe,
            cause: cause.to_owned(),
            registered: register(),
        })
        .registered
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn register() -> bool {
    unsafe extern "C" {
        /// glibc: registers `function(status, arg)` to run at `exit`, in reverse order of
        /// registration together with `atexit` handlers.
        fn on_exit(
            function: extern "C" fn(libc::c_int, *mut libc::c_void),
            arg: *mut libc::c_void,
        ) -> libc::c_int;
    }
    // SAFETY: on_exit only records the pointer; `quick_exit_handler` is a function of this
    // library, which is never unloaded while the process runs (NCCL and CUDA keep it
    // loaded through the threads they started for it), and it ignores `arg`.
    unsafe { on_exit(quick_exit_handler, std::ptr::null_mut()) == 0 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn register() -> bool {
    false
}

/// The `on_exit` handler: one line naming the status and why, then [`end_now`].
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn quick_exit_handler(status: libc::c_int, _arg: *mut libc::c_void) {
    let line = ARMED.get().map(|armed| exit_line(armed, status));
    end_now(line.as_deref(), status)
}

/// Prints `line` (if any) on standard error, flushes Rust's and C's standard output, and
/// ends the process with `_exit(status)`: no exit handler or destructor runs. The exit
/// guard's handler and the watchdog's end of a process the driver never told share it.
pub(super) fn end_now(line: Option<&str>, status: i32) -> ! {
    use std::io::Write;
    if let Some(line) = line {
        eprintln!("{line}");
    }
    let _ = std::io::stdout().flush();
    // SAFETY: fflush(NULL) flushes every C output stream and takes no pointer of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    // SAFETY: _exit ends the process without returning, which is the point (module
    // documentation).
    unsafe { libc::_exit(status) }
}

/// The line the handler prints.
fn exit_line(armed: &Armed, status: i32) -> String {
    format!(
        "NIIN: PE {}: exit({status}) ends the process here, without the exit handlers \
         registered before nvshmem_finalize or the libraries' destructors: the CUDA context \
         had failed ({}), so ncclCommAbort could not stop NCCL's proxy thread, which \
         crashes in them ({FAULT_EXIT_VAR}=full runs them anyway)",
        armed.pe, armed.cause
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_takes_quick_or_full_and_names_a_bad_value() {
        assert_eq!(FaultExit::parse(None).unwrap(), FaultExit::Quick);
        assert_eq!(FaultExit::parse(Some("")).unwrap(), FaultExit::Quick);
        assert_eq!(FaultExit::parse(Some(" quick ")).unwrap(), FaultExit::Quick);
        assert_eq!(FaultExit::parse(Some("full")).unwrap(), FaultExit::Full);
        let e = FaultExit::parse(Some("fast")).unwrap_err().to_string();
        assert!(
            e.contains("NIIN_FAULT_EXIT=\"fast\": expected quick or full"),
            "{e}"
        );
    }

    #[test]
    fn the_line_names_the_pe_the_status_and_the_cause() {
        let armed = Armed {
            pe: 2,
            cause: "unspecified launch failure".into(),
            registered: true,
        };
        let line = exit_line(&armed, 3);
        assert!(
            line.starts_with("NIIN: PE 2: exit(3) ends the process here"),
            "{line}"
        );
        assert!(line.contains("(unspecified launch failure)"), "{line}");
        assert!(line.contains("NIIN_FAULT_EXIT=full"), "{line}");
    }

    /// The child of the tests below (run only by them, through `--ignored`): registers an
    /// exit handler, writes unflushed C and Rust output, arms the guard as
    /// `NIIN_GUARD_CHILD` says (`quick` or `full`), and exits with status 7.
    #[test]
    #[ignore = "a child process of exit_guard's tests; run by them"]
    fn exit_guard_child() {
        extern "C" fn earlier_handler() {
            // SAFETY: writes a static string to fd 1.
            unsafe { libc::write(1, b"EARLIER-HANDLER\n".as_ptr().cast(), 16) };
        }
        let Ok(mode) = std::env::var("NIIN_GUARD_CHILD") else {
            return;
        };
        let mode = FaultExit::parse(Some(&mode)).unwrap();
        // SAFETY: registers a handler that only writes to fd 1.
        assert_eq!(unsafe { libc::atexit(earlier_handler) }, 0);
        // Buffered output the exit must not lose: C stdio (a full buffer into a pipe), and
        // Rust's stdout without a newline.
        // SAFETY: a NUL-terminated format without conversions.
        unsafe { libc::printf(c"C-STDIO-".as_ptr()) };
        print!("RUST-STDOUT");
        let registered = arm(mode, 5, "unspecified launch failure");
        assert_eq!(
            registered,
            mode == FaultExit::Quick && cfg!(target_env = "gnu")
        );
        std::process::exit(7);
    }

    fn run_child(mode: &str) -> (Option<i32>, String, String) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lsa::exit_guard::tests::exit_guard_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("NIIN_GUARD_CHILD", mode)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn quick_keeps_the_status_and_the_output_and_skips_earlier_handlers() {
        let (status, stdout, stderr) = run_child("quick");
        assert_eq!(status, Some(7), "stdout {stdout:?} stderr {stderr:?}");
        assert!(stdout.contains("C-STDIO-"), "{stdout:?}");
        assert!(stdout.contains("RUST-STDOUT"), "{stdout:?}");
        assert!(!stdout.contains("EARLIER-HANDLER"), "{stdout:?}");
        assert!(
            stderr.contains("NIIN: PE 5: exit(7) ends the process here"),
            "{stderr:?}"
        );
    }

    #[test]
    fn full_runs_every_handler() {
        let (status, stdout, stderr) = run_child("full");
        assert_eq!(status, Some(7), "stdout {stdout:?} stderr {stderr:?}");
        assert!(stdout.contains("EARLIER-HANDLER"), "{stdout:?}");
        assert!(stdout.contains("C-STDIO-"), "{stdout:?}");
        assert!(!stderr.contains("ends the process here"), "{stderr:?}");
    }
}
