/*
 * niin/rma.h -- device-initiated remote memory access: put and get, for one thread.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM
 * 3.4.5's signatures. `dest` of a put and `source` of a get are symmetric (in the
 * symmetric heap); the other side is any memory the calling thread can read or write.
 * Warp and block forms: niin/threadgroup.h.
 *
 *   nvshmem_<T>_p(dest, value, pe)              one element
 *   nvshmem_<T>_g(source, pe)                   one element, returned
 *   nvshmem_<T>_put / _get(dest, source, nelems, pe)
 *   nvshmem_put<N> / get<N>(dest, source, nelems, pe)    N = 8, 16, 32, 64, 128 bits
 *   nvshmem_putmem / getmem(dest, source, bytes, pe)
 *   ..._nbi                                      the same, completion at nvshmem_quiet
 *
 * T ranges over the 25 standard RMA types of NIIN_FOR_EACH_RMA_TYPE (niin/types.h).
 *
 * How the bytes move (niin/impl/common_impl.h): to this PE and LSA peers by loads and
 * stores, so blocking and _nbi forms are complete when they return; to other PEs by NCCL
 * GIN between heap windows (NCCL >= 2.28.7; get >= 2.30.3): a blocking put or get flushes
 * the GIN context before returning, an _nbi one leaves that to nvshmem_quiet.
 *
 * NOT_IMPLEMENTED policy (niin/not_implemented.h), for PEs outside the LSA team only:
 *   - nvshmem_<T>_g: GIN has no get that returns a value (NIIN does the same);
 *   - a put whose source, or a get whose destination, is outside the symmetric heap
 *     (GIN moves bytes between registered windows);
 *   - any get with NCCL headers older than 2.30.3, anything with headers older than
 *     2.28.7 (no GIN), and a devComm created without GIN.
 */
#ifndef NIIN_RMA_H
#define NIIN_RMA_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

/* Declared in niin/host_device.h: every function of this file is a host function too. */
#include "niin/host_device.h"

#include "niin/impl/rma_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_RMA_H */
