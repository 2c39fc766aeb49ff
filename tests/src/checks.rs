//! The conformance checks of the host API, written once and run two ways: by the
//! in-process tests (N PEs as threads) and by the `check_worker` binary under `niinrun`
//! (N PEs as processes). Each check is collective: every PE of the world runs it, and it
//! fails on any PE that sees a wrong result.
//!
//! Checks need at least 2 PEs unless they say otherwise; they work for any larger world.

use std::time::Duration;

use crate::coll_checks;

use niin_api::{
    AmoType, BitwiseAmoType, Cmp, Error, RmaType, SignalOp, SymSlice, TeamId, WaitType, World,
    for_each_nvshmem_type,
};

/// A check's result.
pub type CheckResult = Result<(), Error>;

/// A named collective check.
pub type Check = (&'static str, fn(&World) -> CheckResult);

/// Every check, in the order the worker runs them.
pub const CHECKS: &[Check] = &[
    ("rma_every_type", rma_every_type),
    ("strided_every_type", strided_every_type),
    ("scalar_every_type", scalar_every_type),
    ("ring_put", ring_put),
    ("all_to_all_put", all_to_all_put),
    ("put_signal_set_and_add", put_signal_set_and_add),
    ("signal_ping_pong", signal_ping_pong),
    (
        "wait_until_every_type_and_cmp",
        wait_until_every_type_and_cmp,
    ),
    ("wait_until_all_and_vector", wait_until_all_and_vector),
    ("atomics_every_op", atomics_every_op),
    ("atomic_contention", atomic_contention),
    ("barrier_repeated", barrier_repeated),
    ("stream_orders_put_after_wait", stream_orders_put_after_wait),
    ("stream_operations", stream_operations),
    (
        "teams_split_translate_barrier",
        teams_split_translate_barrier,
    ),
    ("team_barrier_on_stream", team_barrier_on_stream),
    (
        "collectives_every_type",
        coll_checks::collectives_every_type,
    ),
    ("collectives_on_stream", coll_checks::collectives_on_stream),
    (
        "collectives_team_shapes",
        coll_checks::collectives_team_shapes,
    ),
    ("collectives_bad_input", coll_checks::collectives_bad_input),
    ("heap_symmetric", heap_symmetric),
    ("bad_input", bad_input),
];

/// Looks a check up by name.
pub fn by_name(name: &str) -> Option<Check> {
    CHECKS.iter().copied().find(|(n, _)| *n == name)
}

pub(crate) fn fail(w: &World, op: &'static str, what: String) -> Error {
    Error::BadArgument {
        pe: w.my_pe(),
        op,
        what,
    }
}

pub(crate) fn expect_eq<T: PartialEq + std::fmt::Debug>(
    w: &World,
    op: &'static str,
    got: T,
    want: T,
) -> CheckResult {
    if got == want {
        Ok(())
    } else {
        Err(fail(w, op, format!("got {got:?}, expected {want:?}")))
    }
}

/// A deterministic value of `T` for (PE, index): distinct bits per PE and element.
pub(crate) fn value<T: RmaType>(pe: usize, i: usize) -> T {
    let bits =
        (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(0x0101_0101);
    // Floats: keep the bits of a finite value so comparisons are exact.
    T::from_bits(bits & 0x3FFF_FFFF_3FFF_3F3F)
}

fn neighbours(w: &World) -> (usize, usize) {
    let n = w.n_pes();
    ((w.my_pe() + 1) % n, (w.my_pe() + n - 1) % n)
}

// ---- RMA over every type ---------------------------------------------------------------

fn rma_one_type<T: RmaType + PartialEq + std::fmt::Debug>(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let me = w.my_pe();
    let len = 1000;
    let dst = w.calloc::<T>(len)?;
    let src: Vec<T> = (0..len).map(|i| value::<T>(me, i)).collect();
    w.put(dst.all(), &src, next)?;
    w.barrier_all()?;
    let mut got = vec![T::from_bits(0); len];
    w.get(&mut got, dst.all(), me)?;
    let want: Vec<T> = (0..len).map(|i| value::<T>(prev, i)).collect();
    expect_eq(w, T::NAME, got == want, true)?;
    // A get from the previous PE returns what it received from its own previous PE.
    let prev2 = (prev + w.n_pes() - 1) % w.n_pes();
    let mut remote = vec![T::from_bits(0); 10];
    w.get(&mut remote, dst.slice(5..15), prev)?;
    let want: Vec<T> = (5..15).map(|i| value::<T>(prev2, i)).collect();
    expect_eq(w, T::NAME, remote == want, true)?;
    w.barrier_all()?;
    w.free(dst)
}

/// Runs `$check::<T>(w)` for every RMA type row (callback of `for_each_nvshmem_type!`).
macro_rules! each_rma_row {
    ([$check:ident, $w:ident] $(($name:ident, $c:literal, $t:ty, [$($l:ident),*])),* $(,)?) => {
        $( $check::<$t>($w).map_err(|e| fail($w, stringify!($name), e.to_string()))?; )*
    };
}

/// Runs `$check::<T>(w)` for the rows that belong to list `$list`.
macro_rules! each_row_in {
    ([$list:ident, $check:ident, $w:ident] $(($name:ident, $c:literal, $t:ty, [$($l:ident),*])),* $(,)?) => {
        $( $( each_row_in!(@pick $list $l, $check, $w, $name, $t); )* )*
    };
    (@pick wait wait, $check:ident, $w:ident, $name:ident, $t:ty) => { each_row_in!(@run $check, $w, $name, $t) };
    (@pick amo amo, $check:ident, $w:ident, $name:ident, $t:ty) => { each_row_in!(@run $check, $w, $name, $t) };
    (@pick bitwise bitwise, $check:ident, $w:ident, $name:ident, $t:ty) => { each_row_in!(@run $check, $w, $name, $t) };
    (@pick $want:ident $other:ident, $check:ident, $w:ident, $name:ident, $t:ty) => {};
    (@run $check:ident, $w:ident, $name:ident, $t:ty) => {
        $check::<$t>($w).map_err(|e| fail($w, stringify!($name), e.to_string()))?
    };
}

/// put and get of 1000 elements to the next PE, for all 25 NVSHMEM RMA types.
pub fn rma_every_type(w: &World) -> CheckResult {
    for_each_nvshmem_type!(each_rma_row, rma_one_type, w);
    Ok(())
}

fn strided_one_type<T: RmaType + PartialEq + std::fmt::Debug>(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let me = w.my_pe();
    let dst = w.calloc::<T>(64)?;
    let src: Vec<T> = (0..64).map(|i| value::<T>(me, i)).collect();
    // Every third source element to every second destination element, 10 elements.
    w.iput(dst.all(), 2, &src, 3, 10, next)?;
    w.barrier_all()?;
    let mut got = vec![T::from_bits(0); 64];
    w.get(&mut got, dst.all(), me)?;
    for (i, &x) in got.iter().enumerate() {
        let want = if i % 2 == 0 && i / 2 < 10 {
            value::<T>(prev, (i / 2) * 3)
        } else {
            T::from_bits(0)
        };
        if x != want {
            return Err(fail(
                w,
                "iput",
                format!("{}: element {i} is {:?}, expected {want:?}", T::NAME, x),
            ));
        }
    }
    // iget: elements 0, 4, 8 of prev's buffer (which came from prev's prev) into 0, 1, 2.
    let mut back = vec![T::from_bits(0); 3];
    w.iget(&mut back, 1, dst.all(), 4, 3, prev)?;
    let prev2 = (prev + w.n_pes() - 1) % w.n_pes();
    let want: Vec<T> = [0, 2, 4]
        .iter()
        .map(|&k| value::<T>(prev2, k * 3))
        .collect();
    expect_eq(w, "iget", back == want, true)?;
    w.barrier_all()?;
    w.free(dst)
}

/// iput and iget with strides 2/3 and 1/4, for every RMA type.
pub fn strided_every_type(w: &World) -> CheckResult {
    for_each_nvshmem_type!(each_rma_row, strided_one_type, w);
    Ok(())
}

fn scalar_one_type<T: RmaType + PartialEq + std::fmt::Debug>(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let cell = w.calloc::<T>(4)?;
    w.p(cell.at(3), value::<T>(w.my_pe(), 7), next)?;
    w.barrier_all()?;
    expect_eq(w, "p/g", w.g(cell.at(3), w.my_pe())?, value::<T>(prev, 7))?;
    expect_eq(
        w,
        "g remote",
        w.g(cell.at(3), next)?,
        value::<T>(w.my_pe(), 7),
    )?;
    expect_eq(
        w,
        "p did not spill",
        w.g(cell.at(2), w.my_pe())?,
        T::from_bits(0),
    )?;
    w.barrier_all()?;
    w.free(cell)
}

/// p and g to and from neighbours, for every RMA type.
pub fn scalar_every_type(w: &World) -> CheckResult {
    for_each_nvshmem_type!(each_rma_row, scalar_one_type, w);
    Ok(())
}

// ---- patterns --------------------------------------------------------------------------

/// 50 rounds of a ring of puts, each round's data checked after a barrier.
pub fn ring_put(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let buf = w.calloc::<u32>(4096)?;
    for round in 0..50u32 {
        let data: Vec<u32> = (0..4096)
            .map(|i| round * 100_000 + w.my_pe() as u32 * 10_000 + i % 10_000)
            .collect();
        w.put(buf.all(), &data, next)?;
        w.barrier_all()?;
        let mut got = vec![0u32; 4096];
        w.get(&mut got, buf.all(), w.my_pe())?;
        let ok = got
            .iter()
            .enumerate()
            .all(|(i, &x)| x == round * 100_000 + prev as u32 * 10_000 + i as u32 % 10_000);
        expect_eq(w, "ring round", ok, true)?;
        w.barrier_all()?;
    }
    w.free(buf)
}

/// Every PE puts a distinct block into its own slot of every PE's buffer.
pub fn all_to_all_put(w: &World) -> CheckResult {
    let n = w.n_pes();
    let block = 777; // deliberately not a multiple of anything
    let buf = w.calloc::<u16>(n * block)?;
    for pe in 0..n {
        let data: Vec<u16> = (0..block)
            .map(|i| (w.my_pe() * 1000 + pe * 10 + i % 10) as u16)
            .collect();
        w.put(
            buf.slice(w.my_pe() * block..(w.my_pe() + 1) * block),
            &data,
            pe,
        )?;
    }
    w.barrier_all()?;
    let mut got = vec![0u16; n * block];
    w.get(&mut got, buf.all(), w.my_pe())?;
    for src in 0..n {
        for i in 0..block {
            let want = (src * 1000 + w.my_pe() * 10 + i % 10) as u16;
            if got[src * block + i] != want {
                return Err(fail(
                    w,
                    "all_to_all",
                    format!(
                        "from PE {src} element {i}: {} != {want}",
                        got[src * block + i]
                    ),
                ));
            }
        }
    }
    w.barrier_all()?;
    w.free(buf)
}

/// put_signal with ADD from every PE to PE 0 and SET to the next PE; the receiver that
/// sees the signal sees the data.
pub fn put_signal_set_and_add(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let n = w.n_pes();
    let me = w.my_pe();
    let data = w.calloc::<u64>(n * 64)?;
    let ring = w.calloc::<u64>(64)?;
    let sig = w.calloc::<u64>(2)?;
    w.barrier_all()?;
    let mine: Vec<u64> = (0..64).map(|i| (me as u64) << 32 | i).collect();
    w.put_signal(
        data.slice(me * 64..(me + 1) * 64),
        &mine,
        sig.at(0),
        1,
        SignalOp::Add,
        0,
    )?;
    w.put_signal(
        ring.all(),
        &mine,
        sig.at(1),
        0xABC0 + me as u64,
        SignalOp::Set,
        next,
    )?;
    if me == 0 {
        w.wait_until(sig.at(0), Cmp::Eq, n as u64)?;
        let mut got = vec![0u64; n * 64];
        w.get(&mut got, data.all(), 0)?;
        let ok = got
            .iter()
            .enumerate()
            .all(|(k, &x)| x == ((k / 64) as u64) << 32 | (k % 64) as u64);
        expect_eq(w, "put_signal ADD data", ok, true)?;
    }
    let seen = w.signal_wait_until(sig.at(1), Cmp::Eq, 0xABC0 + prev as u64)?;
    expect_eq(w, "signal_wait_until value", seen, 0xABC0 + prev as u64)?;
    let mut got = vec![0u64; 64];
    w.get(&mut got, ring.all(), me)?;
    expect_eq(
        w,
        "put_signal SET data",
        got.iter()
            .enumerate()
            .all(|(i, &x)| x == (prev as u64) << 32 | i as u64),
        true,
    )?;
    w.barrier_all()?;
    for b in [sig, ring, data] {
        w.free(b)?;
    }
    Ok(())
}

/// Pairs of PEs bounce a counter 200 times with put_signal and signal_op.
pub fn signal_ping_pong(w: &World) -> CheckResult {
    let me = w.my_pe();
    let partner = me ^ 1;
    let ball = w.calloc::<u64>(1)?;
    let sig = w.calloc::<u64>(1)?;
    w.barrier_all()?;
    if partner < w.n_pes() {
        let first = me % 2 == 0;
        for round in 1..=200u64 {
            if first {
                w.put_signal(
                    ball.all(),
                    &[round * 2 - 1],
                    sig.all(),
                    round,
                    SignalOp::Set,
                    partner,
                )?;
                w.wait_until(sig.all(), Cmp::Ge, round)?;
                expect_eq(w, "pong", w.g(ball.all(), me)?, round * 2)?;
            } else {
                w.wait_until(sig.all(), Cmp::Ge, round)?;
                expect_eq(w, "ping", w.g(ball.all(), me)?, round * 2 - 1)?;
                w.p(ball.all(), round * 2, partner)?;
                w.fence()?;
                w.signal_op(sig.all(), 1, SignalOp::Add, partner)?;
            }
        }
        expect_eq(w, "signal_fetch", w.signal_fetch(sig.all())?, 200)?;
    }
    w.barrier_all()?;
    w.free(sig)?;
    w.free(ball)
}

// ---- waits -----------------------------------------------------------------------------

fn wait_one_type<T: WaitType + PartialOrd>(w: &World) -> CheckResult {
    let (next, _) = neighbours(w);
    let ivar = w.calloc::<T>(Cmp::ALL.len())?;
    // Word k starts at a value comparison k rejects and then receives 5 from the previous
    // PE, which it accepts: the wait can only end once the 5 has landed.
    let plan = |cmp: Cmp| -> (u64, u64) {
        match cmp {
            Cmp::Eq | Cmp::Ge => (0, 5),
            Cmp::Ne => (0, 0),
            Cmp::Gt => (0, 4),
            Cmp::Le => (9, 5),
            Cmp::Lt => (9, 6),
        }
    };
    for (k, cmp) in Cmp::ALL.iter().enumerate() {
        w.p(ivar.at(k), T::from_bits(plan(*cmp).0), w.my_pe())?;
    }
    w.barrier_all()?;
    let five = T::from_bits(5);
    for k in 0..Cmp::ALL.len() {
        w.p(ivar.at(k), five, next)?;
    }
    for (k, cmp) in Cmp::ALL.iter().enumerate() {
        w.wait_until(ivar.at(k), *cmp, T::from_bits(plan(*cmp).1))?;
        expect_eq(
            w,
            "wait_until woke on the landed value",
            w.g(ivar.at(k), w.my_pe())? == five,
            true,
        )?;
    }
    if T::SIGNED {
        // -1 < 0 only when compared signed: a wait for LT 0 must see the stored -1.
        let minus_one = T::from_bits(u64::MAX);
        w.p(ivar.at(0), minus_one, w.my_pe())?;
        w.wait_until(ivar.at(0), Cmp::Lt, T::from_bits(0))?;
    }
    w.barrier_all()?;
    w.free(ivar)
}

/// wait_until with each of the six comparisons, for every wait type.
pub fn wait_until_every_type_and_cmp(w: &World) -> CheckResult {
    for_each_nvshmem_type!(each_row_in, wait, wait_one_type, w);
    Ok(())
}

/// wait_until_all (with and without status) and wait_until_all_vector.
pub fn wait_until_all_and_vector(w: &World) -> CheckResult {
    let (next, _) = neighbours(w);
    let flags = w.calloc::<i32>(8)?;
    w.barrier_all()?;
    // Word 3 is never written: excluded by status.
    let status = [0, 0, 0, 1, 0, 0, 0, 0];
    for k in (0..8).filter(|&k| k != 3) {
        w.p(flags.at(k), 10 + k as i32, next)?;
    }
    w.wait_until_all(flags.all(), Some(&status), Cmp::Ge, 10)?;
    let values: Vec<i32> = (0..8).map(|k| 10 + k).collect();
    w.wait_until_all_vector(flags.all(), Some(&status), Cmp::Eq, &values)?;
    w.barrier_all()?;
    w.p(flags.at(3), 13, next)?;
    w.wait_until_all(flags.all(), None, Cmp::Gt, 9)?;
    w.wait_until_all_vector(flags.all(), None, Cmp::Le, &values)?;
    w.barrier_all()?;
    w.free(flags)
}

// ---- atomics ---------------------------------------------------------------------------

fn amo_one_type<T: AmoType + PartialEq + std::fmt::Debug>(w: &World) -> CheckResult {
    let (next, _) = neighbours(w);
    let x = w.calloc::<T>(1)?;
    let v = |n: u64| T::from_bits(n);
    w.barrier_all()?;
    // PE p operates on the word of PE p+1 only; PE p+1's word is touched by p alone.
    w.atomic_set(x.all(), v(10), next)?;
    expect_eq(w, "fetch", w.atomic_fetch(x.all(), next)?, v(10))?;
    expect_eq(
        w,
        "fetch_add",
        w.atomic_fetch_add(x.all(), v(5), next)?,
        v(10),
    )?;
    w.atomic_add(x.all(), v(1), next)?;
    w.atomic_inc(x.all(), next)?;
    expect_eq(w, "fetch_inc", w.atomic_fetch_inc(x.all(), next)?, v(17))?;
    expect_eq(w, "swap", w.atomic_swap(x.all(), v(40), next)?, v(18))?;
    expect_eq(
        w,
        "compare_swap miss",
        w.atomic_compare_swap(x.all(), v(39), v(1), next)?,
        v(40),
    )?;
    expect_eq(
        w,
        "compare_swap hit",
        w.atomic_compare_swap(x.all(), v(40), v(41), next)?,
        v(40),
    )?;
    expect_eq(
        w,
        "after compare_swap",
        w.atomic_fetch(x.all(), next)?,
        v(41),
    )?;
    w.barrier_all()?;
    w.free(x)
}

fn bitwise_one_type<T: BitwiseAmoType + PartialEq + std::fmt::Debug>(w: &World) -> CheckResult {
    let (next, _) = neighbours(w);
    let x = w.calloc::<T>(1)?;
    let v = |n: u64| T::from_bits(n);
    w.barrier_all()?;
    w.atomic_set(x.all(), v(0b1100), next)?;
    expect_eq(
        w,
        "fetch_and",
        w.atomic_fetch_and(x.all(), v(0b1010), next)?,
        v(0b1100),
    )?;
    expect_eq(
        w,
        "fetch_or",
        w.atomic_fetch_or(x.all(), v(0b0001), next)?,
        v(0b1000),
    )?;
    expect_eq(
        w,
        "fetch_xor",
        w.atomic_fetch_xor(x.all(), v(0b1111), next)?,
        v(0b1001),
    )?;
    w.atomic_and(x.all(), v(0b0111), next)?;
    w.atomic_or(x.all(), v(0b1000), next)?;
    w.atomic_xor(x.all(), v(0b0011), next)?;
    // 0b0110 & 0b0111 = 0b0110; | 0b1000 = 0b1110; ^ 0b0011 = 0b1101
    expect_eq(w, "and/or/xor", w.atomic_fetch(x.all(), next)?, v(0b1101))?;
    w.barrier_all()?;
    w.free(x)
}

/// Every AMO on every standard AMO type, and the bitwise ones on every bitwise type.
pub fn atomics_every_op(w: &World) -> CheckResult {
    for_each_nvshmem_type!(each_row_in, amo, amo_one_type, w);
    for_each_nvshmem_type!(each_row_in, bitwise, bitwise_one_type, w);
    // Extended AMO types (fetch, set, swap on floats).
    let f = w.calloc::<f64>(1)?;
    let (next, _) = neighbours(w);
    w.barrier_all()?;
    w.atomic_set(f.all(), 1.5, next)?;
    expect_eq(w, "f64 swap", w.atomic_swap(f.all(), 2.25, next)?, 1.5)?;
    expect_eq(w, "f64 fetch", w.atomic_fetch(f.all(), next)?, 2.25)?;
    w.barrier_all()?;
    w.free(f)
}

/// Every PE adds 1 to one word of PE 0 500 times (fetch_add and inc mixed): exactly N·500.
pub fn atomic_contention(w: &World) -> CheckResult {
    let m = 500u64;
    let counter = w.calloc::<u64>(1)?;
    let tickets = w.calloc::<i32>(1)?;
    w.barrier_all()?;
    let mut previous = Vec::with_capacity(m as usize);
    for k in 0..m {
        if k % 2 == 0 {
            previous.push(w.atomic_fetch_add(counter.all(), 1, 0)?);
        } else {
            w.atomic_inc(counter.all(), 0)?;
        }
        w.atomic_fetch_inc(tickets.all(), 0)?;
    }
    // Fetched values are strictly increasing on one PE (each fetch sees its own earlier adds).
    expect_eq(
        w,
        "fetch_add monotonic",
        previous.windows(2).all(|p| p[0] < p[1]),
        true,
    )?;
    w.barrier_all()?;
    let n = w.n_pes() as u64;
    expect_eq(w, "counter", w.atomic_fetch(counter.all(), 0)?, n * m)?;
    expect_eq(
        w,
        "tickets",
        w.atomic_fetch(tickets.all(), 0)?,
        (n * m) as i32,
    )?;
    w.barrier_all()?;
    w.free(tickets)?;
    w.free(counter)
}

/// 300 barriers; in each round every PE writes the round number into its slot on every
/// PE, and after the barrier every slot must hold it.
pub fn barrier_repeated(w: &World) -> CheckResult {
    let n = w.n_pes();
    let slots = w.calloc::<u32>(n)?;
    for round in 1..=300u32 {
        for pe in 0..n {
            w.p(slots.at(w.my_pe()), round, pe)?;
        }
        w.barrier_all()?;
        let mut got = vec![0u32; n];
        w.get(&mut got, slots.all(), w.my_pe())?;
        if let Some(pe) = got.iter().position(|&x| x != round) {
            return Err(fail(
                w,
                "barrier",
                format!("round {round}: slot of PE {pe} holds {}", got[pe]),
            ));
        }
        // A second barrier keeps the next round's writes out until all have checked.
        w.barrier_all()?;
    }
    w.free(slots)
}

// ---- streams ---------------------------------------------------------------------------

/// A put enqueued after a wait_until on the same stream does not land before the wait is
/// satisfied.
pub fn stream_orders_put_after_wait(w: &World) -> CheckResult {
    let me = w.my_pe();
    let flag = w.calloc::<u64>(1)?;
    let data = w.calloc::<u64>(16)?;
    let src = w.calloc::<u64>(16)?;
    let landed = w.calloc::<u64>(1)?;
    let payload: Vec<u64> = (0..16).map(|i| 1000 + i).collect();
    w.put(src.all(), &payload, me)?;
    w.barrier_all()?;
    if me == 0 {
        let s = w.stream()?;
        s.wait_until(flag.all(), Cmp::Ge, 1)?;
        s.put_signal(data.all(), src.all(), landed.all(), 1, SignalOp::Set, 1)?;
        // Both calls returned at once; the stream now waits for PE 1 to set the flag.
        s.synchronize()?;
    }
    if me == 1 {
        std::thread::sleep(Duration::from_millis(50));
        // PE 0's stream is blocked on its flag: the data has not landed.
        expect_eq(w, "put held behind wait", w.g(data.at(0), 1)?, 0)?;
        expect_eq(
            w,
            "signal held behind wait",
            w.signal_fetch(landed.all())?,
            0,
        )?;
        w.p(flag.all(), 1, 0)?; // release PE 0's stream
        w.wait_until(landed.all(), Cmp::Eq, 1)?;
        let mut got = vec![0u64; 16];
        w.get(&mut got, data.all(), 1)?;
        expect_eq(w, "put after release", got, payload.clone())?;
    }
    w.barrier_all()?;
    for b in [landed, src, data, flag] {
        w.free(b)?;
    }
    Ok(())
}

/// Every stream operation once, checked after synchronize.
pub fn stream_operations(w: &World) -> CheckResult {
    let (next, prev) = neighbours(w);
    let me = w.my_pe();
    let a = w.calloc::<i64>(32)?;
    let b = w.calloc::<i64>(32)?;
    let c = w.calloc::<i64>(4)?;
    let sig = w.calloc::<u64>(1)?;
    let vals: Vec<i64> = (0..32).map(|i| (me as i64) * 100 + i).collect();
    w.put(a.all(), &vals, me)?;
    w.barrier_all()?;
    {
        let s = w.stream()?;
        s.put(b.all(), a.all(), next)?; // b on next = my a
        s.barrier_all()?;
        // next's b[16..20] holds my a[16..20]; no one else writes those elements.
        s.get(c.all(), b.slice(16..20), next)?;
        s.iput(b.all(), 2, a.all(), 2, 8, me)?; // even slots of my b from my a
        s.p(a.at(31), -7, me)?;
        s.signal_op(sig.all(), 3, SignalOp::Add, next)?;
        s.wait_until(sig.all(), Cmp::Ge, 3)?;
        expect_eq(w, "g_on_stream", s.g(a.at(31), me)?, -7)?;
        s.quiet()?;
        s.barrier_all()?;
        s.synchronize()?;
    }
    let mut back = vec![0i64; 4];
    w.get(&mut back, c.all(), me)?;
    expect_eq(w, "get_on_stream", back, vals[16..20].to_vec())?;
    let mut got = vec![0i64; 32];
    w.get(&mut got, b.all(), me)?;
    for (i, &x) in got.iter().enumerate() {
        let want = if i % 2 == 0 && i < 16 {
            me as i64 * 100 + i as i64
        } else {
            prev as i64 * 100 + i as i64
        };
        if x != want {
            return Err(fail(
                w,
                "stream ops",
                format!("b[{i}] = {x}, expected {want}"),
            ));
        }
    }
    w.barrier_all()?;
    w.free(sig)?;
    w.free(c)?;
    w.free(b)?;
    w.free(a)
}

// ---- teams -----------------------------------------------------------------------------

/// Split the world into even PEs, translate numbers, run a team barrier among them while
/// the odd PEs do not take part; then a 2D split (works for any N ≥ 1). Through the
/// [`Team`](niin_api::Team) handle, and through the `TeamId` methods of `World`.
pub fn teams_split_translate_barrier(w: &World) -> CheckResult {
    let (me, n) = (w.my_pe(), w.n_pes());
    let world = w.team(TeamId::WORLD)?;
    expect_eq(w, "world team", (world.my_pe(), world.n_pes()), (me, n))?;
    let evens = world.split_strided(0, 2, n.div_ceil(2), None)?;
    match evens {
        Some(evens) if me % 2 == 0 => {
            expect_eq(w, "even team my_pe", evens.my_pe(), me / 2)?;
            expect_eq(w, "even team n_pes", evens.n_pes(), n.div_ceil(2))?;
            expect_eq(w, "even team by id", w.team_my_pe(evens.id()), Some(me / 2))?;
            if n >= 3 {
                expect_eq(w, "translate to world", evens.world_pe(1), Some(2))?;
                expect_eq(
                    w,
                    "translate to the world team",
                    evens.translate_pe(1, &world),
                    Some(2),
                )?;
            }
            expect_eq(
                w,
                "translate from world",
                world.translate_pe(me, &evens),
                Some(me / 2),
            )?;
            expect_eq(
                w,
                "odd PE not in team",
                w.team_translate_pe(TeamId::WORLD, 1, evens.id()),
                None,
            )?;
            expect_eq(w, "PE past the team", evens.world_pe(evens.n_pes()), None)?;
            // A team-only barrier: the odd PEs take no part and are not needed.
            for _ in 0..20 {
                evens.barrier()?;
            }
            evens.sync()?;
            evens.destroy()?;
        }
        Some(_) => return Err(fail(w, "even team", "an odd PE got the team".into())),
        None => {
            if me % 2 == 0 {
                return Err(fail(w, "even team", "an even PE got no team".into()));
            }
        }
    }
    let (x, y) = w.team_split_2d(TeamId::WORLD, 2, None, None)?;
    expect_eq(
        w,
        "x team",
        (w.team_my_pe(x), w.team_n_pes(x)),
        (Some(me % 2), Some(2.min(n - me / 2 * 2))),
    )?;
    expect_eq(w, "y team my_pe", w.team_my_pe(y), Some(me / 2))?;
    expect_eq(
        w,
        "y translate",
        w.team_translate_pe(y, 0, TeamId::WORLD),
        Some(me % 2),
    )?;
    w.barrier(x)?;
    w.barrier(y)?;
    w.team_destroy(x)?;
    w.team_destroy(y)?;
    expect_eq(w, "destroyed team my_pe", w.team_my_pe(x), None)?;
    w.barrier_all()
}

/// Barriers over sub-teams on a stream (`nvshmemx_barrier_on_stream`), with nothing
/// synchronized between rounds: in each round every member puts the round's value into its
/// slot on every member, barrier, copies the team's slots aside, barrier (all on the
/// stream); after one synchronize every copy must hold its round's value. Three teams in
/// turn, each destroyed before the next is made, so a handle is reused with other members
/// and then with the same ones: the even PEs (an odd number of rounds), PEs 1 to n-1, the
/// even PEs again. Teams of several PEs other than the world need 3 or more PEs; with
/// fewer the check runs teams of one PE.
pub fn team_barrier_on_stream(w: &World) -> CheckResult {
    const ROUNDS: [u32; 3] = [7, 6, 5];
    let (me, n) = (w.my_pe(), w.n_pes());
    // (start, stride, size) in world PEs.
    let evens: (usize, usize, usize) = (0, 2, n.div_ceil(2));
    let shapes = [evens, (1.min(n - 1), 1, (n - 1).max(1)), evens];
    let slots = w.calloc::<u32>(n)?;
    let seen = w.calloc::<u32>(ROUNDS[0] as usize * n)?;
    for (phase, (&(start, stride, size), rounds)) in shapes.iter().zip(ROUNDS).enumerate() {
        let Some(team) = w.team_split_strided(TeamId::WORLD, start, stride, size, None)? else {
            continue;
        };
        let mine = w.team_my_pe(team).expect("a member");
        let members: Vec<usize> = (0..size)
            .map(|j| {
                w.team_translate_pe(team, j, TeamId::WORLD)
                    .expect("a member")
            })
            .collect();
        let value = |r: u32| (phase as u32 + 1) * 1000 + r;
        {
            let s = w.stream()?;
            for r in 0..rounds {
                for &pe in &members {
                    s.p(slots.at(mine), value(r), pe)?;
                }
                s.barrier(team)?;
                let row = r as usize * n;
                s.get(seen.slice(row..row + size), slots.slice(0..size), me)?;
                // Keeps the next round's puts out until every member has copied.
                s.barrier(team)?;
            }
            s.synchronize()?;
        }
        let mut got = vec![0u32; rounds as usize * n];
        w.get(&mut got, seen.slice(0..rounds as usize * n), me)?;
        for r in 0..rounds {
            let row = &got[r as usize * n..r as usize * n + size];
            if let Some(j) = row.iter().position(|&x| x != value(r)) {
                return Err(fail(
                    w,
                    "barrier_on_stream",
                    format!(
                        "team {phase} ({size} PEs from PE {start} stride {stride}), round {r}: \
                         slot of team PE {j} holds {}, expected {}",
                        row[j],
                        value(r)
                    ),
                ));
            }
        }
        w.team_destroy(team)?;
    }
    w.barrier_all()?;
    w.free(seen)?;
    w.free(slots)
}

// ---- heap ------------------------------------------------------------------------------

/// A sequence of collective allocations gives the same offsets on every PE (each PE
/// publishes its offsets to PE 0, which compares them) and equal fingerprints.
pub fn heap_symmetric(w: &World) -> CheckResult {
    let n = w.n_pes();
    let table = w.calloc::<u64>(n * 8)?;
    let a = w.malloc::<u8>(1000)?;
    let b = w.align::<u32>(4096, 3)?;
    let c = w.calloc::<f32>(77)?;
    let empty = w.malloc::<u64>(0)?;
    w.free(a)?;
    let d = w.malloc::<u8>(10)?;
    let mine = [
        b.offset(),
        c.offset(),
        d.offset(),
        empty.len() as u64,
        b.offset() % 4096,
    ];
    w.put(table.slice(w.my_pe() * 8..w.my_pe() * 8 + 5), &mine, 0)?;
    w.barrier_all()?;
    if w.my_pe() == 0 {
        let mut all = vec![0u64; n * 8];
        w.get(&mut all, table.all(), 0)?;
        for pe in 1..n {
            expect_eq(
                w,
                "offsets equal across PEs",
                &all[pe * 8..pe * 8 + 5],
                &all[..5],
            )?;
        }
        expect_eq(w, "empty and aligned", (all[3], all[4]), (0, 0))?;
    }
    w.check_symmetry()?;
    w.barrier_all()?;
    w.free(d)?;
    w.free(c)?;
    w.free(b)?;
    w.free(empty)?;
    w.free(table)
}

// ---- bad input -------------------------------------------------------------------------

/// Every kind of bad argument gives its error and leaves the world usable.
pub fn bad_input(w: &World) -> CheckResult {
    let n = w.n_pes();
    let buf = w.calloc::<u32>(16)?;
    let is = |r: Result<(), Error>, what: &str, op: &'static str| -> CheckResult {
        match r {
            Err(e) if e.to_string().contains(what) => Ok(()),
            other => Err(fail(
                w,
                op,
                format!("expected an error mentioning {what:?}, got {other:?}"),
            )),
        }
    };
    is(w.put(buf.all(), &[1u32], n), "out of range", "put to PE n")?;
    is(w.p(buf.at(0), 1u32, n + 5), "out of range", "p to PE n+5")?;
    is(
        w.put(buf.slice(8..16), &[0u32; 9], 0),
        "holds 8 elements",
        "put past the buffer",
    )?;
    let outside = SymSlice::<u32>::from_raw_parts(w, w.config().heap_size + 64, 4);
    is(
        w.put(outside, &[1u32; 4], 0),
        "not inside a live symmetric allocation",
        "outside the heap",
    )?;
    let system = SymSlice::<u64>::from_raw_parts(w, 0, 1);
    is(
        w.p(system, 1, 0),
        "not inside a live symmetric allocation",
        "system area",
    )?;
    // Raw views are checked against the allocation's reserved block (256-byte granules).
    let past_end = SymSlice::<u32>::from_raw_parts(w, buf.offset() + 252, 2);
    is(
        w.get(&mut [0u32; 2], past_end, 0),
        "not inside a live symmetric allocation",
        "range past the end",
    )?;
    is(w.barrier(TeamId(4242)), "4242", "invalid team")?;
    is(w.barrier(TeamId::INVALID), "team", "INVALID team")?;
    is(w.team_destroy(TeamId::WORLD), "predefined", "destroy WORLD")?;
    is(
        w.iput(buf.all(), 0, &[1u32; 4], 1, 2, 0),
        "strides must be at least 1",
        "zero stride",
    )?;
    is(
        w.wait_until_all(buf.all(), Some(&[0; 3]), Cmp::Eq, 0u32),
        "status has 3 entries",
        "status length",
    )?;
    w.barrier_all()?;
    w.free(buf)?;
    // The world still works.
    let ok = w.calloc::<u8>(1)?;
    w.barrier_all()?;
    w.free(ok)
}
