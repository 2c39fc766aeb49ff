/*
 * niin/wait.h -- point-to-point synchronization on the device: wait until, and test whether,
 * words of this PE's memory compare true with given values.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures. `ivar`/`ivars` are this PE's memory (usually symmetric words that other PEs
 * write with puts, atomics or signals); cmp is NVSHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE
 * (niin/types.h; any other value is a usage error: printed, then __trap()), and an element
 * "satisfies" when `ivars[i] <cmp> cmp_value` holds (cmp_values[i] in the _vector forms).
 * `status`, when not NULL, excludes element i where status[i] != 0.
 *
 *   nvshmem_<T>_wait_until(ivar, cmp, cmp_value)                       until it satisfies
 *   nvshmem_<T>_wait_until_all(ivars, nelems, status, cmp, cmp_value)  until every included
 *                                        element does (returns at once when none is included)
 *   nvshmem_<T>_wait_until_any(...)      until one does; returns its index; SIZE_MAX at once
 *                                        when nelems is 0 or every element is excluded
 *   nvshmem_<T>_wait_until_some(ivars, nelems, indices, status, cmp, cmp_value)
 *                                        until at least one does; returns how many satisfied
 *                                        in the scan that found them, their indices in
 *                                        increasing order in `indices`; 0 at once when none
 *                                        is included
 *   nvshmem_<T>_test(ivar, cmp, cmp_value)   1 if it satisfies now, else 0
 *   nvshmem_<T>_test_all / _any / _some(...) the same tests once, without waiting: test_all
 *                                        1 if every included element satisfies (also when
 *                                        none is included), else 0; test_any an index or
 *                                        SIZE_MAX; test_some the count (indices filled)
 *   ..._vector(..., cmp, cmp_values)     the same with one comparison value per element
 *
 * T ranges over NVSHMEM's 14 wait types (NIIN_FOR_EACH_WAIT_TYPE, niin/types.h). NVSHMEM
 * 3.4.5 declares no untyped nvshmem_wait / nvshmem_wait_until for the device, nor any
 * nvshmemx_ form of these, and neither does niin-rs.
 *
 * How (niin/impl/wait_impl.h): every read of an element is an acquire load at system scope
 * (ld.acquire.sys, issued anew every iteration), so once a wait or a successful test
 * returns, whatever the writer ordered before the value it saw -- the data of a
 * put-with-signal, a put before nvshmem_fence -- is visible to the calling thread (to the
 * rest of its block after a __syncthreads()). A plain polling loop, with no back-off. When
 * several elements satisfy, _any returns one of them: its scan starts at an index taken from
 * the SM clock (NVSHMEM rotates the start with a global counter; both keep one element from
 * starving the others).
 */
#ifndef NIIN_WAIT_H
#define NIIN_WAIT_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
NIIN_BEGIN_C_DECLS

#define NIIN_DECLARE_WAIT(NAME, TYPE)                                                          \
    __device__ void nvshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value);          \
    __device__ void nvshmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems,               \
                                                    const int *status, int cmp,               \
                                                    TYPE cmp_value);                          \
    __device__ size_t nvshmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems,             \
                                                      const int *status, int cmp,             \
                                                      TYPE cmp_value);                        \
    __device__ size_t nvshmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems,            \
                                                       size_t *indices, const int *status,    \
                                                       int cmp, TYPE cmp_value);              \
    __device__ void nvshmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems,        \
                                                           const int *status, int cmp,        \
                                                           TYPE *cmp_values);                 \
    __device__ size_t nvshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems,      \
                                                             const int *status, int cmp,      \
                                                             TYPE *cmp_values);               \
    __device__ size_t nvshmem_##NAME##_wait_until_some_vector(                                 \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp,               \
        TYPE *cmp_values);                                                                     \
    __device__ int nvshmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value);                 \
    __device__ int nvshmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status,    \
                                             int cmp, TYPE cmp_value);                         \
    __device__ size_t nvshmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, \
                                                int cmp, TYPE cmp_value);                      \
    __device__ size_t nvshmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,  \
                                                 const int *status, int cmp, TYPE cmp_value);  \
    __device__ int nvshmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems,                \
                                                    const int *status, int cmp,                \
                                                    TYPE *cmp_values);                         \
    __device__ size_t nvshmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,             \
                                                       const int *status, int cmp,             \
                                                       TYPE *cmp_values);                      \
    __device__ size_t nvshmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems,            \
                                                        size_t *indices, const int *status,    \
                                                        int cmp, TYPE *cmp_values);
NIIN_FOR_EACH_WAIT_TYPE(NIIN_DECLARE_WAIT)
#undef NIIN_DECLARE_WAIT

NIIN_END_C_DECLS

#include "niin/impl/wait_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_WAIT_H */
