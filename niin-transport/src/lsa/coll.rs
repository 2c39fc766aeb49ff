//! Host-initiated collectives of teams of LSA peers, blocking and on streams: the copy
//! engines move the data, the generated reduction kernels (`cuda/coll_kernels.rs`)
//! combine it, and two barriers of the team enclose both, all on one stream.
//!
//! Semantics are [`crate::coll`]'s (NVSHMEM 3.4.5's team collectives); the steps, enqueued
//! in order on the caller's stream (`Order::Stream`) or on the internal stream, which is
//! then synchronized (`Order::Now`):
//!
//! 1. a barrier of the team (the world's `ncclAllReduce`, or a sub-team's stream barrier):
//!    every member's earlier work on its stream is done, so its `src` is ready and its
//!    `dst` free;
//! 2. the data:
//!    - **reduce**: team PE `k` combines slice `k` of the elements (`nelems·k/n ..
//!      nelems·(k+1)/n`) over every member's `src`, in team order, and stores the result
//!      into slice `k` of every member's `dst` (one kernel). Only PE `k` writes slice `k`,
//!      and it reads it before, so `dst == src` (in place) is safe;
//!    - **reducescatter**: team PE `k` combines block `k` of every member's `src` into its
//!      own `dst` (one kernel);
//!    - **broadcast**: a copy of the root's `src` into this PE's `dst` (skipped where the two
//!      are the same bytes: the root in place);
//!    - **fcollect**: a copy of member `j`'s `src` into block `j` of this PE's `dst`, for every
//!      `j`;
//!    - **alltoall**: a copy of block `k` of member `j`'s `src` into block `j` of this PE's
//!      `dst`, for every `j`;
//! 3. a barrier of the team again: nobody's `src` or `dst` is reused while a member still
//!    reads or writes it, and every member's data has landed.
//!
//! Every member must be an LSA peer of this PE; the router sends other teams elsewhere.
//! A collective of zero elements enqueues nothing (every member skips it alike).

use std::sync::Arc;

use super::{LsaTransport, cuda_err};
use crate::coll::{CollKind, Collective};
use crate::cuda::{self, CollKernels, ReduceLaunch, Stream};
use crate::error::{Result, TransportError};
use crate::ops::{Order, SymAddr};

impl LsaTransport {
    /// The reduction kernels, JIT-compiled at the first call.
    fn reduction_kernels(&self) -> Result<Arc<CollKernels>> {
        let mut slot = self.coll_kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = slot.as_ref() {
            return Ok(Arc::clone(k));
        }
        let k = Arc::new(
            CollKernels::load(&self.device).map_err(|e| TransportError::Gpu {
                what: format!("loading the reduction kernels of host collectives: {e}"),
            })?,
        );
        *slot = Some(Arc::clone(&k));
        Ok(k)
    }

    /// Runs collective `c` (see the module docs).
    pub(super) fn run_collective(&self, order: Order, c: &Collective) -> Result<()> {
        c.validate(self.pe)?;
        let op = c.kind.name();
        // Symmetric heaps: this PE's ranges stand for every member's.
        let (src_bytes, dst_bytes) = c.operand_bytes();
        self.check_range(c.src, src_bytes as u64)?;
        self.check_range(c.dst, dst_bytes as u64)?;
        let members: Vec<usize> = (0..c.team.size).map(|j| c.team.world_pe(j)).collect();
        let bases = members
            .iter()
            .map(|&pe| match self.bases.get(pe) {
                Some(Some(b)) => Ok(*b),
                Some(None) => Err(TransportError::NotImplemented {
                    what: format!(
                        "{op} over team {}: PE {pe} is not an LSA peer of PE {}",
                        c.team.team, self.pe
                    ),
                }),
                None => Err(TransportError::PeOutOfRange {
                    pe,
                    n_pes: self.n_pes,
                }),
            })
            .collect::<Result<Vec<u64>>>()?;
        if c.block_bytes() == 0 {
            return Ok(());
        }
        let kernels = match c.kind {
            CollKind::Reduce(_) | CollKind::ReduceScatter(_) => Some(self.reduction_kernels()?),
            _ => None,
        };
        let k = c.team.team_pe(self.pe).expect("validated: a member");
        let mine = bases[k];
        self.on(order, |s| {
            self.enqueue_barrier(s, c.team)?;
            self.enqueue_data(s, c, k, mine, &bases, kernels.as_deref())?;
            self.enqueue_barrier(s, c.team)
        })
    }

    /// Step 2 of the module docs on `s`: `k` is this PE's team number, `mine` its heap
    /// base, `bases` the members'.
    fn enqueue_data(
        &self,
        s: &Stream,
        c: &Collective,
        k: usize,
        mine: u64,
        bases: &[u64],
        kernels: Option<&CollKernels>,
    ) -> Result<()> {
        let bb = c.block_bytes() as u64;
        let n = c.team.size;
        let at = |base: u64, addr: SymAddr, off: u64| base + addr.0 + off;
        let copy = |to: u64, from: u64| {
            // SAFETY: both ranges are `bb` bytes inside mapped heaps of members (checked
            // against the heap size in run_collective), alive as long as `self`; the
            // barriers around the copy keep the members from reusing them meanwhile.
            unsafe { cuda::memcpy_async(to, from, bb as usize, s) }.map_err(cuda_err)
        };
        let reduce = |op, src: SymAddr, dst: SymAddr, count: usize, push: bool| {
            let launch = ReduceLaunch {
                bases: self.bases_on_device.ptr(),
                start: c.team.start as u32,
                stride: c.team.stride as u32,
                size: n as u32,
                src: src.0,
                dst: dst.0,
                count: count as u64,
                push,
                me: self.pe as u32,
            };
            let kernels = kernels.expect("loaded for reductions");
            // SAFETY: every member's base is in `bases_on_device` (all LSA peers, checked),
            // and the element ranges lie inside the checked operands.
            unsafe { kernels.reduce(s, c.elem, op, launch) }.map_err(cuda_err)
        };
        let es = c.elem.size();
        match c.kind {
            CollKind::Reduce(op) => {
                let (lo, hi) = (c.nelems * k / n, c.nelems * (k + 1) / n);
                let off = (lo * es) as u64;
                let (src, dst) = (SymAddr(c.src.0 + off), SymAddr(c.dst.0 + off));
                reduce(op, src, dst, hi - lo, true)
            }
            CollKind::ReduceScatter(op) => {
                let src = SymAddr(c.src.0 + k as u64 * bb);
                reduce(op, src, c.dst, c.nelems, false)
            }
            CollKind::Broadcast { root } => {
                let (to, from) = (at(mine, c.dst, 0), at(bases[root], c.src, 0));
                if to == from { Ok(()) } else { copy(to, from) }
            }
            CollKind::Fcollect => (0..n)
                .try_for_each(|j| copy(at(mine, c.dst, j as u64 * bb), at(bases[j], c.src, 0))),
            CollKind::Alltoall => (0..n).try_for_each(|j| {
                copy(
                    at(mine, c.dst, j as u64 * bb),
                    at(bases[j], c.src, k as u64 * bb),
                )
            }),
        }
    }
}
