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
 * bytes, and whose collective needs at most a quarter of the ring (with the default heap,
 * 128 KiB rings: 8 KiB per PE with 2 PEs, 4 KiB with 4, 2 KiB with 8).
 *
 * Reductions combine the members' values in team order (member 0, 1, ...), at every member,
 * as the general path does: every member gets the same bits.
 */
#ifndef NIIN_IMPL_COLL_LL_IMPL_H
#define NIIN_IMPL_COLL_LL_IMPL_H

#include "niin/impl/coll_base_impl.h"

/* Bytes of an LL slot's header (niin_api::COLL_LL_HEADER_BYTES). */
#define NIIN_COLL_LL_HEADER 256

#if defined(__CUDACC__)

namespace niin {
namespace detail {

/* This PE's LL state of a team, at the head of its slot: the flag of its last LL collective
 * of the team and the ring offset where its next one starts. */
struct CollLlHeader {
    unsigned int flag;
    unsigned int reserved;
    unsigned long long off;
};

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

/* The 8 data bytes of a line of this PE's ring, once both its words carry `flag`. */
__device__ __forceinline__ uint2 ll_wait(const char *line, unsigned int flag) {
    unsigned long long w0, w1;
    do {
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(w0), "=l"(w1)
                     : "l"(line)
                     : "memory");
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

/* Broadcast (root: team index), fcollect or alltoall of `bytes` per block over the LL ring
 * (t.ll_off: this collective's part of every member's ring; t.ll_flag its flag), by every
 * thread of `coop`. Out of line: one body per scope and kind. */
template <typename Coop, CollMove K>
__device__ __noinline__ void move_ll(Coop coop, const niin_device_context *cp, CollTeam t,
                                     char *dest, const char *src, size_t bytes, int root) {
    const niin_device_context &c = *cp;
    const size_t region = 16 * ((bytes + 7) / 8);
    char *ring = c.heap_base + t.ll_off;
    if constexpr (K == CollMove::Broadcast) {
        if (t.me == root) {
#pragma unroll 1
            for (int i = 1; i < t.size; ++i) {
                int j = t.me + i;
                if (j >= t.size) j -= t.size;
                ll_send(coop, coll_at(ring, coll_delta(c, t, j)), src, bytes, t.ll_flag);
            }
            ll_copy(coop, dest, src, bytes);
        } else {
            ll_receive(coop, dest, ring, bytes, t.ll_flag);
        }
    } else {
        const size_t mine = static_cast<size_t>(t.me);
#pragma unroll 1
        for (int i = 1; i < t.size; ++i) {
            int j = t.me + i;
            if (j >= t.size) j -= t.size;
            const char *block = K == CollMove::Fcollect ? src : src + static_cast<size_t>(j) * bytes;
            ll_send(coop, coll_at(ring, coll_delta(c, t, j)) + mine * region, block, bytes,
                    t.ll_flag);
        }
        ll_copy(coop, dest + mine * bytes, K == CollMove::Fcollect ? src : src + mine * bytes, bytes);
#pragma unroll 1
        for (int i = 1; i < t.size; ++i) {
            int j = t.me + i;
            if (j >= t.size) j -= t.size;
            ll_receive(coop, dest + static_cast<size_t>(j) * bytes,
                       ring + static_cast<size_t>(j) * region, bytes, t.ll_flag);
        }
    }
    coop.sync();
}

/* reduce (scatter false) or reducescatter (true) of nreduce elements over the LL ring, by
 * every thread of `coop`: each member sends its values (for a reducescatter, block j to
 * member j) into region `me` of the others' rings, then combines, line by line, the
 * members' values in team order, its own read from source. Out of line: one body per
 * scope, element type and operation. */
template <typename Coop, typename E, CollOp Op>
__device__ __noinline__ void reduce_ll(Coop coop, const niin_device_context *cp, CollTeam t,
                                       E *dest, const E *source, size_t nreduce, bool scatter) {
    static_assert(sizeof(E) <= 8, "the LL path reduces elements of at most 8 bytes");
    const niin_device_context &c = *cp;
    const size_t bytes = nreduce * sizeof(E);
    const size_t units = (bytes + 7) / 8;
    const size_t region = 16 * units;
    char *ring = c.heap_base + t.ll_off;
    const char *src = reinterpret_cast<const char *>(source);
    const size_t mine = static_cast<size_t>(t.me);
#pragma unroll 1
    for (int i = 1; i < t.size; ++i) {
        int j = t.me + i;
        if (j >= t.size) j -= t.size;
        ll_send(coop, coll_at(ring, coll_delta(c, t, j)) + mine * region,
                scatter ? src + static_cast<size_t>(j) * bytes : src, bytes, t.ll_flag);
    }
    /* every read of source before any store into dest (they may be the same buffer) */
    coop.sync();
    const char *own = scatter ? src + mine * bytes : src;
    char *dst = reinterpret_cast<char *>(dest);
#pragma unroll 1
    for (size_t k = static_cast<size_t>(coop.thread_rank()); k < units; k += coop.size()) {
        uint2 acc = t.me == 0 ? ll_read_unit(own, bytes, k) : ll_wait(ring + 16 * k, t.ll_flag);
#pragma unroll 1
        for (int j = 1; j < t.size; ++j) {
            const uint2 v = j == t.me ? ll_read_unit(own, bytes, k)
                                      : ll_wait(ring + static_cast<size_t>(j) * region + 16 * k,
                                                t.ll_flag);
            acc = ll_combine<Op, E>(acc, v);
        }
        ll_write_unit(dst, bytes, k, acc);
    }
    coop.sync();
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_COLL_LL_IMPL_H */
