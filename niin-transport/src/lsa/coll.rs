//! Host-initiated collectives of teams of LSA peers, blocking and on streams: the copy
//! engines move the data, the generated reduction kernels (`cuda/coll_kernels.rs`)
//! combine it, and barriers of the team order them, all on one stream.
//!
//! Semantics are [`crate::coll`]'s (NVSHMEM 3.4.5's team collectives); the steps, enqueued
//! in order on the caller's stream (`Order::Stream`) or on the internal stream, which is
//! then synchronized (`Order::Now`):
//!
//! 1. for the reductions only, a barrier of the team (the world's `ncclAllReduce`, or a
//!    sub-team's stream barrier): every member's earlier work on its stream is done, so its
//!    `src` is ready. Broadcast, fcollect and alltoall only store into the members' `dst`,
//!    which OpenSHMEM requires to be ready on every member before any member calls: they
//!    start at once (as NVSHMEM's do), and wait for the team once, in step 3;
//! 2. the data:
//!    - **reduce**: team PE `k` combines slice `k` of the elements (`nelems·k/n ..
//!      nelems·(k+1)/n`) over every member's `src`, in team order, and stores the result
//!      into slice `k` of every member's `dst` (one kernel). Only PE `k` writes slice `k`,
//!      and it reads it before, so `dst == src` (in place) is safe;
//!    - **reducescatter**: team PE `k` combines block `k` of every member's `src` into its
//!      own `dst` (one kernel);
//!    - **broadcast**: the root copies its `src` into every member's `dst` (its own skipped
//!      where the two are the same bytes: in place);
//!    - **fcollect**: a copy of this PE's `src` into block `k` of every member's `dst`;
//!    - **alltoall**: a copy of block `j` of this PE's `src` into block `k` of member `j`'s
//!      `dst`, for every `j`;
//! 3. a barrier of the team: nobody's `src` or `dst` is reused while a member still reads
//!    or writes it, and every member's data has landed.
//!
//! Every member must be an LSA peer of this PE, with one exception: a collective over
//! the world whose type and operator NCCL has is one NCCL collective on the world's
//! communicator, on the stream (`ncclAllReduce`, `ncclReduceScatter`, `ncclBroadcast`,
//! `ncclAllGather`, `ncclAlltoAll`; NCCL orders and synchronizes the ranks itself). That is
//! the default for the world ([`HostCollPath`]): measured on an H200 (`tests/gpu/coll_bw.cu`,
//! session 12), NCCL's took 5–7 µs a call with 1 PE where the path above took 6–8, and 35
//! against 55 µs for a 64 MiB float sum; with 2 PEs time-sharing the GPU it needs one or two
//! time slices (2.25 or 4.5 ms) where two barriers needed four (9.0 ms; session 14 dropped
//! the first barrier of broadcast, fcollect and alltoall, step 1). NCCL has no 16-bit
//! integers and no bitwise operators: those, and sub-teams, take the path above. NCCL's
//! floating sums and products combine the PEs in its own order (the same result on every
//! PE, not necessarily the team-order result of the path above, which `NIIN_HOST_COLL=lsa`
//! keeps for an all-LSA world). The router runs what this transport cannot
//! ([`LsaTransport::runs_collective`]) elsewhere.
//!
//! **Teams with PEs on other nodes.** When the world has PEs on other nodes (or under
//! `NIIN_HOST_COLL=nccl`), every team split makes the new team an NCCL communicator:
//! `ncclCommSplit` of the parent's (the world's, or the parent team's own), called by every
//! member of the parent (`Transport::team_split`), with the new team's first member as the
//! color and the PE's team number as the key, so the communicator's ranks are the team's
//! numbers (checked). A team with a member that is not an LSA peer (every team, under
//! `NIIN_HOST_COLL=nccl`) then runs its collectives of NCCL's types and operators, and its
//! barriers, on that communicator, blocking and on streams; the communicator is released
//! when the team is destroyed, and at finalize. Each communicator is a full NCCL
//! communicator (its own buffers and connections), so a program that makes many teams in a
//! multi-node world pays NCCL's set-up for each, as NVSHMEM with NCCL does.
//! A collective of zero elements enqueues nothing (every member skips it alike).

use std::sync::Arc;

use super::{LsaTransport, cuda_err, nccl_err};
use crate::coll::{CollKind, Collective, Elem, ReduceOp};
use crate::cuda::{self, CollKernels, ReduceLaunch, Stream};
use crate::error::{Result, TransportError};
use crate::nccl::Comm;
use crate::nccl::NcclColl;
use crate::nccl::sys::{ncclDataType_t as Dt, ncclRedOp_t as Op};
use crate::ops::{Order, SymAddr, TeamSplit, TeamSync};

/// The variable that picks the path of host collectives over the world.
pub const HOST_COLL_VAR: &str = "NIIN_HOST_COLL";

/// How host collectives over the world run when every PE is an LSA peer
/// (`NIIN_HOST_COLL`); a world with PEs on other nodes always takes NCCL where NCCL has the
/// type and operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCollPath {
    /// `auto` (the default): NCCL's collectives where NCCL has the type and operator (the
    /// faster, module docs), the copy engines and reduction kernels otherwise.
    Auto,
    /// `lsa`: the copy engines and reduction kernels for every type and operator (results
    /// combined in team order).
    Lsa,
    /// `nccl`: as `auto`, and every team split makes the new team an NCCL communicator,
    /// which its host collectives and barriers use (module docs, "Teams with PEs on other
    /// nodes"), in a one-node world too. Every PE must set the same value.
    Nccl,
}

impl HostCollPath {
    /// Parses the variable's value (unset: `Auto`); an error names a bad value.
    pub fn parse(value: Option<&str>) -> Result<HostCollPath> {
        let modes = [
            ("auto", HostCollPath::Auto),
            ("lsa", HostCollPath::Lsa),
            ("nccl", HostCollPath::Nccl),
        ];
        Ok(crate::env::choice(HOST_COLL_VAR, value, &modes)?)
    }
}

/// NCCL's type of `e`, where NCCL has one.
fn nccl_type(e: Elem) -> Option<Dt> {
    Some(match e {
        Elem::I8 => Dt::ncclInt8,
        Elem::U8 => Dt::ncclUint8,
        Elem::I32 => Dt::ncclInt32,
        Elem::U32 => Dt::ncclUint32,
        Elem::I64 => Dt::ncclInt64,
        Elem::U64 => Dt::ncclUint64,
        Elem::F16 => Dt::ncclFloat16,
        Elem::Bf16 => Dt::ncclBfloat16,
        Elem::F32 => Dt::ncclFloat32,
        Elem::F64 => Dt::ncclFloat64,
        Elem::I16 | Elem::U16 => return None,
    })
}

/// NCCL's operator of `op`, where NCCL has one.
fn nccl_op(op: ReduceOp) -> Option<Op> {
    Some(match op {
        ReduceOp::Sum => Op::ncclSum,
        ReduceOp::Prod => Op::ncclProd,
        ReduceOp::Min => Op::ncclMin,
        ReduceOp::Max => Op::ncclMax,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => return None,
    })
}

/// The NCCL call of collective `c` over the world and NCCL's count, where NCCL has one
/// (movements go as bytes).
fn nccl_call(c: &Collective) -> Option<(NcclColl, usize)> {
    let bytes = c.block_bytes();
    Some(match c.kind {
        CollKind::Reduce(op) => (
            NcclColl::AllReduce(nccl_type(c.elem)?, nccl_op(op)?),
            c.nelems,
        ),
        CollKind::ReduceScatter(op) => (
            NcclColl::ReduceScatter(nccl_type(c.elem)?, nccl_op(op)?),
            c.nelems,
        ),
        CollKind::Broadcast { root } => (NcclColl::Broadcast(Dt::ncclUint8, root as i32), bytes),
        CollKind::Fcollect => (NcclColl::AllGather(Dt::ncclUint8), bytes),
        CollKind::Alltoall => (NcclColl::AlltoAll(Dt::ncclUint8), bytes),
    })
}

impl LsaTransport {
    /// Whether team splits make NCCL communicators (module docs, "Teams with PEs on other
    /// nodes"): the world has PEs on other nodes, or `NIIN_HOST_COLL=nccl`. Every PE
    /// decides alike, as `ncclCommSplit` needs: LSA domains partition the world (either
    /// every PE sees every other as an LSA peer, or none does), and the launcher gives
    /// every PE the same environment.
    fn makes_team_comms(&self) -> bool {
        !self.all_lsa() || self.host_coll == HostCollPath::Nccl
    }

    /// Whether every PE of the world is an LSA peer of this one.
    fn all_lsa(&self) -> bool {
        self.bases.iter().all(Option::is_some)
    }

    /// The NCCL communicator that runs host collectives and stream barriers of `team`, if
    /// any: the world's for a team of every PE; a team's own (made at its split) when it
    /// has a member that is not an LSA peer, or under `NIIN_HOST_COLL=nccl`; otherwise
    /// none (the copy engines and the LSA barriers serve the team).
    pub(super) fn team_comm(&self, team: &TeamSync) -> Option<Comm> {
        if team.is_world(self.n_pes) {
            return Some(self.comm.clone());
        }
        let lsa_only = (0..team.size).all(|j| self.bases[team.world_pe(j)].is_some());
        if lsa_only && self.host_coll != HostCollPath::Nccl {
            return None;
        }
        let comms = self.team_comms.lock().unwrap_or_else(|e| e.into_inner());
        comms.get(&team.team).cloned()
    }

    /// Makes this PE's communicator of its new team (`ncclCommSplit` of the parent's;
    /// collective over the parent team), where splits make them and the parent has one.
    /// The new communicator's ranks are the team's numbers: checked.
    pub(super) fn split_team_comm(&self, split: &TeamSplit) -> Result<()> {
        if !self.makes_team_comms() {
            return Ok(());
        }
        let parent = if split.parent.is_world(self.n_pes) {
            self.comm.clone()
        } else {
            let comms = self.team_comms.lock().unwrap_or_else(|e| e.into_inner());
            match comms.get(&split.parent.team) {
                Some(c) => c.clone(),
                // A parent made when splits made none: on every member alike.
                None => return Ok(()),
            }
        };
        let Some(comm) = parent
            .split(split.color(), split.key(self.pe))
            .map_err(nccl_err)?
        else {
            return Ok(());
        };
        let team = split
            .team
            .expect("a communicator only for a PE with a new team");
        let rank = team.team_pe(self.pe).expect("a member of its new team");
        if comm.n_ranks() as usize != team.size || comm.rank() as usize != rank {
            return Err(TransportError::Gpu {
                what: format!(
                    "ncclCommSplit for team {} ({} PEs from PE {} stride {}) gave PE {} rank \
                     {} of {}, where the team has it as PE {rank} of {}",
                    team.team,
                    team.size,
                    team.start,
                    team.stride,
                    self.pe,
                    comm.rank(),
                    comm.n_ranks(),
                    team.size
                ),
            });
        }
        self.team_comms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(team.team, comm);
        Ok(())
    }

    /// Releases the communicator of team handle `team`, if it has one (every member
    /// destroys the team, so every rank releases it).
    pub(super) fn drop_team_comm(&self, team: i32) {
        // Taken out under the lock, released after it: releasing finalizes the
        // communicator, which may wait for the other members.
        let comm = self
            .team_comms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&team);
        drop(comm);
    }

    /// The NCCL communicator and call of `c` where this transport runs it through NCCL:
    /// a team with a communicator ([`LsaTransport::team_comm`]), a type and operator NCCL
    /// has (and its function in the loaded library), unless every PE is an LSA peer and
    /// `NIIN_HOST_COLL=lsa` for the world.
    fn nccl_path(&self, c: &Collective) -> Option<(Comm, NcclColl, usize)> {
        if c.team.is_world(self.n_pes) && self.all_lsa() && self.host_coll == HostCollPath::Lsa {
            return None;
        }
        let comm = self.team_comm(&c.team)?;
        let (call, count) = nccl_call(c)?;
        comm.nccl()
            .table()
            .has(call.symbol())
            .then_some((comm, call, count))
    }

    /// Whether this transport runs collective `c`: every member an LSA peer, or the NCCL
    /// path (module docs).
    pub fn runs_collective(&self, c: &Collective) -> bool {
        self.member_bases(c).is_ok() || self.nccl_path(c).is_some()
    }

    /// The heap base of every member of `c`'s team, in team order; an error names the
    /// first member that is not an LSA peer ([`LsaTransport::base`]).
    fn member_bases(&self, c: &Collective) -> Result<Vec<u64>> {
        (0..c.team.size)
            .map(|j| self.base(c.team.world_pe(j)))
            .collect()
    }

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
        // Symmetric heaps: this PE's ranges stand for every member's.
        let (src_bytes, dst_bytes) = c.operand_bytes();
        self.check_range(c.src, src_bytes as u64)?;
        self.check_range(c.dst, dst_bytes as u64)?;
        if c.block_bytes() == 0 {
            return Ok(());
        }
        if let Some((comm, call, count)) = self.nccl_path(c) {
            // NCCL's own mapping of the heap (the window it registered), not niin-rs's alias.
            let heap = self.heap.ptr();
            let (send, recv) = (heap + c.src.0, heap + c.dst.0);
            return self.on(order, |s| {
                // SAFETY: `send` and `recv` are this PE's checked operands inside the heap
                // NCCL allocated, alive as long as `self`; every PE makes the same call.
                unsafe {
                    comm.collective(
                        call,
                        send as *const _,
                        recv as *mut _,
                        count,
                        s.raw() as *mut _,
                    )
                }
                .map_err(nccl_err)
            });
        }
        let bases = self.member_bases(c)?;
        let kernels = match c.kind {
            CollKind::Reduce(_) | CollKind::ReduceScatter(_) => Some(self.reduction_kernels()?),
            _ => None,
        };
        let k = c.team.team_pe(self.pe).expect("validated: a member");
        let mine = bases[k];
        self.on(order, |s| {
            if kernels.is_some() {
                self.enqueue_barrier(s, c.team)?;
            }
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
            // destination is ready by the collective's precondition (module docs), and the
            // barrier after the copy keeps the members from reusing either meanwhile.
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
            // The pushes start at the next member, so the PEs write to different members at
            // a time.
            CollKind::Broadcast { root } if root == k => {
                let from = at(mine, c.src, 0);
                (0..n).try_for_each(|i| {
                    let to = at(bases[(k + i) % n], c.dst, 0);
                    if to == from { Ok(()) } else { copy(to, from) }
                })
            }
            CollKind::Broadcast { .. } => Ok(()),
            CollKind::Fcollect => (1..=n).try_for_each(|i| {
                let j = (k + i) % n;
                copy(at(bases[j], c.dst, k as u64 * bb), at(mine, c.src, 0))
            }),
            CollKind::Alltoall => (1..=n).try_for_each(|i| {
                let j = (k + i) % n;
                copy(
                    at(bases[j], c.dst, k as u64 * bb),
                    at(mine, c.src, j as u64 * bb),
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::TeamSync;

    #[test]
    fn host_coll_path_parses_and_names_a_bad_value() {
        assert_eq!(HostCollPath::parse(None).unwrap(), HostCollPath::Auto);
        assert_eq!(
            HostCollPath::parse(Some("auto")).unwrap(),
            HostCollPath::Auto
        );
        assert_eq!(
            HostCollPath::parse(Some(" lsa ")).unwrap(),
            HostCollPath::Lsa
        );
        assert_eq!(
            HostCollPath::parse(Some("nccl")).unwrap(),
            HostCollPath::Nccl
        );
        let e = HostCollPath::parse(Some("ring")).unwrap_err().to_string();
        assert!(e.contains("NIIN_HOST_COLL=\"ring\""), "{e}");
    }

    fn call(kind: CollKind, elem: Elem, nelems: usize) -> Collective {
        Collective {
            kind,
            team: TeamSync {
                team: 0,
                start: 0,
                stride: 1,
                size: 4,
            },
            dst: SymAddr(0),
            src: SymAddr(4096),
            nelems,
            elem,
        }
    }

    #[test]
    fn nccl_calls_take_nccl_types_and_operators_only() {
        let sum = |e| nccl_call(&call(CollKind::Reduce(ReduceOp::Sum), e, 10));
        assert_eq!(
            sum(Elem::F32),
            Some((NcclColl::AllReduce(Dt::ncclFloat32, Op::ncclSum), 10))
        );
        assert_eq!(
            sum(Elem::Bf16),
            Some((NcclColl::AllReduce(Dt::ncclBfloat16, Op::ncclSum), 10))
        );
        assert_eq!(sum(Elem::I16), None, "NCCL has no 16-bit integers");
        assert_eq!(sum(Elem::U16), None);
        let xor = nccl_call(&call(CollKind::Reduce(ReduceOp::Xor), Elem::U32, 10));
        assert_eq!(xor, None, "NCCL has no bitwise operators");
        let rs = nccl_call(&call(CollKind::ReduceScatter(ReduceOp::Min), Elem::I64, 3));
        assert_eq!(
            rs,
            Some((NcclColl::ReduceScatter(Dt::ncclInt64, Op::ncclMin), 3))
        );
        // Movements go as bytes, whatever the element type.
        let b = nccl_call(&call(CollKind::Broadcast { root: 2 }, Elem::I16, 5));
        assert_eq!(b, Some((NcclColl::Broadcast(Dt::ncclUint8, 2), 10)));
        let f = nccl_call(&call(CollKind::Fcollect, Elem::F64, 5));
        assert_eq!(f, Some((NcclColl::AllGather(Dt::ncclUint8), 40)));
        let a = nccl_call(&call(CollKind::Alltoall, Elem::U8, 7));
        assert_eq!(a, Some((NcclColl::AlltoAll(Dt::ncclUint8), 7)));
    }
}
