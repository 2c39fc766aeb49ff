/*
 * niin/impl/coll_base_impl.h -- what the device collectives' two paths share: operations,
 * element types and their arithmetic, the team as a collective sees it, and peer addresses.
 * Used by niin/impl/coll_impl.h (the collectives) and niin/impl/coll_ll_impl.h (their
 * one-wait path for small sizes).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 */
#ifndef NIIN_IMPL_COLL_BASE_IMPL_H
#define NIIN_IMPL_COLL_BASE_IMPL_H

#include "niin/impl/common_impl.h"

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
    using U = typename uint_of_size<static_cast<int>(sizeof(T))>::type;
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

/* A team as the collectives use it: this PE's number in it, its size, the LSA index
 * (lsa_index of common_impl.h) of team PE j, first + j * stride (meaningful when every
 * member is an LSA peer, i.e. gin is 0), and the world PE of team PE j, pe0 + j * stride.
 * On the LL path (coll_ll_impl.h) also the heap offset of this round's part of every
 * member's ring and its flag. */
struct CollTeam {
    int me, size, first, stride;
    size_t ll_off;
    unsigned int ll_flag;
    int pe0;
    int gin; /* non-zero: a member is outside this PE's LSA team (reached through GIN) */
};

/* The collectives that move bytes. */
enum class CollMove : int { Broadcast, Fcollect, Alltoall };

/* The load/store distance of team PE j (a member of this PE's LSA team, checked by
 * coll_begin): from the routing cache for its first NIIN_LSA_SLOTS members, else the table. */
__device__ __forceinline__ long long coll_delta(const niin_device_context &c, const CollTeam &t,
                                                int j) {
    const unsigned int index = static_cast<unsigned int>(t.first + j * t.stride);
    return index < c.lsa_cache_count ? c.lsa_cache_delta[index] : __ldg(c.lsa_delta + index);
}

/* Team PE number `me + i` (i = 0 .. size - 1; 0 is this PE), wrapped: the order in which a
 * member sends to the others, starting at the next one so the PEs write to different members
 * at a time. */
__device__ __forceinline__ int coll_next(const CollTeam &t, int i) {
    const int j = t.me + i;
    return j >= t.size ? j - t.size : j;
}

template <typename E>
__device__ __forceinline__ E *coll_at(E *sym, long long delta) {
    return reinterpret_cast<E *>(reinterpret_cast<char *>(sym) + delta);
}
template <typename E>
__device__ __forceinline__ const E *coll_at(const E *sym, long long delta) {
    return reinterpret_cast<const E *>(reinterpret_cast<const char *>(sym) + delta);
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_BASE_IMPL_H */
