//! NVSHMEM's host collectives, blocking and `_on_stream`, generated from the type table
//! ([`for_each_nvshmem_type!`](niin_api::for_each_nvshmem_type)):
//!
//! - `nvshmem_<T>_<op>_reduce`, `nvshmem_<T>_<op>_reducescatter` and their
//!   `nvshmemx_..._on_stream` forms: `and`, `or`, `xor` for the 14 `reduce_bitwise` rows,
//!   `min`, `max`, `sum`, `prod` for the 24 `reduce` rows;
//! - `nvshmem_<T>_{broadcast,fcollect,alltoall}` and their `_on_stream` forms for the 25
//!   RMA rows, and the byte forms `nvshmem_{broadcast,fcollect,alltoall}mem[_on_stream]`.
//!
//! Each entry checks its arguments (the team, the operands inside the symmetric heap for
//! every element the collective touches, alignment), then runs the collective of
//! [`niin_api::World`] or [`niin_api::Stream`]; it returns 0 or an `NVSHMEMX_ERROR_*`
//! value with a `NIIN:` line. Semantics: `niin_api`'s `coll` module (NVSHMEM 3.4.5's).

use std::ffi::{c_int, c_void};

use niin_api::{ReduceOp, ReduceType, RmaType, SymSlice, TeamId, World};

use crate::convert;
use crate::convert::elements;
use crate::error::{FfiError, FfiResult, status_call};
use crate::stream::{CudaStream, on_stream};

/// Where a collective runs: now (blocking) or on a stream.
#[derive(Clone, Copy)]
pub(crate) enum Form {
    Now,
    OnStream(CudaStream),
}

/// A reduction collective.
#[derive(Clone, Copy)]
pub(crate) enum Reduction {
    Reduce,
    ReduceScatter,
}

/// A data-moving collective.
#[derive(Clone, Copy)]
pub(crate) enum Movement {
    Broadcast(c_int),
    Fcollect,
    Alltoall,
}

/// The team and this PE's view of both operands, `(src, dst)` elements long.
fn operands<T: RmaType>(
    w: &World,
    team: c_int,
    dest: *mut c_void,
    source: *const c_void,
    lens: impl FnOnce(usize) -> Option<(usize, usize)>,
) -> FfiResult<(TeamId, SymSlice<T>, SymSlice<T>)> {
    let id = convert::team(w, team)?;
    let n = w.team_n_pes(id).ok_or_else(|| {
        FfiError::BadArgument(format!(
            "team {team} is NVSHMEM_TEAM_INVALID: no collective runs on it"
        ))
    })?;
    let (src_len, dst_len) = lens(n).ok_or_else(|| {
        FfiError::BadArgument(format!(
            "the count times the team's {n} PEs is more elements than size_t holds"
        ))
    })?;
    let src = elements::<T>(w, source, src_len, "source")?;
    let dst = elements::<T>(w, dest, dst_len, "dest")?;
    Ok((id, dst, src))
}

/// Runs a reduction of `nreduce` elements per block.
pub(crate) fn reduction<T: ReduceType>(
    form: Form,
    which: Reduction,
    op: ReduceOp,
    team: c_int,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: usize,
) -> FfiResult<()> {
    let run = |w: &World, s: Option<&niin_api::Stream<'_>>| -> FfiResult<()> {
        let (id, dst, src) = operands::<T>(w, team, dest, source, |n| match which {
            Reduction::Reduce => Some((nreduce, nreduce)),
            Reduction::ReduceScatter => Some((nreduce.checked_mul(n)?, nreduce)),
        })?;
        match (which, s) {
            (Reduction::Reduce, None) => w.reduce(id, op, dst, src, nreduce)?,
            (Reduction::ReduceScatter, None) => w.reducescatter(id, op, dst, src, nreduce)?,
            (Reduction::Reduce, Some(s)) => s.reduce(id, op, dst, src, nreduce)?,
            (Reduction::ReduceScatter, Some(s)) => s.reducescatter(id, op, dst, src, nreduce)?,
        }
        Ok(())
    };
    match form {
        Form::Now => run(&crate::state::world()?, None),
        Form::OnStream(cstrm) => on_stream(cstrm, |w, s| run(w, Some(s))),
    }
}

/// Runs a broadcast, fcollect or alltoall of `nelems` elements per block.
pub(crate) fn movement<T: RmaType>(
    form: Form,
    which: Movement,
    team: c_int,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> FfiResult<()> {
    let run = |w: &World, s: Option<&niin_api::Stream<'_>>| -> FfiResult<()> {
        let (id, dst, src) = operands::<T>(w, team, dest, source, |n| match which {
            Movement::Broadcast(_) => Some((nelems, nelems)),
            Movement::Fcollect => Some((nelems, nelems.checked_mul(n)?)),
            Movement::Alltoall => Some((nelems.checked_mul(n)?, nelems.checked_mul(n)?)),
        })?;
        let root = |r: c_int| {
            usize::try_from(r).map_err(|_| {
                FfiError::BadArgument(format!("PE_root {r} is not a PE number of the team"))
            })
        };
        match (which, s) {
            (Movement::Broadcast(r), None) => w.broadcast(id, dst, src, nelems, root(r)?)?,
            (Movement::Broadcast(r), Some(s)) => s.broadcast(id, dst, src, nelems, root(r)?)?,
            (Movement::Fcollect, None) => w.fcollect(id, dst, src, nelems)?,
            (Movement::Fcollect, Some(s)) => s.fcollect(id, dst, src, nelems)?,
            (Movement::Alltoall, None) => w.alltoall(id, dst, src, nelems)?,
            (Movement::Alltoall, Some(s)) => s.alltoall(id, dst, src, nelems)?,
        }
        Ok(())
    };
    match form {
        Form::Now => run(&crate::state::world()?, None),
        Form::OnStream(cstrm) => on_stream(cstrm, |w, s| run(w, Some(s))),
    }
}

/// One reduction entry and its `_on_stream` form: `$coll` is `reduce` or `reducescatter`.
macro_rules! reduction_entries {
    ($name:ident, $t:ty, $op:ident, $which:ident, $coll:literal, $now:ident, $stream:ident) => {
        #[doc = concat!("`nvshmem_", stringify!($name), "_", stringify!($op), "_", $coll,
                        "`: the ", $coll, " of `nreduce` `", stringify!($t), "` elements by `",
                        stringify!($op), "` over `team` (collective). Returns 0 or an \
                        `NVSHMEMX_ERROR_*` value.")]
        #[unsafe(export_name = concat!("nvshmem_", stringify!($name), "_", stringify!($op), "_", $coll))]
        pub extern "C" fn $now(team: c_int, dest: *mut $t, source: *const $t, nreduce: usize) -> c_int {
            const NAME: &str =
                concat!("nvshmem_", stringify!($name), "_", stringify!($op), "_", $coll);
            status_call(NAME, || {
                reduction::<$t>(Form::Now, Reduction::$which, op!($op), team, dest.cast(),
                                source.cast(), nreduce)
            })
        }

        #[doc = concat!("`nvshmemx_", stringify!($name), "_", stringify!($op), "_", $coll,
                        "_on_stream`: the same, enqueued on `stream`.")]
        #[unsafe(export_name = concat!("nvshmemx_", stringify!($name), "_", stringify!($op), "_",
                                       $coll, "_on_stream"))]
        pub extern "C" fn $stream(
            team: c_int,
            dest: *mut $t,
            source: *const $t,
            nreduce: usize,
            stream: CudaStream,
        ) -> c_int {
            const NAME: &str = concat!("nvshmemx_", stringify!($name), "_", stringify!($op), "_",
                                       $coll, "_on_stream");
            status_call(NAME, || {
                reduction::<$t>(Form::OnStream(stream), Reduction::$which, op!($op), team,
                                dest.cast(), source.cast(), nreduce)
            })
        }
    };
}

/// A reduction operator's [`ReduceOp`] from its NVSHMEM name.
macro_rules! op {
    (and) => {
        ReduceOp::And
    };
    (or) => {
        ReduceOp::Or
    };
    (xor) => {
        ReduceOp::Xor
    };
    (min) => {
        ReduceOp::Min
    };
    (max) => {
        ReduceOp::Max
    };
    (sum) => {
        ReduceOp::Sum
    };
    (prod) => {
        ReduceOp::Prod
    };
}

/// The reduce and reducescatter entries of one operator, in a module named after it.
macro_rules! operator_module {
    ($name:ident, $t:ty, $op:ident) => {
        #[doc = concat!("`", stringify!($op), "` reductions of `", stringify!($name), "`.")]
        pub mod $op {
            use super::*;
            reduction_entries!($name, $t, $op, Reduce, "reduce", reduce, reduce_on_stream);
            reduction_entries!(
                $name,
                $t,
                $op,
                ReduceScatter,
                "reducescatter",
                reducescatter,
                reducescatter_on_stream
            );
        }
    };
}

/// The C name of a movement entry: `typed <name>` gives `nvshmem_<name>_<coll>`, `mem`
/// gives `nvshmem_<coll>mem`; `x` adds the `nvshmemx_` prefix and `_on_stream`.
macro_rules! movement_name {
    (typed $name:ident, $coll:literal) => {
        concat!("nvshmem_", stringify!($name), "_", $coll)
    };
    (mem, $coll:literal) => {
        concat!("nvshmem_", $coll, "mem")
    };
    (x typed $name:ident, $coll:literal) => {
        concat!("nvshmemx_", stringify!($name), "_", $coll, "_on_stream")
    };
    (x mem, $coll:literal) => {
        concat!("nvshmemx_", $coll, "mem_on_stream")
    };
}

/// One movement entry and its `_on_stream` form: `$p` is the pointer's C element type,
/// `$e` the element moved (bytes for the `mem` forms); `$root`: broadcast's extra
/// argument.
macro_rules! movement_entries {
    ([$($kind:tt)*], $p:ty, $e:ty, $coll:literal, $now:ident, $stream:ident, $which:expr
     $(, $root:ident)?) => {
        #[doc = concat!("`", movement_name!($($kind)*, $coll), "`: the ", $coll, " of `nelems` \
                         elements per PE over `team` (collective). Returns 0 or an \
                         `NVSHMEMX_ERROR_*` value.")]
        #[unsafe(export_name = movement_name!($($kind)*, $coll))]
        pub extern "C" fn $now(
            team: c_int,
            dest: *mut $p,
            source: *const $p,
            nelems: usize,
            $($root: c_int,)?
        ) -> c_int {
            status_call(movement_name!($($kind)*, $coll), || {
                movement::<$e>(Form::Now, $which, team, dest.cast(), source.cast(), nelems)
            })
        }

        #[doc = concat!("`", movement_name!(x $($kind)*, $coll), "`: the same, enqueued on \
                         `stream`.")]
        #[unsafe(export_name = movement_name!(x $($kind)*, $coll))]
        pub extern "C" fn $stream(
            team: c_int,
            dest: *mut $p,
            source: *const $p,
            nelems: usize,
            $($root: c_int,)?
            stream: CudaStream,
        ) -> c_int {
            status_call(movement_name!(x $($kind)*, $coll), || {
                movement::<$e>(Form::OnStream(stream), $which, team, dest.cast(), source.cast(),
                               nelems)
            })
        }
    };
}

/// The three movement collectives of one element type.
macro_rules! movement_set {
    ([$($kind:tt)*], $p:ty, $e:ty) => {
        movement_entries!([$($kind)*], $p, $e, "broadcast", broadcast, broadcast_on_stream,
                          Movement::Broadcast(pe_root), pe_root);
        movement_entries!([$($kind)*], $p, $e, "fcollect", fcollect, fcollect_on_stream,
                          Movement::Fcollect);
        movement_entries!([$($kind)*], $p, $e, "alltoall", alltoall, alltoall_on_stream,
                          Movement::Alltoall);
    };
}

/// One module per type name: its movement entries, and a module per reduction operator
/// of the lists the row is in.
macro_rules! coll_modules {
    ([] $(($name:ident, $c:literal, $t:ty, [$($list:ident),*])),* $(,)?) => {$(
        #[doc = concat!("The collectives of `", stringify!($name), "` (C type `", $c, "`).")]
        pub mod $name {
            use super::*;
            movement_set!([typed $name], $t, $t);
            $( coll_modules!(@list $list, $name, $t); )*
        }
    )*};
    (@list reduce, $name:ident, $t:ty) => {
        operator_module!($name, $t, min);
        operator_module!($name, $t, max);
        operator_module!($name, $t, sum);
        operator_module!($name, $t, prod);
    };
    (@list reduce_bitwise, $name:ident, $t:ty) => {
        operator_module!($name, $t, and);
        operator_module!($name, $t, or);
        operator_module!($name, $t, xor);
    };
    (@list $other:ident, $name:ident, $t:ty) => {};
}

/// The typed collectives, one module per NVSHMEM type name.
pub mod typed {
    use super::*;
    niin_api::for_each_nvshmem_type! { coll_modules }
}

/// The byte forms: `nvshmem_{broadcast,fcollect,alltoall}mem[_on_stream]` (`nelems` bytes).
pub mod mem {
    use super::*;
    movement_set!([mem], c_void, u8);
}
