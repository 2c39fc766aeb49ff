/*
 * niin/impl/amo_impl.h -- bodies of niin/amo.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * niin::detail::amo<Op>(fn, dest, value, cond, pe) does every AMO: the target's load/store
 * address from the routing cache (cached_route), then one instruction on the same-size
 * unsigned word (amo_at): CUDA has its system-scope atomics for unsigned int and unsigned
 * long long, and a signed or floating-point T goes through its bits. Any other target goes to
 * the out-of-line remote_amo (a large LSA team's table; else checks, then the
 * NOT_IMPLEMENTED policy) through call_out_of_line_direct, so its checks and messages stay
 * out of the caller's code.
 */
#ifndef NIIN_IMPL_AMO_IMPL_H
#define NIIN_IMPL_AMO_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/gin_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* The instructions behind the public operations (inc is add 1; the non-fetching forms drop
 * the result). */
enum class AmoOp { fetch, set, swap, compare_swap, add, bit_and, bit_or, bit_xor };

/* The word an AMO of a 4- or 8-byte T operates on. */
template <int Bytes>
struct amo_word;
template <>
struct amo_word<4> {
    using type = unsigned int;
};
template <>
struct amo_word<8> {
    using type = unsigned long long;
};
template <typename T>
using amo_word_t = typename amo_word<sizeof(T)>::type;

template <typename T>
__device__ __forceinline__ amo_word_t<T> amo_bits(T v) {
    amo_word_t<T> u;
    memcpy(&u, &v, sizeof(T));
    return u;
}

template <typename T>
__device__ __forceinline__ T amo_value(amo_word_t<T> u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

/* Relaxed system-scope load and store (atomic for an aligned 4- or 8-byte word). The
 * "memory" clobber keeps the compiler from moving other memory accesses across them, as it
 * does not across the atomic intrinsics. */
__device__ __forceinline__ unsigned int load_relaxed_sys(const unsigned int *p) {
    unsigned int v;
    asm volatile("ld.relaxed.sys.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long load_relaxed_sys(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_relaxed_sys(unsigned int *p, unsigned int v) {
    asm volatile("st.relaxed.sys.b32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_relaxed_sys(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.sys.b64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

/* One AMO on the word at load/store address `p`; returns the old word (set: 0). */
template <AmoOp Op, typename U>
__device__ __forceinline__ U amo_at(U *p, U value, U cond) {
    (void)value;
    (void)cond;
    if constexpr (Op == AmoOp::fetch) {
        return load_relaxed_sys(p);
    } else if constexpr (Op == AmoOp::set) {
        store_relaxed_sys(p, value);
        return 0;
    } else if constexpr (Op == AmoOp::swap) {
        return atomicExch_system(p, value);
    } else if constexpr (Op == AmoOp::compare_swap) {
        return atomicCAS_system(p, cond, value);
    } else if constexpr (Op == AmoOp::add) {
        return atomicAdd_system(p, value);
    } else if constexpr (Op == AmoOp::bit_and) {
        return atomicAnd_system(p, value);
    } else if constexpr (Op == AmoOp::bit_or) {
        return atomicOr_system(p, value);
    } else {
        static_assert(Op == AmoOp::bit_xor, "an AmoOp without an instruction");
        return atomicXor_system(p, value);
    }
}

constexpr const char *kNoGinAtomics =
    "the target PE is outside this PE's LSA team, and NCCL GIN has no remote atomic "
    "operations (NCCL 2.28-2.31), so there is no path to it";

/* An AMO on a target the routing cache does not hold: an LSA peer of a team larger than
 * the cache (through lsa_address's table), else the usual target checks (an unset context, a
 * PE outside the job: usage errors, as for put and get), then the policy. Out of line, with
 * the operands, as put's remote_put: the inline side is the cache's hit alone. */
template <AmoOp Op, typename U>
__device__ __noinline__ U remote_amo(const char *fn, const niin_device_context *cp, void *dest,
                                     U value, U cond, int pe) {
    char *d = lsa_address(*cp, dest, pe);
    if (d != nullptr) return amo_at<Op>(reinterpret_cast<U *>(d), value, cond);
    require_target(fn, *cp, pe);
    not_implemented(fn, kNoGinAtomics);
    return 0;
}

/* T itself, in a parameter that does not take part in deducing T (so the bodies below may
 * pass 0 and 1 for any T). */
template <typename T>
struct amo_arg {
    using type = T;
};

/* The AMO `Op` of `value` (compare_swap: stored if the word equals `cond`) on symmetric
 * `dest` at `pe`; returns the old value (set, and the policy's path: T's zero). */
template <AmoOp Op, typename T>
__device__ __forceinline__ T amo(const char *fn, T *dest, typename amo_arg<T>::type value,
                                 typename amo_arg<T>::type cond, int pe) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "NVSHMEM's AMO types are 4 or 8 bytes");
    using U = amo_word_t<T>;
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (r.hit)
        return amo_value<T>(amo_at<Op>(reinterpret_cast<U *>(at_distance(dest, r.delta)),
                                       amo_bits(value), amo_bits(cond)));
    return amo_value<T>(call_out_of_line_direct<&remote_amo<Op, U>>(
        fn, &c, static_cast<void *>(dest), amo_bits(value), amo_bits(cond), pe));
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions ------------------------------------------------------------ */

/* The body of nvshmem_<NAME>_<FN>: the AMO `OP`, with the public name for messages. */
#define NIIN_AMO(OP, NAME, FN, DEST, VALUE, COND, PE) \
    niin::detail::amo<niin::detail::AmoOp::OP>("nvshmem_" #NAME "_" #FN, DEST, VALUE, COND, PE)

/* Every function here is a host function too (niin/host_device.h): device bodies in the
 * device pass only; the host pass calls libnvshmem_host's. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS

#define NIIN_DEFINE_AMO_MOVE(NAME, TYPE)                                                       \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_atomic_fetch(const TYPE *dest, int pe) {              \
        return NIIN_AMO(fetch, NAME, atomic_fetch, const_cast<TYPE *>(dest), 0, 0, pe);        \
    }                                                                                          \
    NIIN_DEVICE_HD void nvshmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe) {          \
        NIIN_AMO(set, NAME, atomic_set, dest, value, 0, pe);                                   \
    }                                                                                          \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe) {         \
        return NIIN_AMO(swap, NAME, atomic_swap, dest, value, 0, pe);                          \
    }
NIIN_FOR_EACH_AMO_STANDARD_TYPE(NIIN_DEFINE_AMO_MOVE)
NIIN_FOR_EACH_AMO_EXTENDED_TYPE(NIIN_DEFINE_AMO_MOVE)
#undef NIIN_DEFINE_AMO_MOVE

#define NIIN_DEFINE_AMO_STANDARD(NAME, TYPE)                                                    \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, \
                                                             int pe) {                          \
        return NIIN_AMO(compare_swap, NAME, atomic_compare_swap, dest, value, cond, pe);        \
    }                                                                                           \
    NIIN_DEVICE_HD void nvshmem_##NAME##_atomic_inc(TYPE *dest, int pe) {                       \
        NIIN_AMO(add, NAME, atomic_inc, dest, 1, 0, pe);                                        \
    }                                                                                           \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe) {                 \
        return NIIN_AMO(add, NAME, atomic_fetch_inc, dest, 1, 0, pe);                           \
    }                                                                                           \
    NIIN_DEVICE_HD void nvshmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe) {           \
        NIIN_AMO(add, NAME, atomic_add, dest, value, 0, pe);                                    \
    }                                                                                           \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe) {     \
        return NIIN_AMO(add, NAME, atomic_fetch_add, dest, value, 0, pe);                       \
    }
NIIN_FOR_EACH_AMO_STANDARD_TYPE(NIIN_DEFINE_AMO_STANDARD)
#undef NIIN_DEFINE_AMO_STANDARD

/* OP, and the names of the non-fetching and fetching functions (spelled out: `and`, `or`
 * and `xor` are operator names in C++, not identifiers to paste). */
#define NIIN_DEFINE_AMO_BITWISE_OP(NAME, TYPE, OP, FN, FETCH_FN)                               \
    NIIN_DEVICE_HD void nvshmem_##NAME##_##FN(TYPE *dest, TYPE value, int pe) {                \
        NIIN_AMO(OP, NAME, FN, dest, value, 0, pe);                                            \
    }                                                                                          \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_##FETCH_FN(TYPE *dest, TYPE value, int pe) {          \
        return NIIN_AMO(OP, NAME, FETCH_FN, dest, value, 0, pe);                               \
    }
#define NIIN_DEFINE_AMO_BITWISE(NAME, TYPE)                                                  \
    NIIN_DEFINE_AMO_BITWISE_OP(NAME, TYPE, bit_and, atomic_and, atomic_fetch_and)            \
    NIIN_DEFINE_AMO_BITWISE_OP(NAME, TYPE, bit_or, atomic_or, atomic_fetch_or)               \
    NIIN_DEFINE_AMO_BITWISE_OP(NAME, TYPE, bit_xor, atomic_xor, atomic_fetch_xor)
NIIN_FOR_EACH_AMO_BITWISE_TYPE(NIIN_DEFINE_AMO_BITWISE)
#undef NIIN_DEFINE_AMO_BITWISE
#undef NIIN_DEFINE_AMO_BITWISE_OP

NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#undef NIIN_AMO

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_AMO_IMPL_H */
