//! A multi-process PE's life lock: liveness without polling `/proc`.
//!
//! At attach, a thread of the PE's process (`niin-pe-<n>-life`) initialises a robust,
//! process-shared `pthread_mutex_t` in the PE's control block, locks it and parks until
//! the PE finalizes, when it unlocks it and ends. If the process ends first — a crash, a
//! signal, `exit` without `finalize` — the kernel marks the lock's futex word
//! `FUTEX_OWNER_DIED` as the thread dies (that is what robust mutexes are for). Any PE
//! then learns that a peer died with one atomic load of that word: no system call, no
//! per-peer file descriptor, nothing that grows with the job.
//!
//! glibc keeps the futex word first in `pthread_mutex_t`; the holder checks that the word
//! holds its thread id after locking, and otherwise marks the lock unusable, in which case
//! (and on other C libraries) the PE's liveness falls back to its pid in `/proc`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::region::{LIFE_LOCK_SIZE, LifeFlag, Region};

/// The bit the kernel sets in a robust futex word whose owner died.
pub(crate) const OWNER_DIED: u32 = 0x4000_0000;

/// The thread that holds a PE's life lock; [`LifeHolder::release`] unlocks it.
#[derive(Debug)]
pub(crate) struct LifeHolder {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LifeHolder {
    /// Starts the holder of `pe`'s life lock and waits until it holds it (or found that it
    /// cannot: then the PE's pid stands for its life).
    pub(crate) fn start(region: Arc<Region>, pe: usize) -> LifeHolder {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("niin-pe-{pe}-life"))
            .stack_size(64 << 10)
            .spawn(move || {
                let held = lock(&region, pe);
                let flag = if held {
                    LifeFlag::Held
                } else {
                    LifeFlag::Unusable
                };
                region.life_flag(pe).store(flag as u32, Ordering::Release);
                let _ = ready_tx.send(());
                if held {
                    // Until finalize (a message or the sender dropped).
                    let _ = stop_rx.recv();
                    unlock(&region, pe);
                }
            });
        match thread {
            Ok(thread) => {
                let _ = ready_rx.recv();
                LifeHolder {
                    stop: Some(stop_tx),
                    thread: Some(thread),
                }
            }
            Err(_) => LifeHolder {
                stop: None,
                thread: None,
            },
        }
    }

    /// Unlocks the life lock (the PE finalized) and joins the holder.
    pub(crate) fn release(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LifeHolder {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn lock(region: &Region, pe: usize) -> bool {
    const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() as u64 <= LIFE_LOCK_SIZE);
    // `mutex` points to LIFE_LOCK_SIZE bytes of this PE's control block, 64-byte aligned,
    // which only this thread uses as a mutex (other PEs only load its first word
    // atomically) and which stays mapped while this thread runs (it holds the region).
    let mutex = region.life_lock_ptr(pe).cast::<libc::pthread_mutex_t>();
    // SAFETY: all-zero bytes are a valid (if uninitialised) attribute object, which
    // pthread_mutexattr_init initialises before any use.
    let mut attr: libc::pthread_mutexattr_t = unsafe { std::mem::zeroed() };
    // SAFETY: `attr` is a live, writable attribute object.
    if unsafe { libc::pthread_mutexattr_init(&mut attr) } != 0 {
        return false;
    }
    // SAFETY: `attr` was initialised above.
    let shared =
        unsafe { libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED) };
    // SAFETY: as above.
    let robust =
        unsafe { libc::pthread_mutexattr_setrobust(&mut attr, libc::PTHREAD_MUTEX_ROBUST) };
    // SAFETY: `mutex` is valid for writes of a pthread_mutex_t (see above) and not in use;
    // `attr` is initialised.
    let init = shared == 0 && robust == 0 && unsafe { libc::pthread_mutex_init(mutex, &attr) } == 0;
    // SAFETY: `attr` is initialised and no longer needed.
    unsafe { libc::pthread_mutexattr_destroy(&mut attr) };
    // SAFETY: `mutex` was initialised above and lives in the mapping this thread holds.
    if !init || unsafe { libc::pthread_mutex_lock(mutex) } != 0 {
        return false;
    }
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    if region.life_word(pe) & 0x3FFF_FFFF != tid {
        // SAFETY: this thread holds the mutex it just locked.
        unsafe { libc::pthread_mutex_unlock(mutex) };
        return false;
    }
    true
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn lock(region: &Region, pe: usize) -> bool {
    let _ = (region, pe, LIFE_LOCK_SIZE);
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn unlock(region: &Region, pe: usize) {
    // SAFETY: this thread locked the mutex in `lock` and still holds it; the mapping is
    // alive (the thread holds the region).
    unsafe { libc::pthread_mutex_unlock(region.life_lock_ptr(pe).cast()) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn unlock(region: &Region, pe: usize) {
    let _ = (region, pe);
}
