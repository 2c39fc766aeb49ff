/*
 * niin/impl/coll_impl.h -- bodies of niin/coll.h: the team collectives, templated on the
 * cooperation scope (ScopeThread, ScopeWarp, ScopeBlock of common_impl.h).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * Structure. Each public function is a one-line inline wrapper that calls one body out of
 * line (call_out_of_line_direct: compiled to the calling convention, so a kernel reaches its
 * registers and not those of every collective the header has):
 *   reduce_body<Coop, E, Op>   reduce and reducescatter (and maxloc); E is the element type
 *                              the arithmetic needs (coll_elem): the integers by width, with
 *                              sign only for min and max (sum and prod wrap around in the
 *                              unsigned type of the width: the same bits), so the 138 typed
 *                              reductions of a scope share 52 bodies
 *   move_body<Coop, Kind>      broadcast, fcollect, alltoall in bytes: 3 bodies per scope for
 *                              the 78 typed and mem forms
 * Templates, instantiated only where a translation unit calls (or takes the address of) a
 * public function: a TU that calls one collective compiles one body.
 *
 * Every body: coll_begin (checks the team, every member reachable by load/store, then a team
 * sync), the data movement, coll_end (team barrier or sync). niin/coll.h says what and why.
 */
#ifndef NIIN_IMPL_COLL_IMPL_H
#define NIIN_IMPL_COLL_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/copy_impl.h"
#include "niin/impl/query_impl.h"
#include "niin/impl/sync_impl.h"

#if defined(__CUDACC__)
#include <type_traits>

namespace niin {
namespace detail {

/* ---- operations and element types ----------------------------------------------------- */

enum class CollOp : int { And, Or, Xor, Min, Max, Sum, Prod, MaxLoc };

/* NVSHMEM's operation names (pasted from the type table's X(NAME, TYPE, OP)) as CollOp. */
#define NIIN_COLL_OP_and niin::detail::CollOp::And
#define NIIN_COLL_OP_or niin::detail::CollOp::Or
#define NIIN_COLL_OP_xor niin::detail::CollOp::Xor
#define NIIN_COLL_OP_min niin::detail::CollOp::Min
#define NIIN_COLL_OP_max niin::detail::CollOp::Max
#define NIIN_COLL_OP_sum niin::detail::CollOp::Sum
#define NIIN_COLL_OP_prod niin::detail::CollOp::Prod

/* The unsigned fixed-width integer of a width. */
template <int Bytes>
struct coll_uint;
template <>
struct coll_uint<1> {
    using type = uint8_t;
};
template <>
struct coll_uint<2> {
    using type = uint16_t;
};
template <>
struct coll_uint<4> {
    using type = uint32_t;
};
template <>
struct coll_uint<8> {
    using type = uint64_t;
};

/* The type a reduction of T with Op computes in: T for the types that are not integers
 * (floating point, half, bfloat16, double2); for the integers the fixed-width integer of T's
 * width, signed only for a signed T's min and max (and, or, xor, sum and prod give the same
 * bits in the unsigned type, where overflow is defined). */
template <typename T, CollOp Op, bool Integer = std::is_integral<T>::value>
struct coll_elem {
    using type = T;
};
template <typename T, CollOp Op>
struct coll_elem<T, Op, true> {
    using U = typename coll_uint<static_cast<int>(sizeof(T))>::type;
    using type = std::conditional_t<(Op == CollOp::Min || Op == CollOp::Max) && std::is_signed<T>::value,
                                    std::make_signed_t<U>, U>;
};

/* The type E's sum and product are computed in: unsigned int for the narrow unsigned
 * integers (their promotion to int could overflow in a product), E otherwise. */
template <typename E>
struct coll_wide {
    using type = E;
};
template <>
struct coll_wide<uint8_t> {
    using type = unsigned int;
};
template <>
struct coll_wide<uint16_t> {
    using type = unsigned int;
};

/* a op b for the integers, float and double (NVSHMEM's perform_gpu_rdxn). */
template <CollOp Op, typename E>
__device__ __forceinline__ E combine(E a, E b) {
    using W = typename coll_wide<E>::type;
    if constexpr (Op == CollOp::And) {
        return static_cast<E>(a & b);
    } else if constexpr (Op == CollOp::Or) {
        return static_cast<E>(a | b);
    } else if constexpr (Op == CollOp::Xor) {
        return static_cast<E>(a ^ b);
    } else if constexpr (Op == CollOp::Min) {
        return a < b ? a : b;
    } else if constexpr (Op == CollOp::Max) {
        return a > b ? a : b;
    } else if constexpr (Op == CollOp::Sum) {
        return static_cast<E>(static_cast<W>(a) + static_cast<W>(b));
    } else {
        static_assert(Op == CollOp::Prod, "no such reduction of this type");
        return static_cast<E>(static_cast<W>(a) * static_cast<W>(b));
    }
}

/* half and bfloat16: CUDA's arithmetic. */
template <CollOp Op>
__device__ __forceinline__ half combine(half a, half b) {
    if constexpr (Op == CollOp::Min) {
        return __hmin(a, b);
    } else if constexpr (Op == CollOp::Max) {
        return __hmax(a, b);
    } else if constexpr (Op == CollOp::Sum) {
        return __hadd(a, b);
    } else {
        static_assert(Op == CollOp::Prod, "no such reduction of half");
        return __hmul(a, b);
    }
}
template <CollOp Op>
__device__ __forceinline__ __nv_bfloat16 combine(__nv_bfloat16 a, __nv_bfloat16 b) {
    if constexpr (Op == CollOp::Min) {
        return __hmin(a, b);
    } else if constexpr (Op == CollOp::Max) {
        return __hmax(a, b);
    } else if constexpr (Op == CollOp::Sum) {
        return __hadd(a, b);
    } else {
        static_assert(Op == CollOp::Prod, "no such reduction of bfloat16");
        return __hmul(a, b);
    }
}

/* maxloc (double2: value .x, location .y): the pair with the larger value; a tie keeps b,
 * the later PE's, as NVSHMEM 3.4.5's (op1.x > op2.x ? op1 : op2). */
template <CollOp Op>
__device__ __forceinline__ double2 combine(double2 a, double2 b) {
    static_assert(Op == CollOp::MaxLoc, "double2 reduces with maxloc only");
    return a.x > b.x ? a : b;
}

/* 16 bytes of E, the unit of the vectorized loops. */
template <typename E>
struct CollPack {
    static constexpr int kCount = static_cast<int>(16 / sizeof(E));
    E v[kCount];
};

template <typename E>
__device__ __forceinline__ CollPack<E> load_pack(const E *p) {
    const uint4 w = *reinterpret_cast<const uint4 *>(p);
    CollPack<E> r;
    memcpy(&r, &w, 16);
    return r;
}

template <typename E>
__device__ __forceinline__ void store_pack(E *p, const CollPack<E> &r) {
    uint4 w;
    memcpy(&w, &r, 16);
    *reinterpret_cast<uint4 *>(p) = w;
}

template <CollOp Op, typename E>
__device__ __forceinline__ CollPack<E> combine_pack(const CollPack<E> &a, const CollPack<E> &b) {
    CollPack<E> r;
#pragma unroll
    for (int i = 0; i < CollPack<E>::kCount; ++i) r.v[i] = combine<Op>(a.v[i], b.v[i]);
    return r;
}

/* ---- the team -------------------------------------------------------------------------- */

/* A team as the collectives use it: this PE's number in it, its size, and the LSA index
 * (lsa_index of common_impl.h) of team PE j: first + j * stride. */
struct CollTeam {
    int me, size, first, stride;
};

/* The load/store distance of team PE j (a member of this PE's LSA team, checked by
 * coll_begin): from the routing cache for its first NIIN_LSA_SLOTS members, else the table. */
__device__ __forceinline__ long long coll_delta(const niin_device_context &c, const CollTeam &t,
                                                int j) {
    const unsigned int index = static_cast<unsigned int>(t.first + j * t.stride);
    return index < c.lsa_cache_count ? c.lsa_cache_delta[index] : __ldg(c.lsa_delta + index);
}

template <typename E>
__device__ __forceinline__ E *coll_at(E *sym, long long delta) {
    return reinterpret_cast<E *>(reinterpret_cast<char *>(sym) + delta);
}
template <typename E>
__device__ __forceinline__ const E *coll_at(const E *sym, long long delta) {
    return reinterpret_cast<const E *>(reinterpret_cast<const char *>(sym) + delta);
}

constexpr const char *kCollGin =
    "a member of the team is outside this PE's LSA team (another node, or NIIN_GIN_LOOPBACK): "
    "collectives over GIN are not implemented yet";
constexpr const char *kCollRoot = "PE_root is not a PE of the team";
/* coll_begin's root for the collectives that have none. */
constexpr int kNoRoot = INT_MIN;

/* What coll_begin found. */
enum class CollStart { Go, Nothing, Fail };

/* The start of every collective, by every thread of `coop`: the team (as nvshmem_barrier(team)
 * checks it), every member reachable by load/store, then -- with data to move and another
 * member -- a team sync. Fail: the caller returns nonzero; Nothing: nothing to move. */
template <typename Coop>
__device__ __noinline__ CollStart coll_begin_body(Coop coop, const char *fn, nvshmem_team_t team,
                                                  size_t count, int root, CollTeam *out) {
    const niin_device_context &c = context(fn);
    if (team == NVSHMEM_TEAM_INVALID) {
        if (coop.thread_rank() == 0) usage_error(fn, kInvalidTeam);
        return CollStart::Fail;
    }
    DeviceTeamView t;
    if (!device_team(c, team, &t)) {
        not_implemented(coop, fn, kTeamWhy);
        return CollStart::Fail;
    }
    const int me = team_index_of(t, c.my_pe);
    if (me < 0) {
        if (coop.thread_rank() == 0) usage_error(fn, kNotTeamMember);
        return CollStart::Fail;
    }
    /* (before the sync, which an error must not leave half done) */
    if (root != kNoRoot && (root < 0 || root >= t.size)) {
        if (coop.thread_rank() == 0) usage_error(fn, kCollRoot);
        return CollStart::Fail;
    }
    if (count == 0) return CollStart::Nothing;
    /* The members are an arithmetic progression of world PEs, this PE's LSA team a range of
     * them: the first and the last member in it put every member in it. */
    const unsigned int first = lsa_index(c, t.start);
    const unsigned int last = lsa_index(c, t.start + (t.size - 1) * t.stride);
    const unsigned int lsa_size = static_cast<unsigned int>(c.lsa_size);
    if (first >= lsa_size || last >= lsa_size) {
        not_implemented(coop, fn, kCollGin);
        return CollStart::Fail;
    }
    *out = CollTeam{me, t.size, static_cast<int>(first), t.stride};
    if (t.size > 1) team_barrier(coop, fn, team, false);
    return CollStart::Go;
}

/* coll_begin_body out of line: one copy per scope, shared by every collective's body (the
 * team checks and the sync are most of a collective's code; inlined into each of the ~200
 * typed bodies they made ptxas take minutes). */
template <typename Coop>
__device__ __forceinline__ CollStart coll_begin(Coop coop, const char *fn, nvshmem_team_t team,
                                                size_t count, int root, CollTeam *out) {
    return call_out_of_line_direct<&coll_begin_body<Coop>>(coop, fn, team, count, root, out);
}

/* The end: a team barrier (complete: quiet first, after stores into peers) or sync; a team
 * of one only synchronizes the group. */
template <typename Coop>
__device__ __forceinline__ void coll_end(Coop coop, const char *fn, nvshmem_team_t team,
                                         const CollTeam &t, bool complete) {
    if (t.size > 1)
        team_barrier(coop, fn, team, complete);
    else
        coop.sync();
}

/* ---- reductions ------------------------------------------------------------------------ */

/* count elements: element i = op over team PEs 0, 1, ... of source[i] (their copies), stored
 * into every member's dest[i] (push) or into this PE's (not push). The group's threads take
 * 16-byte packs of elements in turn; a pack that is not whole, or addresses that are not
 * 16-byte aligned, go element by element. */
template <typename Coop, typename E, CollOp Op>
__device__ __forceinline__ void reduce_range(Coop coop, const niin_device_context &c,
                                             const CollTeam &t, E *dest, const E *source,
                                             size_t count, bool push) {
    constexpr int V = CollPack<E>::kCount;
    const int n = t.size;
    uintptr_t bits = reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(source);
#pragma unroll 1
    for (int j = 0; j < n; ++j) bits |= static_cast<uintptr_t>(coll_delta(c, t, j));
    const bool packs = (bits & 15) == 0;
    const size_t chunks = (count + V - 1) / V;
    const size_t step = static_cast<size_t>(coop.size());
    /* (the loops are kept rolled: unrolled, the pack loop needed more than the 64 registers
     * of a 1024-thread block) */
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < chunks; k += step) {
        const size_t e0 = k * V;
        if (packs && e0 + V <= count) {
            CollPack<E> acc = load_pack(coll_at(source + e0, coll_delta(c, t, 0)));
#pragma unroll 1
            for (int j = 1; j < n; ++j)
                acc = combine_pack<Op>(acc, load_pack(coll_at(source + e0, coll_delta(c, t, j))));
            if (push) {
#pragma unroll 1
                for (int j = 0; j < n; ++j) store_pack(coll_at(dest + e0, coll_delta(c, t, j)), acc);
            } else {
                store_pack(dest + e0, acc);
            }
        } else {
            const size_t e1 = e0 + V < count ? e0 + V : count;
#pragma unroll 1
            for (size_t e = e0; e < e1; ++e) {
                E acc = *coll_at(source + e, coll_delta(c, t, 0));
#pragma unroll 1
                for (int j = 1; j < n; ++j) acc = combine<Op>(acc, *coll_at(source + e, coll_delta(c, t, j)));
                if (push) {
#pragma unroll 1
                    for (int j = 0; j < n; ++j) *coll_at(dest + e, coll_delta(c, t, j)) = acc;
                } else {
                    dest[e] = acc;
                }
            }
        }
    }
}

/* reduce (scatter false) and reducescatter (true) by every thread of `coop`. */
template <typename Coop, typename E, CollOp Op>
__device__ __noinline__ int reduce_body(Coop coop, const char *fn, nvshmem_team_t team, E *dest,
                                        const E *source, size_t nreduce, bool scatter) {
    CollTeam t;
    const CollStart s = coll_begin(coop, fn, team, nreduce, kNoRoot, &t);
    if (s != CollStart::Go) return s == CollStart::Fail ? 1 : 0;
    const niin_device_context &c = niin_ctx_value;
    if (scatter) {
        /* this PE's block of every member's source into its own dest */
        reduce_range<Coop, E, Op>(coop, c, t, dest, source + static_cast<size_t>(t.me) * nreduce,
                                  nreduce, false);
    } else {
        /* slice `me` (whole packs, the last slices possibly empty) into every member's dest */
        constexpr size_t V = CollPack<E>::kCount;
        const size_t chunks = (nreduce + V - 1) / V;
        const size_t n = static_cast<size_t>(t.size), me = static_cast<size_t>(t.me);
        const size_t per = chunks / n, extra = chunks % n;
        const size_t begin = (me * per + (me < extra ? me : extra)) * V;
        size_t end = begin + (per + (me < extra ? 1 : 0)) * V;
        if (end > nreduce) end = nreduce;
        if (begin < end)
            reduce_range<Coop, E, Op>(coop, c, t, dest + begin, source + begin, end - begin, true);
    }
    coll_end(coop, fn, team, t, !scatter);
    return 0;
}

/* A typed reduction: T's elements as E's (same size and bits), the body out of line. */
template <typename T, CollOp Op, typename Coop>
__device__ __forceinline__ int reduce(Coop coop, const char *fn, nvshmem_team_t team, T *dest,
                                      const T *source, size_t nreduce, bool scatter) {
    using E = typename coll_elem<T, Op>::type;
    static_assert(sizeof(E) == sizeof(T), "a reduction's element keeps its width");
    return reduce_body<Coop, E, Op>(coop, fn, team, reinterpret_cast<E *>(dest),
                                    reinterpret_cast<const E *>(source), nreduce, scatter);
}

/* ---- broadcast, fcollect, alltoall ------------------------------------------------------- */

enum class CollMove : int { Broadcast, Fcollect, Alltoall };

/* coop_copy behind a function of its own, which the movements call through the calling
 * convention (call_out_of_line_direct). Not coop_copy's own address: that would compile
 * coop_copy to the convention for every caller, and a putmem_block kernel went from 58 to 64
 * registers. */
template <typename Coop>
__device__ __noinline__ void coll_copy(Coop coop, char *dst, const char *src, size_t bytes) {
    coop_copy(coop, dst, src, bytes);
}

/* `bytes` per block, by every thread of `coop` (coop_copy of copy_impl.h, no synchronization
 * between the blocks). The pushes start at the next member, so the PEs write to different
 * members at a time. */
template <typename Coop, CollMove K>
__device__ __noinline__ int move_body(Coop coop, const char *fn, nvshmem_team_t team, void *dest,
                                      const void *source, size_t bytes, int root) {
    CollTeam t;
    const CollStart s =
        coll_begin(coop, fn, team, bytes, K == CollMove::Broadcast ? root : kNoRoot, &t);
    if (s != CollStart::Go) return s == CollStart::Fail ? 1 : 0;
    const niin_device_context &c = niin_ctx_value;
    char *d = static_cast<char *>(dest);
    const char *src = static_cast<const char *>(source);
    /* The copies go through coll_copy, compiled to the calling convention: coop_copy called
     * directly from this loop had its registers allocated on top of the loop's (thread and
     * warp fcollect / alltoall needed 68-72, over a 1024-thread block's 64). */
    if constexpr (K == CollMove::Broadcast) {
        const char *from = coll_at(src, coll_delta(c, t, root));
        if (from != d) call_out_of_line_direct<&coll_copy<Coop>>(coop, d, from, bytes);
    } else {
        const size_t mine = static_cast<size_t>(t.me) * bytes;
        for (int i = 0; i < t.size; ++i) {
            int j = t.me + 1 + i;
            if (j >= t.size) j -= t.size;
            const char *from = K == CollMove::Fcollect ? src : src + static_cast<size_t>(j) * bytes;
            call_out_of_line_direct<&coll_copy<Coop>>(coop, coll_at(d, coll_delta(c, t, j)) + mine,
                                                      from, bytes);
        }
    }
    coll_end(coop, fn, team, t, K != CollMove::Broadcast);
    return 0;
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions --------------------------------------------------------------- */

/* One reduction or reducescatter wrapper: PREFIX nvshmem_ / nvshmemx_, SUFFIX empty, _warp or
 * _block, QUAL the linkage, COOP the scope. */
#define NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, PREFIX, SUFFIX, QUAL, COOP)                 \
    QUAL int PREFIX##NAME##_##OP##_reduce##SUFFIX(nvshmem_team_t team, TYPE *dest,               \
                                                  const TYPE *source, size_t nreduce) {          \
        return niin::detail::reduce<TYPE, NIIN_COLL_OP_##OP>(                                     \
            COOP{}, #PREFIX #NAME "_" #OP "_reduce" #SUFFIX, team, dest, source, nreduce, false); \
    }                                                                                            \
    QUAL int PREFIX##NAME##_##OP##_reducescatter##SUFFIX(nvshmem_team_t team, TYPE *dest,        \
                                                         const TYPE *source, size_t nreduce) {   \
        return niin::detail::reduce<TYPE, NIIN_COLL_OP_##OP>(                                     \
            COOP{}, #PREFIX #NAME "_" #OP "_reducescatter" #SUFFIX, team, dest, source, nreduce,  \
            true);                                                                               \
    }
#define NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, PREFIX, SUFFIX, QUAL, COOP)                          \
    QUAL int PREFIX##NAME##_broadcast##SUFFIX(nvshmem_team_t team, TYPE *dest,                   \
                                              const TYPE *source, size_t nelems, int PE_root) {  \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Broadcast>(                          \
            COOP{}, #PREFIX #NAME "_broadcast" #SUFFIX, team, dest, source,                      \
            nelems * sizeof(TYPE), PE_root);                                                     \
    }                                                                                            \
    QUAL int PREFIX##NAME##_fcollect##SUFFIX(nvshmem_team_t team, TYPE *dest,                    \
                                             const TYPE *source, size_t nelems) {                \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Fcollect>(                           \
            COOP{}, #PREFIX #NAME "_fcollect" #SUFFIX, team, dest, source,                       \
            nelems * sizeof(TYPE), 0);                                                           \
    }                                                                                            \
    QUAL int PREFIX##NAME##_alltoall##SUFFIX(nvshmem_team_t team, TYPE *dest,                    \
                                             const TYPE *source, size_t nelems) {                \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Alltoall>(                           \
            COOP{}, #PREFIX #NAME "_alltoall" #SUFFIX, team, dest, source,                       \
            nelems * sizeof(TYPE), 0);                                                           \
    }
#define NIIN_DEFINE_COLL_MOVE_MEM_AT(PREFIX, SUFFIX, QUAL, COOP)                                  \
    QUAL int PREFIX##broadcastmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,   \
                                          size_t nelems, int PE_root) {                          \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Broadcast>(                          \
            COOP{}, #PREFIX "broadcastmem" #SUFFIX, team, dest, source, nelems, PE_root);         \
    }                                                                                            \
    QUAL int PREFIX##fcollectmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,    \
                                         size_t nelems) {                                        \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Fcollect>(                           \
            COOP{}, #PREFIX "fcollectmem" #SUFFIX, team, dest, source, nelems, 0);                \
    }                                                                                            \
    QUAL int PREFIX##alltoallmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,    \
                                         size_t nelems) {                                        \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Alltoall>(                           \
            COOP{}, #PREFIX "alltoallmem" #SUFFIX, team, dest, source, nelems, 0);                \
    }

/* The warp and block forms (device only). */
NIIN_BEGIN_C_DECLS
#define NIIN_DEFINE_COLL_REDUCTION_GROUPS(NAME, TYPE, OP)                                  \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmemx_, _warp, NIIN_DEVICE,           \
                                  niin::detail::ScopeWarp)                                 \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmemx_, _block, NIIN_DEVICE,          \
                                  niin::detail::ScopeBlock)
NIIN_FOR_EACH_REDUCTION(NIIN_DEFINE_COLL_REDUCTION_GROUPS)
#undef NIIN_DEFINE_COLL_REDUCTION_GROUPS

#define NIIN_DEFINE_COLL_MOVE_GROUPS(NAME, TYPE)                                                 \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmemx_, _warp, NIIN_DEVICE, niin::detail::ScopeWarp) \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmemx_, _block, NIIN_DEVICE, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_COLL_MOVE_GROUPS)
#undef NIIN_DEFINE_COLL_MOVE_GROUPS
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmemx_, _warp, NIIN_DEVICE, niin::detail::ScopeWarp)
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmemx_, _block, NIIN_DEVICE, niin::detail::ScopeBlock)

NIIN_DEVICE int nvshmemx_double2_maxloc_reduce_block(nvshmem_team_t team, double2 *dest,
                                                     const double2 *source, size_t nreduce) {
    return niin::detail::reduce<double2, niin::detail::CollOp::MaxLoc>(
        niin::detail::ScopeBlock{}, "nvshmemx_double2_maxloc_reduce_block", team, dest, source,
        nreduce, false);
}
NIIN_END_C_DECLS

/* The thread forms are host functions too: device bodies in the device pass only. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS
#define NIIN_DEFINE_COLL_REDUCTION_THREAD(NAME, TYPE, OP)                                   \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmem_, , NIIN_DEVICE_HD,               \
                                  niin::detail::ScopeThread)
NIIN_FOR_EACH_REDUCTION(NIIN_DEFINE_COLL_REDUCTION_THREAD)
#undef NIIN_DEFINE_COLL_REDUCTION_THREAD

#define NIIN_DEFINE_COLL_MOVE_THREAD(NAME, TYPE) \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmem_, , NIIN_DEVICE_HD, niin::detail::ScopeThread)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_COLL_MOVE_THREAD)
#undef NIIN_DEFINE_COLL_MOVE_THREAD
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmem_, , NIIN_DEVICE_HD, niin::detail::ScopeThread)
NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#undef NIIN_DEFINE_COLL_MOVE_MEM_AT
#undef NIIN_DEFINE_COLL_MOVE_AT
#undef NIIN_DEFINE_COLL_REDUCTION_AT

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_IMPL_H */
