//! Sleeping on a 32-bit word of the shared mapping until another PE (thread or process)
//! changes it: Linux futexes, not private (the mapping may be shared between processes).
//! Elsewhere a plain short sleep stands in for the wait and the wake does nothing.

use std::time::Duration;

/// Sleeps while the 32-bit word at `word` still holds `expected`, at most `timeout`
/// (less when woken, interrupted, or the word already differs).
///
/// # Safety
/// `word` must point to a 4-byte aligned word of a live mapping.
pub(crate) unsafe fn wait(word: *const u32, expected: u32, timeout: Duration) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: FUTEX_WAIT only reads the aligned word (the caller's contract) and the
        // timespec, which lives across the call; it has no other effect than sleeping.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word,
                libc::FUTEX_WAIT,
                expected,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (word, expected);
        std::thread::sleep(timeout.min(Duration::from_millis(1)));
    }
}

/// Wakes every thread (of any process) sleeping in [`wait`] on `word`.
///
/// # Safety
/// `word` must point to a 4-byte aligned word of a live mapping.
pub(crate) unsafe fn wake_all(word: *const u32) {
    #[cfg(target_os = "linux")]
    // SAFETY: FUTEX_WAKE does not access the word's memory beyond resolving its address
    // (the caller's contract); it only wakes waiters.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAKE,
            i32::MAX,
            0usize,
            0usize,
            0u32,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = word;
}
