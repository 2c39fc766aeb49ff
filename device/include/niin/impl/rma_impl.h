/*
 * niin/impl/rma_impl.h -- the transfers behind niin/rma.h and niin/threadgroup.h, and the
 * bodies of niin/rma.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * niin::detail::put / get are templated on the cooperation scope (ScopeThread, ScopeWarp,
 * ScopeBlock of niin/impl/common_impl.h); every thread of the group calls them with the
 * same arguments. They synchronize the group on entry (the source may have been written by
 * other threads of it) and on exit (the destination of a get is then complete for all of
 * them); for a single thread both synchronizations are empty.
 */
#ifndef NIIN_IMPL_RMA_IMPL_H
#define NIIN_IMPL_RMA_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/copy_impl.h"
#include "niin/impl/gin_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* The out-of-line side of put and get, for a target the routing cache does not hold: an
 * LSA peer of a team larger than the cache (a copy through lsa_address's table), else GIN.
 * Called by every thread of the group, between the caller's synchronizations. */
template <typename Coop>
__device__ __noinline__ void remote_put(Coop coop, const char *fn, const niin_device_context *cp,
                                        void *dest, const void *source, size_t bytes, int pe,
                                        bool blocking) {
    char *d = lsa_address(*cp, dest, pe);
    if (d != nullptr)
        coop_copy(coop, d, source, bytes);
    else
        gin_put(coop, fn, cp, dest, source, bytes, pe, blocking);
}
template <typename Coop>
__device__ __noinline__ void remote_get(Coop coop, const char *fn, const niin_device_context *cp,
                                        void *dest, const void *source, size_t bytes, int pe,
                                        bool blocking) {
    const char *s = lsa_address(*cp, source, pe);
    if (s != nullptr)
        coop_copy(coop, dest, s, bytes);
    else
        gin_get(coop, fn, cp, dest, source, bytes, pe, blocking);
}

/* Put: `bytes` from local `source` to symmetric `dest` on `pe`. Inline. A target in the
 * routing cache (cached_route) takes the load/store paths: an aligned or short transfer the
 * inline ones of copy_impl.h (fast_transfer), any other coop_copy (one out-of-line body per
 * scope). Any other target goes out of line (remote_put: a large LSA team's table, or GIN),
 * so GIN's registers -- NCCL >= 2.31's GIN code needs ~120 -- and its spills under
 * __launch_bounds__ stay off the load/store path. (When put itself was out of line with GIN
 * inside, a 132 x 1024 putmem_block loop lost ~2 us per call.) */
template <typename Coop>
__device__ __forceinline__ void put(Coop coop, const char *fn, void *dest, const void *source,
                                 size_t bytes, int pe, bool blocking) {
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (r.hit) {
        char *d = at_distance(dest, r.delta);
        if (fast_transfer(coop, d, source, bytes)) return;
        coop.sync();
        coop_copy(coop, d, source, bytes);
    } else {
        coop.sync();
        cold_call<&remote_put<Coop>>(coop, fn, &c, dest, source, bytes, pe, blocking);
    }
    coop.sync();
}

/* Get: `bytes` from symmetric `source` on `pe` to local `dest`. Inline, as put. */
template <typename Coop>
__device__ __forceinline__ void get(Coop coop, const char *fn, void *dest, const void *source,
                                 size_t bytes, int pe, bool blocking) {
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (r.hit) {
        const char *s = at_distance(source, r.delta);
        if (fast_transfer(coop, dest, s, bytes)) return;
        coop.sync();
        coop_copy(coop, dest, s, bytes);
    } else {
        coop.sync();
        cold_call<&remote_get<Coop>>(coop, fn, &c, dest, source, bytes, pe, blocking);
    }
    coop.sync();
}

/* The scalar put's store and the scalar get's load for self and LSA peers: weak (plain)
 * accesses as NVSHMEM's, which the SM may serve from or merge into its L1, in asm volatile
 * so that the compiler neither drops, merges nor hoists them (a kernel that polls with
 * nvshmem_<T>_g sees a new load each time; for ordering it needs nvshmem_fence/quiet or the
 * acquire loads of nvshmem_<T>_wait_until). Measured on the H200, 2 PEs: a volatile
 * (relaxed, system-scope) load made nvshmem_int64_g 0.156 us against NVSHMEM's 0.071. */
__device__ __forceinline__ void store_weak(char *p, uint8_t v) {
    asm volatile("st.u8 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(v)) : "memory");
}
__device__ __forceinline__ void store_weak(char *p, uint16_t v) {
    asm volatile("st.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}
__device__ __forceinline__ void store_weak(char *p, uint32_t v) {
    asm volatile("st.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_weak(char *p, uint64_t v) {
    asm volatile("st.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
template <typename U>
__device__ __forceinline__ U load_weak(const char *p);
template <>
__device__ __forceinline__ uint8_t load_weak<uint8_t>(const char *p) {
    unsigned short v;
    asm volatile("ld.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return static_cast<uint8_t>(v);
}
template <>
__device__ __forceinline__ uint16_t load_weak<uint16_t>(const char *p) {
    uint16_t v;
    asm volatile("ld.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}
template <>
__device__ __forceinline__ uint32_t load_weak<uint32_t>(const char *p) {
    uint32_t v;
    asm volatile("ld.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
template <>
__device__ __forceinline__ uint64_t load_weak<uint64_t>(const char *p) {
    uint64_t v;
    asm volatile("ld.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* The out-of-line side of p and g, for a target the routing cache does not hold: an LSA
 * peer of a team larger than the cache (through lsa_address's table), else GIN. */
template <typename U>
__device__ __noinline__ void remote_p(const char *fn, const niin_device_context *cp, void *dest,
                                      U bits, int pe) {
    char *d = lsa_address(*cp, dest, pe);
    if (d != nullptr)
        store_weak(d, bits);
    else
        p_remote<U>(fn, cp, dest, bits, pe);
}
template <typename U>
__device__ __noinline__ U remote_g(const char *fn, const niin_device_context *cp,
                                   const void *source, int pe) {
    const char *s = lsa_address(*cp, source, pe);
    return s != nullptr ? load_weak<U>(s) : g_remote<U>(fn, cp, source, pe);
}

/* Scalar put: one store for self and LSA peers in the routing cache (cached_route;
 * store_weak, through the same-size unsigned integer); remote_p otherwise. */
template <typename T>
__device__ __forceinline__ void p(const char *fn, T *dest, T value, int pe) {
    using U = typename uint_of_size<sizeof(T)>::type;
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (r.hit)
        store_weak(at_distance(static_cast<void *>(dest), r.delta), bits_of(value));
    else
        call_out_of_line<&remote_p<U>>(fn, &c, static_cast<void *>(dest), bits_of(value), pe);
}

/* Scalar get: one load for self and LSA peers in the routing cache (load_weak); remote_g
 * otherwise. */
template <typename T>
__device__ __forceinline__ T g(const char *fn, const T *source, int pe) {
    using U = typename uint_of_size<sizeof(T)>::type;
    const niin_device_context &c = context_for_transfer();
    const CachedRoute r = cached_route(c, pe);
    if (r.hit)
        return from_bits<T>(load_weak<U>(at_distance(static_cast<const void *>(source), r.delta)));
    return from_bits<T>(call_out_of_line<&remote_g<U>>(fn, &c, source, pe));
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions of niin/rma.h ---------------------------------------------- */

/* Every function here is a host function too (niin/host_device.h): device bodies in the
 * device pass only; the host pass calls libnvshmem_host's. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS
#define NIIN_DEFINE_TYPED_RMA(NAME, TYPE)                                                         \
    NIIN_DEVICE_HD void nvshmem_##NAME##_p(TYPE *dest, const TYPE value, int pe) {                \
        niin::detail::p<TYPE>("nvshmem_" #NAME "_p", dest, value, pe);                            \
    }                                                                                             \
    NIIN_DEVICE_HD TYPE nvshmem_##NAME##_g(const TYPE *source, int pe) {                          \
        return niin::detail::g<TYPE>("nvshmem_" #NAME "_g", source, pe);                          \
    }                                                                                             \
    NIIN_DEVICE_HD void nvshmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems,       \
                                             int pe) {                                            \
        niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_" #NAME "_put", dest, source,     \
                          nelems * sizeof(TYPE), pe, true);                                       \
    }                                                                                             \
    NIIN_DEVICE_HD void nvshmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems,       \
                                             int pe) {                                            \
        niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_" #NAME "_get", dest, source,     \
                          nelems * sizeof(TYPE), pe, true);                                       \
    }                                                                                             \
    NIIN_DEVICE_HD void nvshmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source, size_t nelems,   \
                                                 int pe) {                                        \
        niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_" #NAME "_put_nbi", dest, source, \
                          nelems * sizeof(TYPE), pe, false);                                      \
    }                                                                                             \
    NIIN_DEVICE_HD void nvshmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source, size_t nelems,   \
                                                 int pe) {                                        \
        niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_" #NAME "_get_nbi", dest, source, \
                          nelems * sizeof(TYPE), pe, false);                                      \
    }
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_TYPED_RMA)
#undef NIIN_DEFINE_TYPED_RMA

#define NIIN_DEFINE_SIZED_RMA(BITS, TYPE)                                                        \
    NIIN_DEVICE_HD void nvshmem_put##BITS(void *dest, const void *source, size_t nelems,         \
                                          int pe) {                                              \
        niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_put" #BITS, dest, source,        \
                          nelems * sizeof(TYPE), pe, true);                                      \
    }                                                                                            \
    NIIN_DEVICE_HD void nvshmem_get##BITS(void *dest, const void *source, size_t nelems,         \
                                          int pe) {                                              \
        niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_get" #BITS, dest, source,        \
                          nelems * sizeof(TYPE), pe, true);                                      \
    }                                                                                            \
    NIIN_DEVICE_HD void nvshmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems,   \
                                                int pe) {                                        \
        niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_put" #BITS "_nbi", dest, source, \
                          nelems * sizeof(TYPE), pe, false);                                     \
    }                                                                                            \
    NIIN_DEVICE_HD void nvshmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,   \
                                                int pe) {                                        \
        niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_get" #BITS "_nbi", dest, source, \
                          nelems * sizeof(TYPE), pe, false);                                     \
    }
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_SIZED_RMA)
#undef NIIN_DEFINE_SIZED_RMA

NIIN_DEVICE_HD void nvshmem_putmem(void *dest, const void *source, size_t bytes, int pe) {
    niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_putmem", dest, source, bytes, pe, true);
}
NIIN_DEVICE_HD void nvshmem_getmem(void *dest, const void *source, size_t bytes, int pe) {
    niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_getmem", dest, source, bytes, pe, true);
}
NIIN_DEVICE_HD void nvshmem_putmem_nbi(void *dest, const void *source, size_t bytes, int pe) {
    niin::detail::put(niin::detail::ScopeThread{}, "nvshmem_putmem_nbi", dest, source, bytes, pe,
                      false);
}
NIIN_DEVICE_HD void nvshmem_getmem_nbi(void *dest, const void *source, size_t bytes, int pe) {
    niin::detail::get(niin::detail::ScopeThread{}, "nvshmem_getmem_nbi", dest, source, bytes, pe,
                      false);
}
NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_RMA_IMPL_H */
