/*
 * niin/signal.h -- put-with-signal and signal operations on the device.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures. `dest` and `sig_addr` are symmetric; `source` is any memory the calling
 * threads can read; a signal is a uint64_t; sig_op is NVSHMEM_SIGNAL_SET or
 * NVSHMEM_SIGNAL_ADD (any other value is a usage error: printed, then __trap()).
 *
 *   nvshmem_<T>_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe)
 *   nvshmem_put<N>_signal(dest, source, nelems, sig_addr, signal, sig_op, pe)   N = 8 ... 128
 *   nvshmem_putmem_signal(dest, source, bytes, sig_addr, signal, sig_op, pe)
 *   ..._nbi                          the same; the source may be reused after nvshmem_quiet
 *   nvshmemx_..._signal[_nbi]_warp / _block   the same by every thread of a warp / block
 *   nvshmemx_put6_signal[_nbi]_warp / _block  NVSHMEM 3.4.5's headers spell the warp and
 *                                    block forms of put16_signal so (its list of sizes reads
 *                                    8, 6, 32, 64, 128); declared here under that name for
 *                                    the programs written against it, and under the right
 *                                    one. Here both move 16-bit elements (what the name
 *                                    means); NVSHMEM's own put6 moves nelems * (6 / 8) = 0
 *                                    bytes and only signals.
 *   nvshmemx_signal_op(sig_addr, signal, sig_op, pe)   the signal alone
 *   nvshmem_signal_fetch(sig_addr)   this PE's signal word (an acquire load)
 *   nvshmem_signal_wait_until(sig_addr, cmp, cmp_value)   waits until this PE's signal word
 *                                    compares true (NVSHMEM_CMP_EQ ... _GE, niin/wait.h)
 *                                    and returns the value that did
 *
 * T ranges over the 25 RMA types of NIIN_FOR_EACH_RMA_TYPE (niin/types.h).
 *
 * How (niin/impl/signal_impl.h). To this PE and its LSA peers the data moves as a put does
 * (the load/store copy of niin/impl/copy_impl.h), the group synchronizes, then its first
 * thread writes the signal to the peer's signal word: NIIN_PUT_SIGNAL_MODE (the device
 * context's put_signal_mode) picks
 *   fused (0)  a release store (SET) or release atomic add (ADD) at system scope;
 *   split (1)  __threadfence_system(), then a relaxed store or atomic add.
 * Either way a thread that sees the signal with an acquire load (nvshmem_signal_wait_until,
 * the wait and test functions of niin/wait.h, nvshmem_signal_fetch) sees the data. On this
 * path _nbi and blocking forms are complete on return. To other PEs: NCCL GIN
 * (niin/impl/gin_impl.h: the data, then the signal ordered after it; ADD needs NCCL's VA
 * signals, headers >= 2.29.7; a blocking form flushes before returning, an _nbi one leaves
 * that to nvshmem_quiet).
 *
 * nvshmemx_signal_op is NVSHMEM's as well: a relaxed store or atomic add for this PE and
 * LSA peers (it orders nothing before it: put, nvshmem_fence, then signal_op, for that).
 * NVSHMEM also declares it for host code; libnvshmem_host has no host nvshmemx_signal_op
 * yet, so it is __device__ here (niin/config.h: undeclared rather than unlinkable).
 *
 * NOT_IMPLEMENTED policy (niin/not_implemented.h), for PEs outside the LSA team only: as for
 * a put (niin/rma.h), and a signal with headers older than 2.29.7 (no VA signals).
 */
#ifndef NIIN_SIGNAL_H
#define NIIN_SIGNAL_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

NIIN_BEGIN_C_DECLS

/* ---- one thread -------------------------------------------------------------------- */

#define NIIN_DECLARE_TYPED_PUT_SIGNAL(NAME, TYPE)                                              \
    __device__ void nvshmem_##NAME##_put_signal(TYPE *dest, const TYPE *source, size_t nelems, \
                                                uint64_t *sig_addr, uint64_t signal,           \
                                                int sig_op, int pe);                           \
    __device__ void nvshmem_##NAME##_put_signal_nbi(TYPE *dest, const TYPE *source,            \
                                                    size_t nelems, uint64_t *sig_addr,         \
                                                    uint64_t signal, int sig_op, int pe);
NIIN_FOR_EACH_RMA_TYPE(NIIN_DECLARE_TYPED_PUT_SIGNAL)
#undef NIIN_DECLARE_TYPED_PUT_SIGNAL

#define NIIN_DECLARE_SIZED_PUT_SIGNAL(BITS, TYPE)                                              \
    __device__ void nvshmem_put##BITS##_signal(void *dest, const void *source, size_t nelems, \
                                               uint64_t *sig_addr, uint64_t signal,           \
                                               int sig_op, int pe);                           \
    __device__ void nvshmem_put##BITS##_signal_nbi(void *dest, const void *source,            \
                                                   size_t nelems, uint64_t *sig_addr,         \
                                                   uint64_t signal, int sig_op, int pe);
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_SIZED_PUT_SIGNAL)
#undef NIIN_DECLARE_SIZED_PUT_SIGNAL

__device__ void nvshmem_putmem_signal(void *dest, const void *source, size_t bytes,
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
__device__ void nvshmem_putmem_signal_nbi(void *dest, const void *source, size_t bytes,
                                          uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

/* ---- a warp or a block ----------------------------------------------------------------- */

#define NIIN_DECLARE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, SCOPE)                              \
    __device__ void nvshmemx_##NAME##_put_signal_##SCOPE(TYPE *dest, const TYPE *source,       \
                                                         size_t nelems, uint64_t *sig_addr,    \
                                                         uint64_t signal, int sig_op, int pe); \
    __device__ void nvshmemx_##NAME##_put_signal_nbi_##SCOPE(                                  \
        TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,    \
        int sig_op, int pe);
#define NIIN_DECLARE_TG_TYPED_PUT_SIGNAL(NAME, TYPE)          \
    NIIN_DECLARE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, warp) \
    NIIN_DECLARE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, block)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DECLARE_TG_TYPED_PUT_SIGNAL)
#undef NIIN_DECLARE_TG_TYPED_PUT_SIGNAL
#undef NIIN_DECLARE_TG_TYPED_PUT_SIGNAL_SCOPE

/* NAME: the size as it appears in the function's name (6: NVSHMEM's spelling of 16). */
#define NIIN_DECLARE_TG_SIZED_PUT_SIGNAL_SCOPE(NAME, SCOPE)                                   \
    __device__ void nvshmemx_put##NAME##_signal_##SCOPE(void *dest, const void *source,       \
                                                        size_t nelems, uint64_t *sig_addr,    \
                                                        uint64_t signal, int sig_op, int pe); \
    __device__ void nvshmemx_put##NAME##_signal_nbi_##SCOPE(void *dest, const void *source,   \
                                                            size_t nelems, uint64_t *sig_addr, \
                                                            uint64_t signal, int sig_op, int pe);
#define NIIN_DECLARE_TG_SIZED_PUT_SIGNAL(BITS, TYPE)          \
    NIIN_DECLARE_TG_SIZED_PUT_SIGNAL_SCOPE(BITS, warp)       \
    NIIN_DECLARE_TG_SIZED_PUT_SIGNAL_SCOPE(BITS, block)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_TG_SIZED_PUT_SIGNAL)
NIIN_DECLARE_TG_SIZED_PUT_SIGNAL(6, int16_t)
#undef NIIN_DECLARE_TG_SIZED_PUT_SIGNAL
#undef NIIN_DECLARE_TG_SIZED_PUT_SIGNAL_SCOPE

#define NIIN_DECLARE_TG_MEM_PUT_SIGNAL(SCOPE)                                                  \
    __device__ void nvshmemx_putmem_signal_##SCOPE(void *dest, const void *source,             \
                                                   size_t bytes, uint64_t *sig_addr,           \
                                                   uint64_t signal, int sig_op, int pe);       \
    __device__ void nvshmemx_putmem_signal_nbi_##SCOPE(void *dest, const void *source,         \
                                                       size_t bytes, uint64_t *sig_addr,       \
                                                       uint64_t signal, int sig_op, int pe);
NIIN_DECLARE_TG_MEM_PUT_SIGNAL(warp)
NIIN_DECLARE_TG_MEM_PUT_SIGNAL(block)
#undef NIIN_DECLARE_TG_MEM_PUT_SIGNAL

/* ---- the signal alone -------------------------------------------------------------------- */

__device__ void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
/* Also a host function of libnvshmem_host (niin/host_api.h). */
NIIN_HOSTDEVICE uint64_t nvshmem_signal_fetch(uint64_t *sig_addr);
__device__ uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

NIIN_END_C_DECLS

#include "niin/impl/signal_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_SIGNAL_H */
