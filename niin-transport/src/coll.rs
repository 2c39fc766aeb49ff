//! Collective operations of a team: reduce, reducescatter, broadcast, fcollect, alltoall.
//!
//! One algorithm, written once against [`CollMemory`] (read and write a range of any
//! member's heap, synchronize the team), so every transport that can move bytes runs the
//! same semantics: the mock through its shared mapping, the NCCL transports through their
//! blocking host RMA. It is NVSHMEM 3.4.5's (OpenSHMEM 1.5's) team collectives:
//!
//! - every member calls with the same arguments; on return this PE's `dst` is complete and
//!   its `src` may be reused;
//! - **reduce**: `dst[i] = src₀[i] ∘ src₁[i] ∘ …` over the team's PEs in team order, for
//!   `i < nelems`; `dst == src` (in place) is allowed;
//! - **reducescatter**: team PE `k`'s `dst[i]` = the same over `src[k·nelems + i]`;
//! - **broadcast**: every member's `dst` (the root's too) = the root's `src`;
//! - **fcollect**: `dst[j·nelems ..]` = team PE `j`'s `src`;
//! - **alltoall**: on team PE `k`, `dst[j·nelems ..]` = team PE `j`'s `src[k·nelems ..]`.
//!
//! The steps: a team barrier (every member's `src` is ready and its `dst` free), the data
//! movement, a team barrier (every member's data has landed, nobody reuses a `src` that a
//! peer still reads). A reduction is split into one slice per member: team PE `k` reads
//! slice `k` of every member's `src`, combines them in team order (so floating-point
//! results are bit-identical on every PE), and writes the result into slice `k` of every
//! member's `dst` — only PE `k` touches slice `k`, which is what makes in-place safe with
//! two barriers. Data moves in chunks of at most [`CHUNK_BYTES`].

use crate::error::{Result, TransportError};
use crate::ops::{SymAddr, TeamSync};

/// The most bytes a collective holds in host memory at once (per operand).
pub const CHUNK_BYTES: usize = 1 << 20;

/// A reduction operator of NVSHMEM's reduce and reducescatter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Bitwise and (integer types only).
    And,
    /// Bitwise or (integer types only).
    Or,
    /// Bitwise exclusive or (integer types only).
    Xor,
    /// The smaller value.
    Min,
    /// The larger value.
    Max,
    /// The sum (integers wrap).
    Sum,
    /// The product (integers wrap).
    Prod,
}

impl ReduceOp {
    /// Every operator, in NVSHMEM's order of declaration.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Sum,
        ReduceOp::Prod,
    ];

    /// NVSHMEM's name of the operator (`sum` in `nvshmem_int_sum_reduce`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
        }
    }

    /// Whether the operator is bitwise (defined on integer types only).
    pub fn is_bitwise(self) -> bool {
        matches!(self, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
    }
}

/// The element type a reduction combines (NVSHMEM's reduce types, by representation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// 8-bit signed (`char`, `schar`, `int8`).
    I8,
    /// 16-bit signed.
    I16,
    /// 32-bit signed.
    I32,
    /// 64-bit signed.
    I64,
    /// 8-bit unsigned.
    U8,
    /// 16-bit unsigned.
    U16,
    /// 32-bit unsigned.
    U32,
    /// 64-bit unsigned (`size_t` too).
    U64,
    /// IEEE binary16 (`half`).
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl Elem {
    /// Every element type.
    pub const ALL: [Elem; 12] = [
        Elem::I8,
        Elem::I16,
        Elem::I32,
        Elem::I64,
        Elem::U8,
        Elem::U16,
        Elem::U32,
        Elem::U64,
        Elem::F16,
        Elem::Bf16,
        Elem::F32,
        Elem::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 => 1,
            Elem::I16 | Elem::U16 | Elem::F16 | Elem::Bf16 => 2,
            Elem::I32 | Elem::U32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }

    /// Whether the type is a floating-point one (no bitwise reductions).
    pub fn is_float(self) -> bool {
        matches!(self, Elem::F16 | Elem::Bf16 | Elem::F32 | Elem::F64)
    }
}

/// What a collective does (the element type and operator are in [`Collective`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollKind {
    /// `nvshmem_<T>_<op>_reduce`.
    Reduce(ReduceOp),
    /// `nvshmem_<T>_<op>_reducescatter`.
    ReduceScatter(ReduceOp),
    /// `nvshmem_<T>_broadcast` from team PE `root`.
    Broadcast {
        /// The root's number in the team.
        root: usize,
    },
    /// `nvshmem_<T>_fcollect`.
    Fcollect,
    /// `nvshmem_<T>_alltoall`.
    Alltoall,
}

impl CollKind {
    /// NVSHMEM's name of the collective.
    pub fn name(self) -> &'static str {
        match self {
            CollKind::Reduce(_) => "reduce",
            CollKind::ReduceScatter(_) => "reducescatter",
            CollKind::Broadcast { .. } => "broadcast",
            CollKind::Fcollect => "fcollect",
            CollKind::Alltoall => "alltoall",
        }
    }
}

/// One collective call of this PE: what, over which team, on which symmetric operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Collective {
    /// The operation.
    pub kind: CollKind,
    /// The team, its members in world PE numbers.
    pub team: TeamSync,
    /// The destination (symmetric).
    pub dst: SymAddr,
    /// The source (symmetric).
    pub src: SymAddr,
    /// NVSHMEM's count: `nreduce` or `nelems` (elements per PE block).
    pub nelems: usize,
    /// The element type (the `mem` forms: bytes, [`Elem::U8`]).
    pub elem: Elem,
}

impl Collective {
    /// Bytes of one PE's block.
    pub fn block_bytes(&self) -> usize {
        self.nelems * self.elem.size()
    }

    /// Bytes of `src` and of `dst` that the collective reads and writes on each member.
    pub fn operand_bytes(&self) -> (usize, usize) {
        let b = self.block_bytes();
        let n = self.team.size;
        match self.kind {
            CollKind::Reduce(_) | CollKind::Broadcast { .. } => (b, b),
            CollKind::ReduceScatter(_) => (b * n, b),
            CollKind::Fcollect => (b, b * n),
            CollKind::Alltoall => (b * n, b * n),
        }
    }

    /// Checks what can be checked without memory: the operator fits the type, the root is
    /// a member, the byte counts fit in `usize`, and `me` (a world PE) is a member.
    pub fn validate(&self, me: usize) -> Result<()> {
        let op = self.kind.name();
        let bad = |what: String| Err(TransportError::BadArgument { op, what });
        if let CollKind::Reduce(r) | CollKind::ReduceScatter(r) = self.kind
            && r.is_bitwise()
            && self.elem.is_float()
        {
            return bad(format!(
                "{} is not defined on {:?}: bitwise reductions take integer types",
                r.name(),
                self.elem
            ));
        }
        if let CollKind::Broadcast { root } = self.kind
            && root >= self.team.size
        {
            return bad(format!(
                "PE_root {root} is not a PE of the team (it has {} PEs)",
                self.team.size
            ));
        }
        if self
            .nelems
            .checked_mul(self.elem.size())
            .and_then(|b| b.checked_mul(self.team.size))
            .is_none()
        {
            return bad(format!(
                "{} elements of {} bytes for {} PEs is more bytes than usize holds",
                self.nelems,
                self.elem.size(),
                self.team.size
            ));
        }
        if self.team.team_pe(me).is_none() {
            return bad(format!(
                "PE {me} is not a member of team {}",
                self.team.team
            ));
        }
        Ok(())
    }
}

/// What the algorithm needs of a transport: blocking access to any member's heap, and a
/// team barrier that orders every member's earlier writes before its return.
pub trait CollMemory {
    /// This PE's world number.
    fn coll_pe(&self) -> usize;
    /// Copies `buf.len()` bytes at `addr` on world PE `pe` into `buf`.
    fn coll_read(&self, pe: usize, addr: SymAddr, buf: &mut [u8]) -> Result<()>;
    /// Copies `buf` to `addr` on world PE `pe`; complete (visible to `pe` after the next
    /// [`CollMemory::coll_barrier`]) when it returns.
    fn coll_write(&self, pe: usize, addr: SymAddr, buf: &[u8]) -> Result<()>;
    /// A barrier of `team` that completes this PE's earlier writes first.
    fn coll_barrier(&self, team: &TeamSync) -> Result<()>;
}

/// Runs `c` on this PE (see the module docs). Every member must call it.
pub fn run<M: CollMemory + ?Sized>(m: &M, c: &Collective) -> Result<()> {
    let me = m.coll_pe();
    c.validate(me)?;
    let k = c.team.team_pe(me).expect("validated: a member");
    let n = c.team.size;
    let bb = c.block_bytes();
    let at = |addr: SymAddr, off: usize| SymAddr(addr.0 + off as u64);
    m.coll_barrier(&c.team)?;
    match c.kind {
        CollKind::Reduce(op) => {
            let es = c.elem.size();
            // Slice k of n, in elements, as even as can be.
            let lo = c.nelems * k / n * es;
            let hi = c.nelems * (k + 1) / n * es;
            for (off, len) in chunks(lo, hi, es) {
                let acc = combined(m, c, op, off, len)?;
                for j in 0..n {
                    m.coll_write(c.team.world_pe(j), at(c.dst, off), &acc)?;
                }
            }
        }
        CollKind::ReduceScatter(op) => {
            let es = c.elem.size();
            for (off, len) in chunks(0, bb, es) {
                let acc = combined(m, c, op, k * bb + off, len)?;
                m.coll_write(me, at(c.dst, off), &acc)?;
            }
        }
        CollKind::Broadcast { root } => {
            let from = c.team.world_pe(root);
            let mut buf = Vec::new();
            for (off, len) in chunks(0, bb, 1) {
                buf.resize(len, 0);
                m.coll_read(from, at(c.src, off), &mut buf)?;
                m.coll_write(me, at(c.dst, off), &buf)?;
            }
        }
        CollKind::Fcollect => {
            let mut buf = Vec::new();
            for (off, len) in chunks(0, bb, 1) {
                buf.resize(len, 0);
                m.coll_read(me, at(c.src, off), &mut buf)?;
                for j in 0..n {
                    m.coll_write(c.team.world_pe(j), at(c.dst, k * bb + off), &buf)?;
                }
            }
        }
        CollKind::Alltoall => {
            let mut buf = Vec::new();
            for j in 0..n {
                for (off, len) in chunks(0, bb, 1) {
                    buf.resize(len, 0);
                    m.coll_read(me, at(c.src, j * bb + off), &mut buf)?;
                    m.coll_write(c.team.world_pe(j), at(c.dst, k * bb + off), &buf)?;
                }
            }
        }
    }
    m.coll_barrier(&c.team)
}

/// `[lo, hi)` in pieces of at most [`CHUNK_BYTES`] (a multiple of `unit`): (offset, length).
fn chunks(lo: usize, hi: usize, unit: usize) -> impl Iterator<Item = (usize, usize)> {
    let step = (CHUNK_BYTES / unit).max(1) * unit;
    (lo..hi)
        .step_by(step)
        .map(move |off| (off, step.min(hi - off)))
}

/// The members' `src` bytes `[off, off + len)` combined by `op` in team order.
fn combined<M: CollMemory + ?Sized>(
    m: &M,
    c: &Collective,
    op: ReduceOp,
    off: usize,
    len: usize,
) -> Result<Vec<u8>> {
    let src = SymAddr(c.src.0 + off as u64);
    let mut acc = vec![0u8; len];
    m.coll_read(c.team.world_pe(0), src, &mut acc)?;
    let mut x = vec![0u8; len];
    for j in 1..c.team.size {
        m.coll_read(c.team.world_pe(j), src, &mut x)?;
        combine(op, c.elem, &mut acc, &x);
    }
    Ok(acc)
}

/// `acc[i] = acc[i] ∘ x[i]` for every element of the two little-endian byte arrays (of
/// equal length, a multiple of the element size). A bitwise operator on a floating type
/// is refused by [`Collective::validate`] before this runs; here it would panic.
pub fn combine(op: ReduceOp, elem: Elem, acc: &mut [u8], x: &[u8]) {
    assert_eq!(acc.len(), x.len(), "combine: operands of different lengths");
    macro_rules! ints {
        ($t:ty) => {
            each::<$t, { size_of::<$t>() }>(acc, x, |a, b| match op {
                ReduceOp::And => a & b,
                ReduceOp::Or => a | b,
                ReduceOp::Xor => a ^ b,
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
            })
        };
    }
    macro_rules! floats {
        ($t:ty) => {
            each::<$t, { size_of::<$t>() }>(acc, x, |a, b| float_op(op, a, b))
        };
    }
    match elem {
        Elem::I8 => ints!(i8),
        Elem::I16 => ints!(i16),
        Elem::I32 => ints!(i32),
        Elem::I64 => ints!(i64),
        Elem::U8 => ints!(u8),
        Elem::U16 => ints!(u16),
        Elem::U32 => ints!(u32),
        Elem::U64 => ints!(u64),
        Elem::F32 => floats!(f32),
        Elem::F64 => floats!(f64),
        Elem::F16 => each::<u16, 2>(acc, x, |a, b| half_op(op, a, b, f16_to_f32, f32_to_f16)),
        Elem::Bf16 => each::<u16, 2>(acc, x, |a, b| half_op(op, a, b, bf16_to_f32, f32_to_bf16)),
    }
}

/// A little-endian number of `N` bytes.
trait LeBytes<const N: usize>: Copy {
    fn read(b: [u8; N]) -> Self;
    fn write(self) -> [u8; N];
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes<{ size_of::<$t>() }> for $t {
            fn read(b: [u8; size_of::<$t>()]) -> Self {
                <$t>::from_le_bytes(b)
            }
            fn write(self) -> [u8; size_of::<$t>()] {
                self.to_le_bytes()
            }
        }
    )*};
}
le_bytes!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

fn each<T: LeBytes<N>, const N: usize>(acc: &mut [u8], x: &[u8], f: impl Fn(T, T) -> T) {
    for (a, b) in acc.chunks_exact_mut(N).zip(x.chunks_exact(N)) {
        let va = T::read(a.try_into().expect("chunks of N"));
        let vb = T::read(b.try_into().expect("chunks of N"));
        a.copy_from_slice(&f(va, vb).write());
    }
}

/// A floating operator as CUDA's device code computes it (`a < b ? a : b` for min).
fn float_op<T: Copy + PartialOrd + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    op: ReduceOp,
    a: T,
    b: T,
) -> T {
    match op {
        ReduceOp::Min => {
            if b < a {
                b
            } else {
                a
            }
        }
        ReduceOp::Max => {
            if b > a {
                b
            } else {
                a
            }
        }
        ReduceOp::Sum => a + b,
        ReduceOp::Prod => a * b,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
            unreachable!("bitwise reduction of a floating type (refused by validate)")
        }
    }
}

/// A 16-bit floating operator: computed in f32 and rounded once to the nearest 16-bit
/// value (what `__hadd`/`__hmul` give: an f32 sum or product of two 16-bit values is
/// exact, so one rounding is correct rounding); min and max return an operand unchanged.
fn half_op(op: ReduceOp, a: u16, b: u16, to: fn(u16) -> f32, from: fn(f32) -> u16) -> u16 {
    let (fa, fb) = (to(a), to(b));
    match op {
        ReduceOp::Min => {
            if fb < fa {
                b
            } else {
                a
            }
        }
        ReduceOp::Max => {
            if fb > fa {
                b
            } else {
                a
            }
        }
        _ => from(float_op(op, fa, fb)),
    }
}

/// binary16 bits to f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24, normalized for f32.
            let shift = m.leading_zeros() - 21; // bring the top bit to position 10
            let m = (m << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 to binary16 bits, rounded to nearest even (overflow to infinity, NaN kept quiet).
pub fn f32_to_f16(f: f32) -> u16 {
    let bits = f.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    // The value's exponent in binary16's bias.
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    // Significand with its implicit bit (24 bits), and how far to shift it to 10 bits.
    let (sig, shift) = if e <= 0 {
        if exp == 0 || e < -10 {
            return sign; // below half the smallest subnormal (or an f32 subnormal)
        }
        (man | 0x80_0000, (14 - e) as u32)
    } else {
        (man | 0x80_0000, 13)
    };
    let mut out = sig >> shift;
    let rest = sig & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && out & 1 == 1) {
        out += 1; // may carry into the exponent: still the right encoding
    }
    if e <= 0 {
        sign | out as u16 // a carry to 0x400 is the smallest normal: the right encoding
    } else {
        // out is 0x400..=0x800 with the implicit bit; a carry to 0x800 steps the exponent
        // (to infinity from the largest binade: the right encoding too).
        sign | (((e as u32) << 10) + out - 0x400) as u16
    }
}

/// bfloat16 bits to f32 (exact).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// f32 to bfloat16 bits, rounded to nearest even (NaN kept quiet).
pub fn f32_to_bf16(f: f32) -> u16 {
    let bits = f.to_bits();
    if f.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn f16_round_trips_every_finite_value() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#06x} -> {f}");
            }
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9.
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds up to infinity
        assert_eq!(f32_to_f16(65519.0), 0x7bff); // the largest finite
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0); // half the smallest subnormal: even, 0
        assert_eq!(f32_to_f16(2f32.powi(-25) * 1.5), 1);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie, even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82); // tie, even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8001)), 0x3f81);
        for h in [0u16, 0x3f80, 0xc2f7, 0x7f7f, 0x0001] {
            assert_eq!(f32_to_bf16(bf16_to_f32(h)), h);
        }
    }

    fn bytes<T: LeBytes<N>, const N: usize>(v: &[T]) -> Vec<u8> {
        v.iter().flat_map(|x| x.write()).collect()
    }

    #[test]
    fn combine_integer_ops_wrap_and_compare_signed() {
        let mut a = bytes(&[-3i16, 100, i16::MAX]);
        combine(ReduceOp::Sum, Elem::I16, &mut a, &bytes(&[5i16, -100, 1]));
        assert_eq!(a, bytes(&[2i16, 0, i16::MIN]));
        let mut a = bytes(&[-3i32, 7]);
        combine(ReduceOp::Min, Elem::I32, &mut a, &bytes(&[2i32, 9]));
        assert_eq!(a, bytes(&[-3i32, 7]));
        let mut a = bytes(&[0xf0u8, 0x0f]);
        combine(ReduceOp::Xor, Elem::U8, &mut a, &bytes(&[0xffu8, 0xff]));
        assert_eq!(a, bytes(&[0x0fu8, 0xf0]));
        let mut a = bytes(&[u64::MAX]);
        combine(ReduceOp::Prod, Elem::U64, &mut a, &bytes(&[2u64]));
        assert_eq!(a, bytes(&[u64::MAX - 1]));
    }

    #[test]
    fn combine_half_rounds_once() {
        // 2048 + 1 is not a binary16 value: the sum rounds to even, 2048.
        let mut a = f32_to_f16(2048.0).to_le_bytes().to_vec();
        combine(
            ReduceOp::Sum,
            Elem::F16,
            &mut a,
            &f32_to_f16(1.0).to_le_bytes(),
        );
        assert_eq!(a, f32_to_f16(2048.0).to_le_bytes());
        let mut a = f32_to_bf16(3.0).to_le_bytes().to_vec();
        combine(
            ReduceOp::Prod,
            Elem::Bf16,
            &mut a,
            &f32_to_bf16(-0.5).to_le_bytes(),
        );
        assert_eq!(a, f32_to_bf16(-1.5).to_le_bytes());
    }

    /// N PEs' heaps in one vector, for PEs run one after another (barriers are no-ops).
    struct Fake<'a> {
        heaps: &'a RefCell<Vec<Vec<u8>>>,
        pe: usize,
    }

    impl CollMemory for Fake<'_> {
        fn coll_pe(&self) -> usize {
            self.pe
        }
        fn coll_read(&self, pe: usize, addr: SymAddr, buf: &mut [u8]) -> Result<()> {
            let a = addr.0 as usize;
            buf.copy_from_slice(&self.heaps.borrow()[pe][a..a + buf.len()]);
            Ok(())
        }
        fn coll_write(&self, pe: usize, addr: SymAddr, buf: &[u8]) -> Result<()> {
            let a = addr.0 as usize;
            self.heaps.borrow_mut()[pe][a..a + buf.len()].copy_from_slice(buf);
            Ok(())
        }
        fn coll_barrier(&self, _: &TeamSync) -> Result<()> {
            Ok(())
        }
    }

    fn team(n: usize) -> TeamSync {
        TeamSync {
            team: 0,
            start: 0,
            stride: 1,
            size: n,
        }
    }

    #[test]
    fn validate_names_the_bad_value() {
        let c = Collective {
            kind: CollKind::Reduce(ReduceOp::Xor),
            team: team(2),
            dst: SymAddr(0),
            src: SymAddr(0),
            nelems: 1,
            elem: Elem::F32,
        };
        let e = c.validate(0).unwrap_err().to_string();
        assert!(e.contains("xor") && e.contains("F32"), "{e}");
        let c = Collective {
            kind: CollKind::Broadcast { root: 2 },
            elem: Elem::U8,
            ..c
        };
        assert!(c.validate(0).unwrap_err().to_string().contains("PE_root 2"));
        let c = Collective {
            kind: CollKind::Fcollect,
            ..c
        };
        assert!(
            c.validate(5)
                .unwrap_err()
                .to_string()
                .contains("PE 5 is not a member")
        );
        let c = Collective {
            nelems: usize::MAX / 2 + 1,
            ..c
        };
        assert!(
            c.validate(0)
                .unwrap_err()
                .to_string()
                .contains("more bytes")
        );
    }

    #[test]
    fn alltoall_with_sequential_pes_moves_each_block_once() {
        // Without real barriers PEs run one after another; alltoall reads only its own src
        // and writes only others' dst, so a sequential run is exact.
        let n = 3;
        let heaps: Vec<Vec<u8>> = (0..n)
            .map(|p| {
                let mut h = vec![0u8; 12];
                for (i, b) in h[..6].iter_mut().enumerate() {
                    *b = (10 * p + i) as u8;
                }
                h
            })
            .collect();
        let heaps = RefCell::new(heaps);
        for pe in 0..n {
            let f = Fake { heaps: &heaps, pe };
            let c = Collective {
                kind: CollKind::Alltoall,
                team: team(n),
                dst: SymAddr(6),
                src: SymAddr(0),
                nelems: 2,
                elem: Elem::U8,
            };
            run(&f, &c).unwrap();
        }
        for k in 0..n {
            let h = &heaps.borrow()[k];
            for j in 0..n {
                assert_eq!(h[6 + 2 * j], (10 * j + 2 * k) as u8);
                assert_eq!(h[6 + 2 * j + 1], (10 * j + 2 * k + 1) as u8);
            }
        }
    }
}
