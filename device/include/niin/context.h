/*
 * niin/context.h -- the device context: what every device function of niin-rs reads.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by the device headers; CUDA
 * C++ only (nvcc or clang -x cuda), with NCCL's include directory on the path: the
 * context holds an ncclDevComm of the nccl_device.h this translation unit is compiled
 * with.
 *
 * One context per CUDA module. The device API is header-only, so every translation unit
 * (TU) that includes nvshmem.h has its own context (a static __constant__ variable), whether
 * built whole-program or with -rdc, and registers it with libnvshmem_host from a static initializer. nvshmem_init fills the
 * slot of every registered TU (a TU loaded later, by dlopen, is filled when it registers)
 * with a context whose ncclDevComm was created by code of this TU, so its layout is the
 * one this TU's kernels read; the host library first checks that these headers can work
 * with the NCCL it loaded, and makes init fail with a NIIN: line naming both versions if
 * they cannot. nvshmem_finalize clears them. impl/context_impl.h has the mechanism.
 *
 *   niin_ctx()          this TU's context; NULL before nvshmem_init (and after finalize,
 *                       and in a module whose registration was refused)
 *   niin_ctx_checked()  the same, but a NULL context prints what is missing and traps
 *
 * A module uses the device's primary context (the one the CUDA runtime uses): its slot
 * is filled there, and a kernel launched in another context finds NULL.
 */
#ifndef NIIN_CONTEXT_H
#define NIIN_CONTEXT_H

#include "niin/config.h"

#if defined(__CUDACC__)
#if !defined(__CUDACC_RTC__)
#include <stddef.h>
#endif
#include <nccl_device.h>
#include "niin/impl/nccl_caps.h"

/* One team as device code sees it: niin-teams' DeviceTeam (#[repr(C)], 16 bytes). Team PE i
 * is world PE start + i * stride; my_pe is this PE's number in it (-1: not a member); an
 * unused slot has size 0. */
struct niin_device_team {
    int start, stride, size, my_pe;
};

/* One application buffer made symmetric (nvshmemx_buffer_register_symmetric), as the
 * library's table lists it: its symmetric address is heap_base + offset on every PE. The
 * buffers come first; bytes 0 marks the first unused entry. */
struct niin_device_registered {
    unsigned long long offset, bytes;
};

struct niin_gin_queue;

/* Entries of the context's LSA routing cache (niin_device_context.lsa_cache_*, a power of
 * two): the first this many members of this PE's LSA team (consecutive world ranks, as
 * NCCL's are) are routed from the cache alone; a larger team's others through its table. */
#define NIIN_LSA_SLOTS 64

/* One CUDA module's view of the world, in constant memory (impl/context_impl.h says why). The
 * first nine fields are the agreed interface; the rest is private to one build of these
 * headers (each module builds its own context and reads only its own). */
struct niin_device_context {
    int my_pe, n_pes;
    char *heap_base;             /* this PE's symmetric heap (device pointer), offset 0 */
    size_t heap_size;            /* bytes of the heap that nvshmem_malloc hands out */
    ncclWindow_t window;         /* the heap's NCCL window: ncclGetPeerPointer(window, offset, peer) */
    int lsa_size, lsa_rank;      /* this PE's LSA team: PEs my_pe - lsa_rank ... + lsa_size - 1 */
    ncclDevComm dev_comm;        /* created with this TU's nccl_device.h (its layout) */
    unsigned int barrier_count;  /* lsaBarrierCount requested: the most CTAs inside
                                    nvshmem_barrier_all at once (NIIN_BARRIER_CTAS, default
                                    264); also barrierCount when gin_enabled */
    int gin_enabled;             /* non-zero: the world has non-LSA PEs and dev_comm has GIN */
    /* appended after the agreed fields */
    unsigned int gin_signal_count;  /* ginSignalCount requested (0 without GIN) */
    unsigned int gin_counter_count; /* ginCounterCount requested (0 without GIN) */
    int has_dev_comm;               /* non-zero: dev_comm is a device communicator; zero (and
                                       dev_comm zeroed) only in a one-PE world whose NCCL
                                       refused one (2.28.3 does), where nothing needs it;
                                       the window is then not read on the device either
                                       (NCCL gave it no device mapping) */
    const long long *lsa_delta;     /* LSA table, lsa_size entries (device memory; a team of
                                       one has one too): the
                                       load/store address of symmetric `sym` on LSA peer
                                       my_pe - lsa_rank + i is sym + lsa_delta[i] (NCCL's
                                       peer pointer; entry lsa_rank is 0: self by address) */
    /* appended in module ABI 2 */
    int put_signal_mode;            /* NIIN_PUT_SIGNAL_MODE: 0 fused (the signal is a release
                                       atomic after the data), 1 split (data, system fence,
                                       then a relaxed signal) */
    int team_slots;                 /* entries of `teams` (0 before any table exists) */
    const niin_device_team *teams;  /* this PE's team table (device memory owned by
                                       libnvshmem_host; entry i is team handle i; rewritten
                                       between kernels as teams are created and destroyed) */
    int barrier_lsa_size;           /* PEs of this PE's LSA team for barriers (lsa_size
                                       above is the routing table's size, 1 under
                                       NIIN_GIN_LOOPBACK) */
    int team_lsa_rank;              /* this PE's rank in its LSA team (lsa_rank above is 0
                                       under NIIN_GIN_LOOPBACK) */
    int gin_loopback;               /* NIIN_GIN_LOOPBACK test mode: peers are routed through the
                                       GIN proxy, whose worker moves the bytes by load/store */
    struct niin_gin_queue *gin_queue; /* this module's GIN request queue (device memory), NULL
                                       when the world needs no GIN: niin/impl/gin_proxy_impl.h */
    int lsa_cache_first;            /* the LSA routing cache (common_impl.h, cached_route):
                                       world PE first + i, i < lsa_cache_count, is at
                                       sym + lsa_cache_delta[i]; */
    unsigned int lsa_cache_count;   /* min(lsa_size, NIIN_LSA_SLOTS); 0 (a context of zeros,
                                       before init) routes nothing */
    long long lsa_cache_delta[NIIN_LSA_SLOTS]; /* lsa_delta's first lsa_cache_count entries */
    size_t team_sync_off;           /* heap offset of the team-barrier words: per team handle
                                       below team_slots, 16 bytes (arrivals of the other
                                       members here, barriers this PE began); zeroed by the
                                       library at init and team destroy (niin/impl/sync_impl.h) */
    /* appended in module ABI 4 */
    int registered_slots;           /* entries of `registered` */
    const niin_device_registered *registered; /* buffers made symmetric (device memory owned
                                       by libnvshmem_host, rewritten between kernels as buffers
                                       are registered and unregistered): their addresses are
                                       symmetric too (nvshmem_ptr; LSA routing needs no table,
                                       niin-transport's lsa/registered.rs says why) */
    /* appended in module ABI 5 */
    size_t coll_ll_off;             /* heap offset of the collectives' LL slots: per team
                                       handle below coll_ll_slots, NIIN_COLL_LL_HEADER bytes
                                       then coll_ll_ring bytes (niin/impl/coll_ll_impl.h);
                                       zeroed by the library at init and team destroy */
    unsigned int coll_ll_slots;     /* team handles with an LL slot (0: no LL path) */
    unsigned int coll_ll_ring;      /* bytes of each slot's ring */
    /* appended in module ABI 7 */
    size_t world_sync_off;          /* heap offset of the barrier words of NVSHMEM_TEAM_WORLD
                                       and the LSA team: barrier_count slots of 16 bytes, slot
                                       i for CTA index i (niin/impl/sync_impl.h); zero at init */
    volatile unsigned int *abort_word; /* two mapped host words of libnvshmem_host's
                                       watchdog: [0] 0, or 1 + a PE that died (niinrun's
                                       status board), device barriers stop when it is set;
                                       [1] set before a kernel stops (niin_stop_kernel).
                                       NULL: no watchdog */
    unsigned long long timeout_ns;  /* NIIN_TIMEOUT in ns: device barriers stop after it,
                                       naming the PEs that did not arrive (0: never) */
};

#include "niin/impl/context_impl.h"

/* This TU's context, or NULL before nvshmem_init. Read-only: it lives in constant memory. */
static __device__ __forceinline__ const niin_device_context *niin_ctx() {
    return niin_ctx_value.n_pes > 0 ? &niin_ctx_value : nullptr;
}

/* This TU's context; a NULL one prints why and stops the kernel (__trap()). */
static __device__ __forceinline__ const niin_device_context *niin_ctx_checked() {
    const niin_device_context *ctx = niin_ctx();
    if (ctx == nullptr) niin_ctx_missing();
    return ctx;
}

#endif /* __CUDACC__ */

#endif /* NIIN_CONTEXT_H */
