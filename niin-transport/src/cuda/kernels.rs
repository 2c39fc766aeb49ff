//! niin-rs's own host-side kernels: the embedded PTX module (`niin-transport/src/cuda/host_ops.ptx`)
//! and typed, checked launchers for it.
//!
//! Every kernel runs as one thread. Launch arguments are checked against the kernel's
//! parameter list ([`Kernel::params`]), and a CPU test checks that list against the
//! `.entry` declarations of the PTX, so the two sides cannot drift apart unnoticed.

use std::ffi::c_void;
use std::fmt;

use crate::ops::{AmoOp, Cmp, WaitKind};

use super::device::Device;
use super::error::{CudaError, Result};
use super::memory::{HostPinned, check_word};
use super::module::{Function, Module};
use super::stream::Stream;

/// The PTX text of niin-rs's host-side kernels, JIT-compiled by the driver at
/// [`HostKernels::load`].
pub const HOST_OPS_PTX: &str = include_str!("host_ops.ptx");

/// The longest wait deadline passed to the kernel (146 years): keeps
/// `%globaltimer + timeout` from wrapping.
const MAX_TIMEOUT_NS: u64 = 1 << 62;

/// Layout of the wait kernel's timeout record (see `niin_wait` in the PTX).
mod record {
    pub(super) const FLAG: usize = 0;
    pub(super) const INFO: usize = 4;
    pub(super) const ADDR: usize = 8;
    pub(super) const SEEN: usize = 16;
    pub(super) const WANT: usize = 24;
    pub(super) const INDEX: usize = 32;
    pub(super) const BYTES: usize = 64;
}

/// A kernel parameter's PTX type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Param {
    U32,
    U64,
}

/// A launch argument.
#[derive(Clone, Copy, Debug)]
enum Arg {
    U32(u32),
    U64(u64),
}

impl Arg {
    fn param(self) -> Param {
        match self {
            Arg::U32(_) => Param::U32,
            Arg::U64(_) => Param::U64,
        }
    }
}

/// The kernels of `host_ops.ptx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Store8,
    Store16,
    Store32,
    Store64,
    SignalAdd,
    Amo,
    Wait,
    BarrierArrive,
}

/// The most parameters any kernel takes.
const MAX_PARAMS: usize = 10;

impl Kernel {
    /// Every kernel, in the order of [`HostKernels`]'s function table.
    const ALL: [Kernel; 8] = [
        Kernel::Store8,
        Kernel::Store16,
        Kernel::Store32,
        Kernel::Store64,
        Kernel::SignalAdd,
        Kernel::Amo,
        Kernel::Wait,
        Kernel::BarrierArrive,
    ];

    /// The `.entry` name in the PTX.
    const fn name(self) -> &'static str {
        match self {
            Kernel::Store8 => "niin_store8",
            Kernel::Store16 => "niin_store16",
            Kernel::Store32 => "niin_store32",
            Kernel::Store64 => "niin_store64",
            Kernel::SignalAdd => "niin_signal_add",
            Kernel::Amo => "niin_amo",
            Kernel::Wait => "niin_wait",
            Kernel::BarrierArrive => "niin_barrier_arrive",
        }
    }

    /// The parameter types, in order, as the PTX declares them.
    const fn params(self) -> &'static [Param] {
        use Param::{U32, U64};
        match self {
            // (addr, bits)
            Kernel::Store8 | Kernel::Store16 | Kernel::Store32 | Kernel::Store64 => &[U64, U64],
            // (addr, value)
            Kernel::SignalAdd => &[U64, U64],
            // (addr, op, width, operand, compare, out)
            Kernel::Amo => &[U64, U32, U32, U64, U64, U64],
            // (addr, nelems, width, signed, cmp, value, values, status, timeout_ns,
            //  timeout_record)
            Kernel::Wait => &[U64, U64, U32, U32, U32, U64, U64, U64, U64, U64],
            // (counter, bases, flag_offset, n, sum, fp)
            Kernel::BarrierArrive => &[U64, U64, U64, U32, U64, U64],
        }
    }
}

/// The kernel's code for an atomic operation (`niin_amo`'s `op`): the position in
/// [`AmoOp::ALL`]. The one place the mapping is defined:
///
/// | code | op | code | op |
/// | --- | --- | --- | --- |
/// | 0 | Fetch | 7 | FetchInc |
/// | 1 | Set | 8 | And |
/// | 2 | Swap | 9 | FetchAnd |
/// | 3 | CompareSwap | 10 | Or |
/// | 4 | FetchAdd | 11 | FetchOr |
/// | 5 | Add | 12 | Xor |
/// | 6 | Inc | 13 | FetchXor |
pub const fn amo_code(op: AmoOp) -> u32 {
    match op {
        AmoOp::Fetch => 0,
        AmoOp::Set => 1,
        AmoOp::Swap => 2,
        AmoOp::CompareSwap => 3,
        AmoOp::FetchAdd => 4,
        AmoOp::Add => 5,
        AmoOp::Inc => 6,
        AmoOp::FetchInc => 7,
        AmoOp::And => 8,
        AmoOp::FetchAnd => 9,
        AmoOp::Or => 10,
        AmoOp::FetchOr => 11,
        AmoOp::Xor => 12,
        AmoOp::FetchXor => 13,
    }
}

/// The kernel's code for a comparison (`niin_wait`'s `cmp`): NVSHMEM's `NVSHMEM_CMP_*`
/// number (EQ 0, NE 1, GT 2, LE 3, LT 4, GE 5).
const fn cmp_code(cmp: Cmp) -> u32 {
    cmp as i32 as u32
}

/// NVSHMEM's name of comparison code `code`.
fn cmp_name(code: u32) -> &'static str {
    match code {
        0 => "NVSHMEM_CMP_EQ",
        1 => "NVSHMEM_CMP_NE",
        2 => "NVSHMEM_CMP_GT",
        3 => "NVSHMEM_CMP_LE",
        4 => "NVSHMEM_CMP_LT",
        5 => "NVSHMEM_CMP_GE",
        _ => "an unknown comparison",
    }
}

/// What a wait kernel waits for: for each of `nelems` words of `width_bytes` bytes from
/// `addr` that `status` does not exclude, until `word cmp value` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSpec {
    /// Device address of the first word (this GPU's memory, a mapped peer's, or mapped
    /// pinned host memory), aligned to `width_bytes`.
    pub addr: u64,
    /// Number of consecutive words; 0 waits for nothing.
    pub nelems: usize,
    /// Bytes per word: 2, 4 or 8.
    pub width_bytes: usize,
    /// Compare as signed (two's complement) integers.
    pub signed: bool,
    /// The comparison.
    pub cmp: Cmp,
    /// The value compared with, in the low `width_bytes` bytes (when `values` is 0).
    pub value: u64,
    /// Device address of `nelems` values of `width_bytes` bytes each (the words' type),
    /// one per word, or 0 to compare every word with `value`.
    pub values: u64,
    /// Device address of `nelems` `i32`s; word `i` is excluded where `status[i] != 0`.
    /// 0: no word is excluded.
    pub status: u64,
    /// Give up this many nanoseconds after the wait starts running on the GPU
    /// (reported by [`HostKernels::check_timeout`]); 0: never.
    pub timeout_ns: u64,
}

impl WaitSpec {
    /// A wait for one word of `kind` at `addr`.
    pub fn single(addr: u64, kind: WaitKind, cmp: Cmp, value: u64, timeout_ns: u64) -> WaitSpec {
        WaitSpec {
            addr,
            nelems: 1,
            width_bytes: kind.width.bytes(),
            signed: kind.signed,
            cmp,
            value,
            values: 0,
            status: 0,
            timeout_ns,
        }
    }

    /// Checks the spec: a width of 2, 4 or 8; aligned, non-null addresses; a word range
    /// that does not wrap the address space.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.width_bytes, 2 | 4 | 8) {
            return Err(CudaError::BadArgument {
                what: format!(
                    "wait: words of {} bytes; the wait kernel takes 2, 4 or 8",
                    self.width_bytes
                ),
            });
        }
        if self.nelems == 0 {
            return Ok(());
        }
        check_word("wait", "word", self.addr, self.width_bytes)?;
        let span = (self.nelems as u64).checked_mul(self.width_bytes as u64);
        if span.and_then(|s| self.addr.checked_add(s)).is_none() {
            return Err(CudaError::BadArgument {
                what: format!(
                    "wait: {} words of {} bytes at {:#x} wrap the address space",
                    self.nelems, self.width_bytes, self.addr
                ),
            });
        }
        if self.values != 0 {
            check_word("wait", "values", self.values, self.width_bytes)?;
        }
        if self.status != 0 {
            check_word("wait", "status", self.status, 4)?;
        }
        Ok(())
    }
}

/// The loaded host-side kernels of one device, with the pinned timeout record of its
/// waits. Load once per [`Device`] and keep it: loading JIT-compiles (or fetches from the
/// driver's cache) and loads a module.
pub struct HostKernels {
    /// Indexed by `Kernel as usize`.
    functions: Vec<Function>,
    record: HostPinned,
    module: Module,
}

impl fmt::Debug for HostKernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostKernels")
            .field("device", &self.module.device().ordinal())
            .field("kernels", &self.functions.len())
            .finish()
    }
}

impl HostKernels {
    /// Loads [`HOST_OPS_PTX`] into `device`'s primary context, looks up every kernel,
    /// and allocates the timeout record.
    pub fn load(device: &Device) -> Result<HostKernels> {
        let module = Module::load_ptx(device, "host_ops.ptx", HOST_OPS_PTX)?;
        let functions = Kernel::ALL
            .iter()
            .map(|k| module.function(k.name()))
            .collect::<Result<Vec<_>>>()?;
        let record = HostPinned::alloc_on(device, record::BYTES)?;
        Ok(HostKernels {
            functions,
            record,
            module,
        })
    }

    /// The device the kernels are loaded on.
    pub fn device(&self) -> &Device {
        self.module.device()
    }

    /// Launches `kernel` as one thread on `stream` after checking `args` against its
    /// parameter list.
    ///
    /// # Safety
    ///
    /// The addresses among `args` must be valid for what the kernel does with them until
    /// it has run.
    unsafe fn launch(&self, stream: &Stream, kernel: Kernel, args: &mut [Arg]) -> Result<()> {
        let expected = kernel.params();
        let matches =
            args.len() == expected.len() && args.iter().zip(expected).all(|(a, p)| a.param() == *p);
        if !matches || args.len() > MAX_PARAMS {
            return Err(CudaError::BadArgument {
                what: format!(
                    "internal error: kernel {} takes {expected:?}, launched with {args:?}",
                    kernel.name()
                ),
            });
        }
        let mut params = [std::ptr::null_mut::<c_void>(); MAX_PARAMS];
        for (slot, arg) in params.iter_mut().zip(args.iter_mut()) {
            *slot = match arg {
                Arg::U32(v) => (v as *mut u32).cast(),
                Arg::U64(v) => (v as *mut u64).cast(),
            };
        }
        let function = &self.functions[kernel as usize];
        // SAFETY: one pointer per parameter, each to a live value of the declared type
        // (checked above; `args` outlives the call, and the driver copies the values);
        // the caller vouches for the addresses among them.
        unsafe { function.launch((1, 1, 1), (1, 1, 1), 0, stream, &mut params[..args.len()]) }
    }

    /// Enqueues one store of the low `width_bytes` bytes (1, 2, 4 or 8) of `bits` at
    /// `addr` (`niin_store8`..`64`: a single strong system-scope store, never torn).
    ///
    /// # Safety
    ///
    /// `addr` must be a `width_bytes`-aligned word of device, mapped peer or mapped pinned
    /// host memory, valid until the store has run.
    pub unsafe fn store(
        &self,
        stream: &Stream,
        addr: u64,
        bits: u64,
        width_bytes: usize,
    ) -> Result<()> {
        let kernel = match width_bytes {
            1 => Kernel::Store8,
            2 => Kernel::Store16,
            4 => Kernel::Store32,
            8 => Kernel::Store64,
            w => {
                return Err(CudaError::BadArgument {
                    what: format!(
                        "store: a word of {w} bytes; the store kernels take 1, 2, 4 or 8"
                    ),
                });
            }
        };
        check_word("store", "destination", addr, width_bytes)?;
        // SAFETY: the caller vouches for the word.
        unsafe { self.launch(stream, kernel, &mut [Arg::U64(addr), Arg::U64(bits)]) }
    }

    /// Enqueues `*addr += value` on a `u64` signal word, atomically at system scope and as
    /// a release (`niin_signal_add`): a peer that sees the new value also sees the
    /// stream's earlier writes.
    ///
    /// # Safety
    ///
    /// `addr` must be an 8-aligned word of device or mapped peer memory, valid until the
    /// add has run.
    pub unsafe fn signal_add(&self, stream: &Stream, addr: u64, value: u64) -> Result<()> {
        check_word("signal_add", "signal", addr, 8)?;
        // SAFETY: the caller vouches for the word.
        unsafe {
            self.launch(
                stream,
                Kernel::SignalAdd,
                &mut [Arg::U64(addr), Arg::U64(value)],
            )
        }
    }

    /// Enqueues the atomic `op` on the `width_bytes`-byte (4 or 8) word at `addr`,
    /// relaxed, at system scope (`niin_amo`). For the operations that fetch
    /// ([`AmoOp::fetches`]), the old value (`width_bytes` bytes) is written to `old_out`
    /// unless it is 0; for the others `old_out` is ignored. `operand` and `compare` use
    /// their low `width_bytes` bytes.
    ///
    /// # Safety
    ///
    /// `addr` must be a `width_bytes`-aligned word of device or mapped peer memory, and
    /// `old_out` (if used) `width_bytes` aligned bytes of device or mapped pinned host
    /// memory, both valid until the operation has run.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn amo(
        &self,
        stream: &Stream,
        addr: u64,
        op: AmoOp,
        width_bytes: usize,
        operand: u64,
        compare: u64,
        old_out: u64,
    ) -> Result<()> {
        if !matches!(width_bytes, 4 | 8) {
            return Err(CudaError::BadArgument {
                what: format!("amo {op:?}: a word of {width_bytes} bytes; atomics take 4 or 8"),
            });
        }
        check_word("amo", "target", addr, width_bytes)?;
        let out = if op.fetches() { old_out } else { 0 };
        if out != 0 {
            check_word("amo", "result", out, width_bytes)?;
        }
        let mut args = [
            Arg::U64(addr),
            Arg::U32(amo_code(op)),
            Arg::U32(width_bytes as u32),
            Arg::U64(operand),
            Arg::U64(compare),
            Arg::U64(out),
        ];
        // SAFETY: the caller vouches for both words.
        unsafe { self.launch(stream, Kernel::Amo, &mut args) }
    }

    /// Enqueues one arrival at a central barrier of `n` PEs (`niin_barrier_arrive`): adds
    /// one to the `u32` count at `counter`; the arrival that completes the count sets it
    /// back to 0 and stores the verdict in the `u32` release flag at `bases[i] +
    /// flag_offset` of every member `i` (`bases`: a device array of `n` addresses). The
    /// kernel never waits; the caller enqueues the wait for its own flag (a stream
    /// wait-value, flag >= 1) and its reset after it.
    ///
    /// With `fingerprint = Some((sum, fp))` the arrival also adds `fp` to the `u64` at
    /// `sum`, and the last arriver swaps the sum back to 0: the verdict is 1 when it was
    /// `n * fp` (every member carried `fp`), 2 when not. Without, the verdict is 1. Every
    /// member of one barrier passes a sum, or none does.
    ///
    /// # Safety
    ///
    /// `counter` must be a 4-aligned word of device or mapped peer memory, `bases` `n`
    /// 8-byte device words, and every `bases[i] + flag_offset` a 4-aligned word of device
    /// or mapped peer memory, all valid until the kernel has run; every member must use
    /// the same `counter`, `n`, flags and sum; `sum`, if given, an 8-aligned word of device
    /// or mapped peer memory.
    pub unsafe fn barrier_arrive(
        &self,
        stream: &Stream,
        counter: u64,
        bases: u64,
        flag_offset: u64,
        n: usize,
        fingerprint: Option<(u64, u64)>,
    ) -> Result<()> {
        check_word("barrier_arrive", "counter", counter, 4)?;
        check_word("barrier_arrive", "bases", bases, 8)?;
        if flag_offset % 4 != 0 {
            return Err(CudaError::BadArgument {
                what: format!("barrier_arrive: flag offset {flag_offset:#x} is not 4-aligned"),
            });
        }
        let (sum, fp) = fingerprint.unwrap_or((0, 0));
        if fingerprint.is_some() {
            check_word("barrier_arrive", "sum", sum, 8)?;
        }
        let n = match u32::try_from(n) {
            Ok(n) if n >= 2 => n,
            _ => {
                return Err(CudaError::BadArgument {
                    what: format!("barrier_arrive: {n} PEs; the kernel takes 2 to 2^32 - 1"),
                });
            }
        };
        let mut args = [
            Arg::U64(counter),
            Arg::U64(bases),
            Arg::U64(flag_offset),
            Arg::U32(n),
            Arg::U64(sum),
            Arg::U64(fp),
        ];
        // SAFETY: the caller vouches for the counter, the table, the flags and the sum.
        unsafe { self.launch(stream, Kernel::BarrierArrive, &mut args) }
    }

    /// Enqueues a wait (`niin_wait`): later work on `stream` runs once every word of
    /// `spec` not excluded satisfies the comparison, or once the deadline has passed, in
    /// which case [`HostKernels::check_timeout`] reports it. The host does not wait.
    ///
    /// # Safety
    ///
    /// The words, and the `values` and `status` arrays if given, must be valid device,
    /// mapped peer or mapped pinned host memory until the wait has ended.
    pub unsafe fn wait(&self, stream: &Stream, spec: WaitSpec) -> Result<()> {
        spec.validate()?;
        if spec.nelems == 0 {
            return Ok(());
        }
        let mut args = [
            Arg::U64(spec.addr),
            Arg::U64(spec.nelems as u64),
            Arg::U32(spec.width_bytes as u32),
            Arg::U32(u32::from(spec.signed)),
            Arg::U32(cmp_code(spec.cmp)),
            Arg::U64(spec.value),
            Arg::U64(spec.values),
            Arg::U64(spec.status),
            Arg::U64(spec.timeout_ns.min(MAX_TIMEOUT_NS)),
            Arg::U64(self.record.device_ptr()),
        ];
        // SAFETY: the caller vouches for the words and arrays; the record is ours and
        // lives as long as `self`, which the caller keeps while its work is enqueued.
        unsafe { self.launch(stream, Kernel::Wait, &mut args) }
    }

    /// Reads and clears the timeout record that the wait kernel writes when it gives up:
    /// `Ok` if no wait has timed out since the last call, else
    /// [`CudaError::KernelTimeout`] naming the word, the value seen and the value waited
    /// for. Call it after synchronizing the stream of the waits.
    pub fn check_timeout(&self) -> Result<()> {
        if self.record.swap_u32(record::FLAG, 0)? == 0 {
            return Ok(());
        }
        let detail = timeout_detail(
            self.record.load_u32(record::INFO)?,
            self.record.load_u64(record::ADDR)?,
            self.record.load_u64(record::SEEN)?,
            self.record.load_u64(record::WANT)?,
            self.record.load_u64(record::INDEX)?,
        );
        Err(CudaError::KernelTimeout { op: "wait", detail })
    }
}

/// The explanation of a timeout record's fields (`info = cmp | signed << 8 | width << 16`,
/// `seen` and `want` extended to 64 bits).
fn timeout_detail(info: u32, addr: u64, seen: u64, want: u64, index: u64) -> String {
    let cmp = info & 0xff;
    let signed = (info >> 8) & 1 != 0;
    let width = info >> 16;
    let show = |v: u64| {
        if signed {
            (v as i64).to_string()
        } else {
            v.to_string()
        }
    };
    format!(
        "word {index} ({width} bytes, {}) at {addr:#x} still held {} when the deadline passed; waited for {} {}",
        if signed { "signed" } else { "unsigned" },
        show(seen),
        cmp_name(cmp),
        show(want),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Width;

    /// The `.entry` kernels of a PTX text with their parameter types, in order.
    fn ptx_entries(ptx: &str) -> Vec<(String, Vec<Param>)> {
        let code: String = ptx
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut entries = Vec::new();
        for (at, _) in code.match_indices(".entry") {
            let rest = &code[at + ".entry".len()..];
            let open = rest.find('(').expect("( after .entry");
            let close = rest.find(')').expect(") after .entry");
            let name = rest[..open].trim().to_string();
            let params = rest[open + 1..close]
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    let words: Vec<&str> = p.split_whitespace().collect();
                    assert_eq!(words[0], ".param", "{name}: {p}");
                    match words[1] {
                        ".u32" => Param::U32,
                        ".u64" => Param::U64,
                        other => panic!("{name}: parameter type {other} not used by niin-rs"),
                    }
                })
                .collect();
            entries.push((name, params));
        }
        entries
    }

    /// The labels of branch table `table` (`table: .branchtargets A, B, ...;`).
    fn branch_table(ptx: &str, table: &str) -> Vec<String> {
        let start = ptx
            .find(&format!("{table}: .branchtargets"))
            .unwrap_or_else(|| panic!("no branch table {table}"));
        let rest = &ptx[start + table.len() + ": .branchtargets".len()..];
        let end = rest.find(';').expect("; after .branchtargets");
        rest[..end]
            .split(',')
            .map(|l| l.trim().to_string())
            .collect()
    }

    #[test]
    fn ptx_declares_exactly_the_kernels_the_rust_side_launches() {
        let entries = ptx_entries(HOST_OPS_PTX);
        assert_eq!(entries.len(), Kernel::ALL.len(), "{entries:?}");
        for k in Kernel::ALL {
            let (_, params) = entries
                .iter()
                .find(|(n, _)| n == k.name())
                .unwrap_or_else(|| panic!("the PTX has no .entry {}", k.name()));
            assert_eq!(params.as_slice(), k.params(), "parameters of {}", k.name());
            assert!(params.len() <= MAX_PARAMS);
        }
        for (name, _) in &entries {
            assert!(
                Kernel::ALL.iter().any(|k| k.name() == name),
                "the PTX declares {name}, which the Rust side never launches"
            );
        }
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "Kernel::ALL indexes the function table");
        }
        assert!(HOST_OPS_PTX.contains(".version 7.0") && HOST_OPS_PTX.contains(".target sm_70"));
    }

    #[test]
    fn amo_codes_index_the_ptx_branch_tables() {
        for (i, op) in AmoOp::ALL.iter().enumerate() {
            assert_eq!(amo_code(*op) as usize, i, "{op:?}");
        }
        // The primitive each op must reach in the kernel's tables.
        let primitive = |op: AmoOp| match op {
            AmoOp::Fetch => "FETCH",
            AmoOp::Set | AmoOp::Swap => "EXCH",
            AmoOp::CompareSwap => "CAS",
            AmoOp::FetchAdd | AmoOp::Add | AmoOp::Inc | AmoOp::FetchInc => "ADD",
            AmoOp::And | AmoOp::FetchAnd => "AND",
            AmoOp::Or | AmoOp::FetchOr => "OR",
            AmoOp::Xor | AmoOp::FetchXor => "XOR",
        };
        for (table, bits) in [("amo_ops64", "64"), ("amo_ops32", "32")] {
            let labels = branch_table(HOST_OPS_PTX, table);
            assert_eq!(labels.len(), AmoOp::ALL.len(), "{table}: {labels:?}");
            for op in AmoOp::ALL {
                let want = format!("{}{bits}", primitive(op));
                assert_eq!(labels[amo_code(op) as usize], want, "{table}, {op:?}");
                assert!(HOST_OPS_PTX.contains(&format!("\n{want}:")), "label {want}");
            }
        }
        // Inc and FetchInc become adds of one; codes above the table are refused.
        for op in [AmoOp::Inc, AmoOp::FetchInc] {
            let line = format!("setp.eq.u32         %inc, %op, {};", amo_code(op));
            assert!(HOST_OPS_PTX.contains(&line), "{line}");
        }
        let last = AmoOp::ALL.len() - 1;
        assert!(HOST_OPS_PTX.contains(&format!("setp.gt.u32         %bad, %op, {last};")));
    }

    /// The wait kernel's extension: shift left by 64 - 8*width, shift right back
    /// (arithmetic for signed).
    fn kernel_extend(raw: u64, width: usize, signed: bool) -> u64 {
        let shift = 64 - 8 * width as u32;
        let up = raw << shift;
        if signed {
            ((up as i64) >> shift) as u64
        } else {
            up >> shift
        }
    }

    /// The wait kernel's comparison: base = (cmp < 2 ? eq : cmp < 4 ? gt : lt), XOR odd.
    fn kernel_holds(cmp: u32, cur: u64, want: u64, signed: bool) -> bool {
        let eq = cur == want;
        let (gt, lt) = if signed {
            ((cur as i64) > (want as i64), (cur as i64) < (want as i64))
        } else {
            (cur > want, cur < want)
        };
        let base = if cmp < 2 {
            eq
        } else if cmp < 4 {
            gt
        } else {
            lt
        };
        base ^ (cmp & 1 == 1)
    }

    #[test]
    fn wait_kernel_encoding_agrees_with_nvshmem_comparisons() {
        let samples = [
            0u64,
            1,
            2,
            0x7f,
            0x7fff,
            0x8000,
            0xffff,
            0x1_0000,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0x1_2345_6789,
            i64::MAX as u64,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        for width in [Width::W2, Width::W4, Width::W8] {
            for signed in [false, true] {
                let kind = WaitKind { width, signed };
                let w = width.bytes();
                for &a in &samples {
                    let ext = kernel_extend(a, w, signed);
                    let widened = if signed {
                        ext as i64 as i128
                    } else {
                        ext as i128
                    };
                    assert_eq!(widened, kind.widen(a), "extend {a:#x} {kind:?}");
                    for &b in &samples {
                        let (x, y) = (kernel_extend(a, w, signed), kernel_extend(b, w, signed));
                        for cmp in Cmp::ALL {
                            assert_eq!(
                                kernel_holds(cmp_code(cmp), x, y, signed),
                                kind.holds(a, cmp, b),
                                "{a:#x} {cmp:?} {b:#x} as {kind:?}"
                            );
                        }
                    }
                }
            }
        }
        for (i, cmp) in Cmp::ALL.iter().enumerate() {
            assert_eq!(cmp_code(*cmp), i as u32);
        }
    }

    #[test]
    fn wait_specs_are_validated() {
        let kind = WaitKind {
            width: Width::W4,
            signed: true,
        };
        let ok = WaitSpec::single(0x1000, kind, Cmp::Ge, 5, 0);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!((ok.nelems, ok.width_bytes, ok.signed), (1, 4, true));
        let bad = |s: WaitSpec| matches!(s.validate(), Err(CudaError::BadArgument { .. }));
        assert!(bad(WaitSpec {
            width_bytes: 1,
            ..ok
        }));
        assert!(bad(WaitSpec {
            width_bytes: 16,
            ..ok
        }));
        assert!(bad(WaitSpec { addr: 0x1002, ..ok }));
        assert!(bad(WaitSpec { addr: 0, ..ok }));
        // The values array has the words' width: 4-aligned is fine for 4-byte words, not
        // for 8-byte ones.
        assert_eq!(
            WaitSpec {
                values: 0x2004,
                ..ok
            }
            .validate(),
            Ok(())
        );
        assert!(bad(WaitSpec {
            values: 0x2002,
            ..ok
        }));
        assert!(bad(WaitSpec {
            values: 0x2004,
            width_bytes: 8,
            ..ok
        }));
        assert!(bad(WaitSpec {
            status: 0x2002,
            ..ok
        }));
        assert!(bad(WaitSpec {
            nelems: usize::MAX,
            ..ok
        }));
        // Nothing to wait for: even a null address is fine.
        assert_eq!(
            WaitSpec {
                nelems: 0,
                addr: 0,
                ..ok
            }
            .validate(),
            Ok(())
        );
        assert_eq!(
            WaitSpec {
                values: 0x2008,
                status: 0x3004,
                nelems: 4,
                ..ok
            }
            .validate(),
            Ok(())
        );
    }

    #[test]
    fn timeout_records_explain_themselves() {
        let info = 5 | 1 << 8 | 4 << 16;
        let d = timeout_detail(info, 0x7f00_0010, u64::MAX, 3, 2);
        assert_eq!(
            d,
            "word 2 (4 bytes, signed) at 0x7f000010 still held -1 when the deadline passed; waited for NVSHMEM_CMP_GE 3"
        );
        let d = timeout_detail(1 | 8 << 16, 0x10, 7, 7, 0);
        assert!(d.contains("unsigned") && d.contains("held 7") && d.contains("NVSHMEM_CMP_NE 7"));
    }

    /// Runs `ptxas` (the CUDA assembler) on the embedded PTX when `NIIN_PTXAS` names one,
    /// for each architecture in `NIIN_PTXAS_ARCHS` (default `sm_90`; ptxas 12.x also
    /// takes `sm_70`, 13.x no longer does), with warnings as errors.
    #[test]
    fn ptxas_accepts_the_embedded_ptx() {
        let Some(ptxas) = std::env::var_os("NIIN_PTXAS") else {
            println!("skipped: NIIN_PTXAS not set");
            return;
        };
        let archs = std::env::var("NIIN_PTXAS_ARCHS").unwrap_or_else(|_| "sm_90".to_string());
        let path = std::env::temp_dir().join(format!("niin-host-ops-{}.ptx", std::process::id()));
        std::fs::write(&path, HOST_OPS_PTX).expect("write the PTX to a temporary file");
        for arch in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let out = std::process::Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("--warning-as-error")
                .arg(&path)
                .arg("-o")
                .arg("/dev/null")
                .output()
                .expect("run NIIN_PTXAS");
            assert!(
                out.status.success(),
                "ptxas -arch={arch} rejected host_ops.ptx:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            println!("ptxas -arch={arch}: ok");
        }
        let _ = std::fs::remove_file(&path);
    }

    /// On a GPU machine: every kernel against the CPU model of its operation. Here:
    /// loading fails cleanly.
    #[test]
    fn kernels_on_a_gpu_or_no_driver_here() {
        // SAFETY: only tries to load the driver library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            assert_eq!(
                Device::open(0)
                    .and_then(|d| HostKernels::load(&d))
                    .unwrap_err(),
                CudaError::NoDriver
            );
            return;
        }
        let d = Device::open(0).unwrap();
        d.make_current().unwrap();
        let t = std::time::Instant::now();
        let k = HostKernels::load(&d).unwrap();
        println!("HostKernels::load: {:?}", t.elapsed());
        let s = Stream::create_on(&d).unwrap();
        // The kernels work on device memory; the host stages it through pinned memory.
        let dev = super::super::DeviceBuffer::alloc_on(&d, 4096).unwrap();
        let host = HostPinned::alloc_on(&d, 4096).unwrap();
        let base = dev.ptr();
        let upload = || {
            // SAFETY: both buffers are 4096 bytes, alive until the sync.
            unsafe { super::super::memcpy_async(base, host.device_ptr(), 4096, &s) }.unwrap();
            s.synchronize().unwrap();
        };
        let download = || {
            // SAFETY: as above.
            unsafe { super::super::memcpy_async(host.device_ptr(), base, 4096, &s) }.unwrap();
            s.synchronize().unwrap();
        };

        // Stores of every width, and signal adds.
        upload();
        for (off, width) in [(0u64, 1usize), (2, 2), (4, 4), (8, 8)] {
            // SAFETY: a word inside `dev`, alive until the synchronization.
            unsafe { k.store(&s, base + off, 0x1122_3344_5566_7788, width) }.unwrap();
        }
        for value in [5, 7] {
            // SAFETY: as above.
            unsafe { k.signal_add(&s, base + 16, value) }.unwrap();
        }
        download();
        let mut bytes = [0u8; 24];
        host.read_bytes(0, &mut bytes).unwrap();
        assert_eq!(bytes[0], 0x88);
        assert_eq!(bytes[1], 0);
        assert_eq!(u16::from_le_bytes([bytes[2], bytes[3]]), 0x7788);
        assert_eq!(host.load_u32(4).unwrap(), 0x5566_7788);
        assert_eq!(host.load_u64(8).unwrap(), 0x1122_3344_5566_7788);
        assert_eq!(host.load_u64(16).unwrap(), 12);

        // Every AMO at both widths, against `AmoOp::apply`; the old value goes once to
        // device memory and once straight to pinned host memory.
        for width in [Width::W4, Width::W8] {
            for (i, op) in AmoOp::ALL.iter().enumerate() {
                let (word, out, pinned_out) = (256 + i * 16, 1024 + i * 16, 2048 + i * 16);
                let old = 0xF0F0_F0F0_F0F0_F0F0u64 & width.mask();
                let (operand, compare) = (0x0FF0_0FF0_1234_5678u64, old);
                host.store_u64(word, old).unwrap();
                host.store_u64(out, 0).unwrap();
                host.store_u64(pinned_out, 0).unwrap();
                upload();
                let (target, result) = (base + word as u64, base + out as u64);
                let w = width.bytes();
                // SAFETY: both words lie inside `dev`, alive until the synchronization.
                unsafe { k.amo(&s, target, *op, w, operand, compare, result) }.unwrap();
                // A fetch whose result is dropped (out = 0) must not write anywhere.
                // SAFETY: as above.
                unsafe { k.amo(&s, target + 512, AmoOp::Fetch, w, 0, 0, 0) }.unwrap();
                download();
                let now = host.load_u64(word).unwrap() & width.mask();
                assert_eq!(
                    now,
                    op.apply(old, operand, compare, width),
                    "{op:?} {width:?}"
                );
                let fetched = host.load_u64(out).unwrap();
                assert_eq!(
                    fetched,
                    if op.fetches() { old } else { 0 },
                    "{op:?} {width:?}"
                );
                // The same operation, result straight into mapped pinned memory.
                host.store_u64(word, old).unwrap();
                upload();
                let to_host = host.device_ptr() + pinned_out as u64;
                // SAFETY: as above.
                unsafe {
                    k.amo(
                        &s,
                        base + word as u64,
                        *op,
                        width.bytes(),
                        operand,
                        compare,
                        to_host,
                    )
                }
                .unwrap();
                s.synchronize().unwrap();
                let fetched = host.load_u64(pinned_out).unwrap();
                assert_eq!(
                    fetched,
                    if op.fetches() { old } else { 0 },
                    "{op:?} {width:?} pinned"
                );
            }
        }

        // A wait that holds at once: signed 2-byte words, per-word values, a status array.
        let words: [i16; 3] = [-3, 4, 100];
        for (i, w) in words.iter().enumerate() {
            host.write_bytes(3072 + 2 * i, &w.to_le_bytes()).unwrap();
        }
        let values: [i64; 3] = [-3, 3, 1000];
        for (i, v) in values.iter().enumerate() {
            host.store_u64(3200 + 8 * i, *v as u64).unwrap();
        }
        host.write_bytes(3328, &[0; 12]).unwrap();
        host.store_u32(3328 + 8, 1).unwrap(); // excludes word 2 (100 >= 1000 never holds)
        host.store_u64(3456, 1).unwrap();
        upload();
        let spec = WaitSpec {
            addr: base + 3072,
            nelems: 3,
            width_bytes: 2,
            signed: true,
            cmp: Cmp::Ge,
            value: 0,
            values: base + 3200,
            status: base + 3328,
            timeout_ns: 5_000_000_000,
        };
        // SAFETY: the words and arrays lie inside `dev`.
        unsafe { k.wait(&s, spec) }.unwrap();
        s.synchronize().unwrap();
        k.check_timeout().unwrap();

        // A wait that never holds gives up at its deadline, and says so once.
        let never = WaitSpec::single(base + 3456, WaitKind::SIGNAL, Cmp::Eq, 2, 20_000_000);
        let started = std::time::Instant::now();
        // SAFETY: the word lies inside `dev`.
        unsafe { k.wait(&s, never) }.unwrap();
        s.synchronize().unwrap();
        assert!(started.elapsed() >= std::time::Duration::from_millis(20));
        let e = k.check_timeout().unwrap_err();
        let t = std::time::Instant::now();
        for _ in 0..1000 {
            // SAFETY: a word inside `dev`, alive until the synchronization.
            unsafe { k.signal_add(&s, base + 16, 1) }.unwrap();
        }
        s.synchronize().unwrap();
        println!("1000 signal_add launches + sync: {:?}", t.elapsed());
        assert!(
            matches!(&e, CudaError::KernelTimeout { detail, .. }
                if detail.contains("held 1") && detail.contains("NVSHMEM_CMP_EQ 2")),
            "{e}"
        );
        k.check_timeout().unwrap();
    }
}
