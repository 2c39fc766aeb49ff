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
#include "niin/impl/query_impl.h"
#include "niin/impl/wait_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* Completion of this thread's earlier operations: a system-scope fence, and when this
 * module has a GIN proxy, a FLUSH through it (gin_quiet, out of line). Also nvshmem_fence's
 * ordering: GIN has no lighter operation that orders puts. */
__device__ __forceinline__ void quiet_thread(const niin_device_context &c) {
    /* the queue's address is loaded before the fence, whose wait then covers the load */
    const bool gin = c.gin_queue != nullptr;
    __threadfence_system();
    if (gin) call_out_of_line_direct<&gin_quiet<0>>("nvshmem_quiet", &c);
}

/* The rail part of a world barrier across LSA teams, out of line (gin_proxy_impl.h). */
template <int = 0>
__device__ __noinline__ void rail_barrier(const niin_device_context *c, unsigned int index) {
    gin_rail_barrier(*c, index);
}

constexpr const char *kInvalidTeam = "NVSHMEM_TEAM_INVALID is not a team";
constexpr const char *kNotTeamMember = "this PE is not a member of the team";
constexpr const char *kNoBarriers =
    "this module's NCCL device communicator was created without barriers (barrier_count 0)";
constexpr const char *kNoWorldBarrier =
    "a barrier of all PEs across LSA teams needs the GIN proxy (NCCL headers >= 2.28.7, a world "
    "with GIN, and NIIN_DEVICE_GIN not 0)";

/* ---- barriers of the other teams ---------------------------------------------------------
 *
 * Teams other than WORLD and this PE's LSA team (SHARED, NODE), which have NCCL's barriers:
 * split teams and the predefined SAME_MYPE_NODE, SAME_GPU and GPU_LEADERS. NCCL's barriers
 * are per devComm (world, LSA team, rail), not per team, so these count arrivals in the
 * team's slot of the library's system area: 16 bytes at heap offset c.team_sync_off +
 * 16 * handle, word 0 the arrivals of the other members at this PE, word 1 the barriers this
 * PE began. The k-th barrier of a team: each member adds 1 to word 0 of every other member
 * (a release at system scope: for an LSA peer a red.add through its mapping, for a PE that
 * only GIN reaches a signal ADD through the GIN proxy), then waits until its own word 0
 * reaches k * (size - 1) (acquire). The counts only grow; libnvshmem_host zeroes a slot when
 * the team of its handle is destroyed (niin-api World::team_destroy says why no arrival can
 * be lost to that). As with NVSHMEM's team collectives, one barrier of a team at a time per
 * PE: one thread, warp or block. Teams of any membership work, several PEs per GPU included;
 * the wait has no timeout (NVSHMEM's has none either). */

/* This PE's barrier words of `team` (a handle below team_slots). */
__device__ __forceinline__ unsigned long long *team_sync_words(const niin_device_context &c,
                                                               nvshmem_team_t team) {
    return reinterpret_cast<unsigned long long *>(c.heap_base + c.team_sync_off +
                                                  16 * static_cast<size_t>(team));
}

/* One arrival at world PE `pe`'s word 0 of the slot at symmetric `words`. */
__device__ __forceinline__ void team_arrive(const char *fn, const niin_device_context &c,
                                            unsigned long long *words, int pe) {
    char *peer = lsa_address_near(c, words, pe);
    if (peer != nullptr)
        asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(peer), "l"(1ull) : "memory");
    else
        call_out_of_line_direct<&gin_signal_op<0>>(fn, &c, reinterpret_cast<uint64_t *>(words),
                         static_cast<uint64_t>(1), static_cast<int>(NVSHMEM_SIGNAL_ADD), pe);
}

/* The counting barrier of `team` by every thread of `coop` (entered together; complete: a
 * quiet first): the group's threads share the arrivals, its first thread waits. */
template <typename Coop>
__device__ __noinline__ void team_counting_barrier(Coop coop, const char *fn, nvshmem_team_t team,
                                                  bool complete) {
    const niin_device_context &c = context(fn);
    if (team == NVSHMEM_TEAM_INVALID) usage_error(fn, kInvalidTeam);
    DeviceTeamView t;
    if (!device_team(c, team, &t)) {
        not_implemented(coop, fn, kTeamWhy);
        return;
    }
    const int me = team_index_of(t, c.my_pe);
    if (me < 0) usage_error(fn, kNotTeamMember);
    unsigned long long *words = team_sync_words(c, team);
    coop.sync();
    if (complete) {
        if (coop.thread_rank() == 0) quiet_thread(c);
        coop.sync();
    }
    for (int i = coop.thread_rank(); i < t.size - 1; i += coop.size())
        team_arrive(fn, c, words, t.start + ((me + 1 + i) % t.size) * t.stride);
    if (coop.thread_rank() == 0) {
        const unsigned long long epoch = words[1] + 1;
        words[1] = epoch;
        const unsigned long long target = epoch * static_cast<unsigned long long>(t.size - 1);
        while (load_acquire_bits(reinterpret_cast<const uint64_t *>(words)) < target)
            __nanosleep(32);
    }
    coop.sync();
}

/* Barrier (complete = true: quiet first and GIN's completing fence) or sync (false) of
 * NVSHMEM_TEAM_WORLD or this PE's LSA team (NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE), by
 * every thread of `coop`. Out of line: one body per scope; a scope NCCL cannot count (a
 * 2-D or 3-D block, a warpgroup) runs the thread-scope body in its first thread. */
template <typename Coop>
__device__ __noinline__ void barrier(Coop coop, const char *fn, nvshmem_team_t team,
                                     bool complete) {
    const niin_device_context &c = context(fn);
    const bool lsa_team = team != NVSHMEM_TEAM_WORLD;
    if (!nccl_counts(coop)) {
        coop.sync();
        if (coop.thread_rank() == 0) barrier(ScopeThread(), fn, team, complete);
        coop.sync();
        return;
    }
    if (c.barrier_count == 0) usage_error(fn, kNoBarriers);
    const uint32_t index = cta_index() % c.barrier_count;
    auto nccl_coop = nccl_coop_of(coop);
    coop.sync();
    if (complete) {
        __threadfence_system();
        if (c.gin_queue != nullptr) {
            if (coop.thread_rank() == 0) call_out_of_line_direct<&gin_quiet<0>>(fn, &c);
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
            return;
        }
        ncclLsaBarrierSession<decltype(nccl_coop)> bar(nccl_coop, c.dev_comm, ncclTeamTagLsa{},
                                                       index);
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
        coop.sync();
        if (coop.thread_rank() == 0) call_out_of_line_direct<&rail_barrier<0>>(&c, index);
        coop.sync();
        bar.sync(nccl_coop, cuda::memory_order_acq_rel);
    }
    coop.sync();
    return;
}

/* nvshmem_barrier(team) / nvshmem_team_sync(team) at any scope: NCCL's barriers for WORLD
 * and the LSA team, the counting barrier for every other team. Both out of line, compiled to
 * the calling convention (call_out_of_line_direct): a team handle known only at run time
 * makes a kernel reach both bodies, and plain direct calls to the two had ptxas allocate
 * their registers into the caller's (a 1024-thread loop of nvshmem_int_p,
 * nvshmemx_barrier_block(team) and a check needed 66-80 registers; through a pointer, 48). */
template <typename Coop>
__device__ __forceinline__ int team_barrier(Coop coop, const char *fn, nvshmem_team_t team,
                                            bool complete) {
    if (team == NVSHMEM_TEAM_WORLD || team == NVSHMEM_TEAM_SHARED || team == NVSHMEMX_TEAM_NODE)
        call_out_of_line_direct<&barrier<Coop>>(coop, fn, team, complete);
    else
        call_out_of_line_direct<&team_counting_barrier<Coop>>(coop, fn, team, complete);
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
    return niin::detail::team_barrier(niin::detail::ScopeWarp{}, "nvshmemx_barrier_warp", team, true);
}
NIIN_DEVICE int nvshmemx_barrier_warpgroup(nvshmem_team_t team) {
    return niin::detail::team_barrier(niin::detail::ScopeWarpgroup{}, "nvshmemx_barrier_warpgroup",
                                      team, true);
}
NIIN_DEVICE int nvshmemx_barrier_block(nvshmem_team_t team) {
    return niin::detail::team_barrier(niin::detail::ScopeBlock{}, "nvshmemx_barrier_block", team, true);
}
NIIN_DEVICE int nvshmemx_team_sync_warp(nvshmem_team_t team) {
    return niin::detail::team_barrier(niin::detail::ScopeWarp{}, "nvshmemx_team_sync_warp", team, false);
}
NIIN_DEVICE int nvshmemx_team_sync_block(nvshmem_team_t team) {
    return niin::detail::team_barrier(niin::detail::ScopeBlock{}, "nvshmemx_team_sync_block", team,
                                 false);
}

NIIN_END_C_DECLS

/* Host functions too: device bodies in the device pass only. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS

/* fence and quiet read the context unchecked (context_for_transfer): before nvshmem_init it
 * is all zeros, so they are a system fence and nothing else, which harms nothing. The check
 * (a load of n_pes and a branch) cost every p + quiet round one more trip to L2 after the
 * previous round's fence: the latency rows of tests/gpu/latency.cu pay it per call. */
NIIN_DEVICE_HD void nvshmem_fence(void) {
    niin::detail::quiet_thread(niin::detail::context_for_transfer());
}

NIIN_DEVICE_HD void nvshmem_quiet(void) {
    niin::detail::quiet_thread(niin::detail::context_for_transfer());
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
    return niin::detail::team_barrier(niin::detail::ScopeThread{}, "nvshmem_barrier", team, true);
}

NIIN_DEVICE_HD int nvshmem_team_sync(nvshmem_team_t team) {
    return niin::detail::team_barrier(niin::detail::ScopeThread{}, "nvshmem_team_sync", team, false);
}

NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_SYNC_IMPL_H */
