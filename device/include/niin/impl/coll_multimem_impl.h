/*
 * niin/impl/coll_multimem_impl.h -- the multimem (NVLink SHARP, "NVLS") forms of the general
 * path of the device collectives, used by niin/impl/coll_impl.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * What. On NVSwitch systems NCCL can map a window a second time through a multicast object:
 * one address (the multimem address, ncclGetLsaMultimemPointer) that stands for the same
 * offset in every member of NCCL's LSA team. A load-reduce from it (multimem.ld_reduce)
 * returns the reduction of all members' values, computed in the switch; a store to it
 * (multimem.st) lands in all members at once. A collective of a team that is the whole LSA
 * team then moves each byte over NVLink once instead of once per member:
 *   reduce         each member reduces its slice of the elements with ld_reduce and stores
 *                  the result with multimem.st (every member's dest), between the general
 *                  path's sync and barrier
 *   reducescatter  each member ld_reduces its own block into its dest
 *   fcollect       each member multimem.st's its block into every member's dest
 *   broadcast      the root multimem.st's its source into every member's dest
 * (alltoall sends every member different bytes: nothing to multicast.)
 *
 * When. Only where every condition holds (mm_team, mm_reduce_ok, mm_move_ok), else the
 * unicast general path runs, unchanged:
 *   - this module's devComm has a multimem handle: libnvshmem_host asks for one
 *     (ncclDevCommRequirements.lsaMultimem, niin_host_info.lsa_multimem) only when the loaded
 *     NCCL reports multimemSupport (ncclCommQueryProperties, 2.29.2 and later), the LSA team
 *     has more than 2 GPUs (NCCL's own rule for its symmetric kernels) and
 *     NVSHMEM_DISABLE_NVLS is not set;
 *   - the team is the LSA team itself (every LSA peer, stride 1): the multicast object spans
 *     exactly that team;
 *   - the buffers are in the symmetric heap (the window NCCL mapped) and, for the 16-byte
 *     forms, 16-byte aligned, with whole 16-byte packs (multimem accesses are 4, 8 or 16
 *     bytes; smaller or unaligned ones are not defined);
 *   - for a reduction, an operation and element type PTX has an ld_reduce for: sum of
 *     float, double, half, bfloat16 and 32/64-bit integers; min and max of 32/64-bit
 *     integers; and, or, xor of 32/64-bit integers. Products, 8/16-bit integers and
 *     floating min/max stay on the unicast path.
 *
 * Not run: NVLS is off on the machines this project is tested on (one GPU, no NVSwitch),
 * so this code is compiled (tests/device/compile_coll.cu, every scope, NCCL 2.28.9 and
 * 2.31.2 headers, whose ptxas checks every instruction's type) but has never executed. The
 * unicast path it falls back to is the one the GPU conformance suite runs.
 */
#ifndef NIIN_IMPL_COLL_MULTIMEM_IMPL_H
#define NIIN_IMPL_COLL_MULTIMEM_IMPL_H

#include "niin/impl/coll_base_impl.h"

#if defined(__CUDACC__)
#include <type_traits>

namespace niin {
namespace detail {

/* Whether `t` (a team of this PE's LSA team only: not t.gin) is the whole LSA team and this
 * module's devComm has a multimem handle. */
__device__ __forceinline__ bool mm_team(const niin_device_context &c, const CollTeam &t) {
    return c.has_dev_comm && c.dev_comm.lsaMultimem.mcBasePtr != nullptr && t.size > 1 &&
           t.stride == 1 && t.first == 0 && t.size == c.lsa_size && c.lsa_size == c.dev_comm.lsaSize;
}

/* The multimem address of symmetric `sym` (in the heap: the caller checked). */
template <typename E>
__device__ __forceinline__ E *mm_address(const niin_device_context &c, const E *sym) {
    return static_cast<E *>(ncclGetLsaMultimemPointer(
        c.window, static_cast<size_t>(reinterpret_cast<const char *>(sym) - c.heap_base),
        c.dev_comm));
}

/* The width class of an element type for multimem: which ld_reduce forms exist. */
template <typename E>
struct MmKind {
    static constexpr bool kFloat = std::is_same<E, float>::value;
    static constexpr bool kDouble = std::is_same<E, double>::value;
    static constexpr bool kHalf = std::is_same<E, half>::value;
    static constexpr bool kBf16 = std::is_same<E, __nv_bfloat16>::value;
    static constexpr bool kInt = std::is_integral<E>::value && (sizeof(E) == 4 || sizeof(E) == 8);
};

/* Whether the switch can reduce E with Op (PTX multimem.ld_reduce's operation and type
 * lists). */
template <typename E, CollOp Op>
__device__ __forceinline__ constexpr bool mm_reduce_ok() {
    using K = MmKind<E>;
    if constexpr (Op == CollOp::Sum)
        return K::kFloat || K::kDouble || K::kHalf || K::kBf16 || K::kInt;
    else if constexpr (Op == CollOp::Min || Op == CollOp::Max || Op == CollOp::And ||
                       Op == CollOp::Or || Op == CollOp::Xor)
        return K::kInt;
    else
        return false;
}

/* The ld_reduce of E elements at multimem address p, as 16 bytes: float, half and bfloat16
 * in one vector access, double and the integers in 2 or 4 scalar ones (PTX has no integer
 * or f64 vector form). */
template <typename E, CollOp Op>
__device__ __forceinline__ uint4 mm_ld_reduce16(const E *p) {
    using K = MmKind<E>;
    uint4 r;
    if constexpr (K::kFloat) {
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p)
                     : "memory");
    } else if constexpr (K::kHalf) {
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f16x2 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p)
                     : "memory");
    } else if constexpr (K::kBf16) {
        asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.bf16x2 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p)
                     : "memory");
    } else if constexpr (sizeof(E) == 8) {
        unsigned long long w[2];
        const char *q = reinterpret_cast<const char *>(p);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            if constexpr (K::kDouble)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Sum)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.add.u64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Min && std::is_signed<E>::value)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.min.s64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Min)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.min.u64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Max && std::is_signed<E>::value)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.max.s64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Max)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.max.u64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::And)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.and.b64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else if constexpr (Op == CollOp::Or)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.or.b64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
            else
                asm volatile("multimem.ld_reduce.relaxed.sys.global.xor.b64 %0, [%1];"
                             : "=l"(w[i]) : "l"(q + 8 * i) : "memory");
        }
        memcpy(&r, w, 16);
    } else {
        unsigned int w[4];
        const char *q = reinterpret_cast<const char *>(p);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if constexpr (Op == CollOp::Sum)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.add.u32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::Min && std::is_signed<E>::value)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.min.s32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::Min)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.min.u32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::Max && std::is_signed<E>::value)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.max.s32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::Max)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.max.u32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::And)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.and.b32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else if constexpr (Op == CollOp::Or)
                asm volatile("multimem.ld_reduce.relaxed.sys.global.or.b32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
            else
                asm volatile("multimem.ld_reduce.relaxed.sys.global.xor.b32 %0, [%1];"
                             : "=r"(w[i]) : "l"(q + 4 * i) : "memory");
        }
        memcpy(&r, w, 16);
    }
    return r;
}

/* 16 bytes into every member at multimem address p (the bits as they are: a store does not
 * convert, whatever type its vector form names). */
__device__ __forceinline__ void mm_store16(void *p, uint4 v) {
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* Whether [p, p + bytes) is in the heap, 16-byte aligned, of whole 16-byte packs. */
__device__ __forceinline__ bool mm_packs(const niin_device_context &c, const void *p, size_t bytes) {
    return in_heap(c, p, bytes) && ((reinterpret_cast<uintptr_t>(p) | bytes) & 15) == 0;
}

/* A reduction's elements [begin, end) of every member's source, reduced in the switch, by
 * every thread of `coop`: into every member's dest (scatter false: multimem.st) or into this
 * PE's dest only (true; `source` then points at this PE's block of every member's source).
 * The caller checked mm_team, mm_reduce_ok and mm_packs of both ranges. */
template <typename Coop, typename E, CollOp Op>
__device__ __noinline__ void mm_reduce(Coop coop, const niin_device_context *cp, E *dest,
                                       const E *source, size_t count, bool scatter) {
    const niin_device_context &c = *cp;
    const E *from = mm_address(c, source);
    E *to = scatter ? dest : mm_address(c, dest);
    const size_t packs = count * sizeof(E) / 16;
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < packs; k += coop.size()) {
        const uint4 v = mm_ld_reduce16<E, Op>(reinterpret_cast<const E *>(
            reinterpret_cast<const char *>(from) + 16 * k));
        char *at = reinterpret_cast<char *>(to) + 16 * k;
        if (scatter)
            *reinterpret_cast<uint4 *>(at) = v;
        else
            mm_store16(at, v);
    }
}

/* `bytes` of local `src` into every member's `dest` (a multimem.st per 16 bytes), by every
 * thread of `coop`. The caller checked mm_team and mm_packs of dest; src is 16-byte aligned. */
template <typename Coop>
__device__ __noinline__ void mm_copy_to_all(Coop coop, const niin_device_context *cp, char *dest,
                                            const char *src, size_t bytes) {
    char *to = mm_address(*cp, dest);
    const size_t packs = bytes / 16;
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < packs; k += coop.size())
        mm_store16(to + 16 * k, reinterpret_cast<const uint4 *>(src)[k]);
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_MULTIMEM_IMPL_H */
