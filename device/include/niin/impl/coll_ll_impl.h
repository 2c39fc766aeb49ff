/*
 * niin/impl/coll_ll_impl.h -- the one-wait (LL) path of small device collectives, used by
 * niin/impl/coll_impl.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 *
 * Why. The general path of a collective waits for its team twice: a sync before it moves
 * data (peers' buffers must be ready), a barrier after (the data must have landed). Each
 * wait costs a round trip between the PEs, and with several PEs time-sharing one GPU a
 * whole time slice (~2.2 ms). Here each PE sends its part as flagged words into a ring of
 * the receiving PE and waits once, for what it receives: one wait for fcollect, alltoall,
 * reduce and reducescatter, and none at all for a broadcast's root.
 *
 * The LL protocol (NCCL's "low latency" lines): 8 data bytes travel in one 16-byte line of
 * two 8-byte words, each word {4 data bytes, 4 flag bytes}, stored with one vector store.
 * Each 8-byte word is single-copy atomic, so a reader that sees the flag it expects in a
 * word sees that word's data too: no fence on either side. The flag is the team's LL
 * sequence number at this PE (1, 2, 3, ...), the same at every member because every member
 * takes part in the team's collectives in the same order.
 *
 * The rings. libnvshmem_host gives each team handle below c.coll_ll_slots an LL slot in the
 * system area (niin-api World::coll_ll_offset): a NIIN_COLL_LL_HEADER-byte header, this
 * PE's own flag and ring offset for the team, then c.coll_ll_ring bytes of ring. A
 * collective takes the next `need` bytes of every member's ring: 16 bytes a unit (8 data
 * bytes), one region for a broadcast, one region per member otherwise (member j writes
 * region j). A ring position is written once between two wraps; when a collective does not
 * fit in what is left, every member first meets in a team sync and starts again at 0: a
 * member is in that sync only after it consumed everything sent to it before, so nothing
 * is overwritten before it was read. The offsets advance alike at every member (they
 * depend on the arguments only, which NVSHMEM requires to be the same), so the members
 * wrap at the same collective.
 *
 * Who takes this path (coll_begin_body decides; every member decides alike): a team of at
 * least two PEs, all LSA peers, whose handle has a slot, whose elements are at most 8
 * bytes, and whose collective needs at most a quarter of the ring and kLlLsaMaxNeed (64 KiB
 * of lines: 16 KiB per PE with 2 PEs, 8 KiB with 4, 4 KiB with 8, a 32 KiB broadcast).
 *
 * Teams with a member outside this PE's LSA team (another node; every peer under
 * NIIN_GIN_LOOPBACK) take this path at every size, in chunks of at most a quarter of the
 * ring each: that is how collectives are composed over GIN. Lines for an LSA member are
 * stored into its ring as above; lines for any other member are first written into a
 * staging region of this PE's own ring (the region this PE sends from in every member's
 * ring, which it never receives into; for alltoall and reducescatter, whose blocks differ
 * per member, one extra region per member after the n receiving ones) and then put into
 * the member's ring at the same offset with one GIN put (gin_put, gin_impl.h): the flags
 * travel with the data, so no signal is needed, as NVSHMEM's LL collectives do across
 * nodes. A staging region is reused only after a wrap, whose team barrier here completes
 * (quiets) this PE's puts first. Not for maxloc (16-byte elements), handles without a
 * slot, or a ring too small for one unit per region: those get the NOT_IMPLEMENTED policy.
 *
 * Reductions combine the members' values in team order (member 0, 1, ...), at every member,
 * as the general path does: every member gets the same bits.
 */
#ifndef NIIN_IMPL_COLL_LL_IMPL_H
#define NIIN_IMPL_COLL_LL_IMPL_H

#include "niin/impl/coll_base_impl.h"
#include "niin/impl/gin_impl.h"
#include "niin/impl/sync_impl.h"

/* Bytes of an LL slot's header (niin_api::COLL_LL_HEADER_BYTES). */
#define NIIN_COLL_LL_HEADER 256

#if defined(__CUDACC__)

namespace niin {
namespace detail {

/* This PE's state of a team, at the head of its slot: the flag of its last LL collective of
 * the team and the ring offset where its next one starts; for the signalled broadcast of an
 * LSA team (coll_impl.h's broadcast_signal), this PE's count of the team's broadcasts on
 * that path and the count of the last one whose data has landed here (its root's release
 * store). All zero at init and when the team of the handle is destroyed. */
struct CollLlHeader {
    unsigned int flag;
    unsigned int reserved;
    unsigned long long off;
    unsigned long long bcast_seq;
    unsigned long long bcast_landed;
};
static_assert(sizeof(CollLlHeader) <= NIIN_COLL_LL_HEADER, "the slot header holds the state");

/* Heap offset of the LL slot of `team` (a handle below c.coll_ll_slots). */
__device__ __forceinline__ size_t coll_ll_slot(const niin_device_context &c, nvshmem_team_t team) {
    return c.coll_ll_off + static_cast<size_t>(team) * (NIIN_COLL_LL_HEADER + c.coll_ll_ring);
}

/* One line into a ring (a peer's, through its mapping, or this PE's): the 8 bytes of `u`
 * as two flagged words. */
__device__ __forceinline__ void ll_store(char *line, uint2 u, unsigned int flag) {
    const unsigned long long w0 =
        static_cast<unsigned long long>(u.x) | (static_cast<unsigned long long>(flag) << 32);
    const unsigned long long w1 =
        static_cast<unsigned long long>(u.y) | (static_cast<unsigned long long>(flag) << 32);
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(w0), "l"(w1)
                 : "memory");
}

/* NIIN_DEBUG_LL=1 (a debugging build, off by default): a wait that polls a line 2^24 times
 * prints the line's address, the flag it waits for and the words it sees, once. */
#ifndef NIIN_DEBUG_LL
#define NIIN_DEBUG_LL 0
#endif

/* The 8 data bytes of a line of this PE's ring, once both its words carry `flag`. */
__device__ __forceinline__ uint2 ll_wait(const char *line, unsigned int flag) {
    unsigned long long w0, w1;
#if NIIN_DEBUG_LL
    unsigned int polls = 0;
#endif
    do {
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(w0), "=l"(w1)
                     : "l"(line)
                     : "memory");
#if NIIN_DEBUG_LL
        if (++polls == (1u << 24))
            printf("NIIN_DEBUG_LL: PE %d block %u thread %u waits at %p for flag %u, sees "
                   "%#llx %#llx\n",
                   niin_ctx_value.my_pe, blockIdx.x, threadIdx.x, line, flag, w0, w1);
#endif
    } while (static_cast<unsigned int>(w0 >> 32) != flag || static_cast<unsigned int>(w1 >> 32) != flag);
    return make_uint2(static_cast<unsigned int>(w0), static_cast<unsigned int>(w1));
}

/* Unit k (bytes 8k .. 8k + 7, zeros past `bytes`) of a buffer of `bytes` bytes. */
__device__ __forceinline__ uint2 ll_read_unit(const char *src, size_t bytes, size_t k) {
    const char *p = src + 8 * k;
    const size_t left = bytes - 8 * k;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (left >= 8 && (a & 7) == 0) return *reinterpret_cast<const uint2 *>(p);
    if (left >= 8 && (a & 3) == 0) {
        const unsigned int *q = reinterpret_cast<const unsigned int *>(p);
        return make_uint2(q[0], q[1]);
    }
    unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int n = left < 8 ? static_cast<int>(left) : 8;
#pragma unroll 1
    for (int i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(p[i]);
    uint2 u;
    memcpy(&u, b, 8);
    return u;
}

/* Stores unit k of `u` into a buffer of `bytes` bytes (the bytes before `bytes` only). */
__device__ __forceinline__ void ll_write_unit(char *dst, size_t bytes, size_t k, uint2 u) {
    char *p = dst + 8 * k;
    const size_t left = bytes - 8 * k;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (left >= 8 && (a & 7) == 0) {
        *reinterpret_cast<uint2 *>(p) = u;
        return;
    }
    if (left >= 8 && (a & 3) == 0) {
        unsigned int *q = reinterpret_cast<unsigned int *>(p);
        q[0] = u.x;
        q[1] = u.y;
        return;
    }
    unsigned char b[8];
    memcpy(b, &u, 8);
    const int n = left < 8 ? static_cast<int>(left) : 8;
#pragma unroll 1
    for (int i = 0; i < n; ++i) p[i] = static_cast<char>(b[i]);
}

/* 8 bytes of E: the unit a reduction combines. */
template <CollOp Op, typename E>
__device__ __forceinline__ uint2 ll_combine(uint2 a, uint2 b) {
    constexpr int kCount = static_cast<int>(8 / sizeof(E));
    E x[kCount], y[kCount];
    memcpy(x, &a, 8);
    memcpy(y, &b, 8);
#pragma unroll
    for (int i = 0; i < kCount; ++i) x[i] = combine<Op>(x[i], y[i]);
    uint2 r;
    memcpy(&r, x, 8);
    return r;
}

/* Sends `bytes` of `src` as LL lines to `to` (a ring region, here or at a peer), by every
 * thread of `coop`. */
template <typename Coop>
__device__ __forceinline__ void ll_send(Coop coop, char *to, const char *src, size_t bytes,
                                        unsigned int flag) {
    const size_t units = (bytes + 7) / 8;
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < units; k += coop.size())
        ll_store(to + 16 * k, ll_read_unit(src, bytes, k), flag);
}

/* Receives `bytes` from the region `from` of this PE's ring into `dst`, by every thread of
 * `coop`, each line once it has arrived. */
template <typename Coop>
__device__ __forceinline__ void ll_receive(Coop coop, char *dst, const char *from, size_t bytes,
                                           unsigned int flag) {
    const size_t units = (bytes + 7) / 8;
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < units; k += coop.size())
        ll_write_unit(dst, bytes, k, ll_wait(from + 16 * k, flag));
}

/* A plain copy of `bytes` (this PE's own part), by every thread of `coop`. */
template <typename Coop>
__device__ __forceinline__ void ll_copy(Coop coop, char *dst, const char *src, size_t bytes) {
    if (dst == src) return;
    const size_t units = (bytes + 7) / 8;
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < units; k += coop.size())
        ll_write_unit(dst, bytes, k, ll_read_unit(src, bytes, k));
}

/* Ring bytes a collective of `bytes` per block takes over `regions` regions. */
__device__ __forceinline__ size_t ll_need(size_t bytes, size_t regions) {
    return 16 * ((bytes + 7) / 8) * regions;
}

/* The most bytes per block of one LL round over `regions` regions: a quarter of the ring,
 * in whole units (0: the ring is too small). */
__device__ __forceinline__ size_t ll_chunk(const niin_device_context &c, size_t regions) {
    /* in 32 bits (a ring is at most 1 MiB, a team of at most 2^31 PEs): a 64-bit division
     * is a call to a routine that needs more registers than a 1024-thread block has */
    const unsigned int lines = c.coll_ll_ring / 64u;
    return 8 * static_cast<size_t>(lines / static_cast<unsigned int>(regions));
}

/* Takes `need` bytes of the team's ring for the next LL round, by every thread of `coop`:
 * the flag and the offset into t->ll_flag and t->ll_off; when the rest of the ring is too
 * short, first a team sync (a barrier when t->gin: it completes this PE's puts from its
 * staging regions) and the ring starts again at 0. Out of line: one body per scope. */
template <typename Coop>
__device__ __noinline__ void ll_reserve(Coop coop, const char *fn, nvshmem_team_t team,
                                        size_t need, CollTeam *t) {
    const niin_device_context &c = niin_ctx_value;
    const size_t slot = coll_ll_slot(c, team);
    volatile CollLlHeader *h = reinterpret_cast<volatile CollLlHeader *>(c.heap_base + slot);
    const unsigned int flag = h->flag + 1;
    size_t off = static_cast<size_t>(h->off);
    /* every thread has read the header before the first one rewrites it */
    coop.sync();
    if (off + need > c.coll_ll_ring) {
        team_barrier(coop, fn, team, t->gin != 0);
        off = 0;
    }
    if (coop.thread_rank() == 0) {
        h->flag = flag;
        h->off = off + need;
    }
    t->ll_off = slot + NIIN_COLL_LL_HEADER + off;
    t->ll_flag = flag;
}

/* World PE of team member j. */
__device__ __forceinline__ int coll_pe(const CollTeam &t, int j) { return t.pe0 + j * t.stride; }

/* One LL round of a collective, as the round functions read it (from the caller's local
 * memory: passing it by pointer keeps the out-of-line round functions within the 64
 * registers of a 1024-thread block; with the fields as arguments, move_ll needed 98-125). */
struct LlRound {
    const niin_device_context *c;
    const char *fn;
    const char *src;   /* this round's first byte of member 0's block of the source */
    size_t src_stride; /* bytes between the source's member blocks (0: one block for all) */
    char *dest;        /* this round's first byte of member 0's block of dest */
    size_t dest_stride;
    size_t len;        /* data bytes per block in this round */
    size_t region;     /* ring bytes per region: 16 per 8 data bytes */
    int root;          /* a broadcast's root (team index), or -1 */
    CollTeam t;        /* ll_off and ll_flag: this round's (ll_reserve) */
};

/* The send side of a round, by every thread of `coop`: this PE's block(s) into region `me`
 * (a broadcast's root: region 0) of every other member's ring; an LSA member's by stores,
 * another's by a GIN put from a staging region of this PE's ring (coll_ll_impl.h's header
 * says which). A broadcast's other members send nothing. Ends with the group synchronized:
 * every read of the source done. Out of line: one body per scope. */
template <typename Coop>
__device__ __noinline__ void ll_round_send(Coop coop, const LlRound *r) {
    const niin_device_context &c = *r->c;
    const CollTeam &t = r->t;
    const bool broadcast = r->root >= 0;
    if (broadcast && t.me != r->root) return;
    const size_t idx = broadcast ? 0 : static_cast<size_t>(t.me);
    char *ring = c.heap_base + t.ll_off;
    char *own = ring + idx * r->region; /* in every ring: where this PE's lines go */
    if (t.gin && r->src_stride == 0) {
        /* the same lines for every member: staged once, in this PE's own region */
        ll_send(coop, own, r->src, r->len, t.ll_flag);
        coop.sync();
    }
#pragma unroll 1
    for (int i = 1; i < t.size; ++i) {
        const int j = coll_next(t, i);
        const char *block = r->src + static_cast<size_t>(j) * r->src_stride;
        char *peer;
        if (!t.gin) {
            peer = coll_at(own, coll_delta(c, t, j));
        } else {
            peer = lsa_address_near(c, own, coll_pe(t, j));
            if (peer == nullptr) {
                const char *staged = own;
                if (r->src_stride != 0) {
                    staged = ring + (static_cast<size_t>(t.size) + static_cast<size_t>(j)) * r->region;
                    ll_send(coop, const_cast<char *>(staged), block, r->len, t.ll_flag);
                    coop.sync();
                }
#if NIIN_DEBUG_LL
                if (coop.thread_rank() == 0)
                    printf("NIIN_DEBUG_LL: PE %d puts %llu bytes at heap offset %llu (flag %u) to PE "
                           "%d\n",
                           c.my_pe, static_cast<unsigned long long>(r->region),
                           static_cast<unsigned long long>(own - c.heap_base), t.ll_flag,
                           coll_pe(t, j));
#endif
                call_out_of_line_local<&gin_put<Coop>>(coop, r->fn, &c, static_cast<void *>(own),
                                                       static_cast<const void *>(staged),
                                                       r->region, coll_pe(t, j), false);
                continue;
            }
        }
        ll_send(coop, peer, block, r->len, t.ll_flag);
    }
    coop.sync();
}

/* The receive side of a move round, by every thread of `coop`: each other member's block
 * from its region of this PE's ring into dest (a broadcast: region 0, on every member but
 * the root), and this PE's own block from the source. Out of line: one body per scope. */
template <typename Coop>
__device__ __noinline__ void ll_round_receive(Coop coop, const LlRound *r) {
    const niin_device_context &c = *r->c;
    const CollTeam &t = r->t;
    const char *ring = c.heap_base + t.ll_off;
    if (r->root >= 0) {
        if (t.me == r->root)
            ll_copy(coop, r->dest, r->src, r->len);
        else
            ll_receive(coop, r->dest, ring, r->len, t.ll_flag);
        return;
    }
    const size_t mine = static_cast<size_t>(t.me);
    ll_copy(coop, r->dest + mine * r->dest_stride, r->src + mine * r->src_stride, r->len);
#pragma unroll 1
    for (int i = 1; i < t.size; ++i) {
        const int j = coll_next(t, i);
        ll_receive(coop, r->dest + static_cast<size_t>(j) * r->dest_stride,
                   ring + static_cast<size_t>(j) * r->region, r->len, t.ll_flag);
    }
}

/* Broadcast (root: team index), fcollect or alltoall of `bytes` per block over the LL rings,
 * by every thread of `coop`, in rounds of at most ll_chunk bytes per block (one round unless
 * t.gin). Out of line, compiled to the calling convention (coll_impl.h's move_body). */
template <typename Coop, CollMove K>
__device__ __noinline__ void move_ll(Coop coop, const char *fn, nvshmem_team_t team,
                                     const niin_device_context *cp, CollTeam t, char *dest,
                                     const char *src, size_t bytes, int root) {
    const size_t n = static_cast<size_t>(t.size);
    /* alltoall over GIN stages each member's block in a region of its own */
    const size_t regions =
        K == CollMove::Broadcast ? 1 : (K == CollMove::Alltoall && t.gin ? 2 * n : n);
    const size_t chunk = ll_chunk(*cp, regions);
    LlRound r;
    r.c = cp;
    r.fn = fn;
    r.src_stride = K == CollMove::Alltoall ? bytes : 0;
    r.dest_stride = K == CollMove::Broadcast ? 0 : bytes;
    r.root = K == CollMove::Broadcast ? root : -1;
    r.t = t;
#pragma unroll 1
    for (size_t done = 0; done < bytes; done += chunk) {
        r.len = bytes - done < chunk ? bytes - done : chunk;
        r.region = ll_need(r.len, 1);
        r.src = src + done;
        r.dest = dest + done;
        call_out_of_line_local<&ll_reserve<Coop>>(coop, fn, team, r.region * regions, &r.t);
        call_out_of_line_local<&ll_round_send<Coop>>(coop, static_cast<const LlRound *>(&r));
        call_out_of_line_local<&ll_round_receive<Coop>>(coop, static_cast<const LlRound *>(&r));
        coop.sync();
    }
}

/* reduce (scatter false) or reducescatter (true) of nreduce elements over the LL rings, by
 * every thread of `coop`, in rounds as move_ll: each member sends its values (for a
 * reducescatter, block j to member j) into region `me` of the others' rings, then combines,
 * line by line, the members' values in team order, its own read from source. Called
 * directly (not through a device variable, which every TU would compile for all 156 scope,
 * element type and operation triples): a TU compiles the bodies it calls. */
template <typename Coop, typename E, CollOp Op>
__device__ __noinline__ void reduce_ll(Coop coop, const char *fn, nvshmem_team_t team,
                                       const niin_device_context *cp, CollTeam t, E *dest,
                                       const E *source, size_t nreduce, bool scatter) {
    static_assert(sizeof(E) <= 8, "the LL path reduces elements of at most 8 bytes");
    const size_t n = static_cast<size_t>(t.size);
    const size_t bytes = nreduce * sizeof(E);
    const size_t regions = scatter && t.gin ? 2 * n : n;
    const size_t chunk = ll_chunk(*cp, regions); /* whole units: whole elements */
    const char *src = reinterpret_cast<const char *>(source);
    LlRound r;
    r.c = cp;
    r.fn = fn;
    r.src_stride = scatter ? bytes : 0;
    r.dest_stride = 0;
    r.root = -1;
    r.t = t;
    const char *own = scatter ? src + static_cast<size_t>(t.me) * bytes : src;
#pragma unroll 1
    for (size_t done = 0; done < bytes; done += chunk) {
        const size_t len = bytes - done < chunk ? bytes - done : chunk;
        const size_t units = (len + 7) / 8, region = 16 * units;
        r.len = len;
        r.region = region;
        r.src = src + done;
        call_out_of_line_local<&ll_reserve<Coop>>(coop, fn, team, region * regions, &r.t);
        /* (ends synchronized: every read of source before any store into dest, which may be
         * the same buffer) */
        call_out_of_line_local<&ll_round_send<Coop>>(coop, static_cast<const LlRound *>(&r));
        const char *ring = cp->heap_base + r.t.ll_off;
        const unsigned int flag = r.t.ll_flag;
        char *dst = reinterpret_cast<char *>(dest) + done;
#pragma unroll 1
        for (size_t k = static_cast<size_t>(coop.thread_rank()); k < units; k += coop.size()) {
            uint2 acc = t.me == 0 ? ll_read_unit(own + done, len, k) : ll_wait(ring + 16 * k, flag);
#pragma unroll 1
            for (int j = 1; j < t.size; ++j) {
                const uint2 v = j == t.me ? ll_read_unit(own + done, len, k)
                                          : ll_wait(ring + static_cast<size_t>(j) * region + 16 * k,
                                                    flag);
                acc = ll_combine<Op, E>(acc, v);
            }
            ll_write_unit(dst, len, k, acc);
        }
        coop.sync();
    }
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_LL_IMPL_H */
