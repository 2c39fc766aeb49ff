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
 *
 * Most transfers take an inline path instead (fast_transfer, below): warp and block
 * transfers that are 16-byte aligned, whole words and between global buffers the fast path
 * (plan_fast_copy before the entry synchronization, run_fast_copy after it, or one word per
 * thread), short ones of 8-byte words one word per thread, and one thread's short aligned
 * copies thread_transfer.
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

/* Bytes below which one thread copies, in coop_copy, in the widest word that divides both
 * addresses and the size (the aligned ones up to kInlineThreadCopy do not get there). */
constexpr size_t kShortThreadCopy = 256;

/* Copies `bytes` from `src` to `dst` with every thread of `coop` (all must call it with
 * the same arguments). Out of line: one copy of the code per scope, however many typed
 * functions call it. The functions called through a pointer (remote_put and the like) call
 * it too, so it is compiled to the calling convention: on entry it saves the callee-saved
 * registers it uses (some 20 stores and loads of local memory per thread and call), which
 * keeps the callers' register allocation apart from its own. A body of its own for the
 * inline paths, allocated together with its callers, put the latency kernels at 66-72
 * registers; the common short transfers therefore do not come here (small_transfer). */
template <typename Coop>
__device__ __noinline__ void coop_copy(Coop coop, void *dst, const void *src, size_t bytes) {
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    uintptr_t skew = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
    /* One thread's short copy: the widest word that divides both addresses and the size,
     * so there is no head or tail, whose byte-by-byte loop waits for each load in turn (an
     * 8-byte putmem took 0.17 us longer than a 16-byte one on an H200, session 7). Longer
     * copies keep the widest word the skew allows: the head and tail are then a small part. */
    if (one_thread(coop) && bytes < kShortThreadCopy)
        skew |= reinterpret_cast<uintptr_t>(d) | static_cast<uintptr_t>(bytes);
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

/* ---- the aligned fast path of the warp and block scopes ---------------------------------
 *
 * A warp or block transfer whose source and destination are 16-byte aligned and whose size
 * is whole 16-byte words (the usual case: symmetric buffers, aligned pieces) is done inline
 * by a loop planned before the group's entry synchronization: the addresses and this
 * thread's first word, its step and the end are computed then, so between the two
 * synchronizations each thread runs only the loop. Every instruction there is issued by
 * every warp while the loads wait, so it is kept short: at 1 MiB over 132 CTAs x 1024
 * threads a thread moves under one word per call and the call's own instructions are most
 * of its time (measured on an H200, README "The device API": the old path, a call of
 * coop_copy after the synchronization, took 0.80 us per 1 MiB round against the bare
 * loop's 0.30). A transfer of at most one word per thread skips the plan (group_transfer).
 * Other transfers (unaligned, non-global memory, a single thread) take the short paths
 * below or call coop_copy. */

/* Words each thread loads before its stores in the fast path's main loop. In a block, a
 * thread enters that loop only when the transfer reaches 2 x kFastUnroll of the group's steps past its
 * first word (it then has 8 words or more); otherwise it runs the plain loop (one word in
 * flight). Measured on an H200 (putmem_block, 132 x 1024, 3 runs each,
 * README "The device API"): with the 4-word loop for every thread that had 4 words, 8 MiB
 * (~4 words a thread) lost 7 % to the plain loop; with the plain loop everywhere, 32 MiB
 * lost 17 % (with default-policy stores: the source then comes from L2 and HBM, and one
 * load in flight is too few). */
constexpr int kFastUnroll = 4;

/* Whether `bytes` from `src` to `dst` can take the fast path: both in global memory (the
 * loop uses global loads and stores, which a generic access to the same address is slower
 * than while the source sits in L1: 16 MiB over 132 CTAs), 16-byte aligned, whole words.
 * (The callers pass load/store addresses only: a PE that only GIN reaches never gets here.) */
__device__ __forceinline__ bool fast_copy_fits(const void *dst, const void *src, size_t bytes) {
    return ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) &
            15) == 0 &&
           __isGlobal(dst) && __isGlobal(src);
}

/* One thread's share of a fast-path copy, as addresses: its first source and destination
 * word, the step between its words (the group's size times 16 bytes), the source's end, and
 * whether it has words enough for the unrolled loop (kFastUnroll). (Integers, not
 * pointers: a thread's first word may lie past the end.) */
struct FastCopy {
    uintptr_t src, dst, end, step;
    bool unroll;
};

template <typename Coop>
__device__ __forceinline__ FastCopy plan_fast_copy(Coop coop, void *dst, const void *src,
                                                   size_t bytes) {
    const uintptr_t first = static_cast<uintptr_t>(coop.thread_rank()) * 16;
    const uintptr_t s = reinterpret_cast<uintptr_t>(src);
    const uintptr_t step = static_cast<uintptr_t>(coop.size()) * 16;
    return FastCopy{s + first, reinterpret_cast<uintptr_t>(dst) + first, s + bytes, step,
                    first + 2 * kFastUnroll * step <= bytes};
}

/* Global load and store of one word: ld.global, weak, the default cache policy (what a
 * plain access through a pointer the compiler knows to be global becomes), and
 * st.global.L1::evict_first, weak. (Written in PTX: the CUDA intrinsics of the same name
 * are strong accesses, and nvcc does not derive the address space from
 * __builtin_assume(__isGlobal(p)).) The memory clobber keeps them in their place between
 * the group's synchronizations.
 *
 * Evict-first: the SM does not read the destination back (a peer's memory, or a local
 * buffer the caller reads later), so its lines are the first to leave this SM's L1 and do
 * not push out lines the SM reuses -- such as a source it sends again. Measured on an H200
 * against the default policy (putmem_block of one buffer, 132 x 1024, 3 runs each; the
 * noise is +-2-3 %): 4-8 MiB +2 %, 16 MiB +10 %, 32 MiB 1.7x (each SM's share of the
 * source then stays in its L1 from one round to the next), 64 MiB +2 %, 128 MiB -1 %.
 * L1::no_allocate did as well from 16 MiB up but lost 8 % at 4-8 MiB. */
__device__ __forceinline__ uint4 load_global(uintptr_t a) {
    uint4 v;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(a)
                 : "memory");
    return v;
}
__device__ __forceinline__ void store_global(uintptr_t a, uint4 v) {
    asm volatile("st.global.L1::evict_first.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* The loop of the block scope. A thread without words enough for the unrolled loop (at
 * 1 MiB over 132 x 1024 threads, every one) takes the plain loop first thing: measured on an
 * H200, testing for the unrolled loop first cost 7 % at 1 MiB (3 runs each). */
__device__ __forceinline__ void run_fast_copy(ScopeBlock, FastCopy f) {
    uintptr_t s = f.src, d = f.dst;
    if (!f.unroll) {
        for (; s < f.end; s += f.step, d += f.step) store_global(d, load_global(s));
        return;
    }
    const uintptr_t span = (kFastUnroll - 1) * f.step;
    for (; s + span < f.end; s += kFastUnroll * f.step, d += kFastUnroll * f.step) {
        uint4 v[kFastUnroll];
#pragma unroll
        for (int u = 0; u < kFastUnroll; ++u) v[u] = load_global(s + u * f.step);
#pragma unroll
        for (int u = 0; u < kFastUnroll; ++u) store_global(d + u * f.step, v[u]);
    }
    for (; s < f.end; s += f.step, d += f.step) store_global(d, load_global(s));
}

/* The loop of the warp scope: groups of kFastUnroll words, every word of a group loaded
 * before the group's stores, the last group cut short by predicates. One warp's transfer is
 * latency-bound (nothing else hides its loads), so its lanes keep their words in flight
 * together: with the block's policy a lane with under 2 x kFastUnroll words loaded one word
 * at a time, and a 4 KiB warp putmem (8 words a lane) took 2.56 us against NVSHMEM's 2.22
 * (tests/gpu/latency.cu, H200, session 8). */
__device__ __forceinline__ void run_fast_copy(ScopeWarp, FastCopy f) {
    const uintptr_t group = kFastUnroll * f.step;
    for (uintptr_t s = f.src, d = f.dst; s < f.end; s += group, d += group) {
        uint4 v[kFastUnroll];
#pragma unroll
        for (int u = 0; u < kFastUnroll; ++u)
            if (s + u * f.step < f.end) v[u] = load_global(s + u * f.step);
#pragma unroll
        for (int u = 0; u < kFastUnroll; ++u)
            if (s + u * f.step < f.end) store_global(d + u * f.step, v[u]);
    }
}

/* ---- short transfers -----------------------------------------------------------------
 *
 * Transfers that the loops above would spend more instructions planning than moving are
 * done inline, without a call: through coop_copy they paid its call and its saved
 * registers (on an H200, tests/gpu/latency.cu, session 8: an 8-byte putmem of a 1024-thread
 * block took 3.2 us against 1.4 for 16 bytes; a thread's 64-byte getmem 0.51 us against
 * NVSHMEM's 0.29, of which the copy itself is one load's latency). */

/* Bytes up to which one thread copies inline (whole 8- or 16-byte words, both addresses
 * aligned to the word): 16 words of 16 bytes, four loads in flight at a time. */
constexpr size_t kInlineThreadCopy = 256;

/* One thread's copy of `n` whole words (n <= 32): four loads in flight, then their stores (the last
 * group cut short by predicates). Weak accesses through generic addresses, as NVSHMEM's. */
template <typename Word>
__device__ __forceinline__ void thread_words(void *dst, const void *src, unsigned int n) {
    Word *to = static_cast<Word *>(dst);
    const Word *from = static_cast<const Word *>(src);
#pragma unroll 1
    for (unsigned int i = 0; i < n; i += 4) {
        const bool more1 = i + 1 < n, more2 = i + 2 < n, more3 = i + 3 < n;
        Word w[4];
        w[0] = from[i];
        if (more1) w[1] = from[i + 1];
        if (more2) w[2] = from[i + 2];
        if (more3) w[3] = from[i + 3];
        to[i] = w[0];
        if (more1) to[i + 1] = w[1];
        if (more2) to[i + 2] = w[2];
        if (more3) to[i + 3] = w[3];
    }
}

/* One thread's transfer inline where it is short and of whole aligned 8- or 16-byte
 * words; false, having done nothing, otherwise (coop_copy then). */
__device__ __forceinline__ bool thread_transfer(void *dst, const void *src, size_t bytes) {
    const uintptr_t bits =
        reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes;
    if (bytes == 0 || bytes > kInlineThreadCopy) return false;
    if ((bits & 15) == 0)
        thread_words<uint4>(dst, src, static_cast<unsigned int>(bytes / 16));
    else if ((bits & 7) == 0)
        thread_words<unsigned long long>(dst, src, static_cast<unsigned int>(bytes / 8));
    else
        return false;
    return true;
}

/* A warp's or block's transfer of at most one 8-byte word per thread, both addresses
 * 8-byte aligned, that the fast path does not take (8 B, 24 B ..., or shared memory): each
 * thread one word, between the group's synchronizations. False, having done nothing,
 * otherwise. */
template <typename Coop>
__device__ __forceinline__ bool group_words8(Coop coop, void *dst, const void *src,
                                             size_t bytes) {
    const uintptr_t bits =
        reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes;
    const size_t words = bytes / 8;
    if (bytes == 0 || (bits & 7) != 0 || words > static_cast<size_t>(coop.size())) return false;
    const size_t rank = static_cast<size_t>(coop.thread_rank());
    coop.sync();
    if (rank < words)
        static_cast<unsigned long long *>(dst)[rank] =
            static_cast<const unsigned long long *>(src)[rank];
    coop.sync();
    return true;
}

/* A warp's or block's transfer by an inline path: 16-byte aligned global buffers of whole
 * words one word per thread where that covers them (the addresses computed before the entry
 * synchronization), else by the fast path's loop (planned before it); otherwise
 * group_words8. With the group's synchronizations around it; false, having done nothing,
 * where none fits. */
template <typename Coop>
__device__ __forceinline__ bool group_transfer(Coop coop, void *dst, const void *src,
                                               size_t bytes) {
    if (!fast_copy_fits(dst, src, bytes)) return group_words8(coop, dst, src, bytes);
    if (bytes <= static_cast<size_t>(coop.size()) * 16) {
        const uintptr_t first = static_cast<uintptr_t>(coop.thread_rank()) * 16;
        const bool mine = first < bytes;
        const uintptr_t s = reinterpret_cast<uintptr_t>(src) + first;
        const uintptr_t d = reinterpret_cast<uintptr_t>(dst) + first;
        coop.sync();
        if (mine) store_global(d, load_global(s));
        coop.sync();
        return true;
    }
    const FastCopy plan = plan_fast_copy(coop, dst, src, bytes);
    coop.sync();
    run_fast_copy(coop, plan);
    coop.sync();
    return true;
}

/* A load/store transfer (both addresses this PE's or an LSA peer's) by an inline path where
 * one fits: thread_transfer for one thread, group_transfer for a warp or a block. False,
 * having done nothing, otherwise: the caller then synchronizes the group and calls
 * coop_copy. */
template <typename Coop>
__device__ __forceinline__ bool fast_transfer(Coop coop, void *dst, const void *src,
                                              size_t bytes) {
    if constexpr (one_thread(Coop{}))
        return thread_transfer(dst, src, bytes);
    else
        return group_transfer(coop, dst, src, bytes);
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COPY_IMPL_H */
