/*
 * niin/impl/common_impl.h -- what every part of the device API shares: the CUDA and NCCL
 * device headers, this module's context, the NCCL capabilities these headers were
 * compiled with, and the routing of a symmetric address to a target PE.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by the device
 * headers (niin/query.h, niin/rma.h, niin/threadgroup.h, niin/sync.h); CUDA C++ only.
 *
 * Routing (every operation that names a PE):
 *   pe == my_pe           the address itself (this PE's heap)
 *   pe in my LSA team     ncclGetPeerPointer(window, offset, pe): plain loads and stores
 *                         over NVLink (or PCIe peer access), offset = ptr - heap_base
 *   any other PE          NCCL GIN (ncclGin put/get between heap windows), when the
 *                         headers have it (NCCL >= 2.28.7) and the devComm was created with
 *                         it; otherwise the NOT_IMPLEMENTED policy
 */
#ifndef NIIN_IMPL_COMMON_IMPL_H
#define NIIN_IMPL_COMMON_IMPL_H

#if defined(__CUDACC__)

#include "niin/config.h"
#include "niin/types.h"
#include "niin/not_implemented.h"

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <nccl.h>
#include <nccl_device.h>

/* NIIN_NCCL_HAS_GIN, NIIN_USE_GIN, ...: what the NCCL headers in use can do. */
#include "niin/impl/clock_impl.h"
#include "niin/impl/nccl_caps.h"

/* The device context: the per-module slot, its registration and init hook, and the GIN
 * proxy (context_impl.h, which uses the capabilities above). */
#include "niin/context.h"

/* Linkage of the public functions: NVSHMEM's names with C linkage, defined inline in
 * every translation unit that includes the headers (no device library to link). */
#define NIIN_DEVICE __device__ inline
#define NIIN_DEVICE_HD NIIN_HOSTDEVICE inline

namespace niin {
namespace detail {

/* The cooperation scopes of the thread, warp and block variants: one implementation
 * templated on the scope serves all three (thread_rank(), size(), sync(), as NCCL's
 * ncclCoop* types). The block scope counts threads of 1-, 2- and 3-dimensional blocks
 * (NVSHMEM's _block functions accept any block shape); NCCL's ncclCoopCta knows 1-D
 * blocks only, see with_nccl_coop. */
struct ScopeThread {
    __device__ __forceinline__ int thread_rank() const { return 0; }
    __device__ __forceinline__ int size() const { return 1; }
    __device__ __forceinline__ void sync() const {}
};

struct ScopeWarp {
    __device__ __forceinline__ int thread_rank() const { return ncclCoopWarp().thread_rank(); }
    __device__ __forceinline__ int size() const { return 32; }
    __device__ __forceinline__ void sync() const { __syncwarp(); }
};

struct ScopeBlock {
    __device__ __forceinline__ int thread_rank() const {
        return static_cast<int>(threadIdx.x +
                                blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    }
    __device__ __forceinline__ int size() const {
        return static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
    }
    __device__ __forceinline__ void sync() const { __syncthreads(); }
};

/* NVSHMEM's warpgroup (nvshmemx_barrier_warpgroup): four consecutive warps, 128 threads by
 * linear thread index (the whole block when it has fewer, which then meets in
 * __syncthreads). In a larger block, which must have a multiple of 128 threads (as with
 * NVSHMEM), warpgroup w meets on named barrier 1 + w with a count of 128. (NVSHMEM uses
 * barrier w, so its warpgroup 0 shares barrier 0 with __syncthreads: other warps waiting
 * in __syncthreads meanwhile break both; 1 + w keeps them apart, and a 1024-thread block
 * needs barriers 1-8 of 16.) NCCL has no cooperation type for it: NCCL sessions run in its
 * first thread. */
struct ScopeWarpgroup {
    __device__ __forceinline__ int thread_rank() const { return ScopeBlock().thread_rank() & 127; }
    __device__ __forceinline__ int size() const {
        const int block = ScopeBlock().size();
        return block < 128 ? block : 128;
    }
    __device__ __forceinline__ void sync() const {
        if (ScopeBlock().size() <= 128) {
            __syncthreads();
        } else {
            const unsigned int id = 1 + (static_cast<unsigned int>(ScopeBlock().thread_rank()) >> 7);
            asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
        }
    }
};

/* Whether a scope is one thread. One thread's copies take no inline loop beyond
 * thread_transfer's short ones (copy_impl.h: inlining a general loop at every
 * nvshmem_<T>_put would multiply the code); in coop_copy their head and tail go by the
 * widest word. */
template <typename Coop>
__device__ __forceinline__ constexpr bool one_thread(Coop) { return false; }
__device__ __forceinline__ constexpr bool one_thread(ScopeThread) { return true; }

/* Whether a scope is a whole block (the one scope whose transfers' cold calls go direct:
 * cold_call). */
template <typename Coop>
__device__ __forceinline__ constexpr bool whole_block(Coop) { return false; }
__device__ __forceinline__ constexpr bool whole_block(ScopeBlock) { return true; }

/* Whether NCCL's cooperation type counts the scope's threads right: always, except for a
 * 2-D or 3-D block and the warpgroup (NCCL has no type for it). */
__device__ __forceinline__ constexpr bool nccl_counts(ScopeThread) { return true; }
__device__ __forceinline__ constexpr bool nccl_counts(ScopeWarp) { return true; }
__device__ __forceinline__ bool nccl_counts(ScopeBlock) {
    return blockDim.y == 1 && blockDim.z == 1;
}
__device__ __forceinline__ constexpr bool nccl_counts(ScopeWarpgroup) { return false; }


/* Runs f(coop) with the NCCL cooperation type of a scope (for ncclGin and the barrier
 * sessions), called by every thread of the scope: ncclCoopThread, ncclCoopWarp, and
 * ncclCoopCta for a 1-D block. A 2-D or 3-D block, which ncclCoopCta would miscount,
 * runs f(ncclCoopThread) in its first thread between two __syncthreads(). */
template <typename F>
__device__ __forceinline__ void with_nccl_coop(ScopeThread, F &&f) {
    f(ncclCoopThread());
}
template <typename F>
__device__ __forceinline__ void with_nccl_coop(ScopeWarp, F &&f) {
    f(ncclCoopWarp());
}
template <typename F>
__device__ __forceinline__ void with_nccl_coop(ScopeBlock block, F &&f) {
    if (nccl_counts(block)) {
        f(ncclCoopCta());
    } else {
        block.sync();
        if (block.thread_rank() == 0) f(ncclCoopThread());
        block.sync();
    }
}

/* A call before nvshmem_init filled this module's context is a usage error. */
__device__ __forceinline__ void require_init(const char *fn, const niin_device_context &c) {
    if (c.n_pes <= 0)
        usage_error(fn,
                    "called before nvshmem_init (this CUDA module's device context is not set)");
}

/* This module's context, unchecked: for the transfers, which look up the target first and
 * check in their other path. An unset context is all zeros, so its routing cache holds no
 * PE and its LSA team is empty: every target takes that path (the remote_* functions, whose
 * GIN side calls require_init). A branch less before a transfer's entry synchronization
 * than context(). */
__device__ __forceinline__ const niin_device_context &context_for_transfer() {
    return niin_ctx_value;
}

/* This module's context, checked (require_init). */
__device__ __forceinline__ const niin_device_context &context(const char *fn) {
    require_init(fn, niin_ctx_value);
    return niin_ctx_value;
}

/* Byte offset of a symmetric address in the heap (the same on every PE). */
__device__ __forceinline__ size_t heap_offset(const niin_device_context &c, const void *p) {
    return static_cast<size_t>(static_cast<const char *>(p) - c.heap_base);
}

/* Whether [p, p + bytes) lies in this PE's symmetric heap. */
__device__ __forceinline__ bool in_heap(const niin_device_context &c, const void *p,
                                        size_t bytes) {
    const char *q = static_cast<const char *>(p);
    return q >= c.heap_base && bytes <= c.heap_size &&
           static_cast<size_t>(q - c.heap_base) <= c.heap_size - bytes;
}

/* Whether [p, p + bytes) lies in this PE's heap or in a buffer made symmetric
 * (nvshmemx_buffer_register_symmetric; those follow the heap, at heap_base + offset). */
__device__ __forceinline__ bool in_symmetric(const niin_device_context &c, const void *p,
                                             size_t bytes) {
    if (in_heap(c, p, bytes)) return true;
    const char *q = static_cast<const char *>(p);
    if (q < c.heap_base) return false;
    const unsigned long long off = static_cast<unsigned long long>(q - c.heap_base);
    /* The library lists the buffers first: the first unused entry ends the search. */
    for (int i = 0; i < c.registered_slots; ++i) {
        const niin_device_registered r = c.registered[i];
        if (r.bytes == 0) break;
        if (off >= r.offset && bytes <= r.bytes && off - r.offset <= r.bytes - bytes) return true;
    }
    return false;
}

/* The index of `pe` in this PE's LSA team (self included): below lsa_size for a member,
 * lsa_size or more (unsigned) for any other PE. */
__device__ __forceinline__ unsigned int lsa_index(const niin_device_context &c, int pe) {
    return static_cast<unsigned int>(pe - (c.my_pe - c.lsa_rank));
}


/* Calls F, a __noinline__ function of a cold path (GIN, a large LSA team's table), through
 * a pointer that ptxas cannot resolve. A plain direct call lets ptxas allocate registers
 * across caller and callee: the cold paths' registers then count against the caller's (the
 * transfer kernels of tests/gpu/latency.cu needed 70-90, over the 64 of a 1024-thread block;
 * under __launch_bounds__(1024) the GIN code, ~120 registers, once pushed a putmem_block
 * loop's state to local memory: SASS of tests/gpu/putmem_block_bw.cu, 576-byte frame, 5-27 %
 * less bandwidth at 2-16 MiB). An indirect call follows the calling convention: the callee
 * saves the registers it uses, and only the cold path pays. */
template <auto F, typename... A>
__device__ __forceinline__ auto call_out_of_line(A... args) {
    decltype(F) volatile resolved_at_run_time = F;
    return resolved_at_run_time(args...);
}

/* The address of F, in a device variable: F may then be called through a pointer, so ptxas
 * compiles it to the calling convention (it saves on entry the callee-saved registers it
 * uses) instead of allocating its registers together with its callers'. */
template <auto F>
__device__ decltype(F) niin_cold_address = F;

/* Calls F directly, F compiled to the calling convention (niin_cold_address): the
 * caller's registers as with call_out_of_line, but ptxas knows the callee. Through a pointer
 * every uniform register is clobbered, so what a loop keeps there (the kernel's parameters,
 * the peer's distance) is reloaded with LDC on every iteration, by every warp of a block: a
 * 1024-thread getmem_block of 16 bytes took 0.377 us, 0.274 this way (NVSHMEM 3.4.5: 0.295;
 * H200, tests/gpu/latency.cu, session 9). That holds only when no call reachable from F goes
 * through a pointer, so every cold call inside the library goes this way. Not the hot
 * paths of one thread or one warp: in their loops ptxas then adds a YIELD (nvshmem_g 0.053
 * -> 0.076 us, a one-thread or one-warp getmem +23 ns), so p, g and the thread and warp
 * transfers call through the pointer (cold_call). The volatile read of the address (never
 * null) is on the cold path only; it keeps the variable, and so the address, in the module. */
template <auto F, typename... A>
__device__ __forceinline__ auto call_out_of_line_direct(A... args) {
    if (*static_cast<decltype(F) volatile *>(&niin_cold_address<F>) == nullptr) __trap();
    return F(args...);
}


/* call_out_of_line_direct for the collectives' out-of-line parts: F's address is kept in a
 * static of this function, not in niin_cold_address. A namespace-scope __device__ variable
 * is registered with the host runtime, so it, and the function it points to, are emitted in
 * every TU whose front end instantiates it -- and the typed API's inline bodies instantiate
 * every collective whether a kernel calls one or not. A function static is emitted only with
 * a caller that is. Compile time (nvcc 13.0, NCCL 2.31.2 headers, 2 cores, session 18):
 * tests/gpu/latency.cu, which calls no collective, 79 -> 51-55 s; its PTX 215 -> 152
 * functions. Not for the point-to-point paths: with the same change there, ptxas compiled
 * the 1024-thread getmem_block loop worse (the peer's distance reloaded with an indexed LDC
 * every iteration instead of kept in uniform registers: SASS of latency.cu; session 12
 * measured 0.370 against 0.275 us for 16 bytes). With it for the collectives only, every
 * kernel of latency.cu and putmem_block_bw.cu has the same SASS as before, and
 * putmem_block_bw's kernel needs 58 registers instead of 64 (fewer possible targets of its
 * indirect calls). */
template <auto F, typename... A>
__device__ __forceinline__ auto call_out_of_line_local(A... args) {
    static decltype(F) address = F;
    if (*static_cast<decltype(F) volatile *>(&address) == nullptr) __trap();
    return F(args...);
}

/* The out-of-line call of a transfer's cold path F by every thread of `coop`:
 * call_out_of_line_direct for a block, call_out_of_line for a thread or a warp. */
template <auto F, typename Coop, typename... A>
__device__ __forceinline__ auto cold_call(Coop coop, A... args) {
    if constexpr (whole_block(Coop{}))
        return call_out_of_line_direct<F>(coop, args...);
    else
        return call_out_of_line<F>(coop, args...);
}

/* Symmetric `sym` moved by a route's distance: the peer's load/store address of it. */
__device__ __forceinline__ char *at_distance(void *sym, long long delta) {
    return static_cast<char *>(sym) + delta;
}
__device__ __forceinline__ const char *at_distance(const void *sym, long long delta) {
    return static_cast<const char *>(sym) + delta;
}

/* The load/store address of symmetric `sym` on `pe`: `sym` itself for this PE, NCCL's
 * peer pointer for an LSA peer (through the context's LSA table: one subtraction, one
 * compare and one load of the peer's distance), nullptr for a PE that only GIN reaches. */
__device__ __forceinline__ char *lsa_address(const niin_device_context &c, const void *sym,
                                             int pe) {
    const unsigned int index = lsa_index(c, pe);
    if (index >= static_cast<unsigned int>(c.lsa_size)) return nullptr;
    return const_cast<char *>(at_distance(sym, __ldg(c.lsa_delta + index)));
}

/* The routing cache's answer for `pe`: whether it holds it (one of the first
 * NIIN_LSA_SLOTS members of this PE's LSA team), and its distance (the peer pointer minus
 * the symmetric address; meaningful on a hit). The test reads two context fields at fixed
 * addresses, the distance one indexed constant load; none depends on the symmetric address,
 * so all may be issued (or hoisted) before it is known. A miss -- a PE outside the LSA team,
 * or a member of a team larger than the cache -- is the callers' out-of-line path (the
 * remote_* functions, which look in lsa_address's table, else hand the work to GIN).
 *
 * Why a cache in the context: the system fence of every quiet (MEMBAR.SC.SYS, then
 * CCTL.IVALL) empties L1, so a lookup in global memory (the table of lsa_address) waits for
 * an L2 round trip on every operation after a quiet; the constant cache keeps its lines.
 * NVSHMEM 3.4.5 keeps its device state in constant memory for the same reason.
 *
 * Why a hit flag and not a null pointer: callers branch on `hit`, which does not depend on
 * the address, then add `delta`; testing the sum against nullptr put a 64-bit compare and a
 * branch between every address and its access (device/README.md, "Routing, short
 * transfers and cold calls"). */
struct CachedRoute {
    bool hit;
    long long delta;
};

__device__ __forceinline__ CachedRoute cached_route(const niin_device_context &c, int pe) {
    const unsigned int index = static_cast<unsigned int>(pe - c.lsa_cache_first);
    long long delta = c.lsa_cache_delta[index & (NIIN_LSA_SLOTS - 1)];
    /* Pins the load here, ahead of the branch on `hit`: the compiler may otherwise sink it
     * into the hit path, behind the address arithmetic, or reload it there (H200, session 9:
     * with the earlier slot-keyed cache, nvshmem_int64_g 0.067 us without this, 0.055 with
     * it; with this range test the two measured alike, and tests/gpu/latency.cu's one-thread
     * put_signal kernel needed 66 registers without it, 64 with). */
    asm volatile("" : "+l"(delta));
    return CachedRoute{index < c.lsa_cache_count, delta};
}

/* The routing cache, then the table: for the operations whose out-of-line side is GIN
 * alone (signal_op, team-barrier arrivals). put, get, put_signal, p, g and the AMOs route by
 * the cache alone and find the rest out of line. */
__device__ __forceinline__ char *lsa_address_near(const niin_device_context &c, const void *sym,
                                                  int pe) {
    const CachedRoute r = cached_route(c, pe);
    if (r.hit) return const_cast<char *>(at_distance(sym, r.delta));
    return lsa_address(c, sym, pe);
}

/* This CTA's index in the grid (1-, 2- or 3-D), the same on every PE for the same launch:
 * the barrier index and the GIN context come from it. */
__device__ __forceinline__ unsigned int cta_index() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

#if NIIN_USE_GIN
/* The GIN context a thread uses: one per CTA (NCCL folds the index onto the devComm's
 * ginContextCount), so puts, gets, flushes and barriers of one CTA share a context and
 * CTAs spread over the contexts NCCL made. */
__device__ __forceinline__ int gin_context_index() { return static_cast<int>(cta_index()); }
#endif

/* Same-size unsigned integer, for moving T's bits (half, bfloat16, float ...) as one
 * load or store. */
template <int Bytes>
struct uint_of_size;
template <>
struct uint_of_size<1> {
    using type = uint8_t;
};
template <>
struct uint_of_size<2> {
    using type = uint16_t;
};
template <>
struct uint_of_size<4> {
    using type = uint32_t;
};
template <>
struct uint_of_size<8> {
    using type = uint64_t;
};

template <typename T>
__device__ __forceinline__ typename uint_of_size<sizeof(T)>::type bits_of(const T &v) {
    typename uint_of_size<sizeof(T)>::type u;
    memcpy(&u, &v, sizeof(T));
    return u;
}

template <typename T>
__device__ __forceinline__ T from_bits(typename uint_of_size<sizeof(T)>::type u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COMMON_IMPL_H */
