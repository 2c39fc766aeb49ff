/*
 * niin/host_device.h -- the RMA and atomic functions NVSHMEM gives host and device code
 * alike: their one declaration.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by niin/host_api.h (host code,
 * C and C++) and by niin/rma.h, niin/strided.h and niin/amo.h (device code, NVRTC too).
 * NVSHMEM 3.4.5's signatures:
 *
 *   nvshmem_<T>_p / _g / _put / _get / _put_nbi / _get_nbi / _iput / _iget
 *   nvshmem_put<N> / get<N> / put<N>_nbi / get<N>_nbi / iput<N> / iget<N>     N = 8 ... 128
 *   nvshmem_putmem / getmem / putmem_nbi / getmem_nbi
 *   nvshmem_<T>_atomic_<op>
 *
 * for T of NIIN_FOR_EACH_RMA_TYPE (25 types; the AMO type lists for the atomics), in
 * niin/types.h. Under nvcc they are __host__ __device__ (NIIN_HOSTDEVICE): the device pass
 * compiles the headers' inline bodies (niin/impl/rma_impl.h, strided_impl.h, amo_impl.h),
 * the host pass calls the library's functions (niin-ffi: rma.rs, rma_typed.rs, amo.rs). In C
 * and host C++ they are the library's functions. half and __nv_bfloat16 forms where the
 * types exist: CUDA C++, and host C++ that finds CUDA's headers (NIIN_HAVE_FP16_TYPES,
 * niin/host_api.h); C has neither type.
 *
 * The host side (niin-ffi): a put returns when `source` may be reused and a get when `dest`
 * holds the data, the _nbi forms included; strides below 1 are refused by name (the device
 * takes any stride, as NVSHMEM's device code does: niin/strided.h); atomics reach this PE
 * and every PE the transport reaches (on NCCL, this PE and its LSA peers).
 */
#ifndef NIIN_HOST_DEVICE_H
#define NIIN_HOST_DEVICE_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__) || defined(NIIN_HAVE_FP16_TYPES)
#define NIIN_HD_FP16(LIST, X) LIST(X)
#else
#define NIIN_HD_FP16(LIST, X)
#endif

NIIN_BEGIN_C_DECLS

NIIN_HOSTDEVICE void nvshmem_putmem(void *dest, const void *source, size_t bytes, int pe);
NIIN_HOSTDEVICE void nvshmem_getmem(void *dest, const void *source, size_t bytes, int pe);
NIIN_HOSTDEVICE void nvshmem_putmem_nbi(void *dest, const void *source, size_t bytes, int pe);
NIIN_HOSTDEVICE void nvshmem_getmem_nbi(void *dest, const void *source, size_t bytes, int pe);

#define NIIN_DECLARE_HD_TYPED_RMA(NAME, TYPE)                                                 \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_p(TYPE *dest, const TYPE value, int pe);            \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_g(const TYPE *source, int pe);                      \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems,  \
                                              int pe);                                        \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems,  \
                                              int pe);                                        \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source,             \
                                                  size_t nelems, int pe);                     \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source,             \
                                                  size_t nelems, int pe);                     \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                               ptrdiff_t sst, size_t nelems, int pe);         \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                               ptrdiff_t sst, size_t nelems, int pe);
NIIN_HD_FP16(NIIN_FOR_EACH_RMA_TYPE_FP16, NIIN_DECLARE_HD_TYPED_RMA)
NIIN_FOR_EACH_RMA_TYPE_PLAIN(NIIN_DECLARE_HD_TYPED_RMA)
#undef NIIN_DECLARE_HD_TYPED_RMA

#define NIIN_DECLARE_HD_SIZED_RMA(BITS, TYPE)                                                 \
    NIIN_HOSTDEVICE void nvshmem_put##BITS(void *dest, const void *source, size_t nelems,     \
                                           int pe);                                           \
    NIIN_HOSTDEVICE void nvshmem_get##BITS(void *dest, const void *source, size_t nelems,     \
                                           int pe);                                           \
    NIIN_HOSTDEVICE void nvshmem_put##BITS##_nbi(void *dest, const void *source,              \
                                                 size_t nelems, int pe);                      \
    NIIN_HOSTDEVICE void nvshmem_get##BITS##_nbi(void *dest, const void *source,              \
                                                 size_t nelems, int pe);                      \
    NIIN_HOSTDEVICE void nvshmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,    \
                                            ptrdiff_t sst, size_t nelems, int pe);            \
    NIIN_HOSTDEVICE void nvshmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,    \
                                            ptrdiff_t sst, size_t nelems, int pe);
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_HD_SIZED_RMA)
#undef NIIN_DECLARE_HD_SIZED_RMA

/* fetch, set, swap: standard and extended types. */
#define NIIN_DECLARE_HD_AMO_MOVE(NAME, TYPE)                                              \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch(const TYPE *dest, int pe);         \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe);     \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe);
NIIN_FOR_EACH_AMO_STANDARD_TYPE(NIIN_DECLARE_HD_AMO_MOVE)
NIIN_FOR_EACH_AMO_EXTENDED_TYPE(NIIN_DECLARE_HD_AMO_MOVE)
#undef NIIN_DECLARE_HD_AMO_MOVE

/* compare_swap and the arithmetic: standard types. */
#define NIIN_DECLARE_HD_AMO_STANDARD(NAME, TYPE)                                              \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond,          \
                                                              TYPE value, int pe);            \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_inc(TYPE *dest, int pe);                     \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe);               \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe);         \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe);
NIIN_FOR_EACH_AMO_STANDARD_TYPE(NIIN_DECLARE_HD_AMO_STANDARD)
#undef NIIN_DECLARE_HD_AMO_STANDARD

/* and, or, xor: bitwise types. */
#define NIIN_DECLARE_HD_AMO_BITWISE(NAME, TYPE)                                               \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_and(TYPE *dest, TYPE value, int pe);         \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch_and(TYPE *dest, TYPE value, int pe);   \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_or(TYPE *dest, TYPE value, int pe);          \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch_or(TYPE *dest, TYPE value, int pe);    \
    NIIN_HOSTDEVICE void nvshmem_##NAME##_atomic_xor(TYPE *dest, TYPE value, int pe);         \
    NIIN_HOSTDEVICE TYPE nvshmem_##NAME##_atomic_fetch_xor(TYPE *dest, TYPE value, int pe);
NIIN_FOR_EACH_AMO_BITWISE_TYPE(NIIN_DECLARE_HD_AMO_BITWISE)
#undef NIIN_DECLARE_HD_AMO_BITWISE

NIIN_END_C_DECLS

#undef NIIN_HD_FP16

#endif /* NIIN_HOST_DEVICE_H */
