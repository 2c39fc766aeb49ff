//! The reduction kernels of host-initiated collectives on GPU worlds: PTX generated here,
//! one kernel per element type and operator, JIT-compiled by the driver when a PE runs
//! its first reduction ([`CollKernels::load`]).
//!
//! Generated, not hand-written like `host_ops.ptx`: the 12 element types × 7 operators
//! (less the bitwise ones of the 4 floating types: 72 kernels) differ only in a load, a
//! combine and a store, which [`ElemPtx`] and [`combine_ptx`] spell once each.
//!
//! Each kernel reduces `count` elements over the members of a team, in team order, and
//! stores the result into one or every member's destination:
//!
//! ```text
//! niin_reduce_<elem>_<op>(u64 bases, u32 start, u32 stride, u32 size,
//!                         u64 src, u64 dst, u64 count, u32 push, u32 me)
//!   for each element i < count (grid-stride):
//!     acc = load(bases[start] + src + i·w)
//!     for j in 1..size: acc = acc ∘ load(bases[start + j·stride] + src + i·w)
//!     push != 0: store acc at bases[start + j·stride] + dst + i·w for every j < size
//!     push == 0: store acc at bases[me] + dst + i·w
//! ```
//!
//! `bases` is a device array of every PE's heap address in this process (0 where a PE is
//! not an LSA peer; the host checks every member first), `src` and `dst` heap offsets.
//! The values are those of [`crate::coll::combine`] bit for bit: integers wrap, floating
//! sums and products round once, `min`/`max` are `b < a ? b : a` / `b > a ? b : a` (a NaN in
//! `a` stays), and 16-bit floats are combined in f32 and rounded to nearest even.
//!
//! Loads and stores are weak and generic: the collective's barriers order them (a
//! system-scope release before and acquire after, `lsa/coll.rs`). Requires sm_80 and PTX
//! ISA 7.0 (`cvt.rn.bf16.f32`); an older GPU gets the driver's load error when the first
//! reduction runs.

use std::ffi::c_void;
use std::fmt::Write as _;

use crate::coll::{Elem, ReduceOp};

use super::device::Device;
use super::error::{CudaError, Result};
use super::module::{Function, Module};
use super::stream::Stream;

/// Threads per block of a reduction launch.
const REDUCE_THREADS: u32 = 256;

/// The most blocks of a reduction launch (each thread strides through the rest).
const REDUCE_MAX_BLOCKS: u32 = 1024;

/// How one element type is loaded, held, combined and stored in PTX.
struct ElemPtx {
    /// Name in the kernel's name (`i32`).
    name: &'static str,
    /// Bytes per element.
    size: u32,
    /// The accumulator's register type (`.s16` for 8-bit integers: PTX has no 8-bit
    /// arithmetic).
    reg: &'static str,
    /// The load's type (`s8`: sign-extended into the 16-bit register).
    ld: &'static str,
    /// The store's type.
    st: &'static str,
    /// The type suffix of integer arithmetic and comparisons (`s16`), or `f32` / `f64`.
    arith: &'static str,
    /// 16-bit floats: `f16` or `bf16` (combined in f32).
    half: Option<&'static str>,
}

const fn elem_ptx(e: Elem) -> ElemPtx {
    let (name, size, reg, ld, st, arith, half) = match e {
        Elem::I8 => ("i8", 1, ".s16", "s8", "u8", "s16", None),
        Elem::U8 => ("u8", 1, ".u16", "u8", "u8", "u16", None),
        Elem::I16 => ("i16", 2, ".s16", "s16", "u16", "s16", None),
        Elem::U16 => ("u16", 2, ".u16", "u16", "u16", "u16", None),
        Elem::I32 => ("i32", 4, ".s32", "s32", "u32", "s32", None),
        Elem::U32 => ("u32", 4, ".u32", "u32", "u32", "u32", None),
        Elem::I64 => ("i64", 8, ".s64", "s64", "u64", "s64", None),
        Elem::U64 => ("u64", 8, ".u64", "u64", "u64", "u64", None),
        Elem::F32 => ("f32", 4, ".f32", "f32", "f32", "f32", None),
        Elem::F64 => ("f64", 8, ".f64", "f64", "f64", "f64", None),
        Elem::F16 => ("f16", 2, ".b16", "b16", "b16", "f32", Some("f16")),
        Elem::Bf16 => ("bf16", 2, ".b16", "b16", "b16", "f32", Some("bf16")),
    };
    ElemPtx {
        name,
        size,
        reg,
        ld,
        st,
        arith,
        half,
    }
}

/// The bitwise type of an integer suffix (`s16` → `b16`).
fn bits_of(arith: &str) -> String {
    format!("b{}", &arith[1..])
}

/// PTX that sets `%a = %a ∘ %b` for element type `e` (16-bit floats: `%fa`, `%fb` hold the
/// f32 values of `%a`, `%b`).
fn combine_ptx(e: &ElemPtx, op: ReduceOp) -> String {
    let t = e.arith;
    let float = t.starts_with('f');
    if let Some(h) = e.half {
        // In f32; min and max keep the 16-bit operand itself.
        let to_f32 = |dst: &str, src: &str| match h {
            "f16" => format!("    cvt.f32.f16 {dst}, {src};\n"),
            _ => format!(
                "    cvt.u32.u16 %rt, {src};\n    shl.b32 %rt, %rt, 16;\n    mov.b32 {dst}, %rt;\n"
            ),
        };
        let mut s = to_f32("%fa", "%a");
        s += &to_f32("%fb", "%b");
        match op {
            ReduceOp::Min | ReduceOp::Max => {
                let cmp = if op == ReduceOp::Min { "lt" } else { "gt" };
                let _ = writeln!(s, "    setp.{cmp}.f32 %pc, %fb, %fa;");
                let _ = writeln!(s, "    selp.b16 %a, %b, %a, %pc;");
            }
            ReduceOp::Sum | ReduceOp::Prod => {
                let ins = if op == ReduceOp::Sum { "add" } else { "mul" };
                let _ = writeln!(s, "    {ins}.rn.f32 %fa, %fa, %fb;");
                let _ = writeln!(s, "    cvt.rn.{h}.f32 %a, %fa;");
            }
            _ => unreachable!("bitwise reduction of a 16-bit float (not generated)"),
        }
        return s;
    }
    match op {
        ReduceOp::Min | ReduceOp::Max if float => {
            let cmp = if op == ReduceOp::Min { "lt" } else { "gt" };
            format!("    setp.{cmp}.{t} %pc, %b, %a;\n    selp.{t} %a, %b, %a, %pc;\n")
        }
        ReduceOp::Min => format!("    min.{t} %a, %a, %b;\n"),
        ReduceOp::Max => format!("    max.{t} %a, %a, %b;\n"),
        ReduceOp::Sum if float => format!("    add.rn.{t} %a, %a, %b;\n"),
        ReduceOp::Prod if float => format!("    mul.rn.{t} %a, %a, %b;\n"),
        ReduceOp::Sum => format!("    add.{t} %a, %a, %b;\n"),
        ReduceOp::Prod => format!("    mul.lo.{t} %a, %a, %b;\n"),
        ReduceOp::And => format!("    and.{} %a, %a, %b;\n", bits_of(t)),
        ReduceOp::Or => format!("    or.{} %a, %a, %b;\n", bits_of(t)),
        ReduceOp::Xor => format!("    xor.{} %a, %a, %b;\n", bits_of(t)),
    }
}

/// Whether the table has a kernel for `(elem, op)`: every pair but bitwise operators on
/// floating types.
pub fn has_reduce_kernel(elem: Elem, op: ReduceOp) -> bool {
    !(op.is_bitwise() && elem.is_float())
}

/// The `.entry` name of the kernel for `(elem, op)`.
fn reduce_kernel_name(elem: Elem, op: ReduceOp) -> String {
    format!("niin_reduce_{}_{}", elem_ptx(elem).name, op.name())
}

/// One kernel's PTX.
fn kernel_ptx(elem: Elem, op: ReduceOp) -> String {
    let e = elem_ptx(elem);
    let name = reduce_kernel_name(elem, op);
    let combine = combine_ptx(&e, op);
    let (reg, ld, st, size) = (e.reg, e.ld, e.st, e.size);
    let half_regs = if e.half.is_some() {
        "    .reg .f32 %fa, %fb;\n    .reg .b32 %rt;\n"
    } else {
        ""
    };
    // %rd9 = member %r7's heap base (bases[%r7]) + the operand's offset + %rd7.
    let at = |operand: &str| {
        format!(
            "    mul.wide.u32 %rd8, %r7, 8;\n    add.u64 %rd8, %rd1, %rd8;\n    \
             ld.global.u64 %rd9, [%rd8];\n    add.u64 %rd9, %rd9, {operand};\n    \
             add.u64 %rd9, %rd9, %rd7;\n"
        )
    };
    let (src_at, dst_at) = (at("%rd2"), at("%rd3"));
    // Registers: %rd1 bases, %rd2 src, %rd3 dst, %rd4 count, %rd5 i, %rd6 step,
    // %rd7 byte offset, %rd8-%rd9 addresses; %r1 start, %r2 stride, %r3 size, %r4 push,
    // %r5 me, %r6 j, %r7 pe, %r8 last store index.
    format!(
        r#"
.visible .entry {name}(
    .param .u64 p_bases,
    .param .u32 p_start,
    .param .u32 p_stride,
    .param .u32 p_size,
    .param .u64 p_src,
    .param .u64 p_dst,
    .param .u64 p_count,
    .param .u32 p_push,
    .param .u32 p_me
)
{{
    .reg .pred %p<4>;
    .reg .pred %pc;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg {reg} %a, %b;
{half_regs}
    ld.param.u64 %rd1, [p_bases];
    ld.param.u32 %r1, [p_start];
    ld.param.u32 %r2, [p_stride];
    ld.param.u32 %r3, [p_size];
    ld.param.u64 %rd2, [p_src];
    ld.param.u64 %rd3, [p_dst];
    ld.param.u64 %rd4, [p_count];
    ld.param.u32 %r4, [p_push];
    ld.param.u32 %r5, [p_me];
    mov.u32 %r9, %ctaid.x;
    mov.u32 %r10, %ntid.x;
    mov.u32 %r11, %tid.x;
    mov.u32 %r12, %nctaid.x;
    mul.wide.u32 %rd5, %r9, %r10;
    cvt.u64.u32 %rd10, %r11;
    add.u64 %rd5, %rd5, %rd10;
    mul.wide.u32 %rd6, %r12, %r10;
ELEMENT:
    setp.ge.u64 %p1, %rd5, %rd4;
    @%p1 bra DONE;
    mul.lo.u64 %rd7, %rd5, {size};
    // acc = member 0's element
    mov.u32 %r7, %r1;
{src_at}    ld.{ld} %a, [%rd9];
    mov.u32 %r6, 1;
MEMBER:
    setp.ge.u32 %p2, %r6, %r3;
    @%p2 bra STORE;
    add.u32 %r7, %r7, %r2;
{src_at}    ld.{ld} %b, [%rd9];
{combine}    add.u32 %r6, %r6, 1;
    bra MEMBER;
STORE:
    // push: members 0..size from start; else this PE alone
    setp.ne.u32 %p3, %r4, 0;
    selp.u32 %r7, %r1, %r5, %p3;
    selp.u32 %r8, %r3, 1, %p3;
    mov.u32 %r6, 0;
STORE_ONE:
    setp.ge.u32 %p2, %r6, %r8;
    @%p2 bra NEXT;
{dst_at}    st.{st} [%rd9], %a;
    add.u32 %r7, %r7, %r2;
    add.u32 %r6, %r6, 1;
    bra STORE_ONE;
NEXT:
    add.u64 %rd5, %rd5, %rd6;
    bra ELEMENT;
DONE:
    ret;
}}
"#
    )
}

/// The whole module: a header and every kernel of the table.
pub fn coll_ptx() -> String {
    let mut s = String::from(
        "// Reduction kernels of niin-rs's host collectives, generated by\n\
         // niin-transport/src/cuda/coll_kernels.rs (see there).\n\
         .version 7.0\n.target sm_80\n.address_size 64\n",
    );
    for elem in Elem::ALL {
        for op in ReduceOp::ALL {
            if has_reduce_kernel(elem, op) {
                s += &kernel_ptx(elem, op);
            }
        }
    }
    s
}

/// Where a reduction reads and writes, in heap offsets over a team's members (see the
/// module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceLaunch {
    /// Device address of every PE's heap base in this process (`u64` each).
    pub bases: u64,
    /// The team's first world PE, stride and size.
    pub start: u32,
    /// World PEs between consecutive members.
    pub stride: u32,
    /// Members.
    pub size: u32,
    /// Heap offset of the first source element (the same on every member).
    pub src: u64,
    /// Heap offset of the first destination element.
    pub dst: u64,
    /// Elements to reduce.
    pub count: u64,
    /// Store into every member's destination (true) or only `me`'s.
    pub push: bool,
    /// This PE's world number.
    pub me: u32,
}

/// The loaded reduction kernels of one device.
pub struct CollKernels {
    /// Kernel of `(Elem::ALL[e], ReduceOp::ALL[o])` at `e * 7 + o`; `None` for bitwise float.
    functions: Vec<Option<Function>>,
    _module: Module,
}

impl std::fmt::Debug for CollKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollKernels")
            .field("kernels", &self.functions.iter().flatten().count())
            .finish()
    }
}

impl CollKernels {
    /// JIT-compiles [`coll_ptx`] into `device`'s primary context and looks up every
    /// kernel.
    pub fn load(device: &Device) -> Result<CollKernels> {
        let module = Module::load_ptx(device, "niin_coll.ptx", &coll_ptx())?;
        let mut functions = Vec::with_capacity(Elem::ALL.len() * ReduceOp::ALL.len());
        for elem in Elem::ALL {
            for op in ReduceOp::ALL {
                functions.push(if has_reduce_kernel(elem, op) {
                    Some(module.function(&reduce_kernel_name(elem, op))?)
                } else {
                    None
                });
            }
        }
        Ok(CollKernels {
            functions,
            _module: module,
        })
    }

    /// Enqueues the reduction `l` of `(elem, op)` on `stream`.
    ///
    /// # Safety
    ///
    /// `l.bases` must hold a heap base for every member, and every member's
    /// `[src, src + count·w)` and destination range must lie inside its mapped heap, all
    /// valid until the kernel has run.
    pub unsafe fn reduce(
        &self,
        stream: &Stream,
        elem: Elem,
        op: ReduceOp,
        l: ReduceLaunch,
    ) -> Result<()> {
        let e = Elem::ALL
            .iter()
            .position(|&x| x == elem)
            .expect("every Elem");
        let o = ReduceOp::ALL
            .iter()
            .position(|&x| x == op)
            .expect("every op");
        let Some(function) = &self.functions[e * ReduceOp::ALL.len() + o] else {
            return Err(CudaError::BadArgument {
                what: format!("{} reduction of {elem:?}: no such kernel", op.name()),
            });
        };
        if l.count == 0 || l.size == 0 {
            return Ok(());
        }
        let blocks = l
            .count
            .div_ceil(u64::from(REDUCE_THREADS))
            .min(u64::from(REDUCE_MAX_BLOCKS)) as u32;
        let (mut bases, mut start, mut stride, mut size) = (l.bases, l.start, l.stride, l.size);
        let (mut src, mut dst, mut count) = (l.src, l.dst, l.count);
        let (mut push, mut me) = (u32::from(l.push), l.me);
        let mut params: [*mut c_void; 9] = [
            (&mut bases as *mut u64).cast(),
            (&mut start as *mut u32).cast(),
            (&mut stride as *mut u32).cast(),
            (&mut size as *mut u32).cast(),
            (&mut src as *mut u64).cast(),
            (&mut dst as *mut u64).cast(),
            (&mut count as *mut u64).cast(),
            (&mut push as *mut u32).cast(),
            (&mut me as *mut u32).cast(),
        ];
        // SAFETY: nine pointers to live values of the kernel's nine parameter types, in
        // order; the caller vouches for the addresses the kernel reaches.
        unsafe {
            function.launch(
                (blocks, 1, 1),
                (REDUCE_THREADS, 1, 1),
                0,
                stream,
                &mut params,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_has_one_entry_per_valid_pair_with_nine_parameters() {
        let ptx = coll_ptx();
        let entries: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry "))
            .collect();
        assert_eq!(entries.len(), 12 * 7 - 4 * 3);
        for elem in Elem::ALL {
            for op in ReduceOp::ALL {
                let name = format!("{}(", reduce_kernel_name(elem, op));
                assert_eq!(
                    entries.contains(&name.as_str()),
                    has_reduce_kernel(elem, op),
                    "{name}"
                );
            }
        }
        let params = ptx.matches("    .param ").count();
        assert_eq!(params, entries.len() * 9);
    }

    #[test]
    fn combines_spell_the_right_instruction() {
        let f = |e, op| combine_ptx(&elem_ptx(e), op);
        assert_eq!(f(Elem::I8, ReduceOp::Sum), "    add.s16 %a, %a, %b;\n");
        assert_eq!(f(Elem::U64, ReduceOp::Prod), "    mul.lo.u64 %a, %a, %b;\n");
        assert_eq!(f(Elem::U32, ReduceOp::Xor), "    xor.b32 %a, %a, %b;\n");
        assert_eq!(f(Elem::I16, ReduceOp::Min), "    min.s16 %a, %a, %b;\n");
        assert!(f(Elem::F64, ReduceOp::Max).contains("setp.gt.f64 %pc, %b, %a"));
        assert!(f(Elem::F16, ReduceOp::Sum).contains("cvt.rn.f16.f32 %a, %fa"));
        assert!(f(Elem::Bf16, ReduceOp::Min).contains("selp.b16 %a, %b, %a, %pc"));
    }
}
