//! Tests of the mock transport: in-process worlds of 2–8 PEs as threads, and jobs of
//! real processes (the test binary re-executing itself as PEs).

mod amo;
mod barrier;
mod errors;
mod multiprocess;
mod rma;
mod streams;
mod waits;

use std::time::Duration;

use super::{MockConfig, MockTransport, MockWorld};
use crate::error::Result;
use crate::ops::{Order, Scalar, SymAddr, TeamSync, Width};
use crate::transport::{Fingerprints, Transport};

/// Heap size of test worlds: one 64 KiB page.
pub(super) const HEAP: u64 = 64 << 10;

/// A test configuration: small heaps, a timeout that fails a hung test quickly.
pub(super) fn cfg() -> MockConfig {
    MockConfig {
        heap_size: HEAP,
        timeout: Duration::from_secs(20),
        ..MockConfig::default()
    }
}

/// As [`cfg`] with a short timeout, for tests that expect one.
pub(super) fn short(ms: u64) -> MockConfig {
    MockConfig {
        timeout: Duration::from_millis(ms),
        ..cfg()
    }
}

/// An in-process world.
pub(super) fn world(n: usize, config: MockConfig) -> Vec<MockTransport> {
    MockWorld::new(n, config).unwrap()
}

/// Runs `f` on every PE of `world`, each on its own thread; returns the results by PE.
pub(super) fn on_all<R: Send>(
    world: &[MockTransport],
    f: impl Fn(&MockTransport) -> R + Sync,
) -> Vec<R> {
    std::thread::scope(|s| {
        let handles: Vec<_> = world.iter().map(|t| s.spawn(|| f(t))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The team of every PE.
pub(super) fn world_team(n: usize) -> TeamSync {
    TeamSync {
        team: 0,
        start: 0,
        stride: 1,
        size: n,
    }
}

/// Blocking put of `data`.
pub(super) fn put(t: &MockTransport, pe: usize, addr: u64, data: &[u8]) -> Result<()> {
    // SAFETY: `data` is a live local buffer and the put completes before returning.
    unsafe { t.put(Order::Now, pe, SymAddr(addr), data.as_ptr(), data.len()) }
}

/// Blocking get of `len` bytes.
pub(super) fn get(t: &MockTransport, pe: usize, addr: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live local buffer of `len` bytes, written before returning.
    unsafe { t.get(Order::Now, pe, buf.as_mut_ptr(), SymAddr(addr), len) }?;
    Ok(buf)
}

/// Blocking 8-byte `p`.
pub(super) fn p64(t: &MockTransport, pe: usize, addr: u64, v: u64) {
    t.p(
        Order::Now,
        pe,
        SymAddr(addr),
        Scalar {
            bits: v,
            width: Width::W8,
        },
    )
    .unwrap();
}

/// Blocking 8-byte `g`.
pub(super) fn g64(t: &MockTransport, pe: usize, addr: u64) -> u64 {
    t.g(Order::Now, pe, SymAddr(addr), Width::W8).unwrap()
}
