/*
 * niin/impl/strided_impl.h -- the strided transfers behind niin/strided.h, and its bodies.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * niin::detail::strided<Put, W>(coop, ...) is the one implementation of iput (Put) and iget
 * for the three scopes (ScopeThread, ScopeWarp, ScopeBlock of niin/impl/common_impl.h) and
 * every element width W (1, 2, 4, 8, 16 bytes: the 25 types and 5 sizes share the bodies of
 * their width). Strides reach the bodies in bytes (the element stride times W), any sign.
 *
 *   strided          inline: the target's load/store address (lsa_address), the entry
 *                    synchronization, then one of the two paths, the exit synchronization
 *   strided_copy     self and LSA peers, out of line per width and scope: thread r of the
 *                    group moves elements r, r + size, ...; each thread keeps
 *                    kStridedUnroll loads in flight before its stores
 *   gin_strided      other PEs, out of line per scope (call_out_of_line_direct,
 *                    common_impl.h): a non-blocking gin_put / gin_get
 *                    (niin/impl/gin_impl.h) per element of this thread's share, then, after a
 *                    group synchronization, one gin_quiet by the group's first thread, which
 *                    completes every GIN request the module posted before it, the other
 *                    threads' included
 */
#ifndef NIIN_IMPL_STRIDED_IMPL_H
#define NIIN_IMPL_STRIDED_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/copy_impl.h"
#include "niin/impl/gin_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* Elements each thread loads before storing them in strided_copy's main loop. */
constexpr int kStridedUnroll = 4;

/* The address of element i of an array at `base` with `step` bytes between elements (any
 * sign), as an integer (it may lie outside the array); with base nullptr, i steps. */
__device__ __forceinline__ uintptr_t strided_at(const void *base, ptrdiff_t step, size_t i) {
    return reinterpret_cast<uintptr_t>(base) +
           static_cast<uintptr_t>(static_cast<ptrdiff_t>(i) * step);
}

/* Copies elements rank, rank + size, ... (< nelems) of the group: element i of W bytes from
 * src + i * src_step to dst + i * dst_step (steps in bytes, any sign). Addresses are kept as
 * integers: a thread's next element may lie outside both arrays (it is then not accessed).
 * All loads of an unrolled round come before its stores, so a thread's stores to one
 * address (dst_step == 0) land in element order. */
template <int W, typename Coop>
__device__ __noinline__ void strided_copy(Coop coop, void *dst, const void *src,
                                          ptrdiff_t dst_step, ptrdiff_t src_step, size_t nelems) {
    using Word = typename copy_word<W>::type;
    const size_t rank = static_cast<size_t>(coop.thread_rank());
    const size_t size = static_cast<size_t>(coop.size());
    uintptr_t d = strided_at(dst, dst_step, rank), s = strided_at(src, src_step, rank);
    const uintptr_t dstep = strided_at(nullptr, dst_step, size);
    const uintptr_t sstep = strided_at(nullptr, src_step, size);
    size_t i = rank;
    for (; i + (kStridedUnroll - 1) * size < nelems; i += kStridedUnroll * size) {
        Word v[kStridedUnroll];
#pragma unroll
        for (int u = 0; u < kStridedUnroll; ++u)
            v[u] = *reinterpret_cast<const Word *>(s + u * sstep);
#pragma unroll
        for (int u = 0; u < kStridedUnroll; ++u) *reinterpret_cast<Word *>(d + u * dstep) = v[u];
        s += kStridedUnroll * sstep;
        d += kStridedUnroll * dstep;
    }
    for (; i < nelems; i += size, s += sstep, d += dstep)
        *reinterpret_cast<Word *>(d) = *reinterpret_cast<const Word *>(s);
}

/* The GIN side of a strided transfer (a PE outside the LSA team): this thread's elements,
 * each a non-blocking GIN put (put) or get of `width` bytes; then, once the whole group has
 * issued its elements, the group's first thread completes them (gin_quiet; the caller's exit
 * synchronization holds the others until it returns).
 *
 * The loop's state lives in local memory (a volatile struct), not in registers: ptxas gives
 * a kernel the registers of every function it may reach, indirect callees included
 * (device/README.md, "Register budget"), so state kept in registers across the per-element
 * calls would raise every kernel that calls a strided function. Measured (nvcc 13.0, whole
 * program, NCCL 2.28.9 and 2.31.2 headers alike): a kernel calling one iput, 64 registers
 * with the state in registers, 58 with it here (one calling nvshmem_putmem: 54). This is the
 * cold path; a local load per field and element is nothing next to a GIN request. */
template <typename Coop>
__device__ __noinline__ void gin_strided(Coop coop, const char *fn, const niin_device_context *cp,
                                         void *dest, const void *source, ptrdiff_t dst_step,
                                         ptrdiff_t src_step, size_t width, size_t nelems, int pe,
                                         bool put) {
    require_target(fn, *cp, pe);
    struct Walk {
        uintptr_t d, s, dstep, sstep;
        size_t i, size, nelems, width;
        const char *fn;
        const niin_device_context *cp;
        int pe;
        bool put;
    };
    const size_t rank = static_cast<size_t>(coop.thread_rank());
    const size_t size = static_cast<size_t>(coop.size());
    volatile Walk w;
    w.d = strided_at(dest, dst_step, rank);
    w.s = strided_at(source, src_step, rank);
    w.dstep = strided_at(nullptr, dst_step, size);
    w.sstep = strided_at(nullptr, src_step, size);
    w.i = rank;
    w.size = size;
    w.nelems = nelems;
    w.width = width;
    w.fn = fn;
    w.cp = cp;
    w.pe = pe;
    w.put = put;
    for (; w.i < w.nelems; w.i = w.i + w.size, w.d = w.d + w.dstep, w.s = w.s + w.sstep) {
        if (w.put)
            gin_put(ScopeThread{}, w.fn, w.cp, reinterpret_cast<void *>(w.d),
                    reinterpret_cast<const void *>(w.s), w.width, w.pe, false);
        else
            gin_get(ScopeThread{}, w.fn, w.cp, reinterpret_cast<void *>(w.d),
                    reinterpret_cast<const void *>(w.s), w.width, w.pe, false);
    }
    /* Every thread's requests are posted; one completion covers the group's. */
    coop.sync();
    if (coop.thread_rank() == 0) gin_quiet(w.fn, w.cp);
}

/* iput (Put) or iget of nelems elements of W bytes, strides in elements. Inline; every
 * thread of `coop` calls it with the same arguments. */
template <bool Put, int W, typename Coop>
__device__ __forceinline__ void strided(Coop coop, const char *fn, void *dest, const void *source,
                                        ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {
    const niin_device_context &c = context_for_transfer();
    char *remote = lsa_address(c, Put ? static_cast<const void *>(dest) : source, pe);
    const ptrdiff_t dst_step = dst * W, src_step = sst * W;
    coop.sync();
    if (remote != nullptr) {
        if constexpr (Put)
            strided_copy<W>(coop, remote, source, dst_step, src_step, nelems);
        else
            strided_copy<W>(coop, dest, remote, dst_step, src_step, nelems);
    } else {
        call_out_of_line_direct<&gin_strided<Coop>>(coop, fn, &c, dest, source, dst_step, src_step,
                         static_cast<size_t>(W), nelems, pe, Put);
    }
    coop.sync();
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions of niin/strided.h ---------------------------------------------- */

NIIN_BEGIN_C_DECLS

/* OP: iput or iget; PUT: true or false; SUFFIX: the NVSHMEM suffix ("", "_warp",
 * "_block"); COOP: its scope; LINK: NIIN_DEVICE (warp, block) or NIIN_DEVICE_HD (the
 * thread forms, host functions too). */
#define NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, PREFIX, OP, PUT, SUFFIX, COOP, LINK)         \
    LINK void PREFIX##NAME##_##OP##SUFFIX(TYPE *dest, const TYPE *source, ptrdiff_t dst,      \
                                          ptrdiff_t sst, size_t nelems, int pe) {             \
        niin::detail::strided<PUT, sizeof(TYPE)>(COOP{}, #PREFIX #NAME "_" #OP #SUFFIX, dest, \
                                                 source, dst, sst, nelems, pe);               \
    }
#define NIIN_DEFINE_STRIDED_TYPED(NAME, TYPE)                                                  \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmemx_, iput, true, _warp,                     \
                                 niin::detail::ScopeWarp, NIIN_DEVICE)                         \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmemx_, iget, false, _warp,                    \
                                 niin::detail::ScopeWarp, NIIN_DEVICE)                         \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmemx_, iput, true, _block,                    \
                                 niin::detail::ScopeBlock, NIIN_DEVICE)                        \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmemx_, iget, false, _block,                   \
                                 niin::detail::ScopeBlock, NIIN_DEVICE)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_STRIDED_TYPED)
#undef NIIN_DEFINE_STRIDED_TYPED

#define NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, PREFIX, OP, PUT, SUFFIX, COOP, LINK)     \
    LINK void PREFIX##OP##BITS##SUFFIX(void *dest, const void *source, ptrdiff_t dst,     \
                                       ptrdiff_t sst, size_t nelems, int pe) {            \
        niin::detail::strided<PUT, sizeof(TYPE)>(COOP{}, #PREFIX #OP #BITS #SUFFIX, dest, \
                                                 source, dst, sst, nelems, pe);           \
    }
#define NIIN_DEFINE_STRIDED_SIZED(BITS, TYPE)                                                  \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmemx_, iput, true, _warp,                     \
                                 niin::detail::ScopeWarp, NIIN_DEVICE)                         \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmemx_, iget, false, _warp,                    \
                                 niin::detail::ScopeWarp, NIIN_DEVICE)                         \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmemx_, iput, true, _block,                    \
                                 niin::detail::ScopeBlock, NIIN_DEVICE)                        \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmemx_, iget, false, _block,                   \
                                 niin::detail::ScopeBlock, NIIN_DEVICE)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_STRIDED_SIZED)
#undef NIIN_DEFINE_STRIDED_SIZED

/* The thread forms are host functions too (niin/host_device.h): device bodies in the device
 * pass only; the host pass calls libnvshmem_host's. */
#if defined(__CUDA_ARCH__)
#define NIIN_DEFINE_STRIDED_THREAD(NAME, TYPE)                                                   \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmem_, iput, true, , niin::detail::ScopeThread,  \
                                 NIIN_DEVICE_HD)                                                 \
    NIIN_DEFINE_STRIDED_TYPED_OP(NAME, TYPE, nvshmem_, iget, false, , niin::detail::ScopeThread, \
                                 NIIN_DEVICE_HD)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_STRIDED_THREAD)
#undef NIIN_DEFINE_STRIDED_THREAD
#define NIIN_DEFINE_STRIDED_THREAD(BITS, TYPE)                                                   \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmem_, iput, true, , niin::detail::ScopeThread,  \
                                 NIIN_DEVICE_HD)                                                 \
    NIIN_DEFINE_STRIDED_SIZED_OP(BITS, TYPE, nvshmem_, iget, false, , niin::detail::ScopeThread, \
                                 NIIN_DEVICE_HD)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_STRIDED_THREAD)
#undef NIIN_DEFINE_STRIDED_THREAD
#endif /* __CUDA_ARCH__ */
#undef NIIN_DEFINE_STRIDED_TYPED_OP
#undef NIIN_DEFINE_STRIDED_SIZED_OP

NIIN_END_C_DECLS

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_STRIDED_IMPL_H */
