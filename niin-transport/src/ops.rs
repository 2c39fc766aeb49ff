//! The vocabulary of transport operations: symmetric addresses, widths, comparisons,
//! signal and atomic operations, strided shapes, and where an operation is ordered.
//!
//! Numeric values of [`Cmp`] and [`SignalOp`] are NVSHMEM's (`NVSHMEM_CMP_*`,
//! `NVSHMEM_SIGNAL_*`), so the C ABI converts them with [`Cmp::from_raw`] and
//! [`SignalOp::from_raw`] and nothing else.

use std::fmt;

use crate::error::TransportError;

/// A byte offset into the symmetric heap. The same offset names the same object on
/// every PE; that is what makes the heap symmetric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SymAddr(pub u64);

impl SymAddr {
    /// The address `bytes` further on, or `None` on overflow.
    pub fn checked_add(self, bytes: u64) -> Option<SymAddr> {
        self.0.checked_add(bytes).map(SymAddr)
    }

    /// Checks that `len` bytes from here lie inside a heap of `heap_size` bytes (every
    /// transport's range rule, overflow included).
    pub fn check_range(self, len: u64, heap_size: u64) -> Result<(), TransportError> {
        match self.0.checked_add(len) {
            Some(end) if end <= heap_size => Ok(()),
            _ => Err(TransportError::OutOfHeap {
                offset: self.0,
                len,
                heap_size,
            }),
        }
    }

    /// Checks that the address is a multiple of `align` bytes.
    pub fn check_aligned(self, align: usize) -> Result<(), TransportError> {
        if self.0 % align as u64 == 0 {
            Ok(())
        } else {
            Err(TransportError::Misaligned {
                offset: self.0,
                align,
            })
        }
    }
}

impl fmt::Display for SymAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "heap+{:#x}", self.0)
    }
}

/// Width in bytes of a scalar, atomic or waited-on word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 1 byte.
    W1,
    /// 2 bytes.
    W2,
    /// 4 bytes.
    W4,
    /// 8 bytes.
    W8,
}

impl Width {
    /// Number of bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W1 => 1,
            Width::W2 => 2,
            Width::W4 => 4,
            Width::W8 => 8,
        }
    }

    /// The width of a type of `bytes` bytes, if it is 1, 2, 4 or 8.
    pub const fn from_bytes(bytes: usize) -> Option<Width> {
        match bytes {
            1 => Some(Width::W1),
            2 => Some(Width::W2),
            4 => Some(Width::W4),
            8 => Some(Width::W8),
            _ => None,
        }
    }

    /// Checks that an atomic of this width exists (NVSHMEM's AMOs are 4 or 8 bytes).
    pub fn check_amo(self, op: &'static str) -> Result<(), TransportError> {
        match self {
            Width::W4 | Width::W8 => Ok(()),
            w => Err(TransportError::BadWidth {
                op,
                bytes: w.bytes(),
            }),
        }
    }

    /// Mask of the low `bytes()*8` bits.
    pub const fn mask(self) -> u64 {
        match self {
            Width::W8 => u64::MAX,
            w => (1u64 << (w.bytes() * 8)) - 1,
        }
    }
}

/// A scalar value of 1–8 bytes, carried in the low bits of `bits` (little-endian order
/// in memory, as on every target niin-rs runs on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scalar {
    /// The value's bits, zero-extended.
    pub bits: u64,
    /// How many bytes of `bits` are stored.
    pub width: Width,
}

/// The arrays of a stream-ordered `wait_until_all` that NVSHMEM's `_on_stream` forms read
/// where they lie when the stream reaches the wait, not at the call
/// ([`crate::Transport::wait_until_all_deferred`]): addresses in this process (device
/// memory, or memory the device can read, on a GPU transport; host memory on the mock), 0
/// where absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeferredWait {
    /// `nelems` `i32`s: word `i` is skipped where `status[i]` is non-zero; 0: none skipped.
    pub status: u64,
    /// `nelems` values of the words' type, one per word; 0: every word with `value`.
    pub values: u64,
    /// The value of every word when `values` is 0.
    pub value: u64,
}

impl DeferredWait {
    /// NVSHMEM's name of the wait these arrays make, for errors: `wait_until_all`, or
    /// `wait_until_all_vector` with per-word values.
    pub fn op(&self) -> &'static str {
        if self.values == 0 {
            "wait_until_all"
        } else {
            "wait_until_all_vector"
        }
    }
}

/// The interpretation of a waited-on word: its width and whether it is signed.
/// NVSHMEM's wait types are integers of 2, 4 or 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitKind {
    /// Width of the word.
    pub width: Width,
    /// Compare as a signed (two's complement) integer.
    pub signed: bool,
}

impl WaitKind {
    /// `NVSHMEMX`'s signal words: `uint64_t`.
    pub const SIGNAL: WaitKind = WaitKind {
        width: Width::W8,
        signed: false,
    };

    /// Sign- or zero-extends the low bits of `raw` into an `i128` for comparison.
    pub fn widen(self, raw: u64) -> i128 {
        let bits = self.width.bytes() * 8;
        let raw = raw & self.width.mask();
        if self.signed && bits < 64 {
            let shift = 64 - bits;
            (((raw << shift) as i64) >> shift) as i128
        } else if self.signed {
            raw as i64 as i128
        } else {
            raw as i128
        }
    }

    /// Whether `current cmp value` holds, both interpreted as this kind.
    pub fn holds(self, current: u64, cmp: Cmp, value: u64) -> bool {
        cmp.holds(self.widen(current), self.widen(value))
    }
}

/// NVSHMEM's point-to-point comparison operators (`NVSHMEM_CMP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Cmp {
    /// `NVSHMEM_CMP_EQ` (0): equal.
    Eq = 0,
    /// `NVSHMEM_CMP_NE` (1): not equal.
    Ne = 1,
    /// `NVSHMEM_CMP_GT` (2): greater than.
    Gt = 2,
    /// `NVSHMEM_CMP_LE` (3): less than or equal.
    Le = 3,
    /// `NVSHMEM_CMP_LT` (4): less than.
    Lt = 4,
    /// `NVSHMEM_CMP_GE` (5): greater than or equal.
    Ge = 5,
}

impl Cmp {
    /// All six comparisons, in NVSHMEM's numeric order.
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge];

    /// Converts NVSHMEM's numeric value.
    pub fn from_raw(raw: i32) -> Result<Cmp, TransportError> {
        Cmp::ALL
            .get(usize::try_from(raw).unwrap_or(usize::MAX))
            .copied()
            .ok_or(TransportError::BadComparison { raw })
    }

    /// Whether `current <cmp> value`.
    pub fn holds<T: PartialOrd>(self, current: T, value: T) -> bool {
        match self {
            Cmp::Eq => current == value,
            Cmp::Ne => current != value,
            Cmp::Gt => current > value,
            Cmp::Le => current <= value,
            Cmp::Lt => current < value,
            Cmp::Ge => current >= value,
        }
    }
}

/// NVSHMEM's signal operators (`NVSHMEM_SIGNAL_SET` = 9, `NVSHMEM_SIGNAL_ADD` = 10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum SignalOp {
    /// Store the value into the signal word.
    Set = 9,
    /// Atomically add the value to the signal word.
    Add = 10,
}

impl SignalOp {
    /// Converts NVSHMEM's numeric value.
    pub fn from_raw(raw: i32) -> Result<SignalOp, TransportError> {
        match raw {
            9 => Ok(SignalOp::Set),
            10 => Ok(SignalOp::Add),
            _ => Err(TransportError::BadSignalOp { raw }),
        }
    }
}

/// A remote atomic memory operation. Operands travel as raw bits of the AMO type's
/// width; two's-complement arithmetic makes add, swap, compare-swap and the bitwise
/// operations sign-agnostic, so the transport needs only the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmoOp {
    /// Read the value (`atomic_fetch`).
    Fetch,
    /// Store `operand` (`atomic_set`).
    Set,
    /// Store `operand`, return the old value (`atomic_swap`).
    Swap,
    /// Store `operand` if the value equals `compare`; return the old value.
    CompareSwap,
    /// Add `operand`, return the old value.
    FetchAdd,
    /// Add `operand`.
    Add,
    /// Add one.
    Inc,
    /// Add one, return the old value.
    FetchInc,
    /// Bitwise and with `operand`.
    And,
    /// Bitwise and with `operand`, return the old value.
    FetchAnd,
    /// Bitwise or with `operand`.
    Or,
    /// Bitwise or with `operand`, return the old value.
    FetchOr,
    /// Bitwise xor with `operand`.
    Xor,
    /// Bitwise xor with `operand`, return the old value.
    FetchXor,
}

impl AmoOp {
    /// Every operation.
    pub const ALL: [AmoOp; 14] = [
        AmoOp::Fetch,
        AmoOp::Set,
        AmoOp::Swap,
        AmoOp::CompareSwap,
        AmoOp::FetchAdd,
        AmoOp::Add,
        AmoOp::Inc,
        AmoOp::FetchInc,
        AmoOp::And,
        AmoOp::FetchAnd,
        AmoOp::Or,
        AmoOp::FetchOr,
        AmoOp::Xor,
        AmoOp::FetchXor,
    ];

    /// Whether the operation returns the previous value.
    pub const fn fetches(self) -> bool {
        matches!(
            self,
            AmoOp::Fetch
                | AmoOp::Swap
                | AmoOp::CompareSwap
                | AmoOp::FetchAdd
                | AmoOp::FetchInc
                | AmoOp::FetchAnd
                | AmoOp::FetchOr
                | AmoOp::FetchXor
        )
    }

    /// Whether the operation is one of NVSHMEM's bitwise AMOs (and/or/xor).
    pub const fn is_bitwise(self) -> bool {
        matches!(
            self,
            AmoOp::And
                | AmoOp::FetchAnd
                | AmoOp::Or
                | AmoOp::FetchOr
                | AmoOp::Xor
                | AmoOp::FetchXor
        )
    }

    /// The new value of a word holding `old` (all values masked to `width`).
    pub fn apply(self, old: u64, operand: u64, compare: u64, width: Width) -> u64 {
        let m = width.mask();
        let (old, operand, compare) = (old & m, operand & m, compare & m);
        let new = match self {
            AmoOp::Fetch => old,
            AmoOp::Set | AmoOp::Swap => operand,
            AmoOp::CompareSwap => {
                if old == compare {
                    operand
                } else {
                    old
                }
            }
            AmoOp::FetchAdd | AmoOp::Add => old.wrapping_add(operand),
            AmoOp::Inc | AmoOp::FetchInc => old.wrapping_add(1),
            AmoOp::And | AmoOp::FetchAnd => old & operand,
            AmoOp::Or | AmoOp::FetchOr => old | operand,
            AmoOp::Xor | AmoOp::FetchXor => old ^ operand,
        };
        new & m
    }
}

/// The shape of a strided transfer (`iput`/`iget`): `nelems` elements of `elem_size`
/// bytes; element `i` is at `i * dst_stride` elements of the destination and
/// `i * src_stride` elements of the source. Strides are in elements, as in NVSHMEM,
/// and must be at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strided {
    /// Bytes per element (1, 2, 4, 8 or 16).
    pub elem_size: usize,
    /// Number of elements.
    pub nelems: usize,
    /// Destination stride in elements.
    pub dst_stride: usize,
    /// Source stride in elements.
    pub src_stride: usize,
}

impl Strided {
    /// Bytes spanned on the side with `stride`: from the first byte of element 0 to
    /// the last byte of element `nelems - 1`; `None` on overflow; 0 for no elements.
    pub fn span(&self, stride: usize) -> Option<usize> {
        if self.nelems == 0 {
            return Some(0);
        }
        (self.nelems - 1)
            .checked_mul(stride)?
            .checked_mul(self.elem_size)?
            .checked_add(self.elem_size)
    }
}

/// An opaque stream handle. For the mock it names an asynchronous in-order queue
/// (a worker thread); for the NCCL transports it is the `CUstream` value. Handle 0 is
/// the default stream, which every transport provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StreamHandle(pub u64);

impl StreamHandle {
    /// The default stream (`cudaStream_t` 0).
    pub const DEFAULT: StreamHandle = StreamHandle(0);
}

/// Where an operation is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Done by the calling thread before the call returns (NVSHMEM's blocking host
    /// calls: the source may be reused, the data is delivered).
    Now,
    /// Enqueued on the stream: runs after everything enqueued on it before, and the
    /// call returns without waiting (NVSHMEM's `*_on_stream`).
    Stream(StreamHandle),
}

/// A team as a barrier needs it: its handle (slot) and its members in world PE
/// numbers (member `i` is world PE `start + i * stride`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TeamSync {
    /// The team's handle; teams of disjoint PE sets may share one.
    pub team: i32,
    /// World PE of the team's PE 0.
    pub start: usize,
    /// World-PE distance between consecutive team PEs (at least 1).
    pub stride: usize,
    /// Number of team PEs (at least 1).
    pub size: usize,
}

impl TeamSync {
    /// World PE of team PE `i`.
    pub fn world_pe(&self, i: usize) -> usize {
        self.start + i * self.stride
    }

    /// Whether the team is every PE of a world of `n_pes` (the world's members, whatever
    /// its handle).
    pub fn is_world(&self, n_pes: usize) -> bool {
        self.start == 0 && self.stride == 1 && self.size == n_pes
    }

    /// Team PE of world PE `pe`, if it is a member.
    pub fn team_pe(&self, pe: usize) -> Option<usize> {
        let rel = pe.checked_sub(self.start)?;
        (rel % self.stride == 0 && rel / self.stride < self.size).then_some(rel / self.stride)
    }
}

/// One PE's part of a team split, as [`Transport::team_split`](crate::Transport::team_split)
/// is told it: the parent team (every member of which takes part) and the new team this PE
/// belongs to, if any. One split makes disjoint teams (one for `split_strided`, the rows or
/// the columns of `split_2d`), so a new team is named by its first member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeamSplit {
    /// The team being split; this PE is a member.
    pub parent: TeamSync,
    /// This PE's new team, `None` when the split leaves it out.
    pub team: Option<TeamSync>,
}

impl TeamSplit {
    /// The color of `ncclCommSplit` for this PE: the world PE of its new team's first
    /// member, which every member of that team passes and no other team of the split
    /// shares (they are disjoint); `None` (`NCCL_SPLIT_NOCOLOR`) when it joins none.
    pub fn color(&self) -> Option<i32> {
        self.team
            .map(|t| i32::try_from(t.start).expect("a PE number fits an i32"))
    }

    /// The key of `ncclCommSplit` for world PE `pe`: its number in its new team (so the
    /// new communicator's ranks are the team's numbers), 0 when it joins none.
    pub fn key(&self, pe: usize) -> i32 {
        self.team
            .and_then(|t| t.team_pe(pe))
            .map_or(0, |k| i32::try_from(k).expect("a team size fits an i32"))
    }

    /// What `ncclCommSplit` makes of every PE's part of one split (`parts[pe]`): the world
    /// PEs of the communicator of `color`, in rank order (ordered by key, ties by PE). A
    /// model of NCCL's grouping, for checking colors and keys without NCCL.
    pub fn communicator(parts: &[TeamSplit], color: i32) -> Vec<usize> {
        let mut group: Vec<(i32, usize)> = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.color() == Some(color))
            .map(|(pe, p)| (p.key(pe), pe))
            .collect();
        group.sort();
        group.into_iter().map(|(_, pe)| pe).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NCCL does with the colors and keys of a split: the ranks of one color, ordered
    /// by key. Checks that this gives back each PE's team, in team order.
    #[test]
    fn split_colors_and_keys_rebuild_the_teams() {
        let world = TeamSync {
            team: 0,
            start: 0,
            stride: 1,
            size: 12,
        };
        // split_2d of the world with xrange 5: rows {0..4}, {5..9}, {10, 11}; columns j, j+5, j+10.
        let row = |pe: usize| TeamSync {
            team: 1,
            start: pe / 5 * 5,
            stride: 1,
            size: if pe >= 10 { 2 } else { 5 },
        };
        let column = |pe: usize| TeamSync {
            team: 2,
            start: pe % 5,
            stride: 5,
            size: if pe % 5 < 2 { 3 } else { 2 },
        };
        // split_strided of the world: PEs 1, 4, 7, 10.
        let strided = |pe: usize| {
            let t = TeamSync {
                team: 3,
                start: 1,
                stride: 3,
                size: 4,
            };
            t.team_pe(pe).map(|_| t)
        };
        let splits: [&dyn Fn(usize) -> Option<TeamSync>; 3] =
            [&|pe| Some(row(pe)), &|pe| Some(column(pe)), &strided];
        for team_of in splits {
            let parts: Vec<TeamSplit> = (0..world.size)
                .map(|pe| TeamSplit {
                    parent: world,
                    team: team_of(pe),
                })
                .collect();
            for (pe, part) in parts.iter().enumerate() {
                let Some(color) = part.color() else {
                    assert!(team_of(pe).is_none());
                    continue;
                };
                assert!(color >= 0);
                let members = TeamSplit::communicator(&parts, color);
                let t = part.team.unwrap();
                let expected: Vec<usize> = (0..t.size).map(|i| t.world_pe(i)).collect();
                assert_eq!(members, expected, "PE {pe}'s communicator is its team");
                assert_eq!(part.key(pe) as usize, t.team_pe(pe).unwrap());
            }
        }
    }

    #[test]
    fn cmp_numbers_are_nvshmems() {
        for (i, c) in Cmp::ALL.iter().enumerate() {
            assert_eq!(*c as i32, i as i32);
            assert_eq!(Cmp::from_raw(i as i32).unwrap(), *c);
        }
        assert!(matches!(
            Cmp::from_raw(6),
            Err(TransportError::BadComparison { raw: 6 })
        ));
        assert!(Cmp::from_raw(-1).is_err());
    }

    #[test]
    fn signal_op_numbers_are_nvshmems() {
        assert_eq!(SignalOp::from_raw(9).unwrap(), SignalOp::Set);
        assert_eq!(SignalOp::from_raw(10).unwrap(), SignalOp::Add);
        assert!(matches!(
            SignalOp::from_raw(3),
            Err(TransportError::BadSignalOp { raw: 3 })
        ));
    }

    #[test]
    fn wait_kind_compares_signed_and_unsigned() {
        let s16 = WaitKind {
            width: Width::W2,
            signed: true,
        };
        let u16 = WaitKind {
            width: Width::W2,
            signed: false,
        };
        // 0xFFFF is -1 as i16 and 65535 as u16.
        assert!(s16.holds(0xFFFF, Cmp::Lt, 0));
        assert!(u16.holds(0xFFFF, Cmp::Gt, 0));
        let s64 = WaitKind {
            width: Width::W8,
            signed: true,
        };
        assert!(s64.holds(u64::MAX, Cmp::Lt, 1));
        assert!(WaitKind::SIGNAL.holds(u64::MAX, Cmp::Gt, 1));
    }

    #[test]
    fn amo_apply_masks_to_width() {
        assert_eq!(AmoOp::FetchAdd.apply(u32::MAX as u64, 1, 0, Width::W4), 0);
        assert_eq!(AmoOp::CompareSwap.apply(5, 9, 5, Width::W8), 9);
        assert_eq!(AmoOp::CompareSwap.apply(5, 9, 4, Width::W8), 5);
        assert_eq!(AmoOp::Xor.apply(0b1100, 0b1010, 0, Width::W4), 0b0110);
        assert!(AmoOp::FetchXor.fetches() && !AmoOp::Xor.fetches());
        assert!(AmoOp::And.is_bitwise() && !AmoOp::Add.is_bitwise());
    }

    #[test]
    fn strided_span() {
        let s = Strided {
            elem_size: 4,
            nelems: 3,
            dst_stride: 2,
            src_stride: 1,
        };
        assert_eq!(s.span(s.dst_stride), Some(20));
        assert_eq!(s.span(s.src_stride), Some(12));
        let empty = Strided { nelems: 0, ..s };
        assert_eq!(empty.span(5), Some(0));
        let huge = Strided {
            nelems: usize::MAX,
            ..s
        };
        assert_eq!(huge.span(2), None);
    }

    #[test]
    fn team_sync_maps_both_ways() {
        let t = TeamSync {
            team: 7,
            start: 1,
            stride: 3,
            size: 3,
        };
        assert_eq!(t.world_pe(2), 7);
        assert_eq!(t.team_pe(4), Some(1));
        assert_eq!(t.team_pe(5), None);
        assert_eq!(t.team_pe(10), None);
        assert_eq!(t.team_pe(0), None);
    }
}
