/*
 * tests/device/compile_amo.cu -- instantiates every function of niin/amo.h (the 144 AMOs:
 * fetch, set, swap for the 12 standard and 2 extended types; compare_swap, inc, fetch_inc,
 * add, fetch_add for the standard types; and, or, xor and their fetch forms for the 7
 * bitwise types) from __global__ kernels without __launch_bounds__, so that
 * scripts/compile-device-headers.sh compiles all of it with warnings as errors (whole
 * program, -rdc=true, -DNIIN_DEVICE_GIN=0). Compiled only (-c).
 *
 * Every typed call comes from the AMO lists of niin/types.h: a function missing for some
 * row fails here. The *_one kernels call one AMO in a loop, as a program would: their
 * register counts (-Xptxas -v) are the cost of an AMO in a caller.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

#define CALL_AMO_MOVE(NAME, TYPE)                                                  \
    {                                                                              \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                   \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                       \
        d[1] = nvshmem_##NAME##_atomic_fetch(s, pe);                               \
        nvshmem_##NAME##_atomic_set(d, s[1], pe);                                  \
        d[2] = nvshmem_##NAME##_atomic_swap(d, s[2], pe);                          \
    }

#define CALL_AMO_STANDARD(NAME, TYPE)                                              \
    {                                                                              \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                   \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                       \
        d[1] = nvshmem_##NAME##_atomic_compare_swap(d, s[0], s[1], pe);            \
        nvshmem_##NAME##_atomic_inc(d, pe);                                        \
        d[2] = nvshmem_##NAME##_atomic_fetch_inc(d, pe);                           \
        nvshmem_##NAME##_atomic_add(d, s[2], pe);                                  \
        d[3] = nvshmem_##NAME##_atomic_fetch_add(d, s[3], pe);                     \
    }

#define CALL_AMO_BITWISE(NAME, TYPE)                                               \
    {                                                                              \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                   \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                       \
        nvshmem_##NAME##_atomic_and(d, s[0], pe);                                  \
        d[1] = nvshmem_##NAME##_atomic_fetch_and(d, s[1], pe);                     \
        nvshmem_##NAME##_atomic_or(d, s[2], pe);                                   \
        d[2] = nvshmem_##NAME##_atomic_fetch_or(d, s[3], pe);                      \
        nvshmem_##NAME##_atomic_xor(d, s[4], pe);                                  \
        d[3] = nvshmem_##NAME##_atomic_fetch_xor(d, s[5], pe);                     \
    }

__global__ void amo_move(char *sym, const char *src, int pe) {
    NIIN_FOR_EACH_AMO_STANDARD_TYPE(CALL_AMO_MOVE)
    NIIN_FOR_EACH_AMO_EXTENDED_TYPE(CALL_AMO_MOVE)
}

__global__ void amo_standard(char *sym, const char *src, int pe) {
    NIIN_FOR_EACH_AMO_STANDARD_TYPE(CALL_AMO_STANDARD)
}

__global__ void amo_bitwise(char *sym, const char *src, int pe) {
    NIIN_FOR_EACH_AMO_BITWISE_TYPE(CALL_AMO_BITWISE)
}

/* One AMO in a loop, as a program would call it. */
__global__ void fetch_add_one(unsigned long long *counter, unsigned long long *out, int n,
                              int pe) {
    unsigned long long sum = 0;
    for (int i = 0; i < n; i++) sum += nvshmem_ulonglong_atomic_fetch_add(counter, 1, pe);
    out[threadIdx.x] = sum;
}

__global__ void compare_swap_one(int *lock, int *out, int pe) {
    while (nvshmem_int_atomic_compare_swap(lock, 0, 1, pe) != 0) {
    }
    out[threadIdx.x] = nvshmem_int_atomic_fetch(lock, pe);
    nvshmem_int_atomic_set(lock, 0, pe);
}

__global__ void fetch_one(const double *sym, double *out, int pe) {
    out[threadIdx.x] = nvshmem_double_atomic_fetch(sym + threadIdx.x, pe);
}
