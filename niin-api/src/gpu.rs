//! Worlds on GPUs: the NCCL transports under a [`World`].
//!
//! Init picks this PE's GPU (the launcher's local rank, else rank modulo the device
//! count), makes the device's primary context current (the one the application's CUDA
//! runtime uses), loads NCCL (see `niin_transport::nccl` for the search order), agrees on
//! NCCL's unique id (given by the caller — NVSHMEM's unique-id init — or exchanged through
//! the job's rendezvous), creates the communicator, and builds the LSA transport on a
//! symmetric heap of `NVSHMEM_SYMMETRIC_SIZE` bytes registered as an NCCL window. PEs that
//! are not LSA peers route to the GIN transport (NCCL host RMA, 2.29.2+), built only when
//! the world has such PEs; it has not run anywhere yet (no NIC on the machines we have).

use niin_transport::cuda::{self, Device};
use niin_transport::gin::GinTransport;
use niin_transport::lsa::LsaTransport;
use niin_transport::nccl::{CommOptions, Nccl, UniqueId};
use niin_transport::{AnyTransport, Providers, Routed, Router, Transport};

use crate::bootstrap::{self, Placement};
use crate::config::WorldConfig;
use crate::error::{Error, Result};
use crate::world::World;

/// Where the NCCL unique id comes from.
pub(crate) enum UidSource<'a> {
    /// The application distributed it (`nvshmemx_set_attr_uniqueid_args`).
    Given(&'a [u8; 128]),
    /// Exchange it through the job's rendezvous (rank 0 makes it).
    Rendezvous(&'a Placement),
}

fn gpu(pe: usize, what: impl std::fmt::Display) -> Error {
    Error::TransportUnavailable(crate::error::with_pe(pe, what))
}

/// A fresh NCCL unique id, for `nvshmemx_get_uniqueid` on the NCCL transport.
pub(crate) fn new_unique_id() -> Result<[u8; 128]> {
    let nccl = Nccl::load().map_err(|e| gpu(0, e))?;
    Ok(nccl.unique_id().map_err(|e| gpu(0, e))?.0)
}

/// Builds PE `rank` of `n_pes` on the NCCL transport.
pub(crate) fn nccl_world(
    config: &WorldConfig,
    rank: usize,
    n_pes: usize,
    local_rank: Option<usize>,
    uid: UidSource<'_>,
) -> Result<World> {
    config.validate()?;
    cuda::driver().map_err(|e| gpu(rank, e))?;
    let count = cuda::device_count().map_err(|e| gpu(rank, e))?;
    let ordinal = cuda::choose_device(local_rank, rank, count).map_err(|e| gpu(rank, e))?;
    let device = Device::open(ordinal).map_err(|e| gpu(rank, e))?;
    device.make_current().map_err(|e| gpu(rank, e))?;
    let nccl = Nccl::load().map_err(|e| gpu(rank, e))?;
    let id = match uid {
        UidSource::Given(bytes) => UniqueId(*bytes),
        UidSource::Rendezvous(placement) => {
            let rv = bootstrap::rendezvous_from_env(crate::config::env_lossy, placement)
                .map_err(|e| gpu(rank, e))?;
            let bytes = bootstrap::exchange_unique_id(
                &rv,
                placement,
                || nccl.unique_id().map(|u| u.0).map_err(|e| e.to_string()),
                config.timeout,
            )
            .map_err(|e| gpu(rank, e))?;
            UniqueId(bytes)
        }
    };
    let comm = nccl
        .comm_init_rank(n_pes as i32, &id, rank as i32, CommOptions::default())
        .map_err(|e| gpu(rank, e))?;
    let lsa = LsaTransport::new(comm, device, config.heap_size, config.timeout)
        .map_err(|source| Error::Transport { pe: rank, source })?;
    let lsa_peers: Vec<bool> = (0..n_pes).map(|pe| lsa.is_lsa_peer(pe)).collect();
    let mut implementations = Vec::with_capacity(2);
    // GIN for the PEs outside this LSA domain: collective (it registers a staging window),
    // so every PE decides alike — a world of several LSA domains has non-LSA PEs for all.
    let gin = if lsa_peers.iter().all(|&b| b) {
        None
    } else {
        let (comm, window, device) = lsa.shared();
        Some(
            GinTransport::new(comm, window, device, config.heap_size, config.timeout)
                .map_err(|source| Error::Transport { pe: rank, source })?,
        )
    };
    let has_gin = gin.is_some();
    implementations.push(AnyTransport::from(lsa));
    implementations.extend(gin.map(AnyTransport::from));
    let router = Router::new(rank, n_pes, |pe| lsa_peers[pe], Providers::nccl(has_gin))
        .map_err(|source| Error::Transport { pe: rank, source })?;
    let routed = Routed::new(implementations, router)
        .map_err(|source| Error::Transport { pe: rank, source })?;
    let node_size = lsa_peers.iter().filter(|&&b| b).count().max(1);
    let world = World::assemble_with(
        crate::world::next_world_id(),
        rank,
        n_pes,
        routed,
        config,
        node_size,
        None,
    )?;
    // Every PE has registered its window and zeroed its heap before anyone uses it.
    world.barrier_all()?;
    Ok(world)
}
