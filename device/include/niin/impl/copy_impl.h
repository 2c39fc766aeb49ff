/*
 * niin/impl/copy_impl.h -- the cooperative copy behind every load/store transfer (self
 * and LSA peers), for a thread, a warp or a block.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * One implementation, templated on the cooperation scope (ScopeThread, ScopeWarp,
 * ScopeBlock of niin/impl/common_impl.h: thread_rank(), size()):
 *
 *   1. pick the widest word W in {16, 8, 4, 2, 1} at which source and destination have
 *      the same misalignment ((dst ^ src) % W == 0): 16 whenever they agree modulo 16,
 *      a narrower word (down to bytes) when they do not;
 *   2. head: the bytes before dst is W-aligned, one byte per thread;
 *   3. body: W-byte words (uint4 for W = 16), each thread keeping kUnroll loads in flight
 *      before its stores, consecutive threads on consecutive words (coalesced);
 *   4. tail: the bytes after the last whole word, one byte per thread.
 *
 * The copy neither starts nor ends with a synchronization: the callers (niin/impl/
 * rma_impl.h) synchronize the group around it.
 */
#ifndef NIIN_IMPL_COPY_IMPL_H
#define NIIN_IMPL_COPY_IMPL_H

#include "niin/impl/common_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* Loads each thread keeps in flight in the body. */
constexpr int kCopyUnroll = 4;

template <int W>
struct copy_word;
template <>
struct copy_word<16> {
    using type = uint4;
};
template <>
struct copy_word<8> {
    using type = unsigned long long;
};
template <>
struct copy_word<4> {
    using type = unsigned int;
};
template <>
struct copy_word<2> {
    using type = unsigned short;
};
template <>
struct copy_word<1> {
    using type = unsigned char;
};

/* Steps 2-4 for one word width; requires (dst ^ src) % W == 0. */
template <int W, typename Coop>
__device__ __forceinline__ void copy_words(Coop coop, char *dst, const char *src, size_t bytes) {
    using Word = typename copy_word<W>::type;
    const size_t rank = static_cast<size_t>(coop.thread_rank());
    const size_t stride = static_cast<size_t>(coop.size());

    size_t head = (W - (reinterpret_cast<uintptr_t>(dst) & (W - 1))) & (W - 1);
    if (head > bytes) head = bytes;
    for (size_t i = rank; i < head; i += stride) dst[i] = src[i];
    dst += head;
    src += head;
    bytes -= head;

    const size_t words = bytes / W;
    Word *d = reinterpret_cast<Word *>(dst);
    const Word *s = reinterpret_cast<const Word *>(src);
    size_t i = rank;
    for (; i + (kCopyUnroll - 1) * stride < words; i += kCopyUnroll * stride) {
        Word v[kCopyUnroll];
#pragma unroll
        for (int u = 0; u < kCopyUnroll; ++u) v[u] = s[i + u * stride];
#pragma unroll
        for (int u = 0; u < kCopyUnroll; ++u) d[i + u * stride] = v[u];
    }
    for (; i < words; i += stride) d[i] = s[i];

    for (size_t j = words * W + rank; j < bytes; j += stride) dst[j] = src[j];
}

/* Copies `bytes` from `src` to `dst` with every thread of `coop` (all must call it with
 * the same arguments). Out of line: one copy of the code per scope, however many typed
 * functions call it. */
template <typename Coop>
__device__ __noinline__ void coop_copy(Coop coop, void *dst, const void *src, size_t bytes) {
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    const uintptr_t skew = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
    if ((skew & 15) == 0)
        copy_words<16>(coop, d, s, bytes);
    else if ((skew & 7) == 0)
        copy_words<8>(coop, d, s, bytes);
    else if ((skew & 3) == 0)
        copy_words<4>(coop, d, s, bytes);
    else if ((skew & 1) == 0)
        copy_words<2>(coop, d, s, bytes);
    else
        copy_words<1>(coop, d, s, bytes);
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COPY_IMPL_H */
