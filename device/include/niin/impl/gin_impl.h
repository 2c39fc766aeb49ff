/*
 * niin/impl/gin_impl.h -- the GIN (network) side of every device operation: what a thread,
 * warp or block does for a target PE outside this PE's LSA team.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by the impl headers
 * that route a target (rma_impl.h, and the signal, atomic, strided and team headers).
 *
 * None of this runs NCCL's GIN code: each function checks the request and posts it to this
 * module's GIN proxy (niin/impl/gin_proxy_impl.h), whose worker kernel runs ncclGin. The
 * interface (niin::detail, every function __noinline__ and called out of line from the
 * routing paths -- call_out_of_line or call_out_of_line_direct, common_impl.h -- so even its
 * checks and messages stay out of the caller's register allocation; each takes the public
 * function's name for messages and applies the NOT_IMPLEMENTED policy when the operation
 * cannot be done on that path):
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
#include "niin/impl/gin_proxy_impl.h"

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

/* Whether this module can post GIN requests at all: a queue exists (the world needs GIN, or
 * NIIN_GIN_LOOPBACK); otherwise applies the policy with the reason and returns false. */
template <typename Coop>
__device__ __forceinline__ bool gin_ready(Coop coop, const char *fn, const niin_device_context &c) {
    if (c.gin_queue != nullptr && (NIIN_USE_GIN || c.gin_loopback)) return true;
    not_implemented(coop, fn, NIIN_USE_GIN ? kNoGinComm : kNoGinHeaders);
    return false;
}

/* A request with the offsets of this PE's heap. */
__device__ __forceinline__ niin_gin_request gin_request(int op, int pe, bool blocking) {
    niin_gin_request r = {};
    r.op = op;
    r.pe = pe;
    r.flags = blocking ? NIIN_GIN_BLOCKING : 0u;
    return r;
}

/* `bytes` from local `source` to symmetric `dest` on a PE outside the LSA team, through
 * GIN. One thread of the group posts it (after the caller's entry synchronization). */
template <typename Coop>
__device__ __noinline__ void gin_put(Coop coop, const char *fn, const niin_device_context *cp,
                                     void *dest, const void *source, size_t bytes, int pe,
                                     bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (bytes == 0 || !gin_ready(coop, fn, c)) return;
    const bool heap_source = in_heap(c, source, bytes);
    if (!heap_source && !c.gin_loopback)
        return not_implemented(coop, fn, kGinSourceOutsideHeap);
    if (coop.thread_rank() != 0) return;
    niin_gin_request r = gin_request(NIIN_GIN_PUT, pe, blocking);
    r.dest_off = heap_offset(c, dest);
    r.src_off = heap_source ? heap_offset(c, source) : reinterpret_cast<unsigned long long>(source);
    if (!heap_source) r.flags |= NIIN_GIN_ABS_SRC;
    r.bytes = bytes;
    gin_submit(c, r);
}

/* `bytes` from symmetric `source` on a PE outside the LSA team to local `dest`, through
 * GIN. */
template <typename Coop>
__device__ __noinline__ void gin_get(Coop coop, const char *fn, const niin_device_context *cp,
                                     void *dest, const void *source, size_t bytes, int pe,
                                     bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (bytes == 0 || !gin_ready(coop, fn, c)) return;
    if (!NIIN_USE_GIN_GET && !c.gin_loopback)
        return not_implemented(coop, fn, NIIN_USE_GIN ? kNoGinGet : kNoGinHeaders);
    const bool heap_dest = in_heap(c, dest, bytes);
    if (!heap_dest && !c.gin_loopback) return not_implemented(coop, fn, kGinDestOutsideHeap);
    if (coop.thread_rank() != 0) return;
    niin_gin_request r = gin_request(NIIN_GIN_GET, pe, blocking);
    r.dest_off = heap_dest ? heap_offset(c, dest) : reinterpret_cast<unsigned long long>(dest);
    if (!heap_dest) r.flags |= NIIN_GIN_ABS_DEST;
    r.src_off = heap_offset(c, source);
    r.bytes = bytes;
    gin_submit(c, r);
}

/* The GIN side of a scalar put: one body per value width (1, 2, 4, 8 bytes). Not blocking:
 * nvshmem_quiet completes it. */
template <typename U>
__device__ __noinline__ void p_remote(const char *fn, const niin_device_context *cp, void *dest,
                                      U bits, int pe) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (!gin_ready(ScopeThread{}, fn, c)) return;
    niin_gin_request r = gin_request(NIIN_GIN_PUT_VALUE, pe, false);
    r.dest_off = heap_offset(c, dest);
    r.value = static_cast<unsigned long long>(bits);
    r.sig_op = static_cast<int>(sizeof(U));
    gin_submit(c, r);
}

/* The GIN side of a scalar get: NCCL GIN has no get that returns a value, so the
 * NOT_IMPLEMENTED policy, except under NIIN_GIN_LOOPBACK (the worker reads the value). */
template <typename U>
__device__ __noinline__ U g_remote(const char *fn, const niin_device_context *cp,
                                   const void *source, int pe) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (c.gin_loopback && c.gin_queue != nullptr)
        return static_cast<U>(gin_get_value(c, pe, heap_offset(c, source), sizeof(U)));
    return not_implemented_value<U>(fn, kNoScalarGet);
}

/* NCCL's VA signals (2.29.7) carry the signal of a put-with-signal; without them there is
 * no remote signal (the loopback test mode has its own): NIIN_USE_GIN_VA_SIGNAL, nccl_caps.h. */

constexpr const char *kNoGinSignal =
    "a signal to a PE outside the LSA team needs NCCL's VA signals (ncclGin_VASignalAdd, NCCL "
    ">= 2.29.7 headers with the GIN path compiled in)";
constexpr const char *kSignalOutsideHeap =
    "the signal word must be a symmetric address (in the symmetric heap)";

/* Put of `bytes` from local `source` to symmetric `dest` on a PE outside the LSA team, then
 * the signal `sig_op` (NVSHMEM_SIGNAL_SET / _ADD) of `signal` at symmetric `sig_addr` there,
 * ordered after the data (the worker: one put with a VA signal add; SET: put, flush, then
 * the value). blocking: the source may be reused on return. */
template <typename Coop>
__device__ __noinline__ void gin_put_signal(Coop coop, const char *fn,
                                            const niin_device_context *cp, void *dest,
                                            const void *source, size_t bytes, uint64_t *sig_addr,
                                            uint64_t signal, int sig_op, int pe, bool blocking) {
    const niin_device_context &c = *cp;
    require_target(fn, c, pe);
    if (!gin_ready(coop, fn, c)) return;
    if (!NIIN_USE_GIN_VA_SIGNAL && !c.gin_loopback)
        return not_implemented(coop, fn, NIIN_USE_GIN ? kNoGinSignal : kNoGinHeaders);
    const bool heap_source = bytes == 0 || in_heap(c, source, bytes);
    if (!heap_source && !c.gin_loopback)
        return not_implemented(coop, fn, kGinSourceOutsideHeap);
    if (!in_heap(c, sig_addr, sizeof(uint64_t))) return not_implemented(coop, fn, kSignalOutsideHeap);
    if (coop.thread_rank() != 0) return;
    niin_gin_request r = gin_request(NIIN_GIN_PUT_SIGNAL, pe, blocking);
    r.dest_off = bytes > 0 ? heap_offset(c, dest) : 0;
    r.src_off = bytes == 0 ? 0
                : heap_source ? heap_offset(c, source)
                              : reinterpret_cast<unsigned long long>(source);
    if (!heap_source) r.flags |= NIIN_GIN_ABS_SRC;
    r.bytes = bytes;
    r.sig_off = heap_offset(c, sig_addr);
    r.value = signal;
    r.sig_op = sig_op;
    gin_submit(c, r);
}

/* nvshmemx_signal_op to a PE outside the LSA team: the signal alone (no data). */
template <int = 0>
__device__ __noinline__ void gin_signal_op(const char *fn, const niin_device_context *cp,
                                           uint64_t *sig_addr, uint64_t signal, int sig_op,
                                           int pe) {
    gin_put_signal(ScopeThread{}, fn, cp, nullptr, nullptr, 0, sig_addr, signal, sig_op, pe,
                   false);
}

/* Completion of this module's GIN requests so far (a FLUSH through the proxy), by one
 * thread: nvshmem_quiet and nvshmem_fence, and callers that posted several non-blocking
 * requests (strided transfers). Nothing to do without a queue. */
template <int = 0>
__device__ __noinline__ void gin_quiet(const char *fn, const niin_device_context *cp) {
    const niin_device_context &c = *cp;
    require_init(fn, c);
    if (c.gin_queue == nullptr) return;
    gin_submit(c, gin_request(NIIN_GIN_FLUSH, c.my_pe, true));
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_GIN_IMPL_H */
