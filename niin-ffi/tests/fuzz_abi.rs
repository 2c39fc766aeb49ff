//! Fuzzing of the C ABI's argument checks, on stable Rust: the exported functions called
//! from Rust (through the rlib) with fuzzed arguments, in a one-PE world of the mock
//! transport; proptest with a fixed seed and case count, so every CI run makes the same calls.
//!
//! Arguments: PE numbers (negative, huge), sizes and counts (0, at and past the end of an
//! allocation, overflowing), strides, team handles, signal operators and comparisons,
//! stream handles, and pointers that are NULL, inside an allocation (aligned or not, near its
//! end), in the heap but in no live allocation (the system area, freed memory), or outside
//! the heap. A local (non-symmetric) operand is NULL or a buffer large enough for anything
//! the call could accept, so a call that the library accepts never touches memory it must
//! not; a symmetric pointer is never dereferenced unless it lies in the heap.
//!
//! Each call must either succeed silently or fail with exactly one `NIIN: <function>: ...`
//! line (and its error status, where it returns one), never a caught panic ("internal
//! error"); a failing call must leave every allocation and the local buffer as they were;
//! and where a simple model of the checks knows the answer (a PE out of range, a range
//! not inside one live allocation, a misaligned element, a stride below 1, ...), the
//! outcome must be the model's.
//!
//! Before init, the unique-ID init is fuzzed the same way (ID bytes, rank and size, flags).
//!
//! The library's state is process-global, so everything runs in one test function.

use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

use nvshmem_host::abi::*;
use nvshmem_host::uid::{MOCK_ID_BYTES, Uid};
use nvshmem_host::*;
use proptest::prelude::*;

#[path = "../../niin-api/tests/support/fuzz.rs"]
mod fuzz_support;
use fuzz_support::fuzz;

/// This file's inputs (support/fuzz.rs).
const SEED: u64 = 0x006e_6969_6e61_6269;

/// The heap of the fuzzed world: small, so the local buffer can hold all of it.
const HEAP: usize = 512 << 10;
/// The local buffer: more than any call the library accepts can move (the heap's size).
const LOCAL: usize = HEAP + (64 << 10);

// ---- the calls' outcome ----------------------------------------------------------------

/// Runs `call` (the exported function `name`; `status` maps its result to its status
/// where it returns one) and checks the error policy: at most one `NIIN:` line, for this
/// function, no caught panic, the status agrees with the line, and a failing call changed
/// no memory of `fx`. Returns whether the call failed and its result.
fn checked<R>(
    fx: &Fixture,
    name: &str,
    call: impl FnOnce() -> R,
    status: impl Fn(&R) -> Option<c_int>,
) -> Result<(bool, R), TestCaseError> {
    let before_memory = fx.snapshot();
    let before = report_count();
    let r = call();
    fx.synchronize()?;
    let lines = report_count() - before;
    prop_assert!(lines <= 1, "{name} wrote {lines} NIIN: lines");
    let failed = lines == 1;
    if let Some(s) = status(&r) {
        prop_assert_eq!(
            s != 0,
            failed,
            "{} returned {} with {} lines",
            name,
            s,
            lines
        );
    }
    if failed {
        let line = last_report().unwrap_or_default();
        prop_assert!(
            line.starts_with(&format!("NIIN: {name}: ")),
            "{name}: {line:?}"
        );
        prop_assert!(
            !line.contains("internal error"),
            "{name} panicked: {line:?}"
        );
        prop_assert!(
            fx.snapshot() == before_memory,
            "{name} failed but changed memory: {line}"
        );
    }
    Ok((failed, r))
}

/// [`checked`], and the model's answer where it has one (`Some(true)`: must succeed).
fn expect<R>(
    fx: &Fixture,
    name: &str,
    want: Option<bool>,
    call: impl FnOnce() -> R,
    status: impl Fn(&R) -> Option<c_int>,
) -> Result<R, TestCaseError> {
    let (failed, r) = checked(fx, name, call, status)?;
    if let Some(ok) = want {
        prop_assert_eq!(
            !failed,
            ok,
            "{}: the model says {}; report: {:?}",
            name,
            if ok { "success" } else { "failure" },
            last_report()
        );
    }
    Ok(r)
}

fn no_status<R>(_: &R) -> Option<c_int> {
    None
}

fn is_status(s: &c_int) -> Option<c_int> {
    Some(*s)
}

// ---- the world and its allocations ------------------------------------------------------

/// The allocations the fuzzed calls aim at, and the local buffer.
struct Fixture {
    /// Live allocations: start and reserved length (the request rounded up to 256 bytes).
    blocks: Vec<(usize, usize)>,
    /// A freed allocation.
    stale: (usize, usize),
    /// The local buffer, `local_len` bytes, 16-byte aligned; leaked (streams may read it).
    local: *mut u8,
    local_len: usize,
    /// Whether the library is initialized (so that streams can be synchronized).
    live: bool,
}

impl Fixture {
    fn new() -> Fixture {
        let sizes = [
            (4096usize, 4096usize, 256usize),
            (1000, 1024, 256),
            (512, 512, 256),
        ];
        let mut blocks = Vec::new();
        for (size, reserved, _) in sizes {
            let p = nvshmem_malloc(size);
            assert!(!p.is_null());
            blocks.push((p as usize, reserved));
        }
        let aligned = nvshmem_align(4096, 200);
        assert!(!aligned.is_null() && aligned as usize % 4096 == 0);
        blocks.push((aligned as usize, 256));
        let stale = nvshmem_malloc(300);
        nvshmem_free(stale);
        let local = Box::leak(vec![0u128; LOCAL / 16].into_boxed_slice());
        let fx = Fixture {
            blocks,
            stale: (stale as usize, 512),
            local: local.as_mut_ptr().cast(),
            local_len: LOCAL,
            live: true,
        };
        fx.fill();
        fx
    }

    /// Gives the blocks and the local buffer distinct patterns, so a stray write shows.
    fn fill(&self) {
        for &(start, len) in &self.blocks {
            // SAFETY: a live allocation of the mock's heap, host memory of this process.
            unsafe { std::ptr::write_bytes(start as *mut u8, 0xa5, len) };
        }
        // SAFETY: `local` holds `local_len` bytes, and nothing else refers to them now.
        let local = unsafe { std::slice::from_raw_parts_mut(self.local, self.local_len) };
        for (i, b) in local.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(LOCAL + 8192);
        for &(start, len) in &self.blocks {
            // SAFETY: a live allocation of the mock's heap; no stream runs (synchronized).
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(start as *const u8, len) });
        }
        // SAFETY: `local` holds `local_len` bytes; no stream runs (synchronized).
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(self.local, self.local_len) });
        out
    }

    /// Completes the default stream's work (the fuzzed streams are otherwise bogus).
    fn synchronize(&self) -> Result<(), TestCaseError> {
        if !self.live {
            return Ok(());
        }
        let s = niin_stream_synchronize(null_mut());
        prop_assert_eq!(s, 0, "synchronize: {:?}", last_report());
        Ok(())
    }

    /// Whether `[addr, addr + len)` lies inside one live allocation (`len` > 0).
    fn inside(&self, addr: usize, len: usize) -> bool {
        self.blocks.iter().any(|&(start, blen)| {
            addr >= start && addr.checked_add(len).is_some_and(|end| end <= start + blen)
        })
    }

    /// Whether `addr` lies in the heap's address range (approximated by the live blocks:
    /// between the first and the last), so that `nvshmem_ptr`'s answer is not known.
    fn near(&self, addr: usize) -> bool {
        let lo = self.blocks.iter().map(|b| b.0).min().unwrap_or(0);
        let hi = self.blocks.iter().map(|b| b.0 + b.1).max().unwrap_or(0);
        addr.checked_add(HEAP).is_some_and(|a| a >= lo) && addr < hi + HEAP
    }

    /// Bytes from `addr` to the end of its allocation (0 if in none).
    fn room(&self, addr: usize) -> usize {
        self.blocks
            .iter()
            .find(|&&(start, len)| addr >= start && addr < start + len)
            .map_or(0, |&(start, len)| start + len - addr)
    }

    fn resolve(&self, p: &Ptr) -> usize {
        match *p {
            Ptr::Null => 0,
            Ptr::Block(i, off) => self.blocks[i % self.blocks.len()].0.wrapping_add(off),
            Ptr::Stale(off) => self.stale.0 + off % self.stale.1,
            Ptr::End(i, k) => {
                let (start, len) = self.blocks[i % self.blocks.len()];
                start + len - k
            }
            Ptr::PastEnd(i, k) => {
                let (start, len) = self.blocks[i % self.blocks.len()];
                start + len + k
            }
            Ptr::Below(k) => self.blocks[0].0.wrapping_sub(k),
            Ptr::Raw(a) => a,
            Ptr::Local(off) => self.local as usize + off,
        }
    }
}

// ---- argument strategies -----------------------------------------------------------------

/// A symmetric pointer, resolved against the fixture when the call is made.
#[derive(Clone, Debug)]
enum Ptr {
    Null,
    /// Block `.0` (of the live ones) at byte offset `.1` (perhaps past its end).
    Block(usize, usize),
    /// Inside the freed allocation.
    Stale(usize),
    /// `.1` bytes before the end of block `.0`.
    End(usize, usize),
    /// `.1` bytes past the end of block `.0` (free heap, or another block).
    PastEnd(usize, usize),
    /// `.0` bytes before the first block (the system area, or below the heap).
    Below(usize),
    /// Any address outside the heap.
    Raw(usize),
    /// Into the local buffer (not symmetric).
    Local(usize),
}

fn sym_ptr() -> impl Strategy<Value = Ptr> {
    prop_oneof![
        1 => Just(Ptr::Null),
        8 => (0usize..4, 0usize..4200).prop_map(|(i, o)| Ptr::Block(i, o)),
        4 => (0usize..4, prop::sample::select(vec![0usize, 8, 16, 248, 504, 1016, 4088])).prop_map(|(i, o)| Ptr::Block(i, o)),
        5 => (0usize..4, prop::sample::select(vec![1usize, 2, 4, 8, 12, 16, 24, 32]))
            .prop_map(|(i, k)| Ptr::End(i, k)),
        1 => (0usize..600).prop_map(Ptr::Stale),
        1 => (0usize..4, 0usize..600).prop_map(|(i, k)| Ptr::PastEnd(i, k)),
        1 => prop_oneof![1usize..512, 512usize..(HEAP * 2)].prop_map(Ptr::Below),
        1 => prop::sample::select(vec![1usize, 8, 0x1000, usize::MAX - 7, usize::MAX, 1 << 47])
            .prop_map(Ptr::Raw),
        1 => (0usize..64).prop_map(|o| Ptr::Local(o * 8)),
    ]
}

/// A count (bytes or elements): small, the room left in the allocation (±1), or huge.
#[derive(Clone, Debug)]
enum Len {
    Small(usize),
    Room(isize),
    Huge(usize),
}

fn len() -> impl Strategy<Value = Len> {
    prop_oneof![
        4 => prop_oneof![Just(0usize), 1usize..9, 9usize..5000].prop_map(Len::Small),
        3 => (-1isize..=1).prop_map(Len::Room),
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX / 2 + 1,
            isize::MAX as usize,
            1 << 40,
            HEAP,
            HEAP + 1,
        ])
        .prop_map(Len::Huge),
    ]
}

impl Len {
    /// The count of `size`-byte elements at `addr`.
    fn resolve(&self, fx: &Fixture, addr: usize, size: usize) -> usize {
        match *self {
            Len::Small(n) | Len::Huge(n) => n,
            Len::Room(d) => (fx.room(addr) / size).saturating_add_signed(d),
        }
    }
}

fn pe() -> impl Strategy<Value = c_int> {
    prop_oneof![
        4 => Just(0),
        1 => prop::sample::select(vec![1, 2, -1, -2, c_int::MAX, c_int::MIN, 1024]),
    ]
}

fn team() -> impl Strategy<Value = c_int> {
    prop_oneof![
        3 => 0..=NVSHMEMI_TEAM_GPU_LEADERS,
        1 => prop::sample::select(vec![NVSHMEM_TEAM_INVALID, 6, 7, 99, -2, c_int::MAX, c_int::MIN]),
    ]
}

fn predefined(team: c_int) -> bool {
    (0..=NVSHMEMI_TEAM_GPU_LEADERS).contains(&team)
}

/// A stream handle: the default stream, or one that names no stream.
fn stream() -> impl Strategy<Value = usize> {
    prop_oneof![4 => Just(0usize), 1 => prop::sample::select(vec![1usize, 0xdead_0000, usize::MAX])]
}

fn stride() -> impl Strategy<Value = isize> {
    prop_oneof![
        4 => 1isize..5,
        1 => prop::sample::select(vec![0isize, -1, isize::MIN, isize::MAX, isize::MAX / 2 + 1, 1 << 20]),
    ]
}

/// Which element size a typed call uses.
#[derive(Clone, Copy, Debug)]
enum Width {
    B1,
    B4,
    B8,
    B16,
}

impl Width {
    fn size(self) -> usize {
        match self {
            Width::B1 => 1,
            Width::B4 => 4,
            Width::B8 => 8,
            Width::B16 => 16,
        }
    }

    /// The alignment the checks require (a 128-bit element moves as two 64-bit halves).
    fn align(self) -> usize {
        self.size().min(8)
    }
}

fn width() -> impl Strategy<Value = Width> {
    prop::sample::select(vec![Width::B1, Width::B4, Width::B8, Width::B16])
}

/// One fuzzed call.
#[derive(Clone, Debug)]
enum Op {
    Put {
        dest: Ptr,
        local: bool,
        n: Len,
        pe: c_int,
        nbi: bool,
    },
    Get {
        source: Ptr,
        local: bool,
        n: Len,
        pe: c_int,
        nbi: bool,
    },
    PutOnStream {
        dest: Ptr,
        local: bool,
        n: Len,
        pe: c_int,
        stream: usize,
    },
    GetOnStream {
        source: Ptr,
        local: bool,
        n: Len,
        pe: c_int,
        stream: usize,
    },
    TypedPut {
        width: Width,
        dest: Ptr,
        local: bool,
        n: Len,
        pe: c_int,
    },
    Strided {
        width: Width,
        put: bool,
        sym: Ptr,
        local: bool,
        dst: isize,
        sst: isize,
        n: Len,
        pe: c_int,
    },
    P {
        dest: Ptr,
        value: i64,
        pe: c_int,
    },
    G {
        source: Ptr,
        pe: c_int,
    },
    Amo {
        kind: u8,
        dest: Ptr,
        value: i64,
        pe: c_int,
    },
    SignalFetch {
        sig: Ptr,
    },
    SignalUpdate {
        sig: Ptr,
        value: u64,
        op: c_int,
        pe: c_int,
        stream: usize,
    },
    PutSignal {
        dest: Ptr,
        local: bool,
        n: Len,
        sig: Ptr,
        op: c_int,
        pe: c_int,
        stream: usize,
    },
    WaitUntil {
        sig: Ptr,
        cmp: c_int,
        stream: usize,
    },
    Malloc {
        kind: u8,
        a: usize,
        b: usize,
    },
    Free {
        ptr: Ptr,
    },
    PtrOf {
        ptr: Ptr,
        pe: c_int,
    },
    Split {
        parent: c_int,
        start: c_int,
        stride: c_int,
        size: c_int,
        config: bool,
        out: bool,
    },
    Split2d {
        parent: c_int,
        xrange: c_int,
    },
    Translate {
        src: c_int,
        pe: c_int,
        dest: c_int,
    },
    TeamQuery {
        team: c_int,
        my_pe: bool,
    },
    Barrier {
        team: c_int,
        on_stream: Option<usize>,
    },
    Reduce {
        team: c_int,
        dest: Ptr,
        source: Ptr,
        n: Len,
        on_stream: Option<usize>,
    },
    Broadcast {
        team: c_int,
        dest: Ptr,
        source: Ptr,
        n: Len,
        root: c_int,
        bytes: bool,
    },
    Fcollect {
        team: c_int,
        dest: Ptr,
        source: Ptr,
        n: Len,
    },
    Alltoall {
        team: c_int,
        dest: Ptr,
        source: Ptr,
        n: Len,
    },
}

fn signal_op() -> impl Strategy<Value = c_int> {
    prop_oneof![
        3 => prop::sample::select(vec![NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD]),
        1 => prop::sample::select(vec![0, -1, 8, 11, c_int::MAX]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let local = prop_oneof![4 => Just(true), 1 => Just(false)];
    prop_oneof![
        1 => (sym_ptr(), local.clone(), len(), pe(), any::<bool>())
            .prop_map(|(dest, local, n, pe, nbi)| Op::Put { dest, local, n, pe, nbi }),
        1 => (sym_ptr(), local.clone(), len(), pe(), any::<bool>())
            .prop_map(|(source, local, n, pe, nbi)| Op::Get { source, local, n, pe, nbi }),
        1 => (sym_ptr(), local.clone(), len(), pe(), stream())
            .prop_map(|(dest, local, n, pe, stream)| Op::PutOnStream { dest, local, n, pe, stream }),
        1 => (sym_ptr(), local.clone(), len(), pe(), stream())
            .prop_map(|(source, local, n, pe, stream)| Op::GetOnStream { source, local, n, pe, stream }),
        1 => (width(), sym_ptr(), local.clone(), len(), pe())
            .prop_map(|(width, dest, local, n, pe)| Op::TypedPut { width, dest, local, n, pe }),
        4 => (width(), any::<bool>(), sym_ptr(), local.clone(), stride(), stride(), len(), pe())
            .prop_map(|(width, put, sym, local, dst, sst, n, pe)| Op::Strided {
                width, put, sym, local, dst, sst, n, pe
            }),
        1 => (sym_ptr(), any::<i64>(), pe()).prop_map(|(dest, value, pe)| Op::P { dest, value, pe }),
        1 => (sym_ptr(), pe()).prop_map(|(source, pe)| Op::G { source, pe }),
        2 => (0u8..5, sym_ptr(), any::<i64>(), pe())
            .prop_map(|(kind, dest, value, pe)| Op::Amo { kind, dest, value, pe }),
        1 => sym_ptr().prop_map(|sig| Op::SignalFetch { sig }),
        1 => (sym_ptr(), any::<u64>(), signal_op(), pe(), stream())
            .prop_map(|(sig, value, op, pe, stream)| Op::SignalUpdate { sig, value, op, pe, stream }),
        1 => (sym_ptr(), local, len(), sym_ptr(), signal_op(), pe(), stream()).prop_map(
            |(dest, local, n, sig, op, pe, stream)| Op::PutSignal { dest, local, n, sig, op, pe, stream }
        ),
        1 => (sym_ptr(), prop::sample::select(vec![NVSHMEM_CMP_GE, -1, 6, 17, c_int::MIN]), stream())
            .prop_map(|(sig, cmp, stream)| Op::WaitUntil { sig, cmp, stream }),
        1 => (
            0u8..3,
            prop::sample::select(vec![0usize, 1, 3, 8, 256, 4096, 1 << 20, 1 << 40, usize::MAX, usize::MAX / 2 + 1]),
            prop_oneof![0usize..5000, Just(usize::MAX), Just(1 << 40), Just(HEAP)],
        )
            .prop_map(|(kind, a, b)| Op::Malloc { kind, a, b }),
        1 => sym_ptr().prop_map(|ptr| Op::Free { ptr }),
        1 => (sym_ptr(), pe()).prop_map(|(ptr, pe)| Op::PtrOf { ptr, pe }),
        1 => (team(), -2..3, -2..3, -1..3, any::<bool>(), prop_oneof![9 => Just(true), 1 => Just(false)])
            .prop_map(|(parent, start, stride, size, config, out)| Op::Split {
                parent, start, stride, size, config, out
            }),
        1 => (team(), prop::sample::select(vec![0, 1, 2, -1, c_int::MAX, c_int::MIN]))
            .prop_map(|(parent, xrange)| Op::Split2d { parent, xrange }),
        1 => (team(), pe(), team()).prop_map(|(src, pe, dest)| Op::Translate { src, pe, dest }),
        1 => (team(), any::<bool>()).prop_map(|(team, my_pe)| Op::TeamQuery { team, my_pe }),
        1 => (team(), prop::option::of(stream())).prop_map(|(team, on_stream)| Op::Barrier { team, on_stream }),
        2 => (team(), sym_ptr(), sym_ptr(), len(), prop::option::of(stream()))
            .prop_map(|(team, dest, source, n, on_stream)| Op::Reduce { team, dest, source, n, on_stream }),
        1 => (team(), sym_ptr(), sym_ptr(), len(), prop_oneof![3 => Just(0), 1 => prop::sample::select(vec![1, -1, c_int::MAX])], any::<bool>())
            .prop_map(|(team, dest, source, n, root, bytes)| Op::Broadcast { team, dest, source, n, root, bytes }),
        1 => (team(), sym_ptr(), sym_ptr(), len())
            .prop_map(|(team, dest, source, n)| Op::Fcollect { team, dest, source, n }),
        1 => (team(), sym_ptr(), sym_ptr(), len())
            .prop_map(|(team, dest, source, n)| Op::Alltoall { team, dest, source, n }),
    ]
}

// ---- the model and the calls -------------------------------------------------------------

/// `Some(b)` when `b` is known, else `None` (the answer the model leaves open).
fn known(open: bool, b: bool) -> Option<bool> {
    (!open).then_some(b)
}

/// Whether an allocation of `bytes` must succeed (`Some(true)`: well inside the free heap),
/// must fail (more than the heap, or an overflowing size), or may do either.
fn fits(bytes: Option<usize>) -> Option<bool> {
    match bytes {
        None => Some(false),
        Some(n) if n <= 100_000 => Some(true),
        Some(n) if n > HEAP => Some(false),
        Some(_) => None,
    }
}

fn aligned(addr: usize, align: usize) -> bool {
    addr % align == 0
}

/// Whether two byte ranges overlap.
fn overlap(a: usize, b: usize, len: usize) -> bool {
    a < b.saturating_add(len) && b < a.saturating_add(len)
}

fn run(fx: &Fixture, op: &Op) -> Result<(), TestCaseError> {
    let local = |yes: bool| if yes { fx.local } else { null_mut() };
    let vp = |p: &Ptr| fx.resolve(p) as *mut c_void;
    let good_pe = |pe: c_int| pe == 0;
    match op {
        Op::Put {
            dest,
            local: l,
            n,
            pe,
            nbi,
        } => {
            let (d, n) = (fx.resolve(dest), n.resolve(fx, fx.resolve(dest), 1));
            let ok = n == 0 || (good_pe(*pe) && *l && fx.inside(d, n));
            let (name, f): (
                _,
                unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int),
            ) = if *nbi {
                ("nvshmem_putmem_nbi", nvshmem_putmem_nbi)
            } else {
                ("nvshmem_putmem", nvshmem_putmem)
            };
            // SAFETY: `local` is NULL or holds more bytes than any accepted put reads.
            let call = || unsafe { f(vp(dest), local(*l).cast(), n, *pe) };
            expect(fx, name, Some(ok), call, no_status)?;
        }
        Op::Get {
            source,
            local: l,
            n,
            pe,
            nbi,
        } => {
            let (s, n) = (fx.resolve(source), n.resolve(fx, fx.resolve(source), 1));
            let ok = n == 0 || (good_pe(*pe) && *l && fx.inside(s, n));
            let (name, f): (
                _,
                unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int),
            ) = if *nbi {
                ("nvshmem_getmem_nbi", nvshmem_getmem_nbi)
            } else {
                ("nvshmem_getmem", nvshmem_getmem)
            };
            // SAFETY: `local` is NULL or holds more bytes than any accepted get writes.
            let call = || unsafe { f(local(*l).cast(), vp(source), n, *pe) };
            expect(fx, name, Some(ok), call, no_status)?;
        }
        Op::PutOnStream {
            dest,
            local: l,
            n,
            pe,
            stream,
        } => {
            let (d, n) = (fx.resolve(dest), n.resolve(fx, fx.resolve(dest), 1));
            let ok = good_pe(*pe) && *l && fx.inside(d, n) && *stream == 0;
            let s = *stream as *mut c_void;
            // SAFETY: as for Put; the buffer outlives the stream (leaked; synchronized).
            let call =
                || unsafe { nvshmemx_putmem_on_stream(vp(dest), local(*l).cast(), n, *pe, s) };
            expect(
                fx,
                "nvshmemx_putmem_on_stream",
                known(n == 0, ok),
                call,
                no_status,
            )?;
        }
        Op::GetOnStream {
            source,
            local: l,
            n,
            pe,
            stream,
        } => {
            let (a, n) = (fx.resolve(source), n.resolve(fx, fx.resolve(source), 1));
            let ok = good_pe(*pe) && *l && fx.inside(a, n) && *stream == 0;
            let s = *stream as *mut c_void;
            // SAFETY: as for Get; the buffer outlives the stream (leaked; synchronized).
            let call =
                || unsafe { nvshmemx_getmem_on_stream(local(*l).cast(), vp(source), n, *pe, s) };
            expect(
                fx,
                "nvshmemx_getmem_on_stream",
                known(n == 0, ok),
                call,
                no_status,
            )?;
        }
        Op::TypedPut {
            width,
            dest,
            local: l,
            n,
            pe,
        } => {
            let d = fx.resolve(dest);
            let n = n.resolve(fx, d, width.size());
            let bytes = n.checked_mul(width.size());
            let ok = n == 0 || (good_pe(*pe) && *l && bytes.is_some_and(|b| fx.inside(d, b)));
            let (name, f): (
                _,
                unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int),
            ) = match width {
                Width::B1 => ("nvshmem_put8", rma_typed::bits8::put),
                Width::B4 => ("nvshmem_put32", rma_typed::bits32::put),
                Width::B8 => ("nvshmem_put64", rma_typed::bits64::put),
                Width::B16 => ("nvshmem_put128", rma_typed::bits128::put),
            };
            // SAFETY: `local` is NULL or holds more bytes than any accepted put reads.
            let call = || unsafe { f(vp(dest), local(*l).cast(), n, *pe) };
            expect(fx, name, Some(ok), call, no_status)?;
        }
        Op::Strided {
            width,
            put,
            sym,
            local: l,
            dst,
            sst,
            n,
            pe,
        } => {
            let (size, a) = (width.size(), fx.resolve(sym));
            let n = n.resolve(fx, a, size);
            let (sym_stride, local_stride) = if *put { (*dst, *sst) } else { (*sst, *dst) };
            let reach = |stride: isize| -> Option<usize> {
                let s = usize::try_from(stride).ok()?;
                n.checked_sub(1)?
                    .checked_mul(s)?
                    .checked_add(1)?
                    .checked_mul(size)
            };
            // The local operand is NULL unless the buffer holds every element the strides
            // reach.
            let l = *l && reach(local_stride).is_some_and(|r| r <= LOCAL);
            let strides_ok = [*dst, *sst]
                .iter()
                .all(|&s| s >= 1 && (size < 16 || s.checked_mul(2).is_some()));
            let ok = good_pe(*pe)
                && strides_ok
                && l
                && reach(sym_stride).is_some_and(|r| fx.inside(a, r))
                && aligned(a, width.align());
            let (name, f): (
                _,
                unsafe extern "C" fn(*mut c_void, *const c_void, isize, isize, usize, c_int),
            ) = match (width, put) {
                (Width::B1, true) => ("nvshmem_iput8", rma_typed::bits8::iput),
                (Width::B4, true) => ("nvshmem_iput32", rma_typed::bits32::iput),
                (Width::B8, true) => ("nvshmem_iput64", rma_typed::bits64::iput),
                (Width::B16, true) => ("nvshmem_iput128", rma_typed::bits128::iput),
                (Width::B1, false) => ("nvshmem_iget8", rma_typed::bits8::iget),
                (Width::B4, false) => ("nvshmem_iget32", rma_typed::bits32::iget),
                (Width::B8, false) => ("nvshmem_iget64", rma_typed::bits64::iget),
                (Width::B16, false) => ("nvshmem_iget128", rma_typed::bits128::iget),
            };
            let lp = local(l).cast::<c_void>();
            let (dp, sp) = if *put { (vp(sym), lp) } else { (lp, vp(sym)) };
            // SAFETY: the local operand is NULL or holds every element its stride reaches.
            let call = || unsafe { f(dp, sp, *dst, *sst, n, *pe) };
            expect(fx, name, known(n == 0, ok), call, no_status)?;
        }
        Op::P { dest, value, pe } => {
            let d = fx.resolve(dest);
            let ok = good_pe(*pe) && fx.inside(d, 8) && aligned(d, 8);
            expect(
                fx,
                "nvshmem_long_p",
                Some(ok),
                || rma_typed::long::p(d as *mut i64, *value, *pe),
                no_status,
            )?;
        }
        Op::G { source, pe } => {
            let s = fx.resolve(source);
            let ok = good_pe(*pe) && fx.inside(s, 4) && aligned(s, 4);
            let v = expect(
                fx,
                "nvshmem_int_g",
                Some(ok),
                || rma_typed::int::g(s as *const i32, *pe),
                no_status,
            )?;
            if !ok {
                prop_assert_eq!(v, 0);
            }
        }
        Op::Amo {
            kind,
            dest,
            value,
            pe,
        } => {
            let d = fx.resolve(dest);
            let ok = good_pe(*pe) && fx.inside(d, 8) && aligned(d, 8);
            let (p, u, v) = (d as *mut i64, d as *mut u64, *value);
            let r = match kind {
                0 => expect(
                    fx,
                    "nvshmem_long_atomic_fetch_add",
                    Some(ok),
                    || amo::long::fetch_add(p, v, *pe),
                    no_status,
                )?,
                1 => expect(
                    fx,
                    "nvshmem_long_atomic_compare_swap",
                    Some(ok),
                    || amo::long::compare_swap(p, v, 1, *pe),
                    no_status,
                )?,
                2 => expect(
                    fx,
                    "nvshmem_long_atomic_fetch",
                    Some(ok),
                    || amo::long::fetch(p, *pe),
                    no_status,
                )?,
                3 => {
                    expect(
                        fx,
                        "nvshmem_long_atomic_set",
                        Some(ok),
                        || amo::long::set(p, v, *pe),
                        no_status,
                    )?;
                    0
                }
                _ => expect(
                    fx,
                    "nvshmem_uint64_atomic_fetch_xor",
                    Some(ok),
                    || amo::uint64::fetch_xor(u, v as u64, *pe),
                    no_status,
                )? as i64,
            };
            if !ok {
                prop_assert_eq!(r, 0, "a failed fetching atomic returns 0");
            }
        }
        Op::SignalFetch { sig } => {
            let s = fx.resolve(sig);
            let ok = fx.inside(s, 8) && aligned(s, 8);
            expect(
                fx,
                "nvshmem_signal_fetch",
                Some(ok),
                || nvshmem_signal_fetch(s as *mut u64),
                no_status,
            )?;
        }
        Op::SignalUpdate {
            sig,
            value,
            op,
            pe,
            stream,
        } => {
            let s = fx.resolve(sig);
            let ok = good_pe(*pe)
                && fx.inside(s, 8)
                && aligned(s, 8)
                && [NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD].contains(op)
                && *stream == 0;
            expect(
                fx,
                "nvshmemx_signal_op_on_stream",
                Some(ok),
                || {
                    nvshmemx_signal_op_on_stream(
                        s as *mut u64,
                        *value,
                        *op,
                        *pe,
                        *stream as *mut c_void,
                    )
                },
                no_status,
            )?;
        }
        Op::PutSignal {
            dest,
            local: l,
            n,
            sig,
            op,
            pe,
            stream,
        } => {
            let (d, s) = (fx.resolve(dest), fx.resolve(sig));
            let n = n.resolve(fx, d, 1);
            let sig_ok = fx.inside(s, 8) && aligned(s, 8);
            let ok = good_pe(*pe)
                && sig_ok
                && [NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD].contains(op)
                && *stream == 0
                && (n == 0 || (*l && fx.inside(d, n)));
            // The data and the signal in one allocation may overlap: the model leaves that open.
            let open = ok && n > 0 && overlap(d, s, n.max(8));
            // SAFETY: `local` is NULL or holds more bytes than any accepted put reads; it
            // outlives the stream (leaked; synchronized).
            let call = || unsafe {
                nvshmemx_putmem_signal_on_stream(
                    vp(dest),
                    local(*l).cast(),
                    n,
                    s as *mut u64,
                    1,
                    *op,
                    *pe,
                    *stream as *mut c_void,
                )
            };
            expect(
                fx,
                "nvshmemx_putmem_signal_on_stream",
                known(open, ok),
                call,
                no_status,
            )?;
        }
        Op::WaitUntil { sig, cmp, stream } => {
            // Only waits that are satisfied (>= 0) or refused: a real wait would block.
            let s = fx.resolve(sig);
            let ok = fx.inside(s, 8) && aligned(s, 8) && *cmp == NVSHMEM_CMP_GE && *stream == 0;
            expect(
                fx,
                "nvshmemx_signal_wait_until_on_stream",
                Some(ok),
                || {
                    nvshmemx_signal_wait_until_on_stream(
                        s as *mut u64,
                        *cmp,
                        0,
                        *stream as *mut c_void,
                    )
                },
                no_status,
            )?;
        }
        Op::Malloc { kind, a, b } => {
            let (name, p) = match kind {
                0 => {
                    let want = fits(Some(*b));
                    (
                        "nvshmem_malloc",
                        expect(fx, "nvshmem_malloc", want, || nvshmem_malloc(*b), no_status)?,
                    )
                }
                1 => {
                    let want = fits(a.checked_mul(*b));
                    (
                        "nvshmem_calloc",
                        expect(
                            fx,
                            "nvshmem_calloc",
                            want,
                            || nvshmem_calloc(*a, *b),
                            no_status,
                        )?,
                    )
                }
                _ => {
                    let want = if !a.is_power_of_two() {
                        known(*b == 0, false)
                    } else if *a <= 4096 {
                        fits(Some(*b))
                    } else {
                        None
                    };
                    let p = expect(
                        fx,
                        "nvshmem_align",
                        want,
                        || nvshmem_align(*a, *b),
                        no_status,
                    )?;
                    if !p.is_null() {
                        prop_assert!(
                            aligned(p as usize, *a),
                            "nvshmem_align({a}, {b}) gave {p:p}"
                        );
                    }
                    ("nvshmem_align", p)
                }
            };
            if !p.is_null() {
                prop_assert!(
                    !fx.inside(p as usize, 1),
                    "{name} returned a live allocation"
                );
                let (failed, ()) = checked(fx, "nvshmem_free", || nvshmem_free(p), no_status)?;
                prop_assert!(!failed, "free of {name}'s result: {:?}", last_report());
            }
        }
        Op::Free { ptr } => {
            let p = fx.resolve(ptr);
            if fx.blocks.iter().any(|b| b.0 == p) {
                return Ok(()); // a fixture: not to be freed
            }
            expect(
                fx,
                "nvshmem_free",
                Some(p == 0),
                || nvshmem_free(p as *mut c_void),
                no_status,
            )?;
        }
        Op::PtrOf { ptr, pe } => {
            let p = fx.resolve(ptr);
            let ok = good_pe(*pe) && fx.inside(p, 1);
            let open = !ok && good_pe(*pe) && p != 0 && fx.near(p);
            let r = expect(
                fx,
                "nvshmem_ptr",
                known(open, ok),
                || nvshmem_ptr(p as *const c_void, *pe),
                no_status,
            )?;
            if ok {
                prop_assert_eq!(r as usize, p, "nvshmem_ptr of this PE's own heap");
            }
        }
        Op::Split {
            parent,
            start,
            stride,
            size,
            config,
            out,
        } => {
            let cfg = NvshmemTeamConfig::new(1);
            let cfg_ptr = if *config { &raw const cfg } else { null() };
            let mut team = 12345;
            let team_ptr = if *out { &raw mut team } else { null_mut() };
            let ok = *out && predefined(*parent) && *start == 0 && *size == 1 && *stride >= 1;
            let open = *out && predefined(*parent) && !ok;
            // SAFETY: `cfg` and `team` are live locals (or NULL).
            let call = || unsafe {
                nvshmem_team_split_strided(*parent, *start, *stride, *size, cfg_ptr, 1, team_ptr)
            };
            let s = expect(
                fx,
                "nvshmem_team_split_strided",
                known(open, ok),
                call,
                is_status,
            )?;
            if *out && s != 0 {
                prop_assert_eq!(team, NVSHMEM_TEAM_INVALID, "a failed split leaves no team");
            }
            if s == 0 && team != NVSHMEM_TEAM_INVALID {
                prop_assert_eq!(nvshmem_team_n_pes(team), 1);
                nvshmem_team_destroy(team);
            }
        }
        Op::Split2d { parent, xrange } => {
            let (mut x, mut y) = (12345, 12345);
            // SAFETY: `x` and `y` are live locals; NULL configurations are allowed.
            let call = || unsafe {
                nvshmem_team_split_2d(*parent, *xrange, null(), 0, &mut x, null(), 0, &mut y)
            };
            let s = expect(
                fx,
                "nvshmem_team_split_2d",
                known(predefined(*parent) && *xrange >= 1, false),
                call,
                is_status,
            )?;
            for t in [x, y] {
                if s == 0 && t != NVSHMEM_TEAM_INVALID {
                    nvshmem_team_destroy(t);
                } else if s != 0 {
                    prop_assert_eq!(t, NVSHMEM_TEAM_INVALID);
                }
            }
        }
        Op::Translate { src, pe, dest } => {
            let valid = |t: c_int| predefined(t) || t == NVSHMEM_TEAM_INVALID;
            let ok = valid(*src) && valid(*dest);
            let r = expect(
                fx,
                "nvshmem_team_translate_pe",
                Some(ok),
                || nvshmem_team_translate_pe(*src, *pe, *dest),
                no_status,
            )?;
            prop_assert!(r == -1 || r == 0, "translated to {r}");
        }
        Op::TeamQuery { team, my_pe } => {
            let ok = predefined(*team) || *team == NVSHMEM_TEAM_INVALID;
            let (name, f): (_, extern "C" fn(c_int) -> c_int) = if *my_pe {
                ("nvshmem_team_my_pe", nvshmem_team_my_pe)
            } else {
                ("nvshmem_team_n_pes", nvshmem_team_n_pes)
            };
            let r = expect(fx, name, Some(ok), || f(*team), no_status)?;
            let want = if predefined(*team) {
                if *my_pe { 0 } else { 1 }
            } else {
                -1
            };
            prop_assert_eq!(r, want);
        }
        Op::Barrier { team, on_stream } => {
            let open = *team == NVSHMEM_TEAM_INVALID;
            match on_stream {
                None => {
                    expect(
                        fx,
                        "nvshmem_barrier",
                        known(open, predefined(*team)),
                        || nvshmem_barrier(*team),
                        is_status,
                    )?;
                }
                Some(s) => {
                    let ok = predefined(*team) && *s == 0;
                    expect(
                        fx,
                        "nvshmemx_barrier_on_stream",
                        known(open, ok),
                        || nvshmemx_barrier_on_stream(*team, *s as *mut c_void),
                        is_status,
                    )?;
                }
            }
        }
        Op::Reduce {
            team,
            dest,
            source,
            n,
            on_stream,
        } => {
            let (d, s) = (fx.resolve(dest), fx.resolve(source));
            let n = n.resolve(fx, d, 8);
            let (ok, open) = collective_model(fx, *team, d, s, n, 8);
            let (dp, sp) = (d as *mut i64, s as *const i64);
            match on_stream {
                None => {
                    expect(
                        fx,
                        "nvshmem_long_sum_reduce",
                        known(open, ok),
                        || coll::typed::long::sum::reduce(*team, dp, sp, n),
                        is_status,
                    )?;
                }
                Some(st) => {
                    expect(
                        fx,
                        "nvshmemx_long_sum_reduce_on_stream",
                        known(open, ok && *st == 0),
                        || {
                            coll::typed::long::sum::reduce_on_stream(
                                *team,
                                dp,
                                sp,
                                n,
                                *st as *mut c_void,
                            )
                        },
                        is_status,
                    )?;
                }
            }
        }
        Op::Broadcast {
            team,
            dest,
            source,
            n,
            root,
            bytes,
        } => {
            let (d, s) = (fx.resolve(dest), fx.resolve(source));
            let size = if *bytes { 1 } else { 4 };
            let n = n.resolve(fx, d, size);
            let (ok, open) = collective_model(fx, *team, d, s, n, size);
            let ok = ok && *root == 0;
            if *bytes {
                expect(
                    fx,
                    "nvshmem_broadcastmem",
                    known(open, ok),
                    || coll::mem::broadcast(*team, d as *mut c_void, s as *const c_void, n, *root),
                    is_status,
                )?;
            } else {
                expect(
                    fx,
                    "nvshmem_int_broadcast",
                    known(open, ok),
                    || coll::typed::int::broadcast(*team, d as *mut i32, s as *const i32, n, *root),
                    is_status,
                )?;
            }
        }
        Op::Fcollect {
            team,
            dest,
            source,
            n,
        } => {
            let (d, s) = (fx.resolve(dest), fx.resolve(source));
            let n = n.resolve(fx, d, 8);
            let (ok, open) = collective_model(fx, *team, d, s, n, 8);
            expect(
                fx,
                "nvshmem_uint64_fcollect",
                known(open, ok),
                || coll::typed::uint64::fcollect(*team, d as *mut u64, s as *const u64, n),
                is_status,
            )?;
        }
        Op::Alltoall {
            team,
            dest,
            source,
            n,
        } => {
            let (d, s) = (fx.resolve(dest), fx.resolve(source));
            let n = n.resolve(fx, d, 1);
            let (ok, open) = collective_model(fx, *team, d, s, n, 1);
            expect(
                fx,
                "nvshmem_alltoallmem",
                known(open, ok),
                || coll::mem::alltoall(*team, d as *mut c_void, s as *const c_void, n),
                is_status,
            )?;
        }
    }
    Ok(())
}

/// A collective of `n` elements of `size` bytes per PE on a team of one PE: whether it must
/// succeed, and whether the model leaves it open (no elements, overlapping operands, the
/// invalid team).
fn collective_model(
    fx: &Fixture,
    team: c_int,
    d: usize,
    s: usize,
    n: usize,
    size: usize,
) -> (bool, bool) {
    let bytes = n.checked_mul(size);
    let inside = |a: usize| bytes.is_some_and(|b| fx.inside(a, b)) && aligned(a, size);
    let ok = predefined(team) && inside(d) && inside(s);
    let open = n == 0 || team == NVSHMEM_TEAM_INVALID || (ok && overlap(d, s, n * size));
    (ok, open)
}

// ---- init ------------------------------------------------------------------------------

fn set_env(name: &str, value: &str) {
    // SAFETY: this test binary runs one test, which is the only code reading or writing
    // the environment while it runs.
    unsafe { std::env::set_var(name, value) };
}

/// The unique-ID init before the world exists: fuzzed IDs, ranks, sizes and flags fail
/// with one line (or, for a valid mock ID of rank 0 of 1, initialize, and are finalized).
fn fuzz_uid_init() {
    let id = prop_oneof![
        prop::collection::vec(any::<u8>(), UNIQUEID_PADDING),
        (
            any::<[u8; MOCK_ID_BYTES]>(),
            prop::collection::vec((0..UNIQUEID_PADDING, any::<u8>()), 0..3)
        )
            .prop_map(|(job, edits)| {
                let mut b = Uid::Mock(job).encode().to_vec();
                for (at, x) in edits {
                    b[at] = x;
                }
                b
            }),
    ];
    let rank = prop::sample::select(vec![0, 1, -1, c_int::MAX, c_int::MIN]);
    let flags = prop_oneof![
        4 => Just(NVSHMEMX_INIT_WITH_UNIQUEID),
        1 => prop::sample::select(vec![0u32, 1, 2, 4, 0x10, u32::MAX, NVSHMEMX_INIT_WITH_UNIQUEID | 1]),
    ];
    let fx = Fixture::empty();
    fuzz(
        SEED,
        300,
        (id, rank.clone(), rank, flags, any::<bool>()),
        |(bytes, rank, nranks, flags, null_id)| {
            let internal: [u8; UNIQUEID_PADDING] = bytes.try_into().unwrap();
            let uid = NvshmemxUniqueid {
                internal,
                ..NvshmemxUniqueid::INITIALIZER
            };
            let valid_id = matches!(Uid::decode(&internal), Ok(Uid::Mock(_)));
            let (mut rank, mut nranks) = (rank, nranks);
            if valid_id && rank >= 0 && rank < nranks {
                // Rank 0 of 1 only: another rank would wait for its peers.
                (rank, nranks) = (0, 1);
            }
            let mut attr = NvshmemxInitAttr::INITIALIZER;
            // SAFETY: `uid` and `attr` are live locals.
            let s = unsafe { nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &mut attr) };
            prop_assert_eq!(s, 0);
            if null_id {
                attr.args.uid_args.id = null_mut();
            }
            let ok = flags == NVSHMEMX_INIT_WITH_UNIQUEID
                && !null_id
                && valid_id
                && rank == 0
                && nranks == 1;
            let open = flags == 0; // the environment's init: a world of one PE
            // SAFETY: `attr` is live and points to `uid` (or has a NULL id), a live local.
            let call = || unsafe { nvshmemx_init_attr(flags, &mut attr) };
            let s = expect(&fx, "nvshmemx_init_attr", known(open, ok), call, is_status)?;
            if s == 0 {
                prop_assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_IS_INITIALIZED);
                prop_assert_eq!((nvshmem_my_pe(), nvshmem_n_pes()), (0, 1));
                nvshmem_finalize();
            }
            prop_assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_NOT_INITIALIZED);
            Ok(())
        },
    );
}

impl Fixture {
    /// No allocations and a local buffer that nothing uses (for calls before init).
    fn empty() -> Fixture {
        Fixture {
            blocks: Vec::new(),
            stale: (0, 1),
            local: Box::leak(Box::new([0u8; 16])).as_mut_ptr(),
            local_len: 16,
            live: false,
        }
    }
}

#[test]
fn the_c_abi_refuses_bad_arguments_in_one_line() {
    for (k, v) in [
        ("NIIN_TRANSPORT", "mock"),
        ("NVSHMEM_SYMMETRIC_SIZE", "512K"),
        ("NIIN_TIMEOUT", "30"),
        ("NIIN_CHECK_SYMMETRY", "1"),
    ] {
        set_env(k, v);
    }
    for k in ["NIIN_PE", "NIIN_NPES", "NIIN_JOB_ID", "NIIN_LAUNCHER"] {
        // SAFETY: as in `set_env`.
        unsafe { std::env::remove_var(k) };
    }
    fuzz_uid_init();

    nvshmem_init();
    assert_eq!(nvshmemx_init_status(), NVSHMEM_STATUS_IS_INITIALIZED);
    let fx = Fixture::new();
    fuzz(SEED, 8000, op(), |op| run(&fx, &op));
    nvshmem_finalize();
}
