/*
 * niin/impl/sync_impl.h -- bodies of niin/sync.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * The barriers are niin-rs's own counting barriers ("counting barriers" below), not NCCL's
 * LSA barrier sessions: NCCL's wait neither times out nor stops for a dead PE before 2.31,
 * and never says who is missing. With more than one LSA team a world barrier also needs GIN
 * signals (ginSignalCount >= barrier_count: the rail barrier of the GIN proxy,
 * niin/impl/gin_proxy_impl.h). A barrier of a team of one PE needs none of it.
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
    "this module's context has no world barrier slots (barrier_count 0)";
constexpr const char *kNoWorldBarrier =
    "a barrier of all PEs across LSA teams needs the GIN proxy (NCCL headers >= 2.28.7, a world "
    "with GIN, and NIIN_DEVICE_GIN not 0)";

/* ---- counting barriers -------------------------------------------------------------------
 *
 * Every device barrier counts arrivals in 16-byte slots of the library's system area: word 0
 * the arrivals of the other members at this PE, word 1 the barriers this PE began on the
 * slot. The k-th barrier on a slot: each member adds 1 to word 0 of every other member's
 * slot (a release at system scope: for an LSA peer a red.add through its mapping, for a PE
 * that only GIN reaches a signal ADD through the GIN proxy), then waits until its own word 0
 * reaches k * (size - 1) (acquire). The counts only grow.
 *
 * Slots: NVSHMEM_TEAM_WORLD and this PE's LSA team (NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE)
 * share barrier_count slots at c.world_sync_off, slot i for the CTA index i (so that up to
 * barrier_count CTAs may be in a world barrier at once, NIIN_BARRIER_CTAS); every other
 * team (split teams, SAME_MYPE_NODE, SAME_GPU, GPU_LEADERS) has the slot of its handle at
 * c.team_sync_off + 16 * handle, which libnvshmem_host zeroes when the team of the handle is
 * destroyed (niin-api World::team_destroy says why no arrival can be lost to that). As with
 * NVSHMEM's team collectives, one barrier of a team at a time per PE (per CTA index for the
 * world): one thread, warp or block. Teams of any membership work, several PEs per GPU
 * included.
 *
 * The wait is not blind (NVSHMEM's is): every 1024 polls the waiting thread calls
 * barrier_stalled, which stops the kernel with one NIIN: line when libnvshmem_host's watchdog
 * has seen a PE die (niinrun's status board; c.abort_word) or when the wait has lasted
 * NIIN_TIMEOUT (c.timeout_ns), naming the members that never began this barrier. The check
 * costs nothing while barriers complete: the fast path is the poll loop with a counter. */

/* This PE's barrier words of `team` (a handle below team_slots). */
__device__ __forceinline__ unsigned long long *team_sync_words(const niin_device_context &c,
                                                               nvshmem_team_t team) {
    return reinterpret_cast<unsigned long long *>(c.heap_base + c.team_sync_off +
                                                  16 * static_cast<size_t>(team));
}

/* This PE's barrier words of the world and LSA-team barriers of CTA index `index`. */
__device__ __forceinline__ unsigned long long *world_sync_words(const niin_device_context &c,
                                                                unsigned int index) {
    return reinterpret_cast<unsigned long long *>(c.heap_base + c.world_sync_off +
                                                  16 * static_cast<size_t>(index));
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

/* The members of a counting barrier: world PEs first + k * stride for k < size; this PE is
 * member me. */
struct BarrierMembers {
    int first, stride, size, me;
};

/* Appends decimal `v` to `out` at `*at` (room permitting: the last byte stays for a NUL). */
__device__ __forceinline__ void append_int(char *out, int cap, int *at, int v) {
    char digits[12];
    int n = 0;
    unsigned int u = v < 0 ? 0u - static_cast<unsigned int>(v) : static_cast<unsigned int>(v);
    do {
        digits[n++] = static_cast<char>('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0 && *at < cap - 1) out[(*at)++] = '-';
    while (n > 0 && *at < cap - 1) out[(*at)++] = digits[--n];
}

__device__ __forceinline__ void append_text(char *out, int cap, int *at, const char *text) {
    while (*text != '\0' && *at < cap - 1) out[(*at)++] = *text++;
}

/* A stalled barrier wait (see "counting barriers" above): called by the waiting thread every
 * 1024 polls with the wait's start (0 the first time), returns it (the clock then). Prints
 * one NIIN: line and stops the kernel (niin_stop_kernel: the host sees cudaErrorLaunchFailure
 * at its next synchronization) when the watchdog reports a dead PE, or once NIIN_TIMEOUT has
 * passed; the timeout's line names the members whose word 1 (the barriers they began) is
 * below `epoch`: those never reached this barrier. Members that only GIN reaches cannot be
 * read from here and are counted apart. Out of line: the poll loop stays small. */
template <int = 0>
__device__ __noinline__ unsigned long long barrier_stalled(const niin_device_context *c,
                                                           const char *fn,
                                                           const unsigned long long *words,
                                                           unsigned long long epoch,
                                                           BarrierMembers m,
                                                           unsigned long long start) {
    const unsigned long long now = global_ns();
    const unsigned int dead = c->abort_word != nullptr ? *c->abort_word : 0u;
    if (dead == 0) {
        if (start == 0) return now;
        if (c->timeout_ns == 0 || now - start < c->timeout_ns) return start;
    }
    /* The line is built here and printed with one argument: a printf of many arguments made
     * this function, which every kernel that calls through a pointer may reach, need more
     * registers than a 1024-thread block has. */
    char line[320];
    const int cap = static_cast<int>(sizeof line);
    int at = 0;
    append_text(line, cap, &at, "NIIN: PE ");
    append_int(line, cap, &at, c->my_pe);
    append_text(line, cap, &at, ": ");
    append_text(line, cap, &at, fn);
    if (dead != 0) {
        append_text(line, cap, &at, ": PE ");
        append_int(line, cap, &at, static_cast<int>(dead - 1));
        append_text(line, cap, &at, " died (libnvshmem_host's watchdog read it on niinrun's status "
                                    "board); this kernel stops here and nvshmem_finalize aborts "
                                    "the NCCL communicator");
    } else {
        int named = 0, unread = 0;
        char missing[96];
        int mat = 0;
#pragma unroll 1
        for (int k = 0; k < m.size; ++k) {
            if (k == m.me) continue;
            const int pe = m.first + k * m.stride;
            /* The LSA table directly, not lsa_address_near, for the same register reason. */
            const int lsa_index = pe - (c->my_pe - c->lsa_rank);
            if (lsa_index < 0 || lsa_index >= c->lsa_size) {
                ++unread;
                continue;
            }
            const char *peer = reinterpret_cast<const char *>(words + 1) + c->lsa_delta[lsa_index];
            if (*reinterpret_cast<const volatile unsigned long long *>(peer) >= epoch) continue;
            if (++named <= 12) {
                append_text(missing, sizeof missing, &mat, named > 1 ? " " : "PE ");
                append_int(missing, sizeof missing, &mat, pe);
            } else if (named == 13) {
                append_text(missing, sizeof missing, &mat, " ...");
            }
        }
        missing[mat] = '\0';
        append_text(line, cap, &at, ": timed out after ");
        append_int(line, cap, &at, static_cast<int>((now - start) / 1000000ull));
        append_text(line, cap, &at, " ms (NIIN_TIMEOUT) with ");
        append_int(line, cap, &at, m.size - named - unread);
        append_text(line, cap, &at, " of ");
        append_int(line, cap, &at, m.size);
        append_text(line, cap, &at, " PEs arrived; not arrived: ");
        append_text(line, cap, &at, named == 0 ? "none found" : missing);
        if (unread > 0) {
            append_text(line, cap, &at, " (");
            append_int(line, cap, &at, unread);
            append_text(line, cap, &at, " PE(s) reached only through GIN not checked)");
        }
        append_text(line, cap, &at, "; this kernel stops here");
    }
    line[at] = '\0';
    printf("%s (block %u)\n", line, blockIdx.x);
    niin_stop_kernel(c);
    return start;
}

/* The counting barrier of `m` on the slot at `words`, by every thread of `coop` (entered
 * together, after the caller's sync): the group's threads share the arrivals, its first
 * thread waits (watching for a stall). */
template <typename Coop>
__device__ __forceinline__ void counting_barrier(Coop coop, const char *fn,
                                                 const niin_device_context &c,
                                                 unsigned long long *words, BarrierMembers m) {
    for (int i = coop.thread_rank(); i < m.size - 1; i += coop.size())
        team_arrive(fn, c, words, m.first + ((m.me + 1 + i) % m.size) * m.stride);
    if (coop.thread_rank() == 0) {
        const unsigned long long epoch = words[1] + 1;
        words[1] = epoch;
        const unsigned long long target = epoch * static_cast<unsigned long long>(m.size - 1);
        unsigned int polls = 0;
        unsigned long long start = 0;
        while (load_acquire_bits(reinterpret_cast<const uint64_t *>(words)) < target) {
            if ((++polls & 1023u) == 0)
                start = call_out_of_line_direct<&barrier_stalled<0>>(&c, fn,
                                                                    static_cast<const unsigned long long *>(words),
                                                                    epoch, m, start);
            __nanosleep(32);
        }
    }
    coop.sync();
}

/* The barrier of a team other than WORLD and the LSA team, by every thread of `coop`
 * (complete: a quiet first). */
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
    coop.sync();
    if (complete) {
        if (coop.thread_rank() == 0) quiet_thread(c);
        coop.sync();
    }
    counting_barrier(coop, fn, c, team_sync_words(c, team),
                     BarrierMembers{t.start, t.stride, t.size, me});
}

/* Barrier (complete = true: quiet first and GIN's completing fence) or sync (false) of
 * NVSHMEM_TEAM_WORLD or this PE's LSA team (NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE), by
 * every thread of `coop`, on the world slot of this CTA's index. Out of line: one body per
 * scope. */
template <typename Coop>
__device__ __noinline__ void barrier(Coop coop, const char *fn, nvshmem_team_t team,
                                     bool complete) {
    const niin_device_context &c = context(fn);
    const bool lsa_team = team != NVSHMEM_TEAM_WORLD;
    if (c.barrier_count == 0) usage_error(fn, kNoBarriers);
    const uint32_t index = cta_index() % c.barrier_count;
    coop.sync();
    if (complete) {
        __threadfence_system();
        if (c.gin_queue != nullptr) {
            if (coop.thread_rank() == 0) call_out_of_line_direct<&gin_quiet<0>>(fn, &c);
            coop.sync();
        }
    }
    const BarrierMembers lsa{c.my_pe - c.team_lsa_rank, 1, c.barrier_lsa_size, c.team_lsa_rank};
    if ((lsa_team ? c.barrier_lsa_size : c.n_pes) == 1) {
        /* A team of one PE: nothing to wait for but this group (the syncs around), and the
         * ordering a barrier gives. Also what a one-PE world without a devComm
         * (has_dev_comm = 0, niin/context.h) relies on. */
        __threadfence();
    } else if (lsa_team || c.barrier_lsa_size == c.n_pes) {
        counting_barrier(coop, fn, c, world_sync_words(c, index), lsa);
    } else {
        /* Across LSA teams: the LSA team meets, its PEs meet their rail peers (the PEs of
         * the same LSA rank on the other LSA teams) through the GIN proxy, and the LSA team
         * meets again, so no PE leaves before every PE arrived. */
        if (c.gin_queue == nullptr) {
            not_implemented(coop, fn, kNoWorldBarrier);
            return;
        }
        unsigned long long *words = world_sync_words(c, index);
        counting_barrier(coop, fn, c, words, lsa);
        if (coop.thread_rank() == 0) call_out_of_line_direct<&rail_barrier<0>>(&c, index);
        coop.sync();
        counting_barrier(coop, fn, c, words, lsa);
    }
    coop.sync();
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
