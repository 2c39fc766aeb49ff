/*
 * niin/impl/coll_impl.h -- bodies of niin/coll.h: the team collectives, templated on the
 * cooperation scope (ScopeThread, ScopeWarp, ScopeBlock of common_impl.h).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * Structure. Each public function is a one-line inline wrapper that calls one body out of
 * line (call_out_of_line_local: compiled to the calling convention, so a kernel reaches its
 * registers and not those of every collective the header has, and emitted only in a TU
 * whose kernels call it):
 *   reduce_body<Coop, E, Op>   reduce and reducescatter (and maxloc); E is the element type
 *                              the arithmetic needs (coll_elem): the integers by width, with
 *                              sign only for min and max (sum and prod wrap around in the
 *                              unsigned type of the width: the same bits), so the 138 typed
 *                              reductions of a scope share 52 bodies
 *   move_body<Coop, Kind>      broadcast, fcollect, alltoall in bytes: 3 bodies per scope for
 *                              the 78 typed and mem forms
 * Templates, instantiated only where a translation unit calls (or takes the address of) a
 * public function: a TU that calls one collective compiles one body.
 *
 * Every body starts with coll_begin (checks the team, every member reachable by load/store),
 * which then picks one of two paths:
 *   LL, for small sizes (coll_ll_impl.h): each member sends its part as flagged lines into
 *      the others' rings and waits once, for what it receives (reduce_ll, move_ll)
 *   multimem (coll_multimem_impl.h): the general path's data movement through NVLS, where
 *      the team is the LSA team and NCCL gave a multimem handle (compiled, not run here)
 *   general: the data movement by load/store between the members' buffers, then coll_end
 *      (a team barrier or sync). A reduction (it reads the others' sources) and a large
 *      broadcast to many members (they read the root's) first sync the team; fcollect,
 *      alltoall and the other broadcasts push into the members' dest, which OpenSHMEM
 *      requires to be ready on every member before any member calls: they wait once, at the
 *      end, as NVSHMEM's do (CollSync). A pushed broadcast ends with flags instead of the
 *      barrier (broadcast_signal): its root does not wait at all.
 * niin/coll.h says what and why.
 */
#ifndef NIIN_IMPL_COLL_IMPL_H
#define NIIN_IMPL_COLL_IMPL_H

#include "niin/impl/coll_base_impl.h"
#include "niin/impl/coll_ll_impl.h"
#include "niin/impl/coll_multimem_impl.h"
#include "niin/impl/common_impl.h"
#include "niin/impl/copy_impl.h"
#include "niin/impl/query_impl.h"
#include "niin/impl/sync_impl.h"

#if defined(__CUDACC__)

namespace niin {
namespace detail {

constexpr const char *kCollGinMaxloc =
    "a member of the team is outside this PE's LSA team (another node, or NIIN_GIN_LOOPBACK): "
    "maxloc over GIN is not implemented (the LL path carries elements of at most 8 bytes)";
constexpr const char *kCollGinSlot =
    "a member of the team is outside this PE's LSA team (another node, or NIIN_GIN_LOOPBACK): "
    "collectives over GIN need the team's LL ring, which only team handles below 16 have, in "
    "a symmetric heap of at least 8 MiB, with room for 2 x 16 bytes per team member in a "
    "quarter ring (rings are 1/2048 of the heap: 128 KiB from a 256 MiB heap)";
constexpr const char *kCollRoot = "PE_root is not a PE of the team";
/* coll_begin's root for the collectives that have none. */
constexpr int kNoRoot = INT_MIN;

/* What coll_begin found. */
enum class CollStart { Go, Ll, Nothing, Fail };

/* Whether the general path syncs the team before it moves data: always for a reduction (each
 * member reads the others' sources, which are ready once they entered); never for fcollect
 * and alltoall (each member stores its block into the others' dest, ready by OpenSHMEM's
 * rule for these collectives); for a broadcast when its members pull (broadcast_pulls). */
enum class CollSync { Always, Never, Broadcast };

/* A broadcast's members pull from the root's source (a sync first, each copies in parallel)
 * when the root would otherwise store more than kBroadcastPushBytes beyond one member's
 * share: the root pushes alone (one block's bandwidth for n - 1 copies), which pays only
 * below where a sync (a round trip between the PEs, a few microseconds over NVLink) costs
 * less than the extra copies. A model, not a measurement: the lent machine has one GPU. */
constexpr size_t kBroadcastPushBytes = 256 * 1024;
__device__ __forceinline__ bool broadcast_pulls(int size, size_t bytes) {
    return size > 2 && static_cast<size_t>(size - 2) * bytes > kBroadcastPushBytes;
}

/* The LL path's largest fcollect or alltoall within an LSA team, in ring bytes (16 per 8
 * data bytes, times the regions): above it the general path moves half the bytes, and a
 * movement waits there as often (once). 64 KiB of lines: 16 KiB per PE of an fcollect of 2
 * PEs, 8 KiB of 4. A reduction takes the LL path up to a quarter ring: its general path
 * waits twice (a sync before it reads the members' sources, a barrier after). Over GIN every
 * size takes the LL path, in rounds of a quarter ring. */
constexpr size_t kLlLsaMaxNeed = 64 * 1024;

/* The LL path's largest broadcast within an LSA team, in ring bytes: none by default. The
 * root stores into the members' dest and then releases a count to each (broadcast_signal),
 * which needs no ring, so no wraps: the root never waits for its members, as NVSHMEM's
 * broadcast does not. Measured (session 15, H100, 2 PEs sharing the GPU, coll_bw's block
 * broadcast): 8 B, 64 B and 512 B took 19.0 us signalled against 28.5-32.2 us on LL lines
 * (NVSHMEM 14.0), so the lines' saved fence does not pay. NIIN_BROADCAST_LL_MAX_NEED (ring
 * bytes) puts the small ones back on LL, for a build that measures the two. Teams with GIN
 * members always take LL. */
#ifndef NIIN_BROADCAST_LL_MAX_NEED
#define NIIN_BROADCAST_LL_MAX_NEED 0
#endif
constexpr size_t kLlLsaBroadcastMaxNeed = NIIN_BROADCAST_LL_MAX_NEED;

/* The start of every collective, by every thread of `coop`: the team (as nvshmem_barrier(team)
 * checks it), every member reachable by load/store; then, with data to move and another
 * member, either the LL path's ring space (ll_units: 8-byte units per member's block, 0
 * where the collective cannot take that path; coll_ll_impl.h says when it does) or a team
 * sync. Go: the general path; Ll: the LL path (out->ll_off, out->ll_flag); Fail: the
 * caller returns nonzero; Nothing: nothing to move.
 *
 * In two parts: coll_check decides, calling nothing, and coll_begin_slow does what needs a
 * call (an error, the GIN queue's check, the sync). A function compiled to the calling
 * convention saves the callee-saved registers it uses on entry and restores them on return,
 * in local memory, per thread; one body that called usage_error on its first line kept its
 * arguments in such registers and saved 22 of them (88 bytes a thread, ptxas -v): 90 KiB of
 * local stores and loads for every collective of a 1024-thread block. coll_check, a leaf,
 * saves (measured with ptxas -v) far fewer. */

/* What coll_check found: the CollStart of the fast outcomes (the same values), or what
 * coll_begin_slow does. */
enum class CollCheck : int {
    Go = static_cast<int>(CollStart::Go),
    Ll = static_cast<int>(CollStart::Ll),
    Nothing = static_cast<int>(CollStart::Nothing),
    Sync,        /* a team sync, then Go */
    Gin,         /* a member over GIN: Ll once the GIN queue is there */
    NoInit,      /* nvshmem_init was not called for this module */
    InvalidTeam, /* NVSHMEM_TEAM_INVALID */
    NoTeam,      /* not in the device team table */
    NotMember,   /* this PE is not a member */
    BadRoot,     /* PE_root is not a PE of the team */
    GinMaxloc,   /* over GIN, elements the LL path cannot carry */
    GinSlot,     /* over GIN, no LL ring big enough */
};

/* coll_begin's decision, by every thread (the same for each): no calls, so no saved
 * registers beyond what it computes. One body for every scope (the scope does not enter). */
__device__ __noinline__ inline CollCheck coll_check(nvshmem_team_t team, size_t count, int root,
                                                    CollTeam *out, size_t ll_units,
                                                    CollSync sync) {
    const niin_device_context &c = niin_ctx_value;
    if (c.n_pes <= 0) return CollCheck::NoInit;
    if (team == NVSHMEM_TEAM_INVALID) return CollCheck::InvalidTeam;
    DeviceTeamView t;
    if (!device_team(c, team, &t)) return CollCheck::NoTeam;
    const int me = team_index_of(t, c.my_pe);
    if (me < 0) return CollCheck::NotMember;
    /* (before the sync, which an error must not leave half done) */
    if (root != kNoRoot && (root < 0 || root >= t.size)) return CollCheck::BadRoot;
    if (count == 0) return CollCheck::Nothing;
    /* The members are an arithmetic progression of world PEs, this PE's LSA team a range of
     * them: the first and the last member in it put every member in it. */
    const unsigned int first = lsa_index(c, t.start);
    const unsigned int last = lsa_index(c, t.start + (t.size - 1) * t.stride);
    const unsigned int lsa_size = static_cast<unsigned int>(c.lsa_size);
    const bool gin = first >= lsa_size || last >= lsa_size;
    *out = CollTeam{me, t.size, static_cast<int>(first), t.stride, 0, 0, t.start, gin ? 1 : 0};
    const bool has_slot = static_cast<unsigned int>(team) < c.coll_ll_slots;
    const size_t ring = c.coll_ll_ring;
    if (gin) {
        /* Over GIN: the LL path at any size, in rounds of at most a quarter ring each, which
         * must hold a unit in each of 2 x size regions (coll_ll_impl.h). */
        if (ll_units == 0) return CollCheck::GinMaxloc;
        if (!has_slot || ring / 4 / 16 < 2 * static_cast<size_t>(t.size)) return CollCheck::GinSlot;
        return CollCheck::Gin;
    }
    if (t.size == 1) return CollCheck::Go;
    /* The LL path: a broadcast takes one region of the ring, the others one per member; at
     * most a quarter of the ring (one round), so that wraps (a team sync each) stay rare,
     * and at most kLlLsaBroadcastMaxNeed for a broadcast (0: none), kLlLsaMaxNeed for fcollect and
     * alltoall (a reduction: CollSync::Always). The ring is taken by the LL body
     * (ll_reserve). */
    if (ll_units != 0 && has_slot && ll_units <= ring / 16) {
        const bool broadcast = root != kNoRoot;
        const size_t need = 16 * ll_units * (broadcast ? 1 : static_cast<size_t>(t.size));
        const size_t cap = sync == CollSync::Always ? ring / 4
                           : broadcast              ? kLlLsaBroadcastMaxNeed
                                                    : kLlLsaMaxNeed;
        if (need <= ring / 4 && need <= cap) return CollCheck::Ll;
    }
    if (sync == CollSync::Always || (sync == CollSync::Broadcast && broadcast_pulls(t.size, count)))
        return CollCheck::Sync;
    return CollCheck::Go;
}

/* What coll_check left to do, by every thread of `coop`: report an error (the group's first
 * thread; usage errors trap), check the GIN queue, or sync the team. One body per scope. */
template <typename Coop>
__device__ __noinline__ CollStart coll_begin_slow(Coop coop, const char *fn, nvshmem_team_t team,
                                                  CollCheck k) {
    switch (k) {
        case CollCheck::Sync:
            team_barrier(coop, fn, team, false);
            return CollStart::Go;
        case CollCheck::Gin:
            return gin_ready(coop, fn, niin_ctx_value) ? CollStart::Ll : CollStart::Fail;
        case CollCheck::NoInit:
            require_init(fn, niin_ctx_value);
            return CollStart::Fail;
        case CollCheck::NoTeam:
            not_implemented(coop, fn, kTeamWhy);
            return CollStart::Fail;
        case CollCheck::GinMaxloc:
            not_implemented(coop, fn, kCollGinMaxloc);
            return CollStart::Fail;
        case CollCheck::GinSlot:
            not_implemented(coop, fn, kCollGinSlot);
            return CollStart::Fail;
        default:
            break;
    }
    if (coop.thread_rank() == 0)
        usage_error(fn, k == CollCheck::InvalidTeam ? kInvalidTeam
                        : k == CollCheck::NotMember ? kNotTeamMember
                                                    : kCollRoot);
    return CollStart::Fail;
}

/* coll_check, then coll_begin_slow where it found more to do: both out of line, one copy per
 * scope (the team checks and the sync are most of a collective's code; inlined into each of
 * the ~200 typed bodies they made ptxas take minutes). */
template <typename Coop>
__device__ __forceinline__ CollStart coll_begin(Coop coop, const char *fn, nvshmem_team_t team,
                                                size_t count, int root, CollTeam *out,
                                                size_t ll_units, CollSync sync) {
    const CollCheck k =
        call_out_of_line_local<&coll_check>(team, count, root, out, ll_units, sync);
    if (static_cast<int>(k) <= static_cast<int>(CollCheck::Nothing))
        return static_cast<CollStart>(static_cast<int>(k));
    return call_out_of_line_local<&coll_begin_slow<Coop>>(coop, fn, team, k);
}

/* The end: a team barrier (complete: quiet first, after stores into peers) or sync; a team
 * of one only synchronizes the group. */
template <typename Coop>
__device__ __forceinline__ void coll_end(Coop coop, const char *fn, nvshmem_team_t team,
                                         const CollTeam &t, bool complete) {
    if (t.size > 1)
        team_barrier(coop, fn, team, complete);
    else
        coop.sync();
}

/* ---- reductions ------------------------------------------------------------------------ */

/* count elements: element i = op over team PEs 0, 1, ... of source[i] (their copies), stored
 * into every member's dest[i] (push) or into this PE's (not push). The group's threads take
 * 16-byte packs of elements in turn; a pack that is not whole, or addresses that are not
 * 16-byte aligned, go element by element. */
template <typename Coop, typename E, CollOp Op>
__device__ __forceinline__ void reduce_range(Coop coop, const niin_device_context &c,
                                             const CollTeam &t, E *dest, const E *source,
                                             size_t count, bool push) {
    constexpr int V = CollPack<E>::kCount;
    const int n = t.size;
    uintptr_t bits = reinterpret_cast<uintptr_t>(dest) | reinterpret_cast<uintptr_t>(source);
#pragma unroll 1
    for (int j = 0; j < n; ++j) bits |= static_cast<uintptr_t>(coll_delta(c, t, j));
    const bool packs = (bits & 15) == 0;
    const size_t chunks = (count + V - 1) / V;
    const size_t step = static_cast<size_t>(coop.size());
    /* (the loops are kept rolled: unrolled, the pack loop needed more than the 64 registers
     * of a 1024-thread block) */
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < chunks; k += step) {
        const size_t e0 = k * V;
        if (packs && e0 + V <= count) {
            CollPack<E> acc = load_pack(coll_at(source + e0, coll_delta(c, t, 0)));
#pragma unroll 1
            for (int j = 1; j < n; ++j)
                acc = combine_pack<Op>(acc, load_pack(coll_at(source + e0, coll_delta(c, t, j))));
            if (push) {
#pragma unroll 1
                for (int j = 0; j < n; ++j) store_pack(coll_at(dest + e0, coll_delta(c, t, j)), acc);
            } else {
                store_pack(dest + e0, acc);
            }
        } else {
            const size_t e1 = e0 + V < count ? e0 + V : count;
#pragma unroll 1
            for (size_t e = e0; e < e1; ++e) {
                E acc = *coll_at(source + e, coll_delta(c, t, 0));
#pragma unroll 1
                for (int j = 1; j < n; ++j) acc = combine<Op>(acc, *coll_at(source + e, coll_delta(c, t, j)));
                if (push) {
#pragma unroll 1
                    for (int j = 0; j < n; ++j) *coll_at(dest + e, coll_delta(c, t, j)) = acc;
                } else {
                    dest[e] = acc;
                }
            }
        }
    }
}

/* reduce (scatter false) and reducescatter (true) by every thread of `coop`. */
template <typename Coop, typename E, CollOp Op>
__device__ __noinline__ int reduce_body(Coop coop, const char *fn, nvshmem_team_t team, E *dest,
                                        const E *source, size_t nreduce, bool scatter) {
    CollTeam t;
    /* the LL path takes elements of at most 8 bytes (not maxloc's double2) */
    const size_t ll_units = sizeof(E) <= 8 ? (nreduce * sizeof(E) + 7) / 8 : 0;
    const CollStart s = coll_begin(coop, fn, team, nreduce, kNoRoot, &t, ll_units, CollSync::Always);
    const niin_device_context &c = niin_ctx_value;
    if constexpr (sizeof(E) <= 8) {
        /* A direct call: through call_out_of_line_direct the address of every (scope, type,
         * operation) body would be a device variable, which every TU that includes the
         * headers instantiates and compiles (a TU calling one reduction: 224 functions,
         * ptxas 43 s instead of 3 s); call_out_of_line_local avoids that, but the direct
         * call was measured and kept. */
        if (s == CollStart::Ll) {
            reduce_ll<Coop, E, Op>(coop, fn, team, &c, t, dest, source, nreduce, scatter);
            return 0;
        }
    }
    if (s != CollStart::Go) return s == CollStart::Fail ? 1 : 0;
    if constexpr (mm_reduce_ok<E, Op>()) {
        /* NVLS: the switch reduces (coll_multimem_impl.h); called directly, as reduce_ll */
        const size_t bytes = nreduce * sizeof(E);
        const E *from = scatter ? source + static_cast<size_t>(t.me) * nreduce : source;
        if (mm_team(c, t) && mm_packs(c, from, bytes) && mm_packs(c, dest, bytes)) {
            if (scatter) {
                mm_reduce<Coop, E, Op>(coop, &c, dest, from, nreduce, true);
            } else {
                /* slice `me` of the 16-byte packs */
                const size_t packs = bytes / 16, n = static_cast<size_t>(t.size);
                const size_t me = static_cast<size_t>(t.me), per = packs / n, extra = packs % n;
                const size_t first = me * per + (me < extra ? me : extra);
                const size_t count = (per + (me < extra ? 1 : 0)) * (16 / sizeof(E));
                const size_t begin = first * (16 / sizeof(E));
                mm_reduce<Coop, E, Op>(coop, &c, dest + begin, source + begin, count, false);
            }
            coll_end(coop, fn, team, t, !scatter);
            return 0;
        }
    }
    if (scatter) {
        /* this PE's block of every member's source into its own dest */
        reduce_range<Coop, E, Op>(coop, c, t, dest, source + static_cast<size_t>(t.me) * nreduce,
                                  nreduce, false);
    } else {
        /* slice `me` (whole packs, the last slices possibly empty) into every member's dest */
        constexpr size_t V = CollPack<E>::kCount;
        const size_t chunks = (nreduce + V - 1) / V;
        const size_t n = static_cast<size_t>(t.size), me = static_cast<size_t>(t.me);
        const size_t per = chunks / n, extra = chunks % n;
        const size_t begin = (me * per + (me < extra ? me : extra)) * V;
        size_t end = begin + (per + (me < extra ? 1 : 0)) * V;
        if (end > nreduce) end = nreduce;
        if (begin < end)
            reduce_range<Coop, E, Op>(coop, c, t, dest + begin, source + begin, end - begin, true);
    }
    coll_end(coop, fn, team, t, !scatter);
    return 0;
}

/* A typed reduction: T's elements as E's (same size and bits), the body out of line. */
template <typename T, CollOp Op, typename Coop>
__device__ __forceinline__ int reduce(Coop coop, const char *fn, nvshmem_team_t team, T *dest,
                                      const T *source, size_t nreduce, bool scatter) {
    using E = typename coll_elem<T, Op>::type;
    static_assert(sizeof(E) == sizeof(T), "a reduction's element keeps its width");
    return reduce_body<Coop, E, Op>(coop, fn, team, reinterpret_cast<E *>(dest),
                                    reinterpret_cast<const E *>(source), nreduce, scatter);
}

/* ---- broadcast, fcollect, alltoall ------------------------------------------------------- */

/* Every thread of `coop` copies up to kMoveGroupWords 16-byte words of [src, src + bytes),
 * words rank, rank + size, ...: all its loads, then its stores (the loads in flight
 * together). Both addresses and the size 16-byte aligned, bytes <= size x 16 x
 * kMoveGroupWords. Out of line (called from move_copy_body's colder branch), so that its
 * registers are saved only where it runs. */
constexpr int kMoveGroupWords = 4;
template <typename Coop>
__device__ __noinline__ void move_copy_group(Coop coop, char *dst, const char *src, size_t bytes) {
    const size_t step = static_cast<size_t>(coop.size()) * 16;
    const size_t first = static_cast<size_t>(coop.thread_rank()) * 16;
    uint4 v[kMoveGroupWords];
#pragma unroll
    for (int u = 0; u < kMoveGroupWords; ++u)
        if (first + u * step < bytes)
            v[u] = *reinterpret_cast<const uint4 *>(src + first + u * step);
#pragma unroll
    for (int u = 0; u < kMoveGroupWords; ++u)
        if (first + u * step < bytes) *reinterpret_cast<uint4 *>(dst + first + u * step) = v[u];
}

/* One block of a movement (broadcast, fcollect, alltoall), by every thread of `coop`, with
 * no synchronization (the movement's end, coll_end or broadcast_signal, orders the
 * stores): one 16-byte word per thread where that covers it (both addresses and the size
 * 16-byte aligned), else one 8-byte word per thread; up to kMoveGroupWords 16-byte words
 * per thread with their loads in flight together (move_copy_group); coop_copy otherwise.
 * Out of line, called through the calling convention (call_out_of_line_local), so a kernel's
 * registers are not allocated on top of it; and not coop_copy itself, whose call saves and
 * restores 92 bytes of registers per thread in local memory (ptxas -v), against this
 * function's 20: the copies of a 1024-thread block's small collective went through it, and
 * an 8-byte broadcast of 1 PE took 5.0 us against 2.9 us now (coll_bw, H100, session 21). */
template <typename Coop>
__device__ __noinline__ void move_copy_body(Coop coop, char *dst, const char *src, size_t bytes) {
    const uintptr_t bits =
        reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes;
    const size_t rank = static_cast<size_t>(coop.thread_rank());
    const size_t threads = static_cast<size_t>(coop.size());
    if ((bits & 15) == 0 && bytes <= threads * 16) {
        if (rank * 16 < bytes)
            *reinterpret_cast<uint4 *>(dst + rank * 16) =
                *reinterpret_cast<const uint4 *>(src + rank * 16);
    } else if ((bits & 7) == 0 && bytes <= threads * 8) {
        if (rank * 8 < bytes)
            *reinterpret_cast<unsigned long long *>(dst + rank * 8) =
                *reinterpret_cast<const unsigned long long *>(src + rank * 8);
    } else if ((bits & 15) == 0 && bytes <= threads * 16 * kMoveGroupWords) {
        move_copy_group(coop, dst, src, bytes);
    } else {
        coop_copy(coop, dst, src, bytes);
    }
}
template <typename Coop>
__device__ __forceinline__ void move_copy(Coop coop, char *dst, const char *src, size_t bytes) {
    call_out_of_line_local<&move_copy_body<Coop>>(coop, dst, src, bytes);
}

/* The end of a pushed broadcast of an LSA team with an LL slot, by every thread of `coop`,
 * instead of a barrier: the root, after its stores into every member's dest, releases the
 * team's broadcast count to each member (a system fence, then a release max into the
 * member's slot header); a member waits until its header shows that count (acquire). Each
 * member counts the team's broadcasts itself: they are called in the same order everywhere.
 * The root never waits, so it may run ahead to the next broadcast, whose stores land in
 * dest, which OpenSHMEM requires ready before any member calls (as NVSHMEM's broadcast
 * does). Out of line: one body per scope. */
template <typename Coop>
__device__ __noinline__ void broadcast_signal(Coop coop, const niin_device_context *cp,
                                              nvshmem_team_t team, const CollTeam *tp, int root) {
    const niin_device_context &c = *cp;
    const CollTeam &t = *tp;
    coop.sync(); /* the root: every thread's stores are done before the fence */
    if (coop.thread_rank() == 0) {
        CollLlHeader *h = reinterpret_cast<CollLlHeader *>(c.heap_base + coll_ll_slot(c, team));
        const unsigned long long seq = h->bcast_seq + 1;
        h->bcast_seq = seq;
        if (t.me == root) {
            __threadfence_system();
#pragma unroll 1
            for (int i = 1; i < t.size; ++i) {
                unsigned long long *landed =
                    coll_at(&h->bcast_landed, coll_delta(c, t, coll_next(t, i)));
                /* a max, not a store: the next broadcast's root (another member) may reach
                 * this member before this store does, and the count must not go back */
                asm volatile("red.release.sys.max.u64 [%0], %1;" ::"l"(landed), "l"(seq) : "memory");
            }
        } else {
            while (load_acquire_bits(reinterpret_cast<const uint64_t *>(&h->bcast_landed)) < seq)
                __nanosleep(32);
        }
    }
    coop.sync(); /* a member: the acquire orders every thread's reads of dest */
}

/* `bytes` per block, by every thread of `coop` (coop_copy of copy_impl.h, no synchronization
 * between the blocks). The pushes start at the next member, so the PEs write to different
 * members at a time. */
template <typename Coop, CollMove K>
__device__ __noinline__ int move_body(Coop coop, const char *fn, nvshmem_team_t team, void *dest,
                                      const void *source, size_t bytes, int root) {
    CollTeam t;
    const CollStart s =
        coll_begin(coop, fn, team, bytes, K == CollMove::Broadcast ? root : kNoRoot, &t,
                   (bytes + 7) / 8, K == CollMove::Broadcast ? CollSync::Broadcast : CollSync::Never);
    const niin_device_context &c = niin_ctx_value;
    char *d = static_cast<char *>(dest);
    const char *src = static_cast<const char *>(source);
    if (s == CollStart::Ll) {
        /* out of line (9 bodies: every TU compiles them, unlike reduce_ll's 156); called
         * directly, move_ll's registers added to move_body's: fcollectmem_block 74 */
        call_out_of_line_local<&move_ll<Coop, K>>(coop, fn, team, &c, t, d, src, bytes, root);
        return 0;
    }
    if (s != CollStart::Go) return s == CollStart::Fail ? 1 : 0;
    /* The copies go through move_copy, compiled to the calling convention: coop_copy called
     * directly from this loop had its registers allocated on top of the loop's (thread and
     * warp fcollect / alltoall needed 68-72, over a 1024-thread block's 64; move_copy inline:
     * block fcollect 74). */
    /* NVLS (coll_multimem_impl.h): a broadcast's root or an fcollect's member stores its
     * bytes into every member's dest at once */
    const bool mm = K != CollMove::Alltoall && mm_team(c, t) &&
                    ((reinterpret_cast<uintptr_t>(src) | bytes) & 15) == 0 &&
                    mm_packs(c, d, K == CollMove::Fcollect ? bytes * static_cast<size_t>(t.size) : bytes);
    if constexpr (K == CollMove::Broadcast) {
        if (broadcast_pulls(t.size, bytes) && !mm) {
            /* after coll_begin's sync; a sync at the end, so the root's source is not
             * rewritten before every member has read it */
            const char *from = coll_at(src, coll_delta(c, t, root));
            if (from != d) move_copy(coop, d, from, bytes);
            coll_end(coop, fn, team, t, false);
            return 0;
        }
        /* the root stores into every member's dest (its own first), then the flags (a team
         * with an LL slot) or the barrier */
        if (t.me == root && mm) {
            call_out_of_line_local<&mm_copy_to_all<Coop>>(coop, &c, d, src, bytes);
        } else if (t.me == root) {
            for (int i = 0; i < t.size; ++i) {
                char *to = coll_at(d, coll_delta(c, t, coll_next(t, i)));
                if (to != src) move_copy(coop, to, src, bytes);
            }
        }
        if (t.size > 1 && static_cast<unsigned int>(team) < c.coll_ll_slots) {
            call_out_of_line_local<&broadcast_signal<Coop>>(coop, &c, team,
                                                            static_cast<const CollTeam *>(&t), root);
            return 0;
        }
    } else if (mm) {
        call_out_of_line_local<&mm_copy_to_all<Coop>>(coop, &c, d + static_cast<size_t>(t.me) * bytes,
                                                      src, bytes);
    } else {
        const size_t mine = static_cast<size_t>(t.me) * bytes;
        for (int i = 0; i < t.size; ++i) {
            const int j = coll_next(t, i + 1);
            const char *from = K == CollMove::Fcollect ? src : src + static_cast<size_t>(j) * bytes;
            move_copy(coop, coll_at(d, coll_delta(c, t, j)) + mine, from, bytes);
        }
    }
    coll_end(coop, fn, team, t, true);
    return 0;
}

} /* namespace detail */
} /* namespace niin */

/* ---- the public functions --------------------------------------------------------------- */

/* One reduction or reducescatter wrapper: PREFIX nvshmem_ / nvshmemx_, SUFFIX empty, _warp or
 * _block, QUAL the linkage, COOP the scope. */
#define NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, PREFIX, SUFFIX, QUAL, COOP)                 \
    QUAL int PREFIX##NAME##_##OP##_reduce##SUFFIX(nvshmem_team_t team, TYPE *dest,               \
                                                  const TYPE *source, size_t nreduce) {          \
        return niin::detail::reduce<TYPE, NIIN_COLL_OP_##OP>(                                     \
            COOP{}, #PREFIX #NAME "_" #OP "_reduce" #SUFFIX, team, dest, source, nreduce, false); \
    }                                                                                            \
    QUAL int PREFIX##NAME##_##OP##_reducescatter##SUFFIX(nvshmem_team_t team, TYPE *dest,        \
                                                         const TYPE *source, size_t nreduce) {   \
        return niin::detail::reduce<TYPE, NIIN_COLL_OP_##OP>(                                     \
            COOP{}, #PREFIX #NAME "_" #OP "_reducescatter" #SUFFIX, team, dest, source, nreduce,  \
            true);                                                                               \
    }
#define NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, PREFIX, SUFFIX, QUAL, COOP)                          \
    QUAL int PREFIX##NAME##_broadcast##SUFFIX(nvshmem_team_t team, TYPE *dest,                   \
                                              const TYPE *source, size_t nelems, int PE_root) {  \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Broadcast>(                          \
            COOP{}, #PREFIX #NAME "_broadcast" #SUFFIX, team, dest, source,                      \
            nelems * sizeof(TYPE), PE_root);                                                     \
    }                                                                                            \
    QUAL int PREFIX##NAME##_fcollect##SUFFIX(nvshmem_team_t team, TYPE *dest,                    \
                                             const TYPE *source, size_t nelems) {                \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Fcollect>(                           \
            COOP{}, #PREFIX #NAME "_fcollect" #SUFFIX, team, dest, source,                       \
            nelems * sizeof(TYPE), 0);                                                           \
    }                                                                                            \
    QUAL int PREFIX##NAME##_alltoall##SUFFIX(nvshmem_team_t team, TYPE *dest,                    \
                                             const TYPE *source, size_t nelems) {                \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Alltoall>(                           \
            COOP{}, #PREFIX #NAME "_alltoall" #SUFFIX, team, dest, source,                       \
            nelems * sizeof(TYPE), 0);                                                           \
    }
#define NIIN_DEFINE_COLL_MOVE_MEM_AT(PREFIX, SUFFIX, QUAL, COOP)                                  \
    QUAL int PREFIX##broadcastmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,   \
                                          size_t nelems, int PE_root) {                          \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Broadcast>(                          \
            COOP{}, #PREFIX "broadcastmem" #SUFFIX, team, dest, source, nelems, PE_root);         \
    }                                                                                            \
    QUAL int PREFIX##fcollectmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,    \
                                         size_t nelems) {                                        \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Fcollect>(                           \
            COOP{}, #PREFIX "fcollectmem" #SUFFIX, team, dest, source, nelems, 0);                \
    }                                                                                            \
    QUAL int PREFIX##alltoallmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,    \
                                         size_t nelems) {                                        \
        return niin::detail::move_body<COOP, niin::detail::CollMove::Alltoall>(                           \
            COOP{}, #PREFIX "alltoallmem" #SUFFIX, team, dest, source, nelems, 0);                \
    }

/* The warp and block forms (device only). */
NIIN_BEGIN_C_DECLS
#define NIIN_DEFINE_COLL_REDUCTION_GROUPS(NAME, TYPE, OP)                                  \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmemx_, _warp, NIIN_DEVICE,           \
                                  niin::detail::ScopeWarp)                                 \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmemx_, _block, NIIN_DEVICE,          \
                                  niin::detail::ScopeBlock)
NIIN_FOR_EACH_REDUCTION(NIIN_DEFINE_COLL_REDUCTION_GROUPS)
#undef NIIN_DEFINE_COLL_REDUCTION_GROUPS

#define NIIN_DEFINE_COLL_MOVE_GROUPS(NAME, TYPE)                                                 \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmemx_, _warp, NIIN_DEVICE, niin::detail::ScopeWarp) \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmemx_, _block, NIIN_DEVICE, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_COLL_MOVE_GROUPS)
#undef NIIN_DEFINE_COLL_MOVE_GROUPS
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmemx_, _warp, NIIN_DEVICE, niin::detail::ScopeWarp)
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmemx_, _block, NIIN_DEVICE, niin::detail::ScopeBlock)

NIIN_DEVICE int nvshmemx_double2_maxloc_reduce_block(nvshmem_team_t team, double2 *dest,
                                                     const double2 *source, size_t nreduce) {
    return niin::detail::reduce<double2, niin::detail::CollOp::MaxLoc>(
        niin::detail::ScopeBlock{}, "nvshmemx_double2_maxloc_reduce_block", team, dest, source,
        nreduce, false);
}
NIIN_END_C_DECLS

/* The thread forms are host functions too: device bodies in the device pass only. */
#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS
#define NIIN_DEFINE_COLL_REDUCTION_THREAD(NAME, TYPE, OP)                                   \
    NIIN_DEFINE_COLL_REDUCTION_AT(NAME, TYPE, OP, nvshmem_, , NIIN_DEVICE_HD,               \
                                  niin::detail::ScopeThread)
NIIN_FOR_EACH_REDUCTION(NIIN_DEFINE_COLL_REDUCTION_THREAD)
#undef NIIN_DEFINE_COLL_REDUCTION_THREAD

#define NIIN_DEFINE_COLL_MOVE_THREAD(NAME, TYPE) \
    NIIN_DEFINE_COLL_MOVE_AT(NAME, TYPE, nvshmem_, , NIIN_DEVICE_HD, niin::detail::ScopeThread)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_COLL_MOVE_THREAD)
#undef NIIN_DEFINE_COLL_MOVE_THREAD
NIIN_DEFINE_COLL_MOVE_MEM_AT(nvshmem_, , NIIN_DEVICE_HD, niin::detail::ScopeThread)
NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#undef NIIN_DEFINE_COLL_MOVE_MEM_AT
#undef NIIN_DEFINE_COLL_MOVE_AT
#undef NIIN_DEFINE_COLL_REDUCTION_AT

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_IMPL_H */
