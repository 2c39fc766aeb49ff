/*
 * niin/threadgroup.h -- put and get by a whole warp or block (NVSHMEM's nvshmemx_*_warp
 * and nvshmemx_*_block).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h (as in NVSHMEM,
 * whose nvshmem.h includes the nvshmemx device functions too). NVSHMEM 3.4.5's
 * signatures; every thread of the warp (block) calls with the same arguments.
 *
 *   nvshmemx_<T>_put_<scope> / _get_<scope>(dest, source, nelems, pe)
 *   nvshmemx_put<N>_<scope> / get<N>_<scope>(dest, source, nelems, pe)   N = 8 ... 128
 *   nvshmemx_putmem_<scope> / getmem_<scope>(dest, source, bytes, pe)
 *   ..._nbi_<scope>                                                       the same, _nbi
 *
 * scope is warp or block (blocks of any shape: 1-, 2- or 3-D). Self and LSA peers: one
 * cooperative, vectorized copy (aligned 16-byte body with several loads in flight per
 * thread, unaligned head and tail; a narrower word when source and destination disagree
 * modulo 16): niin/impl/copy_impl.h. Other PEs: one GIN put/get issued for the group
 * (NCCL's coop argument; a 2-D or 3-D block issues it from its first thread, since
 * ncclCoopCta counts 1-D blocks only). The group is synchronized on entry and on exit
 * (__syncwarp / __syncthreads), so a get's destination is complete for every thread of it
 * when the call returns. What goes to the
 * NOT_IMPLEMENTED policy: as in niin/rma.h.
 */
#ifndef NIIN_THREADGROUP_H
#define NIIN_THREADGROUP_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

NIIN_BEGIN_C_DECLS

#define NIIN_DECLARE_TG_TYPED_SCOPE(NAME, TYPE, SCOPE)                                       \
    __device__ void nvshmemx_##NAME##_put_##SCOPE(TYPE *dest, const TYPE *source, size_t nelems, \
                                                  int pe);                                   \
    __device__ void nvshmemx_##NAME##_get_##SCOPE(TYPE *dest, const TYPE *source, size_t nelems, \
                                                  int pe);                                   \
    __device__ void nvshmemx_##NAME##_put_nbi_##SCOPE(TYPE *dest, const TYPE *source,         \
                                                      size_t nelems, int pe);                 \
    __device__ void nvshmemx_##NAME##_get_nbi_##SCOPE(TYPE *dest, const TYPE *source,         \
                                                      size_t nelems, int pe);
#define NIIN_DECLARE_TG_TYPED(NAME, TYPE)         \
    NIIN_DECLARE_TG_TYPED_SCOPE(NAME, TYPE, warp) \
    NIIN_DECLARE_TG_TYPED_SCOPE(NAME, TYPE, block)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DECLARE_TG_TYPED)
#undef NIIN_DECLARE_TG_TYPED
#undef NIIN_DECLARE_TG_TYPED_SCOPE

#define NIIN_DECLARE_TG_SIZED_SCOPE(BITS, SCOPE)                                                \
    __device__ void nvshmemx_put##BITS##_##SCOPE(void *dest, const void *source, size_t nelems, \
                                                 int pe);                                       \
    __device__ void nvshmemx_get##BITS##_##SCOPE(void *dest, const void *source, size_t nelems, \
                                                 int pe);                                       \
    __device__ void nvshmemx_put##BITS##_nbi_##SCOPE(void *dest, const void *source,            \
                                                     size_t nelems, int pe);                    \
    __device__ void nvshmemx_get##BITS##_nbi_##SCOPE(void *dest, const void *source,            \
                                                     size_t nelems, int pe);
#define NIIN_DECLARE_TG_SIZED(BITS, TYPE)    \
    NIIN_DECLARE_TG_SIZED_SCOPE(BITS, warp) \
    NIIN_DECLARE_TG_SIZED_SCOPE(BITS, block)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_TG_SIZED)
#undef NIIN_DECLARE_TG_SIZED
#undef NIIN_DECLARE_TG_SIZED_SCOPE

#define NIIN_DECLARE_TG_MEM(SCOPE)                                                             \
    __device__ void nvshmemx_putmem_##SCOPE(void *dest, const void *source, size_t bytes,      \
                                            int pe);                                           \
    __device__ void nvshmemx_getmem_##SCOPE(void *dest, const void *source, size_t bytes,      \
                                            int pe);                                           \
    __device__ void nvshmemx_putmem_nbi_##SCOPE(void *dest, const void *source, size_t bytes,  \
                                                int pe);                                       \
    __device__ void nvshmemx_getmem_nbi_##SCOPE(void *dest, const void *source, size_t bytes,  \
                                                int pe);
NIIN_DECLARE_TG_MEM(warp)
NIIN_DECLARE_TG_MEM(block)
#undef NIIN_DECLARE_TG_MEM

NIIN_END_C_DECLS

#include "niin/impl/threadgroup_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_THREADGROUP_H */
