//! The host half of the GIN proxy (`device/include/niin/impl/gin_proxy_impl.h`): one thread
//! per process that, while a world with PEs outside the LSA team (or `NIIN_GIN_LOOPBACK=1`)
//! is attached, calls every set-up module's `gin_poll` hook. The hook launches the module's
//! GIN worker kernel when a kernel of the module posted a request and no worker runs.
//!
//! Why a thread and a kernel launched on demand, not a kernel that runs for the world's
//! lifetime: a resident kernel would make every `cudaDeviceSynchronize` of the application
//! wait forever. The worker exits after 200 µs without requests; this thread starts another
//! when the next request rings the module's doorbell (host-mapped memory, read here through
//! the hook without any CUDA call).
//!
//! Polling: every 2 µs while a worker runs, every 20 µs otherwise (one core's share of a
//! small fraction; only in worlds that need GIN).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The generation of the running thread; a thread ends when this no longer equals its own.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Starts the proxy thread (a new generation: an older thread still ending exits at its
/// next round).
pub(crate) fn start() {
    let generation = GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    let spawned = std::thread::Builder::new()
        .name("niin-gin-proxy".to_owned())
        .spawn(move || run(generation));
    if let Err(e) = spawned {
        crate::error::report(
            "nvshmem_init",
            crate::error::FfiError::Os(format!(
                "cannot start the GIN proxy thread: {e}; device operations to PEs outside the \
                 LSA team will wait forever"
            )),
        );
    }
}

/// Makes the running thread end at its next round (never waits: the caller may hold the
/// module registry's lock, which the thread takes each round).
pub(crate) fn request_stop() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn run(generation: u64) {
    while GENERATION.load(Ordering::SeqCst) == generation {
        match crate::modules::gin_poll_round() {
            None => return,
            Some(true) => std::thread::sleep(Duration::from_micros(2)),
            Some(false) => std::thread::sleep(Duration::from_micros(20)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_without_a_world_ends_by_itself() {
        // No world is attached in unit tests: the round says so and the thread returns.
        let generation = GENERATION.load(Ordering::SeqCst);
        let t = std::thread::spawn(move || run(generation));
        t.join().expect("the proxy thread ends");
    }

    #[test]
    fn request_stop_moves_the_generation() {
        let before = GENERATION.load(Ordering::SeqCst);
        request_stop();
        assert!(GENERATION.load(Ordering::SeqCst) > before);
    }
}
