/*
 * niin/impl/sync_impl.h -- bodies of niin/sync.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * What the barriers need from the device communicator (created by the per-module hook
 * of niin/context.h): lsaBarrierCount >= barrier_count always (NCCL's LSA barrier session);
 * with more than one LSA team also GIN signals (ginSignalCount >= barrier_count: the rail
 * barrier of the GIN proxy, niin/impl/gin_proxy_impl.h). A barrier of a team of one PE
 * needs none of it.
 */
#ifndef NIIN_IMPL_SYNC_IMPL_H
#define NIIN_IMPL_SYNC_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/gin_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* Completion of this thread's earlier operations: a system-scope fence, and when this
 * module has a GIN proxy, a FLUSH through it (gin_quiet, out of line). Also nvshmem_fence's
 * ordering: GIN has no lighter operation that orders puts. */
__device__ __forceinline__ void quiet_thread(const niin_device_context &c) {
    __threadfence_system();
    if (c.gin_queue != nullptr) call_out_of_line(&gin_quiet<0>, "nvshmem_quiet", &c);
}

/* The rail part of a world barrier across LSA teams, out of line (gin_proxy_impl.h). */
template <int = 0>
__device__ __noinline__ void rail_barrier(const niin_device_context *c, unsigned int index) {
    gin_rail_barrier(*c, index);
}

constexpr const char *kBarrierTeamWhy =
    "device barriers exist for NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED and NVSHMEMX_TEAM_NODE "
    "only";
constexpr const char *kNoBarriers =
    "this module's NCCL device communicator was created without barriers (barrier_count 0)";
constexpr const char *kNoWorldBarrier =
    "a barrier of all PEs across LSA teams needs the GIN proxy (NCCL headers >= 2.28.7, a world "
    "with GIN, and NIIN_DEVICE_GIN not 0)";

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
        __threadfence_system();
        if (c.gin_queue != nullptr) {
            if (coop.thread_rank() == 0) call_out_of_line(&gin_quiet<0>, fn, &c);
            coop.sync();
        }
    }
    if ((lsa_team ? c.barrier_lsa_size : c.n_pes) == 1) {
        /* A team of one PE: nothing to wait for but this group (the syncs around), and the
         * ordering NCCL's barrier would give. Also what a one-PE world without a devComm
         * (has_dev_comm = 0, niin/context.h) relies on. */
        __threadfence();
    } else if (lsa_team || c.barrier_lsa_size == c.n_pes) {
        ncclLsaBarrierSession<decltype(nccl_coop)> bar(nccl_coop, c.dev_comm, ncclTeamTagLsa{},
                                                       index);
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
    } else {
        /* Across LSA teams: the LSA team meets, its PEs meet their rail peers (the PEs of
         * the same LSA rank on the other LSA teams) through the GIN proxy, and the LSA team
         * meets again, so no PE leaves before every PE arrived. */
        if (c.gin_queue == nullptr) {
            not_implemented(coop, fn, kNoWorldBarrier);
            return 0;
        }
        ncclLsaBarrierSession<decltype(nccl_coop)> bar(nccl_coop, c.dev_comm, ncclTeamTagLsa{},
                                                       index);
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
        coop.sync();
        if (coop.thread_rank() == 0) call_out_of_line(&rail_barrier<0>, &c, index);
        coop.sync();
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
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

NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_SYNC_IMPL_H */
