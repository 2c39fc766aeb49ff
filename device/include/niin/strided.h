/*
 * niin/strided.h -- strided put and get on the device (iput, iget), by a thread, a warp or a
 * block.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures and names; the warp and block forms are called by every thread of the warp
 * (block) with the same arguments. `dest` of an iput and `source` of an iget are symmetric.
 *
 *   nvshmem_<T>_iput / _iget(dest, source, dst, sst, nelems, pe)
 *   nvshmem_iput<N> / iget<N>(dest, source, dst, sst, nelems, pe)        N = 8 ... 128 bits
 *   nvshmemx_<T>_iput_<scope> / _iget_<scope>, nvshmemx_iput<N>_<scope> / iget<N>_<scope>
 *                                                                         scope: warp, block
 *
 * Element i (0 <= i < nelems) goes to dest + i * dst from source + i * sst: strides count
 * elements (of T, or of N bits). As NVSHMEM 3.4.5's device code, any ptrdiff_t is taken as
 * it is (its loop is that very expression): a stride of 1 is contiguous, 0 reads or writes
 * one element nelems times (with dst == 0 a thread's last store lands; within a warp or block
 * it is unspecified which thread's store does), a negative stride walks down from dest or
 * source. Nothing is checked or refused: every address reached must lie in the memory the
 * operand allows (the symmetric heap for the symmetric side), and the two sides must not
 * overlap. (The host's nvshmemx_<T>_iput/iget_on_stream refuse strides below 1 by name;
 * there is no device error channel, and NVSHMEM does not refuse them here.) There are no
 * _nbi forms (NVSHMEM has none): each call is complete when it returns.
 *
 * T ranges over the 25 standard RMA types of NIIN_FOR_EACH_RMA_TYPE (niin/types.h); each
 * element moves as one load and one store of its width, so dest and source are aligned to
 * the element (as NVSHMEM assumes too: a 128-bit element is 16-byte aligned).
 *
 * How (niin/impl/strided_impl.h): the group is synchronized on entry and exit (__syncwarp /
 * __syncthreads; nothing for a thread), as put and get are. Self and LSA peers: thread r of
 * the group moves elements r, r + size, r + 2 size, ... by loads and stores through NCCL's
 * peer pointer. Other PEs: each thread issues a GIN put (get) per element of its share, then
 * completes them (a flush of the CTA's GIN context) before the exit synchronization; the
 * NOT_IMPLEMENTED policy applies as for put and get (niin/rma.h), per element: a local
 * operand outside the symmetric heap, no GIN in these headers or this devComm, a get with
 * NCCL headers older than 2.30.3. (NVSHMEM 3.4.5 itself implements iput/iget on the device
 * only for P2P-reachable PEs.)
 */
#ifndef NIIN_STRIDED_H
#define NIIN_STRIDED_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

/* The thread forms (nvshmem_<T>_iput/iget, nvshmem_iput<N>/iget<N>) are host functions too:
 * declared in niin/host_device.h. */
#include "niin/host_device.h"

NIIN_BEGIN_C_DECLS

/* The warp and block forms. */
#define NIIN_DECLARE_STRIDED_TYPED(NAME, TYPE)                                                 \
    __device__ void nvshmemx_##NAME##_iput_warp(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                                ptrdiff_t sst, size_t nelems, int pe);         \
    __device__ void nvshmemx_##NAME##_iget_warp(TYPE *dest, const TYPE *source, ptrdiff_t dst, \
                                                ptrdiff_t sst, size_t nelems, int pe);         \
    __device__ void nvshmemx_##NAME##_iput_block(TYPE *dest, const TYPE *source,               \
                                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                                                 int pe);                                      \
    __device__ void nvshmemx_##NAME##_iget_block(TYPE *dest, const TYPE *source,               \
                                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                                                 int pe);
NIIN_FOR_EACH_RMA_TYPE(NIIN_DECLARE_STRIDED_TYPED)
#undef NIIN_DECLARE_STRIDED_TYPED

#define NIIN_DECLARE_STRIDED_SIZED(BITS, TYPE)                                                 \
    __device__ void nvshmemx_iput##BITS##_warp(void *dest, const void *source, ptrdiff_t dst,  \
                                               ptrdiff_t sst, size_t nelems, int pe);          \
    __device__ void nvshmemx_iget##BITS##_warp(void *dest, const void *source, ptrdiff_t dst,  \
                                               ptrdiff_t sst, size_t nelems, int pe);          \
    __device__ void nvshmemx_iput##BITS##_block(void *dest, const void *source, ptrdiff_t dst, \
                                                ptrdiff_t sst, size_t nelems, int pe);         \
    __device__ void nvshmemx_iget##BITS##_block(void *dest, const void *source, ptrdiff_t dst, \
                                                ptrdiff_t sst, size_t nelems, int pe);
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_STRIDED_SIZED)
#undef NIIN_DECLARE_STRIDED_SIZED

NIIN_END_C_DECLS

#include "niin/impl/strided_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_STRIDED_H */
