/*
 * niin/impl/signal_impl.h -- put-with-signal and the signal operations behind niin/signal.h,
 * and their bodies.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * niin::detail::put_signal is templated on the cooperation scope (ScopeThread, ScopeWarp,
 * ScopeBlock); every thread of the group calls it with the same arguments. The target is
 * routed by the signal word: lsa_address(sig_addr, pe) is null exactly for a PE that only
 * GIN reaches, and otherwise gives the peer's offset, which the data's address shares (one
 * lookup for both). For self and LSA peers the data moves exactly as niin::detail::put moves
 * it (rma_impl.h: the inline fast path of copy_impl.h for an aligned warp or block transfer,
 * coop_copy otherwise, the group synchronized around it); then the group's first thread
 * writes the signal (signal_after_data), and the group synchronizes once more, so that every
 * thread returns with the operation done, as NVSHMEM's do.
 *
 * Why the one thread's signal covers the other threads' data: their stores come before the
 * group's synchronization (bar.sync / bar.warp.sync order the memory accesses of the threads
 * taking part), the synchronization before the signaling thread's release (or its
 * __threadfence_system in split mode), and PTX fences and releases are cumulative: a thread
 * that observes the signal with an acquire load observes every store ordered before the
 * release -- NVSHMEM 3.4.5 relies on the same (group sync, then one thread's system fence and
 * signal).
 */
#ifndef NIIN_IMPL_SIGNAL_IMPL_H
#define NIIN_IMPL_SIGNAL_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/copy_impl.h"
#include "niin/impl/gin_impl.h"
#include "niin/impl/wait_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

constexpr const char *kBadSignalOp = "sig_op must be NVSHMEM_SIGNAL_SET or NVSHMEM_SIGNAL_ADD";

__device__ __forceinline__ bool valid_signal_op(int sig_op) {
    return sig_op == NVSHMEM_SIGNAL_SET || sig_op == NVSHMEM_SIGNAL_ADD;
}

/* The signal itself at load/store address `s` (this PE's word or an LSA peer's): SET a store,
 * ADD an atomic add (red: no value comes back), both at system scope, release or relaxed. */
__device__ __forceinline__ void signal_store(uint64_t *s, uint64_t signal, int sig_op,
                                             bool release) {
    if (sig_op == NVSHMEM_SIGNAL_SET) {
        if (release)
            asm volatile("st.release.sys.b64 [%0], %1;" : : "l"(s), "l"(signal) : "memory");
        else
            asm volatile("st.relaxed.sys.b64 [%0], %1;" : : "l"(s), "l"(signal) : "memory");
    } else {
        if (release)
            asm volatile("red.release.sys.add.u64 [%0], %1;" : : "l"(s), "l"(signal) : "memory");
        else
            asm volatile("red.relaxed.sys.add.u64 [%0], %1;" : : "l"(s), "l"(signal) : "memory");
    }
}

/* The signal of a put-with-signal, by one thread, after the group's data and a group
 * synchronization: NIIN_PUT_SIGNAL_MODE (the context's put_signal_mode) 0 (fused) a release
 * store / atomic; 1 (split) a system fence, then a relaxed one. */
__device__ __forceinline__ void signal_after_data(const niin_device_context &c, uint64_t *s,
                                                  uint64_t signal, int sig_op) {
    if (c.put_signal_mode == 0) {
        signal_store(s, signal, sig_op, true);
    } else {
        __threadfence_system();
        signal_store(s, signal, sig_op, false);
    }
}

/* The out-of-line side of put_signal, for a target the routing cache does not hold: an LSA
 * peer of a team larger than the cache (data, then the signal, through lsa_address's table),
 * else GIN. Called by every thread of the group after the caller's entry synchronization;
 * the caller synchronizes after. */
template <typename Coop>
__device__ __noinline__ void remote_put_signal(Coop coop, const char *fn,
                                               const niin_device_context *cp, void *dest,
                                               const void *source, size_t bytes,
                                               uint64_t *sig_addr, uint64_t signal, int sig_op,
                                               int pe, bool blocking) {
    char *s = lsa_address(*cp, sig_addr, pe);
    if (s == nullptr) {
        gin_put_signal(coop, fn, cp, dest, source, bytes, sig_addr, signal, sig_op, pe, blocking);
        return;
    }
    coop_copy(coop, static_cast<char *>(dest) + (s - reinterpret_cast<char *>(sig_addr)), source,
              bytes);
    coop.sync();
    if (coop.thread_rank() == 0)
        signal_after_data(*cp, reinterpret_cast<uint64_t *>(s), signal, sig_op);
}

/* Put of `bytes` from local `source` to symmetric `dest` on `pe`, then the signal `sig_op`
 * of `signal` at symmetric `sig_addr` there. Inline, as put; targets the routing cache does
 * not hold out of line (remote_put_signal, through cold_call, as put calls remote_put). */
template <typename Coop>
__device__ __forceinline__ void put_signal(Coop coop, const char *fn, void *dest,
                                           const void *source, size_t bytes, uint64_t *sig_addr,
                                           uint64_t signal, int sig_op, int pe, bool blocking) {
    if (!valid_signal_op(sig_op)) {
        /* usage_error traps: the other threads of the group stop with the kernel. */
        if (coop.thread_rank() == 0) usage_error(fn, kBadSignalOp);
        return;
    }
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (!r.hit) {
        coop.sync();
        cold_call<&remote_put_signal<Coop>>(coop, fn, &c, dest, source, bytes, sig_addr,
                         signal, sig_op, pe, blocking);
        coop.sync();
        return;
    }
    char *d = at_distance(dest, r.delta);
    if (!fast_transfer(coop, d, source, bytes)) {
        coop.sync();
        coop_copy(coop, d, source, bytes);
        coop.sync();
    }
    if (coop.thread_rank() == 0)
        signal_after_data(c, reinterpret_cast<uint64_t *>(at_distance(sig_addr, r.delta)), signal,
                          sig_op);
    coop.sync();
}

/* nvshmemx_signal_op: the signal alone, relaxed (NVSHMEM's: it orders nothing before it). */
__device__ __forceinline__ void signal_op(const char *fn, uint64_t *sig_addr, uint64_t signal,
                                          int sig_op, int pe) {
    if (!valid_signal_op(sig_op)) usage_error(fn, kBadSignalOp);
    const niin_device_context &c = context_for_transfer();
    char *s = lsa_address_near(c, sig_addr, pe);
    if (s != nullptr)
        signal_store(reinterpret_cast<uint64_t *>(s), signal, sig_op, false);
    else
        call_out_of_line_direct<&gin_signal_op<0>>(fn, &c, sig_addr, signal, sig_op, pe);
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions of niin/signal.h --------------------------------------------- */

NIIN_BEGIN_C_DECLS

/* One thread. */
#define NIIN_DEFINE_TYPED_PUT_SIGNAL(NAME, TYPE)                                                 \
    NIIN_DEVICE void nvshmem_##NAME##_put_signal(TYPE *dest, const TYPE *source, size_t nelems,  \
                                                 uint64_t *sig_addr, uint64_t signal,            \
                                                 int sig_op, int pe) {                           \
        niin::detail::put_signal(niin::detail::ScopeThread{}, "nvshmem_" #NAME "_put_signal",    \
                                 dest, source, nelems * sizeof(TYPE), sig_addr, signal, sig_op,  \
                                 pe, true);                                                      \
    }                                                                                            \
    NIIN_DEVICE void nvshmem_##NAME##_put_signal_nbi(TYPE *dest, const TYPE *source,             \
                                                     size_t nelems, uint64_t *sig_addr,          \
                                                     uint64_t signal, int sig_op, int pe) {      \
        niin::detail::put_signal(niin::detail::ScopeThread{},                                    \
                                 "nvshmem_" #NAME "_put_signal_nbi", dest, source,               \
                                 nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, false);    \
    }
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_TYPED_PUT_SIGNAL)
#undef NIIN_DEFINE_TYPED_PUT_SIGNAL

#define NIIN_DEFINE_SIZED_PUT_SIGNAL(BITS, TYPE)                                                 \
    NIIN_DEVICE void nvshmem_put##BITS##_signal(void *dest, const void *source, size_t nelems,   \
                                                uint64_t *sig_addr, uint64_t signal,             \
                                                int sig_op, int pe) {                            \
        niin::detail::put_signal(niin::detail::ScopeThread{}, "nvshmem_put" #BITS "_signal",     \
                                 dest, source, nelems * sizeof(TYPE), sig_addr, signal, sig_op,  \
                                 pe, true);                                                      \
    }                                                                                            \
    NIIN_DEVICE void nvshmem_put##BITS##_signal_nbi(void *dest, const void *source,              \
                                                    size_t nelems, uint64_t *sig_addr,           \
                                                    uint64_t signal, int sig_op, int pe) {       \
        niin::detail::put_signal(niin::detail::ScopeThread{},                                    \
                                 "nvshmem_put" #BITS "_signal_nbi", dest, source,                \
                                 nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, false);    \
    }
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_SIZED_PUT_SIGNAL)
#undef NIIN_DEFINE_SIZED_PUT_SIGNAL

NIIN_DEVICE void nvshmem_putmem_signal(void *dest, const void *source, size_t bytes,
                                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    niin::detail::put_signal(niin::detail::ScopeThread{}, "nvshmem_putmem_signal", dest, source,
                             bytes, sig_addr, signal, sig_op, pe, true);
}
NIIN_DEVICE void nvshmem_putmem_signal_nbi(void *dest, const void *source, size_t bytes,
                                           uint64_t *sig_addr, uint64_t signal, int sig_op,
                                           int pe) {
    niin::detail::put_signal(niin::detail::ScopeThread{}, "nvshmem_putmem_signal_nbi", dest,
                             source, bytes, sig_addr, signal, sig_op, pe, false);
}

/* A warp or a block. SCOPE: the NVSHMEM suffix; COOP: niin::detail::ScopeWarp or ScopeBlock. */
#define NIIN_DEFINE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, SCOPE, COOP)                           \
    NIIN_DEVICE void nvshmemx_##NAME##_put_signal_##SCOPE(TYPE *dest, const TYPE *source,        \
                                                          size_t nelems, uint64_t *sig_addr,     \
                                                          uint64_t signal, int sig_op, int pe) { \
        niin::detail::put_signal(COOP{}, "nvshmemx_" #NAME "_put_signal_" #SCOPE, dest, source,  \
                                 nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, true);     \
    }                                                                                            \
    NIIN_DEVICE void nvshmemx_##NAME##_put_signal_nbi_##SCOPE(                                   \
        TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,      \
        int sig_op, int pe) {                                                                    \
        niin::detail::put_signal(COOP{}, "nvshmemx_" #NAME "_put_signal_nbi_" #SCOPE, dest,      \
                                 source, nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe,    \
                                 false);                                                         \
    }
#define NIIN_DEFINE_TG_TYPED_PUT_SIGNAL(NAME, TYPE)                                     \
    NIIN_DEFINE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, warp, niin::detail::ScopeWarp)   \
    NIIN_DEFINE_TG_TYPED_PUT_SIGNAL_SCOPE(NAME, TYPE, block, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_TG_TYPED_PUT_SIGNAL)
#undef NIIN_DEFINE_TG_TYPED_PUT_SIGNAL
#undef NIIN_DEFINE_TG_TYPED_PUT_SIGNAL_SCOPE

/* NAME: the size as the function's name spells it (6: NVSHMEM 3.4.5's spelling of 16, see
 * niin/signal.h); TYPE: the element moved. */
#define NIIN_DEFINE_TG_SIZED_PUT_SIGNAL_SCOPE(NAME, TYPE, SCOPE, COOP)                           \
    NIIN_DEVICE void nvshmemx_put##NAME##_signal_##SCOPE(void *dest, const void *source,         \
                                                         size_t nelems, uint64_t *sig_addr,      \
                                                         uint64_t signal, int sig_op, int pe) {  \
        niin::detail::put_signal(COOP{}, "nvshmemx_put" #NAME "_signal_" #SCOPE, dest, source,   \
                                 nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe, true);     \
    }                                                                                            \
    NIIN_DEVICE void nvshmemx_put##NAME##_signal_nbi_##SCOPE(void *dest, const void *source,     \
                                                             size_t nelems, uint64_t *sig_addr,  \
                                                             uint64_t signal, int sig_op,        \
                                                             int pe) {                           \
        niin::detail::put_signal(COOP{}, "nvshmemx_put" #NAME "_signal_nbi_" #SCOPE, dest,       \
                                 source, nelems * sizeof(TYPE), sig_addr, signal, sig_op, pe,    \
                                 false);                                                         \
    }
#define NIIN_DEFINE_TG_SIZED_PUT_SIGNAL(NAME, TYPE)                                     \
    NIIN_DEFINE_TG_SIZED_PUT_SIGNAL_SCOPE(NAME, TYPE, warp, niin::detail::ScopeWarp)   \
    NIIN_DEFINE_TG_SIZED_PUT_SIGNAL_SCOPE(NAME, TYPE, block, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_TG_SIZED_PUT_SIGNAL)
NIIN_DEFINE_TG_SIZED_PUT_SIGNAL(6, int16_t)
#undef NIIN_DEFINE_TG_SIZED_PUT_SIGNAL
#undef NIIN_DEFINE_TG_SIZED_PUT_SIGNAL_SCOPE

#define NIIN_DEFINE_TG_MEM_PUT_SIGNAL(SCOPE, COOP)                                               \
    NIIN_DEVICE void nvshmemx_putmem_signal_##SCOPE(void *dest, const void *source,              \
                                                    size_t bytes, uint64_t *sig_addr,            \
                                                    uint64_t signal, int sig_op, int pe) {       \
        niin::detail::put_signal(COOP{}, "nvshmemx_putmem_signal_" #SCOPE, dest, source, bytes,  \
                                 sig_addr, signal, sig_op, pe, true);                            \
    }                                                                                            \
    NIIN_DEVICE void nvshmemx_putmem_signal_nbi_##SCOPE(void *dest, const void *source,          \
                                                        size_t bytes, uint64_t *sig_addr,        \
                                                        uint64_t signal, int sig_op, int pe) {   \
        niin::detail::put_signal(COOP{}, "nvshmemx_putmem_signal_nbi_" #SCOPE, dest, source,     \
                                 bytes, sig_addr, signal, sig_op, pe, false);                    \
    }
NIIN_DEFINE_TG_MEM_PUT_SIGNAL(warp, niin::detail::ScopeWarp)
NIIN_DEFINE_TG_MEM_PUT_SIGNAL(block, niin::detail::ScopeBlock)
#undef NIIN_DEFINE_TG_MEM_PUT_SIGNAL

NIIN_DEVICE void nvshmemx_signal_op(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    niin::detail::signal_op("nvshmemx_signal_op", sig_addr, signal, sig_op, pe);
}

NIIN_DEVICE uint64_t nvshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
    return niin::detail::wait_until<uint64_t>("nvshmem_signal_wait_until", sig_addr, cmp,
                                              cmp_value);
}

NIIN_END_C_DECLS

/* nvshmem_signal_fetch is a host function too: its device body in the device pass only. An
 * acquire load (NVSHMEM's is a volatile one): a kernel that polls it and then reads the data
 * of a put-with-signal sees that data. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS
NIIN_DEVICE_HD uint64_t nvshmem_signal_fetch(uint64_t *sig_addr) {
    return niin::detail::load_acquire(sig_addr);
}
NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_SIGNAL_IMPL_H */
