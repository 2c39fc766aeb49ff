//! What device code needs from the LSA transport: the communicator, the heap's window and
//! where the heap is, for the device context that code compiled against NCCL's
//! `nccl_device.h` builds (niin-ffi's per-module hooks create the `ncclDevComm` there, with
//! the kernels' own headers).

use std::sync::Arc;

use super::LsaTransport;
use crate::AnyTransport;
use crate::cuda::Device;
use crate::nccl::{Comm, NcclError, Window, sys};
use crate::router::Routed;
use crate::transport::Transport;

/// The NCCL pieces of one PE's symmetric heap. Holding it keeps the communicator and the
/// window alive: drop it before the world's collective finalize.
#[derive(Clone, Debug)]
pub struct DeviceParts {
    /// The world's communicator.
    pub comm: Comm,
    /// The window that holds the heap (and, after it, the transport's control area).
    pub window: Arc<Window>,
    /// Device address of this PE's heap (offset 0).
    pub heap_base: u64,
    /// Bytes of the heap that symmetric allocations use (the window is larger).
    pub heap_size: u64,
    /// The CUDA device ordinal of the communicator.
    pub cuda_device: i32,
    /// That device (its primary context).
    pub device: Device,
    /// This PE.
    pub my_pe: usize,
    /// For every PE of the world, whether it is an LSA peer of this PE (this PE included).
    pub lsa_peers: Vec<bool>,
    /// Device address of the watchdog's two words: 0, or 1 + a PE that died (device
    /// barriers poll it); set by device code before it stops a kernel (`lsa/watchdog.rs`).
    pub abort_word: u64,
    /// `NIIN_TIMEOUT`: how long a device barrier may wait.
    pub timeout: std::time::Duration,
}

impl DeviceParts {
    /// Size of this PE's LSA team. NCCL's LSA team is a run of consecutive world ranks,
    /// so this is the number of LSA peers.
    pub fn lsa_size(&self) -> usize {
        self.lsa_peers.iter().filter(|&&b| b).count()
    }

    /// This PE's rank in its LSA team: the LSA peers numbered below it.
    pub fn lsa_rank(&self) -> usize {
        self.lsa_peers[..self.my_pe].iter().filter(|&&b| b).count()
    }

    /// Whether the world has PEs outside this PE's LSA team (they need GIN).
    pub fn has_non_lsa_peers(&self) -> bool {
        self.lsa_peers.iter().any(|&b| !b)
    }

    /// Runs `f` with the raw communicator while holding its lock, as every call through
    /// [`Comm`] does, so a direct NCCL call made by `f` (through the library's table) does
    /// not race with another thread's use of the communicator. A non-blocking
    /// communicator is polled until `f`'s call is done.
    pub fn with_comm_locked<R>(
        &self,
        f: impl FnOnce(sys::ncclComm_t) -> R,
    ) -> Result<R, NcclError> {
        let _guard = self.comm.lock();
        let r = f(self.comm.raw());
        self.comm.settle()?;
        Ok(r)
    }
}

impl LsaTransport {
    /// The pieces device code needs (see [`DeviceParts`]).
    pub fn device_parts(&self) -> DeviceParts {
        DeviceParts {
            comm: self.comm.clone(),
            window: Arc::clone(&self.window),
            heap_base: self.bases[self.pe].unwrap_or(0),
            heap_size: self.heap_size,
            cuda_device: self.comm.cu_device(),
            device: self.device.clone(),
            my_pe: self.pe,
            lsa_peers: (0..self.n_pes).map(|pe| self.is_lsa_peer(pe)).collect(),
            abort_word: self.watchdog.device_word(),
            timeout: self.timeout,
        }
    }
}

impl Routed {
    /// The LSA transport of an NCCL world (its primary implementation); `None` in a CPU
    /// world.
    pub fn lsa_transport(&self) -> Option<&LsaTransport> {
        match self.implementations().first() {
            Some(AnyTransport::Lsa(lsa)) => Some(lsa),
            _ => None,
        }
    }
}
