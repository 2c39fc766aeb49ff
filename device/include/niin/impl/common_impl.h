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

/* Whether NCCL's cooperation type counts the scope's threads right: always, except for a
 * 2-D or 3-D block and the warpgroup (NCCL has no type for it). */
__device__ __forceinline__ constexpr bool nccl_counts(ScopeThread) { return true; }
__device__ __forceinline__ constexpr bool nccl_counts(ScopeWarp) { return true; }
__device__ __forceinline__ bool nccl_counts(ScopeBlock) {
    return blockDim.y == 1 && blockDim.z == 1;
}
__device__ __forceinline__ constexpr bool nccl_counts(ScopeWarpgroup) { return false; }

/* The NCCL cooperation type of a scope; for ScopeBlock only where nccl_counts(). */
__device__ __forceinline__ ncclCoopThread nccl_coop_of(ScopeThread) { return ncclCoopThread(); }
__device__ __forceinline__ ncclCoopWarp nccl_coop_of(ScopeWarp) { return ncclCoopWarp(); }
__device__ __forceinline__ ncclCoopCta nccl_coop_of(ScopeBlock) { return ncclCoopCta(); }
/* (never used: nccl_counts(ScopeWarpgroup) is false, NCCL's sessions run in one thread) */
__device__ __forceinline__ ncclCoopThread nccl_coop_of(ScopeWarpgroup) { return ncclCoopThread(); }

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


/* Calls `f`, a __noinline__ function of a cold path (GIN), through a function pointer that
 * ptxas cannot resolve. A direct call lets ptxas allocate registers across caller and
 * callee, and the GIN code needs ~120: under __launch_bounds__(1024) (64 registers) it
 * then kept the caller's loop state in local memory, an STL/LDL pair every iteration of a
 * putmem_block loop whether or not GIN was ever taken (SASS of tests/gpu/putmem_block_bw.cu
 * with NCCL 2.31 headers: 4 local accesses on every iteration's path, 576-byte frame;
 * through the pointer: none there, 2 on the GIN branch, 16-byte frame; on the H200 that
 * was 5-27 % more bandwidth at 2-16 MiB, one run before and one after). An indirect call
 * follows the ABI: the callee saves the registers it uses, and only the cold path pays. */
template <typename R, typename... P, typename... A>
__device__ __forceinline__ R call_out_of_line(R (*f)(P...), A... args) {
    R (*volatile resolved_at_run_time)(P...) = f;
    return resolved_at_run_time(args...);
}

/* The load/store address of symmetric `sym` on `pe`: `sym` itself for this PE, NCCL's
 * peer pointer for an LSA peer (through the context's LSA table: one subtraction, one
 * compare and one load of the peer's distance), nullptr for a PE that only GIN reaches. */
__device__ __forceinline__ char *lsa_address(const niin_device_context &c, const void *sym,
                                             int pe) {
    const unsigned int index = lsa_index(c, pe);
    if (index >= static_cast<unsigned int>(c.lsa_size)) return nullptr;
    const long long delta = __ldg(c.lsa_delta + index);
    return const_cast<char *>(static_cast<const char *>(sym)) + delta;
}

/* lsa_address from the context's routing cache alone: slot pe % NIIN_LSA_SLOTS names the PE
 * it holds and that PE's distance, two constant-cache loads whose address depends on `pe`
 * alone; nullptr when the slot holds another PE -- one outside the LSA team, or an LSA peer
 * of a team larger than NIIN_LSA_SLOTS, which the callers' out-of-line path then finds
 * with lsa_address (the remote_* functions).
 *
 * Why: the system fence of every quiet (MEMBAR.SC.SYS, then CCTL.IVALL) empties L1, so a
 * lookup in global memory (the table of lsa_address) waits for an L2 round trip on every
 * operation after a quiet; the constant cache keeps its lines. NVSHMEM 3.4.5 keeps its
 * device state in constant memory for the same reason. */
__device__ __forceinline__ char *lsa_address_cached(const niin_device_context &c,
                                                    const void *sym, int pe) {
    const unsigned int slot = static_cast<unsigned int>(pe) & (NIIN_LSA_SLOTS - 1);
    if (c.lsa_slot_pe[slot] != pe + 1) return nullptr; /* 1 + the PE: a zeroed context holds none */
    return const_cast<char *>(static_cast<const char *>(sym)) + c.lsa_slot_delta[slot];
}

/* The routing cache, then the table: for the operations whose out-of-line side is GIN
 * alone (atomics, signals, team-barrier arrivals). put, get, put_signal, p and g route by
 * the cache alone and find the rest out of line (their remote_* functions). */
__device__ __forceinline__ char *lsa_address_near(const niin_device_context &c, const void *sym,
                                                  int pe) {
    char *d = lsa_address_cached(c, sym, pe);
    return d != nullptr ? d : lsa_address(c, sym, pe);
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
