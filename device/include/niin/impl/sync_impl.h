/*
 * niin/impl/sync_impl.h -- bodies of niin/sync.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * What the barriers need from the device communicator (created by the per-module hook
 * of niin/context.h): lsaBarrierCount >= barrier_count always (the LSA session, and the
 * LSA half of the hybrid one); with more than one LSA team also GIN and the GIN barriers
 * of NCCL's hybrid world session (barrierCount; NCCL-VERSIONS.md "Barriers"). A barrier
 * of a team of one PE needs none of it.
 */
#ifndef NIIN_IMPL_SYNC_IMPL_H
#define NIIN_IMPL_SYNC_IMPL_H

#include "niin/impl/common_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

#if NIIN_USE_GIN
/* The GIN fence of a completing barrier: puts of the other PEs visible here and this
 * PE's gets landed (ncclGinFenceLevel::Put | Get) where the headers have those levels
 * (2.31.2 has them, 2.30.3 not; detected, not version-checked); where the only level is
 * Relaxed, the quiet before the barrier does the completing. */
template <typename E>
__device__ constexpr auto gin_fence_complete(int) -> decltype(E::Put | E::Get) {
    return E::Put | E::Get;
}
template <typename E>
__device__ constexpr E gin_fence_complete(long) {
    return E::Relaxed;
}
#endif

/* Completion of this thread's earlier operations: a flush of this CTA's GIN context
 * (when the devComm has GIN), then a system-scope fence. Also nvshmem_fence's ordering:
 * GIN has no lighter operation that orders puts. Out of line (a template only for the
 * linkage: one weak body however many TUs include it): NCCL's GIN flush is thousands of
 * instructions, and inlined at every nvshmem_quiet/nvshmem_fence it multiplied ptxas's time
 * (a test TU with ~100 call sites took minutes). */
template <int = 0>
__device__ __noinline__ void quiet_thread(const niin_device_context &c) {
#if NIIN_USE_GIN
    if (c.gin_enabled) {
        ncclGin gin(c.dev_comm, gin_context_index());
        gin.flush(ncclCoopThread());
    }
#else
    (void)c;
#endif
    __threadfence_system();
}

constexpr const char *kBarrierTeamWhy =
    "device barriers exist for NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED and NVSHMEMX_TEAM_NODE "
    "only";
constexpr const char *kNoBarriers =
    "this module's NCCL device communicator was created without barriers (barrier_count 0)";
constexpr const char *kNoWorldBarrier =
    "a barrier of all PEs across LSA teams needs NCCL GIN (headers >= 2.28.7, a devComm with "
    "GIN, and NIIN_DEVICE_GIN not 0)";

/* Barrier (complete = true: quiet first and GIN's completing fence) or sync (false) of
 * `team`, by every thread of `coop`. Out of line: one body per scope; a 2-D or 3-D block
 * runs the thread-scope body in its first thread. */
template <typename Coop>
__device__ __noinline__ int barrier(Coop coop, const char *fn, nvshmem_team_t team,
                                    bool complete) {
    const niin_device_context &c = context(fn);
    const bool world = team == NVSHMEM_TEAM_WORLD;
    const bool lsa_team = team == NVSHMEM_TEAM_SHARED || team == NVSHMEMX_TEAM_NODE;
    if (!world && !lsa_team) {
        not_implemented(coop, fn, kBarrierTeamWhy);
        return 0;
    }
    if (!nccl_counts(coop)) {
        coop.sync();
        if (coop.thread_rank() == 0) barrier(ScopeThread(), fn, team, complete);
        coop.sync();
        return 0;
    }
    if (c.barrier_count == 0) usage_error(fn, kNoBarriers);
    const uint32_t index = cta_index() % c.barrier_count;
    auto nccl_coop = nccl_coop_of(coop);
    coop.sync();
    if (complete) {
#if NIIN_USE_GIN
        if (c.gin_enabled) {
            ncclGin gin(c.dev_comm, gin_context_index());
            gin.flush(nccl_coop);
        }
#endif
        __threadfence_system();
    }
    if ((lsa_team ? c.lsa_size : c.n_pes) == 1) {
        /* A team of one PE: nothing to wait for but this group (the syncs around), and the
         * ordering NCCL's barrier would give. Also what a one-PE world without a devComm
         * (has_dev_comm = 0, niin/context.h) relies on. */
        __threadfence();
    } else if (lsa_team || c.lsa_size == c.n_pes) {
        ncclLsaBarrierSession<decltype(nccl_coop)> bar(nccl_coop, c.dev_comm, ncclTeamTagLsa{},
                                                       index);
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
    } else {
#if NIIN_USE_GIN
        if (!c.gin_enabled) {
            not_implemented(coop, fn, kNoWorldBarrier);
            return 0;
        }
        ncclGin gin(c.dev_comm, gin_context_index());
        ncclBarrierSession<decltype(nccl_coop)> bar(nccl_coop, ncclTeamTagWorld{}, gin, index);
        bar.sync(nccl_coop, cuda::memory_order_acq_rel,
                 complete ? gin_fence_complete<ncclGinFenceLevel>(0) : ncclGinFenceLevel::Relaxed);
#else
        not_implemented(coop, fn, kNoWorldBarrier);
        return 0;
#endif
    }
    coop.sync();
    return 0;
}

} /* namespace detail */
} /* namespace niin */

NIIN_BEGIN_C_DECLS

NIIN_DEVICE void nvshmemx_barrier_all_warp(void) {
    niin::detail::barrier(niin::detail::ScopeWarp{}, "nvshmemx_barrier_all_warp",
                          NVSHMEM_TEAM_WORLD, true);
}
NIIN_DEVICE void nvshmemx_barrier_all_block(void) {
    niin::detail::barrier(niin::detail::ScopeBlock{}, "nvshmemx_barrier_all_block",
                          NVSHMEM_TEAM_WORLD, true);
}
NIIN_DEVICE void nvshmemx_sync_all_warp(void) {
    niin::detail::barrier(niin::detail::ScopeWarp{}, "nvshmemx_sync_all_warp", NVSHMEM_TEAM_WORLD,
                          false);
}
NIIN_DEVICE void nvshmemx_sync_all_block(void) {
    niin::detail::barrier(niin::detail::ScopeBlock{}, "nvshmemx_sync_all_block",
                          NVSHMEM_TEAM_WORLD, false);
}
NIIN_DEVICE int nvshmemx_barrier_warp(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeWarp{}, "nvshmemx_barrier_warp", team, true);
}
NIIN_DEVICE int nvshmemx_barrier_block(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeBlock{}, "nvshmemx_barrier_block", team, true);
}
NIIN_DEVICE int nvshmemx_team_sync_warp(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeWarp{}, "nvshmemx_team_sync_warp", team, false);
}
NIIN_DEVICE int nvshmemx_team_sync_block(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeBlock{}, "nvshmemx_team_sync_block", team,
                                 false);
}

NIIN_END_C_DECLS

/* Host functions too: device bodies in the device pass only. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS

NIIN_DEVICE_HD void nvshmem_fence(void) {
    niin::detail::quiet_thread(niin::detail::context("nvshmem_fence"));
}

NIIN_DEVICE_HD void nvshmem_quiet(void) {
    niin::detail::quiet_thread(niin::detail::context("nvshmem_quiet"));
}

NIIN_DEVICE_HD void nvshmem_barrier_all(void) {
    niin::detail::barrier(niin::detail::ScopeThread{}, "nvshmem_barrier_all", NVSHMEM_TEAM_WORLD,
                          true);
}

NIIN_DEVICE_HD void nvshmem_sync_all(void) {
    niin::detail::barrier(niin::detail::ScopeThread{}, "nvshmem_sync_all", NVSHMEM_TEAM_WORLD,
                          false);
}

NIIN_DEVICE_HD int nvshmem_barrier(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeThread{}, "nvshmem_barrier", team, true);
}

NIIN_DEVICE_HD int nvshmem_team_sync(nvshmem_team_t team) {
    return niin::detail::barrier(niin::detail::ScopeThread{}, "nvshmem_team_sync", team, false);
}

NIIN_DEVICE_HD uint64_t nvshmem_signal_fetch(uint64_t *sig_addr) {
    return *reinterpret_cast<volatile uint64_t *>(sig_addr);
}

NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_SYNC_IMPL_H */
