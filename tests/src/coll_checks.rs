//! The collective checks (reduce, reducescatter, broadcast, fcollect, alltoall): every type
//! and operator on the world, the team shapes, the stream forms and bad input. Expected
//! values come from an oracle written here, independent of the library: inputs are small
//! integers (1..=3 for arithmetic, 0..=127 for bitwise operators), whose minimum, maximum,
//! sum and product over up to 4 PEs are exact in every reduce type, computed in `u64`.

use niin_api::{
    Error, ReduceOp, ReduceType, RmaType, Stream, SymBuffer, SymSlice, TeamId, World,
    for_each_nvshmem_type,
};
use niin_transport::Elem;
use niin_transport::coll::{f32_to_bf16, f32_to_f16};

use crate::checks::{CheckResult, expect_eq, fail, value};

/// `x` as a `T` (exact: `x` is small).
fn small<T: ReduceType>(x: u64) -> T {
    match T::ELEM {
        Elem::F32 => T::from_bits(u64::from((x as f32).to_bits())),
        Elem::F64 => T::from_bits((x as f64).to_bits()),
        Elem::F16 => T::from_bits(u64::from(f32_to_f16(x as f32))),
        Elem::Bf16 => T::from_bits(u64::from(f32_to_bf16(x as f32))),
        _ => T::from_bits(x),
    }
}

/// Team PE `p`'s input element `i` for `op`.
fn input(op: ReduceOp, p: usize, i: usize) -> u64 {
    if op.is_bitwise() {
        ((p as u64 + 1) * 37 + i as u64 * 11) % 128
    } else {
        1 + (p as u64 * 7 + i as u64 * 3) % 3
    }
}

/// The oracle: `op` over team PEs `0..n` of element `i`.
fn expected(op: ReduceOp, n: usize, i: usize) -> u64 {
    let xs = (0..n).map(|p| input(op, p, i));
    match op {
        ReduceOp::And => xs.fold(u64::MAX, |a, b| a & b),
        ReduceOp::Or => xs.fold(0, |a, b| a | b),
        ReduceOp::Xor => xs.fold(0, |a, b| a ^ b),
        ReduceOp::Min => xs.min().unwrap_or(0),
        ReduceOp::Max => xs.max().unwrap_or(0),
        ReduceOp::Sum => xs.sum(),
        ReduceOp::Prod => xs.product(),
    }
}

fn bits<T: RmaType>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// This PE's local copy of `len` elements of `sym`.
fn read<T: RmaType>(w: &World, sym: SymSlice<T>) -> Result<Vec<T>, Error> {
    let mut v = vec![T::from_bits(0); sym.len()];
    w.get(&mut v, sym, w.my_pe())?;
    Ok(v)
}

/// Where a collective runs: blocking, or on a stream that is then synchronized.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Now,
    Stream,
}

/// Runs `f` blocking or on a fresh stream (synchronized before returning).
fn in_form(
    w: &World,
    form: Form,
    f: impl FnOnce(Option<&Stream<'_>>) -> Result<(), Error>,
) -> CheckResult {
    match form {
        Form::Now => f(None),
        Form::Stream => {
            let s = w.stream()?;
            f(Some(&s))?;
            s.synchronize()
        }
    }
}

/// Elements per reduce (not a multiple of 3), per reducescatter block, per movement block.
const LEN: usize = 1000;
const PER: usize = 37;
const BLOCK: usize = 9;

/// Two symmetric buffers that every case views as its own element type: allocated once by
/// every PE of the world (allocation is collective over the world, and not every PE takes
/// part in every team's case).
pub struct Scratch {
    src: SymBuffer<u64>,
    dst: SymBuffer<u64>,
}

impl Scratch {
    fn new(w: &World) -> Result<Self, Error> {
        let words = LEN.max(PER * w.n_pes()).max(BLOCK * w.n_pes());
        Ok(Scratch {
            src: w.malloc(words)?,
            dst: w.malloc(words)?,
        })
    }

    /// The buffers as `len` elements of `T`.
    fn views<T: RmaType>(&self, w: &World, len: usize) -> (SymSlice<T>, SymSlice<T>) {
        assert!(len * size_of::<T>() <= self.src.len() * 8);
        (
            SymSlice::from_raw_parts(w, self.src.offset(), len),
            SymSlice::from_raw_parts(w, self.dst.offset(), len),
        )
    }

    fn free(self, w: &World) -> CheckResult {
        w.free(self.dst)?;
        w.free(self.src)
    }
}

/// reduce (out of place and in place) and reducescatter of `T` by `op` over `team`.
fn reduce_case<T: ReduceType>(
    w: &World,
    sc: &Scratch,
    team: TeamId,
    op: ReduceOp,
    form: Form,
) -> CheckResult {
    let n = w.team_n_pes(team).expect("a member");
    let k = w.team_my_pe(team).expect("a member");
    let (len, per) = (LEN, PER);
    let (src, dst) = sc.views::<T>(w, len.max(per * n));
    let mine: Vec<T> = (0..src.len()).map(|i| small(input(op, k, i))).collect();
    w.put(src, &mine, w.my_pe())?;
    let name = T::NAME;
    in_form(w, form, |s| match s {
        None => w.reduce(team, op, dst.slice(..len), src.slice(..len), len),
        Some(s) => s.reduce(team, op, dst.slice(..len), src.slice(..len), len),
    })?;
    let want: Vec<T> = (0..len).map(|i| small(expected(op, n, i))).collect();
    let got = read(w, dst.slice(..len))?;
    if bits(&got) != bits(&want) {
        let i = (0..len)
            .find(|&i| got[i].to_bits() != want[i].to_bits())
            .unwrap_or(0);
        return Err(fail(
            w,
            "reduce",
            format!(
                "{name} {}: element {i} is {:#x}, expected {:#x}",
                op.name(),
                got[i].to_bits(),
                want[i].to_bits()
            ),
        ));
    }
    // In place: the source becomes the result.
    w.barrier(team)?;
    in_form(w, form, |s| match s {
        None => w.reduce(team, op, src.slice(..len), src.slice(..len), len),
        Some(s) => s.reduce(team, op, src.slice(..len), src.slice(..len), len),
    })?;
    expect_eq(
        w,
        "reduce in place",
        bits(&read(w, src.slice(..len))?),
        bits(&want),
    )?;
    // reducescatter: block k of everyone's source.
    w.put(src, &mine, w.my_pe())?;
    w.barrier(team)?;
    in_form(w, form, |s| match s {
        None => w.reducescatter(team, op, dst.slice(..per), src.slice(..per * n), per),
        Some(s) => s.reducescatter(team, op, dst.slice(..per), src.slice(..per * n), per),
    })?;
    let want: Vec<u64> = (0..per)
        .map(|i| small::<T>(expected(op, n, k * per + i)).to_bits())
        .collect();
    expect_eq(w, "reducescatter", bits(&read(w, dst.slice(..per))?), want)?;
    w.barrier(team)
}

/// broadcast (from the team's last PE), fcollect and alltoall of `T` over `team`.
fn movement_case<T: RmaType>(w: &World, sc: &Scratch, team: TeamId, form: Form) -> CheckResult {
    let n = w.team_n_pes(team).expect("a member");
    let k = w.team_my_pe(team).expect("a member");
    let m = BLOCK;
    let (src, dst) = sc.views::<T>(w, m * n);
    let world_of = |p: usize| {
        w.team_translate_pe(team, p, TeamId::WORLD)
            .expect("a PE of the team")
    };
    let mine: Vec<T> = (0..m * n).map(|i| value(w.my_pe(), i)).collect();
    w.put(src, &mine, w.my_pe())?;
    let root = n - 1;
    // Before each movement the team meets: the members' dest must be ready before any
    // member calls (OpenSHMEM; niin-rs pushes into it without a wait), and each PE has just
    // read its dest to check the previous one.
    w.barrier(team)?;
    in_form(w, form, |s| match s {
        None => w.broadcast(team, dst.slice(..m), src.slice(..m), m, root),
        Some(s) => s.broadcast(team, dst.slice(..m), src.slice(..m), m, root),
    })?;
    let want: Vec<u64> = (0..m)
        .map(|i| value::<T>(world_of(root), i).to_bits())
        .collect();
    expect_eq(w, "broadcast", bits(&read(w, dst.slice(..m))?), want)?;
    w.barrier(team)?;
    in_form(w, form, |s| match s {
        None => w.fcollect(team, dst, src.slice(..m), m),
        Some(s) => s.fcollect(team, dst, src.slice(..m), m),
    })?;
    let want: Vec<u64> = (0..m * n)
        .map(|i| value::<T>(world_of(i / m), i % m).to_bits())
        .collect();
    expect_eq(w, "fcollect", bits(&read(w, dst)?), want)?;
    w.barrier(team)?;
    in_form(w, form, |s| match s {
        None => w.alltoall(team, dst, src, m),
        Some(s) => s.alltoall(team, dst, src, m),
    })?;
    // Block j of this PE's dst: team PE j's source block k.
    let want: Vec<u64> = (0..m * n)
        .map(|i| value::<T>(world_of(i / m), k * m + i % m).to_bits())
        .collect();
    expect_eq(w, "alltoall", bits(&read(w, dst)?), want)?;
    w.barrier(team)
}

/// Runs the collectives of one type row, by the lists it is in.
macro_rules! each_coll_row {
    ([$w:ident, $sc:ident, $team:expr, $form:expr] $(($name:ident, $c:literal, $t:ty, [$($l:ident),*])),* $(,)?) => {
        $( $( each_coll_row!(@list $l, $w, $sc, $team, $form, $name, $t); )* )*
    };
    (@list rma, $w:ident, $sc:ident, $team:expr, $form:expr, $name:ident, $t:ty) => {
        movement_case::<$t>($w, &$sc, $team, $form)
            .map_err(|e| fail($w, stringify!($name), e.to_string()))?
    };
    (@list reduce, $w:ident, $sc:ident, $team:expr, $form:expr, $name:ident, $t:ty) => {
        for op in [ReduceOp::Min, ReduceOp::Max, ReduceOp::Sum, ReduceOp::Prod] {
            reduce_case::<$t>($w, &$sc, $team, op, $form)
                .map_err(|e| fail($w, stringify!($name), e.to_string()))?;
        }
    };
    (@list reduce_bitwise, $w:ident, $sc:ident, $team:expr, $form:expr, $name:ident, $t:ty) => {
        for op in [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor] {
            reduce_case::<$t>($w, &$sc, $team, op, $form)
                .map_err(|e| fail($w, stringify!($name), e.to_string()))?;
        }
    };
    (@list $other:ident, $w:ident, $sc:ident, $team:expr, $form:expr, $name:ident, $t:ty) => {};
}

/// Every collective, every type row and operator of NVSHMEM's lists, over the world
/// (worlds of up to 4 PEs: the products stay exact).
pub fn collectives_every_type(w: &World) -> CheckResult {
    let sc = Scratch::new(w)?;
    for_each_nvshmem_type!(each_coll_row, w, sc, TeamId::WORLD, Form::Now);
    sc.free(w)
}

/// The stream forms of every collective, every type row and operator, over the world;
/// then over the team shapes of [`collectives_team_shapes`].
pub fn collectives_on_stream(w: &World) -> CheckResult {
    let sc = Scratch::new(w)?;
    for_each_nvshmem_type!(each_coll_row, w, sc, TeamId::WORLD, Form::Stream);
    sc.free(w)?;
    team_shapes(w, Form::Stream)
}

/// The collectives over each team shape: the world, the even PEs (a strided split), both
/// axes of a 2-D split, and teams of one PE (the x axis of a 2-D split of width 1).
pub fn collectives_team_shapes(w: &World) -> CheckResult {
    team_shapes(w, Form::Now)
}

fn team_shapes(w: &World, form: Form) -> CheckResult {
    let n = w.n_pes();
    let me = w.my_pe();
    let evens = w
        .team_split_strided(TeamId::WORLD, 0, 2, n.div_ceil(2), None)?
        .unwrap_or(TeamId::INVALID);
    let (x, y) = w.team_split_2d(TeamId::WORLD, 2, None, None)?;
    let (one, rest) = w.team_split_2d(TeamId::WORLD, 1, None, None)?;
    let sc = Scratch::new(w)?;
    let mut teams = vec![("world", TeamId::WORLD), ("x", x), ("y", y), ("one", one)];
    if me % 2 == 0 {
        teams.push(("evens", evens));
    }
    for (what, team) in teams {
        let run = || -> CheckResult {
            reduce_case::<i32>(w, &sc, team, ReduceOp::Sum, form)?;
            reduce_case::<u64>(w, &sc, team, ReduceOp::Xor, form)?;
            reduce_case::<f64>(w, &sc, team, ReduceOp::Max, form)?;
            movement_case::<i16>(w, &sc, team, form)?;
            movement_case::<f32>(w, &sc, team, form)
        };
        run().map_err(|e| fail(w, "team shape", format!("{what}: {e}")))?;
    }
    w.barrier_all()?;
    for t in [evens, x, y, one, rest] {
        if t != TeamId::INVALID {
            w.team_destroy(t)?;
        }
    }
    sc.free(w)
}

/// Bad arguments are errors that name the bad value, on every PE, and the world works
/// afterwards.
pub fn collectives_bad_input(w: &World) -> CheckResult {
    let n = w.n_pes();
    let a = w.malloc::<f32>(4 * n)?;
    let b = w.malloc::<f32>(4 * n)?;
    let expect_err = |what: &'static str, r: Result<(), Error>, needle: &str| -> CheckResult {
        match r {
            Ok(()) => Err(fail(w, what, "accepted".into())),
            Err(e) if e.to_string().contains(needle) => Ok(()),
            Err(e) => Err(fail(
                w,
                what,
                format!("error {e:?} does not name {needle:?}"),
            )),
        }
    };
    let world = TeamId::WORLD;
    expect_err(
        "xor of float",
        w.reduce(world, ReduceOp::Xor, a.all(), b.all(), 4),
        "xor",
    )?;
    expect_err(
        "root out of range",
        w.broadcast(world, a.all(), b.all(), 4, n),
        &format!("PE_root {n}"),
    )?;
    expect_err(
        "fcollect dest too small",
        w.fcollect(world, a.slice(..4 * n - 1), b.all(), 4),
        "dest holds",
    )?;
    expect_err(
        "reducescatter source too small",
        w.reducescatter(world, ReduceOp::Sum, a.all(), b.slice(..4 * n - 1), 4),
        "source holds",
    )?;
    expect_err(
        "invalid team",
        w.reduce(TeamId::INVALID, ReduceOp::Sum, a.all(), b.all(), 4),
        "team",
    )?;
    // The world still works.
    w.reduce(world, ReduceOp::Sum, a.all(), b.all(), 4)?;
    w.barrier_all()?;
    w.free(b)?;
    w.free(a)
}
