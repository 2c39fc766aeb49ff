/*
 * niin/impl/gin_impl.h -- the GIN (network) side of every device operation: what a thread,
 * warp or block does for a target PE outside this PE's LSA team.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by the impl headers
 * that route a target (rma_impl.h, and the signal, atomic, strided and team headers).
 *
 * The interface (niin::detail, every function __noinline__ and called through
 * call_out_of_line, so its code stays out of the caller's register allocation; each takes
 * the public function's name for messages and applies the NOT_IMPLEMENTED policy when the
 * operation cannot be done on that path):
 *
 *   gin_put<Coop>(coop, fn, ctx, dest, source, bytes, pe, blocking)
 *   gin_get<Coop>(coop, fn, ctx, dest, source, bytes, pe, blocking)
 *   p_remote<U>(fn, ctx, dest, bits, pe)                       scalar put, U = 1..8 bytes
 *   gin_put_signal<Coop>(coop, fn, ctx, dest, source, bytes, sig_addr, signal, sig_op, pe,
 *                        blocking)                            put, then the signal
 *   gin_signal_op(fn, ctx, sig_addr, signal, sig_op, pe)      the signal alone
 *   gin_quiet(fn, ctx)                                        complete this CTA's GIN work
 */
#ifndef NIIN_IMPL_GIN_IMPL_H
#define NIIN_IMPL_GIN_IMPL_H

#include "niin/impl/common_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* Why a transfer to a PE that only the network reaches cannot be done. */
constexpr const char *kNoGinHeaders =
#if NIIN_NCCL_HAS_GIN
    "the target PE is outside this PE's LSA team, and this CUDA module was compiled with "
    "NIIN_DEVICE_GIN=0 (no GIN path)";
#else
    "the target PE is outside this PE's LSA team, and these NCCL headers (older than 2.28.7) "
    "have no GIN";
#endif
constexpr const char *kNoGinComm =
    "the target PE is outside this PE's LSA team, and this module's NCCL device communicator "
    "has no GIN";
constexpr const char *kGinSourceOutsideHeap =
    "a put to a PE outside the LSA team needs its source in the symmetric heap (NCCL GIN moves "
    "bytes between registered windows)";
constexpr const char *kGinDestOutsideHeap =
    "a get from a PE outside the LSA team needs its destination in the symmetric heap (NCCL GIN "
    "moves bytes between registered windows)";
constexpr const char *kNoGinGet =
    "a get from a PE outside the LSA team needs ncclGin::get, which NCCL has from 2.30.3; these "
    "headers are older";
constexpr const char *kNoScalarGet =
    "a scalar get from a PE outside the LSA team: NCCL GIN has no get that returns a value; "
    "use nvshmem_<T>_get into a symmetric buffer";
constexpr const char *kBadPe = "the target PE is not a PE of this job";

/* The checks of a target that lsa_address did not find (it looks up no others): an unset
 * context (require_init), then a PE outside the job. */
__device__ __forceinline__ void require_target(const char *fn, const niin_device_context &c,
                                               int pe) {
    require_init(fn, c);
    if (pe < 0 || pe >= c.n_pes) usage_error(fn, kBadPe);
}

/* `bytes` from local `source` to symmetric `dest` on a PE outside the LSA team, through
 * GIN. */
template <typename Coop>
__device__ __noinline__ void gin_put(Coop coop, const char *fn, const niin_device_context *cp,
                                        void *dest, const void *source, size_t bytes, int pe,
                                        bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (bytes == 0) return;
#if NIIN_USE_GIN
    if (!c.gin_enabled) return not_implemented(coop, fn, kNoGinComm);
    if (!in_heap(c, source, bytes)) return not_implemented(coop, fn, kGinSourceOutsideHeap);
    with_nccl_coop(coop, [&](auto nccl_coop) {
        ncclGin gin(c.dev_comm, gin_context_index());
        gin.put(ncclTeamWorld(c.dev_comm), pe, c.window, heap_offset(c, dest), c.window,
                heap_offset(c, source), bytes, ncclGin_None{}, ncclGin_None{}, nccl_coop);
        if (blocking) gin.flush(nccl_coop);
    });
#else
    (void)dest;
    (void)source;
    (void)bytes;
    (void)blocking;
    not_implemented(coop, fn, kNoGinHeaders);
#endif
}

/* `bytes` from symmetric `source` on a PE outside the LSA team to local `dest`, through
 * GIN. */
template <typename Coop>
__device__ __noinline__ void gin_get(Coop coop, const char *fn, const niin_device_context *cp,
                                        void *dest, const void *source, size_t bytes, int pe,
                                        bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (bytes == 0) return;
#if NIIN_USE_GIN_GET
    if (!c.gin_enabled) return not_implemented(coop, fn, kNoGinComm);
    if (!in_heap(c, dest, bytes)) return not_implemented(coop, fn, kGinDestOutsideHeap);
    with_nccl_coop(coop, [&](auto nccl_coop) {
        ncclGin gin(c.dev_comm, gin_context_index());
        gin.get(ncclTeamWorld(c.dev_comm), pe, c.window, heap_offset(c, source), c.window,
                heap_offset(c, dest), bytes, nccl_coop);
        if (blocking) gin.flush(nccl_coop);
    });
#else
    (void)dest;
    (void)source;
    (void)bytes;
    (void)blocking;
    not_implemented(coop, fn, NIIN_USE_GIN ? kNoGinGet : kNoGinHeaders);
#endif
}

/* The GIN side of a scalar put: one body per value width (1, 2, 4, 8 bytes). */
template <typename U>
__device__ __noinline__ void p_remote(const char *fn, const niin_device_context *cp, void *dest,
                                      U bits, int pe) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
#if NIIN_USE_GIN
    if (!c.gin_enabled) return not_implemented(fn, kNoGinComm);
    ncclGin gin(c.dev_comm, gin_context_index());
    gin.putValue(ncclTeamWorld(c.dev_comm), pe, c.window, heap_offset(c, dest), bits);
#else
    (void)dest;
    (void)bits;
    not_implemented(fn, kNoGinHeaders);
#endif
}

/* NCCL's VA signal (a 64-bit add at window + offset, ordered after the put it comes with):
 * ncclGin_StrongVASignalAdd from 2.30.7, ncclGin_VASignalAdd in 2.29.7-2.30.3, none
 * before. */
#if NIIN_USE_GIN && NCCL_VERSION_CODE >= 23007
#define NIIN_GIN_VA_SIGNAL 1
using gin_va_signal_add = ncclGin_StrongVASignalAdd;
#elif NIIN_USE_GIN && NCCL_VERSION_CODE >= 22907
#define NIIN_GIN_VA_SIGNAL 1
using gin_va_signal_add = ncclGin_VASignalAdd;
#else
#define NIIN_GIN_VA_SIGNAL 0
#endif

constexpr const char *kNoGinSignal =
    "a signal to a PE outside the LSA team needs NCCL's VA signals (ncclGin_VASignalAdd, NCCL "
    ">= 2.29.7 headers with the GIN path compiled in)";
constexpr const char *kSignalOutsideHeap =
    "the signal word must be a symmetric address (in the symmetric heap)";

/* The signal of a put-with-signal or of nvshmemx_signal_op to a PE outside the LSA team,
 * after `gin` has issued the put (if any). ADD: NCCL's VA signal add (a zero-byte put that
 * carries it when there is no data). SET: GIN has no remote set, so the data is flushed
 * first, then the value is written with putValue (NCCL-VERSIONS.md). */
template <typename NcclCoop>
__device__ __forceinline__ void gin_signal_after(const niin_device_context &c, ncclGin &gin,
                                                 NcclCoop nccl_coop, size_t sig_off,
                                                 uint64_t signal, int sig_op, int pe) {
#if NIIN_GIN_VA_SIGNAL
    if (sig_op == NVSHMEM_SIGNAL_ADD) {
        gin.put(ncclTeamWorld(c.dev_comm), pe, c.window, 0, c.window, 0, 0,
                gin_va_signal_add{c.window, sig_off, signal}, ncclGin_None{}, nccl_coop);
    } else {
        gin.flush(nccl_coop);
        if (nccl_coop.thread_rank() == 0)
            gin.putValue(ncclTeamWorld(c.dev_comm), pe, c.window, sig_off, signal);
    }
#else
    (void)c;
    (void)gin;
    (void)nccl_coop;
    (void)sig_off;
    (void)signal;
    (void)sig_op;
    (void)pe;
#endif
}

/* Put of `bytes` from local `source` to symmetric `dest` on a PE outside the LSA team, then
 * the signal `sig_op` (NVSHMEM_SIGNAL_SET / _ADD) of `signal` at symmetric `sig_addr` there,
 * ordered after the data. blocking: the source may be reused on return (flush). */
template <typename Coop>
__device__ __noinline__ void gin_put_signal(Coop coop, const char *fn,
                                            const niin_device_context *cp, void *dest,
                                            const void *source, size_t bytes, uint64_t *sig_addr,
                                            uint64_t signal, int sig_op, int pe, bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
#if NIIN_GIN_VA_SIGNAL
    if (!c.gin_enabled) return not_implemented(coop, fn, kNoGinComm);
    if (bytes > 0 && !in_heap(c, source, bytes))
        return not_implemented(coop, fn, kGinSourceOutsideHeap);
    if (!in_heap(c, sig_addr, sizeof(uint64_t))) return not_implemented(coop, fn, kSignalOutsideHeap);
    with_nccl_coop(coop, [&](auto nccl_coop) {
        ncclGin gin(c.dev_comm, gin_context_index());
        if (bytes > 0 && sig_op == NVSHMEM_SIGNAL_ADD) {
            gin.put(ncclTeamWorld(c.dev_comm), pe, c.window, heap_offset(c, dest), c.window,
                    heap_offset(c, source), bytes,
                    gin_va_signal_add{c.window, heap_offset(c, sig_addr), signal}, ncclGin_None{},
                    nccl_coop);
        } else {
            if (bytes > 0)
                gin.put(ncclTeamWorld(c.dev_comm), pe, c.window, heap_offset(c, dest), c.window,
                        heap_offset(c, source), bytes, ncclGin_None{}, ncclGin_None{}, nccl_coop);
            gin_signal_after(c, gin, nccl_coop, heap_offset(c, sig_addr), signal, sig_op, pe);
        }
        if (blocking) gin.flush(nccl_coop);
    });
#else
    (void)dest;
    (void)source;
    (void)bytes;
    (void)sig_addr;
    (void)signal;
    (void)sig_op;
    (void)blocking;
    not_implemented(coop, fn, NIIN_USE_GIN ? kNoGinSignal : kNoGinHeaders);
#endif
}

/* nvshmemx_signal_op to a PE outside the LSA team: the signal alone (no data). */
template <int = 0>
__device__ __noinline__ void gin_signal_op(const char *fn, const niin_device_context *cp,
                                           uint64_t *sig_addr, uint64_t signal, int sig_op,
                                           int pe) {
    gin_put_signal(ScopeThread{}, fn, cp, nullptr, nullptr, 0, sig_addr, signal, sig_op, pe,
                   false);
}

/* Completion of this CTA's GIN operations (a flush), for callers that issued several
 * non-blocking GIN operations (strided transfers) and must complete them. */
template <int = 0>
__device__ __noinline__ void gin_quiet(const char *fn, const niin_device_context *cp) {
    const niin_device_context &c = *cp;
    require_init(fn, c);
#if NIIN_USE_GIN
    if (c.gin_enabled) {
        ncclGin gin(c.dev_comm, gin_context_index());
        gin.flush(ncclCoopThread());
    }
#endif
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_GIN_IMPL_H */
