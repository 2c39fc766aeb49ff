//! Team collectives of [`World`] (blocking) and [`Stream`] (stream-ordered): reduce,
//! reducescatter, broadcast, fcollect and alltoall, NVSHMEM 3.4.5's team forms.
//!
//! Every member of the team calls the same collective with the same arguments; operands
//! are symmetric. On return (blocking) or once the stream reaches it, this PE's `dst` is
//! complete and its `src` may be reused. As OpenSHMEM requires, every member's `dst` must be
//! ready before any member calls: broadcast, fcollect and alltoall may write into a peer's
//! `dst` before that peer has entered the call (a GPU world's do), so a PE that reads its
//! `dst` after one collective and then calls the next into it must meet the team in
//! between ([`World::barrier`]), as with NVSHMEM. Counts are NVSHMEM's: `nreduce` / `nelems`
//! elements per PE block; `root` is the root's number in the team. What each one computes
//! is in [`niin_transport::coll`]: floating reductions combine the PEs' values in team
//! order, so every PE gets bit-identical results; a reduction may be in place.
//!
//! The mock runs every form. A GPU world runs every form on the GPU for a team of LSA
//! peers (copy engines and reduction kernels, then a team barrier, on the stream);
//! a team with a member reached only over the network runs the blocking forms through
//! host RMA and refuses the stream forms with [`Error`] naming that member.

use niin_teams::TeamId;
use niin_transport::{CollKind, Collective, Elem, Order, ReduceOp, SymAddr, Transport};

use crate::buffer::SymSlice;
use crate::check::CollectiveCall;
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::types::{ReduceType, RmaType};
use crate::world::World;

/// The operands of one collective call, before the team is known.
struct Call<T: RmaType> {
    kind: CollKind,
    dst: SymSlice<T>,
    src: SymSlice<T>,
    nelems: usize,
    elem: Elem,
}

impl World {
    /// Checks and runs one collective in `order`.
    fn collective_in<T: RmaType>(&self, order: Order, team: TeamId, call: Call<T>) -> Result<()> {
        self.check_live()?;
        self.check_sym(&call.dst)?;
        self.check_sym(&call.src)?;
        let sync = self.team_sync(team)?;
        let op = call.kind.name();
        let n = sync.size;
        let over = || Error::BadArgument {
            pe: self.my_pe(),
            op,
            what: format!(
                "{} elements per PE for {n} PEs is more elements than usize holds",
                call.nelems
            ),
        };
        let all = call.nelems.checked_mul(n).ok_or_else(over)?;
        let (src_need, dst_need) = match call.kind {
            CollKind::Reduce(_) | CollKind::Broadcast { .. } => (call.nelems, call.nelems),
            CollKind::ReduceScatter(_) => (all, call.nelems),
            CollKind::Fcollect => (call.nelems, all),
            CollKind::Alltoall => (all, all),
        };
        self.check_len(op, "source", call.src.len(), src_need)?;
        self.check_len(op, "dest", call.dst.len(), dst_need)?;
        // Reductions combine typed elements; the others move bytes.
        let (nelems, elem) = match call.kind {
            CollKind::Reduce(_) | CollKind::ReduceScatter(_) => (call.nelems, call.elem),
            _ => (call.nelems * size_of::<T>(), Elem::U8),
        };
        let c = Collective {
            kind: call.kind,
            team: sync,
            dst: SymAddr(call.dst.offset()),
            src: SymAddr(call.src.offset()),
            nelems,
            elem,
        };
        if order != Order::Now {
            // Stream-ordered: synchronizes on the stream, after this returns (not compared).
            return self.transport_result(self.inner.transport.collective(order, &c));
        }
        let mut call = CollectiveCall::collective(team, &c);
        let _busy = self.enter_collective(&call)?;
        let published = self.publish_call(&mut call)?;
        let ran = self.transport_result(self.inner.transport.collective(order, &c));
        // The collective synchronized the team: every member's call is published.
        match published {
            Some(_) => self.compare_after(&sync, &call, ran),
            None => ran,
        }
    }

    /// `dst[i]` = `op` over the team's PEs of their `src[i]`, for `i < nreduce`
    /// (`nvshmem_<T>_<op>_reduce`); `dst` may be `src`. A bitwise `op` needs an integer
    /// type.
    pub fn reduce<T: ReduceType>(
        &self,
        team: TeamId,
        op: ReduceOp,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.collective_in(
            Order::Now,
            team,
            reduce_call(CollKind::Reduce(op), dst, src, nreduce),
        )
    }

    /// Team PE `k`'s `dst[i]` = `op` over the team's PEs of their `src[k * nreduce + i]`,
    /// for `i < nreduce` (`nvshmem_<T>_<op>_reducescatter`).
    pub fn reducescatter<T: ReduceType>(
        &self,
        team: TeamId,
        op: ReduceOp,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let call = reduce_call(CollKind::ReduceScatter(op), dst, src, nreduce);
        self.collective_in(Order::Now, team, call)
    }

    /// Every member's `dst[..nelems]` = team PE `root`'s `src[..nelems]`
    /// (`nvshmem_<T>_broadcast`; the root's `dst` too).
    pub fn broadcast<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
        root: usize,
    ) -> Result<()> {
        let call = move_call(CollKind::Broadcast { root }, dst, src, nelems);
        self.collective_in(Order::Now, team, call)
    }

    /// `dst[j * nelems ..][..nelems]` = team PE `j`'s `src[..nelems]`, for every member
    /// `j` (`nvshmem_<T>_fcollect`).
    pub fn fcollect<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.collective_in(
            Order::Now,
            team,
            move_call(CollKind::Fcollect, dst, src, nelems),
        )
    }

    /// On team PE `k`: `dst[j * nelems ..][..nelems]` = team PE `j`'s
    /// `src[k * nelems ..][..nelems]` (`nvshmem_<T>_alltoall`).
    pub fn alltoall<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.collective_in(
            Order::Now,
            team,
            move_call(CollKind::Alltoall, dst, src, nelems),
        )
    }
}

impl Stream<'_> {
    /// Enqueues [`World::reduce`] (`nvshmemx_<T>_<op>_reduce_on_stream`).
    pub fn reduce<T: ReduceType>(
        &self,
        team: TeamId,
        op: ReduceOp,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let call = reduce_call(CollKind::Reduce(op), dst, src, nreduce);
        self.world().collective_in(self.order(), team, call)
    }

    /// Enqueues [`World::reducescatter`] (`nvshmemx_<T>_<op>_reducescatter_on_stream`).
    pub fn reducescatter<T: ReduceType>(
        &self,
        team: TeamId,
        op: ReduceOp,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let call = reduce_call(CollKind::ReduceScatter(op), dst, src, nreduce);
        self.world().collective_in(self.order(), team, call)
    }

    /// Enqueues [`World::broadcast`] (`nvshmemx_<T>_broadcast_on_stream`).
    pub fn broadcast<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
        root: usize,
    ) -> Result<()> {
        let call = move_call(CollKind::Broadcast { root }, dst, src, nelems);
        self.world().collective_in(self.order(), team, call)
    }

    /// Enqueues [`World::fcollect`] (`nvshmemx_<T>_fcollect_on_stream`).
    pub fn fcollect<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let call = move_call(CollKind::Fcollect, dst, src, nelems);
        self.world().collective_in(self.order(), team, call)
    }

    /// Enqueues [`World::alltoall`] (`nvshmemx_<T>_alltoall_on_stream`).
    pub fn alltoall<T: RmaType>(
        &self,
        team: TeamId,
        dst: SymSlice<T>,
        src: SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let call = move_call(CollKind::Alltoall, dst, src, nelems);
        self.world().collective_in(self.order(), team, call)
    }
}

fn reduce_call<T: ReduceType>(
    kind: CollKind,
    dst: SymSlice<T>,
    src: SymSlice<T>,
    nelems: usize,
) -> Call<T> {
    Call {
        kind,
        dst,
        src,
        nelems,
        elem: T::ELEM,
    }
}

fn move_call<T: RmaType>(
    kind: CollKind,
    dst: SymSlice<T>,
    src: SymSlice<T>,
    nelems: usize,
) -> Call<T> {
    Call {
        kind,
        dst,
        src,
        nelems,
        elem: Elem::U8,
    }
}
