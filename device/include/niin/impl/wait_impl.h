/*
 * niin/impl/wait_impl.h -- the polling behind niin/wait.h and nvshmem_signal_wait_until, and
 * the bodies of niin/wait.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * One implementation per form, templated on the element type and on where the comparison
 * value comes from (OneValue: the same for every element; EachValue: cmp_values[i], the
 * _vector forms). All inline: the loops are short, and out-of-line bodies cost registers
 * instead of saving them -- ptxas allocates registers across a kernel and its direct callees
 * (call_out_of_line in common_impl.h says more), and with the array forms __noinline__ a
 * kernel calling the 14 x 12 of them (tests/device/compile_signal_wait.cu) took 254
 * registers; inline, 31.
 *
 * Memory model: every read of an element is load_acquire (ld.acquire.sys), so the read that
 * finds an element satisfied is itself the acquire that pairs with the writer's release (the
 * signal of a put-with-signal, niin/impl/signal_impl.h; or a relaxed write after the writer's
 * fence): what the writer ordered before it is visible to this thread when the function
 * returns. Each is an asm volatile with a memory clobber, so the compiler issues it again on
 * every iteration and keeps the caller's own earlier accesses before it. status and
 * cmp_values are plain loads: NVSHMEM (and OpenSHMEM) require them unchanged during the call.
 *
 * The loops over the elements are not unrolled (#pragma unroll 1): with a constant nelems
 * (8) the compiler unrolled wait_until_any_vector's scan and kept every element's addresses
 * live around the polling loop, 72 registers for a kernel of tests/gpu/conf_signal_wait.cu.
 */
#ifndef NIIN_IMPL_WAIT_IMPL_H
#define NIIN_IMPL_WAIT_IMPL_H

#include "niin/impl/common_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

constexpr const char *kBadCmp =
    "cmp must be NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE, NVSHMEM_CMP_GT, NVSHMEM_CMP_GE, NVSHMEM_CMP_LT "
    "or NVSHMEM_CMP_LE";

/* An acquire load at system scope of the 2-, 4- or 8-byte word at p (generic address: this
 * PE's global memory, normally). */
__device__ __forceinline__ uint16_t load_acquire_bits(const uint16_t *p) {
    uint16_t v;
    asm volatile("ld.acquire.sys.b16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint32_t load_acquire_bits(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t load_acquire_bits(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

template <typename T>
__device__ __forceinline__ T load_acquire(const T *p) {
    using U = typename uint_of_size<sizeof(T)>::type;
    return from_bits<T>(load_acquire_bits(reinterpret_cast<const U *>(p)));
}

/* A cmp outside NVSHMEM's six comparisons is a usage error (NVSHMEM 3.4.5 would return at
 * once from a wait, 0 from a test: a wait that means nothing). */
__device__ __forceinline__ void require_cmp(const char *fn, int cmp) {
    if (static_cast<unsigned int>(cmp) > static_cast<unsigned int>(NVSHMEM_CMP_GE))
        usage_error(fn, kBadCmp);
}

/* Whether `v <cmp> value` holds (cmp already checked). */
template <typename T>
__device__ __forceinline__ bool satisfies(T v, int cmp, T value) {
    switch (cmp) {
    case NVSHMEM_CMP_EQ: return v == value;
    case NVSHMEM_CMP_NE: return v != value;
    case NVSHMEM_CMP_GT: return v > value;
    case NVSHMEM_CMP_LE: return v <= value;
    case NVSHMEM_CMP_LT: return v < value;
    default: return v >= value; /* NVSHMEM_CMP_GE */
    }
}

/* The comparison value of element i. */
template <typename T>
struct OneValue {
    T value;
    __device__ __forceinline__ T operator[](size_t) const { return value; }
};
template <typename T>
struct EachValue {
    const T *values;
    __device__ __forceinline__ T operator[](size_t i) const { return values[i]; }
};

/* Whether element i takes part (status NULL, or status[i] == 0). */
__device__ __forceinline__ bool included(const int *status, size_t i) {
    return status == nullptr || status[i] == 0;
}

/* Polls `ivar` until it satisfies; returns the value that did. */
template <typename T>
__device__ __forceinline__ T wait_value(const T *ivar, int cmp, T value) {
    T v;
    do {
        v = load_acquire(ivar);
    } while (!satisfies(v, cmp, value));
    return v;
}

/* nvshmem_<T>_wait_until and nvshmem_signal_wait_until. */
template <typename T>
__device__ __forceinline__ T wait_until(const char *fn, const T *ivar, int cmp, T value) {
    require_cmp(fn, cmp);
    return wait_value(ivar, cmp, value);
}

/* nvshmem_<T>_test. */
template <typename T>
__device__ __forceinline__ int test(const char *fn, const T *ivar, int cmp, T value) {
    require_cmp(fn, cmp);
    return satisfies(load_acquire(ivar), cmp, value) ? 1 : 0;
}

/* wait_until_all[_vector]: each included element in turn. */
template <typename T, typename V>
__device__ __forceinline__ void wait_until_all(const char *fn, const T *ivars, size_t n,
                                            const int *status, int cmp, V values) {
    require_cmp(fn, cmp);
#pragma unroll 1
    for (size_t i = 0; i < n; ++i)
        if (included(status, i)) wait_value(ivars + i, cmp, values[i]);
}

/* test_all[_vector]. */
template <typename T, typename V>
__device__ __forceinline__ int test_all(const char *fn, const T *ivars, size_t n, const int *status,
                                     int cmp, V values) {
    require_cmp(fn, cmp);
#pragma unroll 1
    for (size_t i = 0; i < n; ++i)
        if (included(status, i) && !satisfies(load_acquire(ivars + i), cmp, values[i])) return 0;
    return 1;
}

/* One scan of the n elements from index `start` on, wrapping around: the first included
 * element that satisfies, or SIZE_MAX; `any_included` tells an empty set apart. */
template <typename T, typename V>
__device__ __forceinline__ size_t scan_any(const T *ivars, size_t n, const int *status, int cmp,
                                           V values, size_t start, bool &any_included) {
    size_t i = start;
#pragma unroll 1
    for (size_t k = 0; k < n; ++k) {
        if (included(status, i)) {
            any_included = true;
            if (satisfies(load_acquire(ivars + i), cmp, values[i])) return i;
        }
        if (++i == n) i = 0;
    }
    return SIZE_MAX;
}

/* Where an _any scan starts: an index in [0, n) from the SM clock, so that repeated calls do
 * not always favour the lowest satisfied index. Scaled by a multiply (the clock spread over 64
 * bits by Fibonacci hashing, then the high half of its product with n) rather than `% n`, a
 * 64-bit remainder (a division subroutine). */
__device__ __forceinline__ size_t any_start(size_t n) {
    const unsigned long long spread =
        static_cast<unsigned long long>(clock64()) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(__umul64hi(spread, static_cast<unsigned long long>(n)));
}

/* test_any[_vector]. */
template <typename T, typename V>
__device__ __forceinline__ size_t test_any(const char *fn, const T *ivars, size_t n,
                                        const int *status, int cmp, V values) {
    require_cmp(fn, cmp);
    bool any_included = false;
    return scan_any(ivars, n, status, cmp, values, any_start(n), any_included);
}

/* wait_until_any[_vector]: scans until one satisfies; SIZE_MAX at once for an empty set. */
template <typename T, typename V>
__device__ __forceinline__ size_t wait_until_any(const char *fn, const T *ivars, size_t n,
                                              const int *status, int cmp, V values) {
    require_cmp(fn, cmp);
    const size_t start = any_start(n);
    for (;;) {
        bool any_included = false;
        const size_t i = scan_any(ivars, n, status, cmp, values, start, any_included);
        if (i != SIZE_MAX || !any_included) return i;
    }
}

/* One scan of all n elements: the indices of those included that satisfy, in increasing
 * order, and their count. */
template <typename T, typename V>
__device__ __forceinline__ size_t scan_some(const T *ivars, size_t n, size_t *indices,
                                            const int *status, int cmp, V values,
                                            bool &any_included) {
    size_t count = 0;
#pragma unroll 1
    for (size_t i = 0; i < n; ++i) {
        if (!included(status, i)) continue;
        any_included = true;
        if (satisfies(load_acquire(ivars + i), cmp, values[i])) indices[count++] = i;
    }
    return count;
}

/* test_some[_vector]. */
template <typename T, typename V>
__device__ __forceinline__ size_t test_some(const char *fn, const T *ivars, size_t n,
                                         size_t *indices, const int *status, int cmp, V values) {
    require_cmp(fn, cmp);
    bool any_included = false;
    return scan_some(ivars, n, indices, status, cmp, values, any_included);
}

/* wait_until_some[_vector]: scans until one scan finds at least one; 0 at once for an empty
 * set. */
template <typename T, typename V>
__device__ __forceinline__ size_t wait_until_some(const char *fn, const T *ivars, size_t n,
                                               size_t *indices, const int *status, int cmp,
                                               V values) {
    require_cmp(fn, cmp);
    for (;;) {
        bool any_included = false;
        const size_t count = scan_some(ivars, n, indices, status, cmp, values, any_included);
        if (count > 0 || !any_included) return count;
    }
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions of niin/wait.h --------------------------------------------- */

NIIN_BEGIN_C_DECLS

#define NIIN_DEFINE_WAIT(NAME, TYPE)                                                            \
    NIIN_DEVICE void nvshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value) {         \
        niin::detail::wait_until<TYPE>("nvshmem_" #NAME "_wait_until", ivar, cmp, cmp_value);   \
    }                                                                                           \
    NIIN_DEVICE void nvshmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems,                \
                                                     const int *status, int cmp,                \
                                                     TYPE cmp_value) {                          \
        niin::detail::wait_until_all<TYPE>("nvshmem_" #NAME "_wait_until_all", ivars, nelems,   \
                                           status, cmp,                                         \
                                           niin::detail::OneValue<TYPE>{cmp_value});            \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems,              \
                                                       const int *status, int cmp,              \
                                                       TYPE cmp_value) {                        \
        return niin::detail::wait_until_any<TYPE>("nvshmem_" #NAME "_wait_until_any", ivars,    \
                                                  nelems, status, cmp,                          \
                                                  niin::detail::OneValue<TYPE>{cmp_value});     \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems,             \
                                                        size_t *indices, const int *status,     \
                                                        int cmp, TYPE cmp_value) {              \
        return niin::detail::wait_until_some<TYPE>("nvshmem_" #NAME "_wait_until_some", ivars,  \
                                                   nelems, indices, status, cmp,                \
                                                   niin::detail::OneValue<TYPE>{cmp_value});    \
    }                                                                                           \
    NIIN_DEVICE void nvshmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems,         \
                                                            const int *status, int cmp,         \
                                                            TYPE *cmp_values) {                 \
        niin::detail::wait_until_all<TYPE>("nvshmem_" #NAME "_wait_until_all_vector", ivars,    \
                                           nelems, status, cmp,                                 \
                                           niin::detail::EachValue<TYPE>{cmp_values});          \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems,       \
                                                              const int *status, int cmp,       \
                                                              TYPE *cmp_values) {               \
        return niin::detail::wait_until_any<TYPE>("nvshmem_" #NAME "_wait_until_any_vector",    \
                                                  ivars, nelems, status, cmp,                   \
                                                  niin::detail::EachValue<TYPE>{cmp_values});   \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_wait_until_some_vector(                                 \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp,                \
        TYPE *cmp_values) {                                                                     \
        return niin::detail::wait_until_some<TYPE>("nvshmem_" #NAME "_wait_until_some_vector",  \
                                                   ivars, nelems, indices, status, cmp,         \
                                                   niin::detail::EachValue<TYPE>{cmp_values});  \
    }                                                                                           \
    NIIN_DEVICE int nvshmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value) {                \
        return niin::detail::test<TYPE>("nvshmem_" #NAME "_test", ivar, cmp, cmp_value);        \
    }                                                                                           \
    NIIN_DEVICE int nvshmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status,    \
                                              int cmp, TYPE cmp_value) {                        \
        return niin::detail::test_all<TYPE>("nvshmem_" #NAME "_test_all", ivars, nelems,        \
                                            status, cmp,                                        \
                                            niin::detail::OneValue<TYPE>{cmp_value});           \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, \
                                                 int cmp, TYPE cmp_value) {                     \
        return niin::detail::test_any<TYPE>("nvshmem_" #NAME "_test_any", ivars, nelems,        \
                                            status, cmp,                                        \
                                            niin::detail::OneValue<TYPE>{cmp_value});           \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,  \
                                                  const int *status, int cmp, TYPE cmp_value) { \
        return niin::detail::test_some<TYPE>("nvshmem_" #NAME "_test_some", ivars, nelems,      \
                                             indices, status, cmp,                              \
                                             niin::detail::OneValue<TYPE>{cmp_value});          \
    }                                                                                           \
    NIIN_DEVICE int nvshmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems,                \
                                                     const int *status, int cmp,                \
                                                     TYPE *cmp_values) {                        \
        return niin::detail::test_all<TYPE>("nvshmem_" #NAME "_test_all_vector", ivars, nelems, \
                                            status, cmp,                                        \
                                            niin::detail::EachValue<TYPE>{cmp_values});         \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,             \
                                                        const int *status, int cmp,             \
                                                        TYPE *cmp_values) {                     \
        return niin::detail::test_any<TYPE>("nvshmem_" #NAME "_test_any_vector", ivars, nelems, \
                                            status, cmp,                                        \
                                            niin::detail::EachValue<TYPE>{cmp_values});         \
    }                                                                                           \
    NIIN_DEVICE size_t nvshmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems,            \
                                                         size_t *indices, const int *status,    \
                                                         int cmp, TYPE *cmp_values) {           \
        return niin::detail::test_some<TYPE>("nvshmem_" #NAME "_test_some_vector", ivars,       \
                                             nelems, indices, status, cmp,                      \
                                             niin::detail::EachValue<TYPE>{cmp_values});        \
    }
NIIN_FOR_EACH_WAIT_TYPE(NIIN_DEFINE_WAIT)
#undef NIIN_DEFINE_WAIT

NIIN_END_C_DECLS

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_WAIT_IMPL_H */
