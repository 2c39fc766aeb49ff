/*
 * niin/coll.h -- team collectives on the device: reduce, reducescatter, broadcast, fcollect,
 * alltoall, by a thread, a warp or a block.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures (host/nvshmem_coll_api.h, host/nvshmemx_coll_api.h, device/nvshmem[x]_coll_
 * defines.cuh), C linkage, every name generated from the type lists of niin/types.h:
 *
 *   int nvshmem_<T>_<op>_reduce(team, T *dest, const T *source, size_t nreduce)
 *   int nvshmem_<T>_<op>_reducescatter(team, T *dest, const T *source, size_t nreduce)
 *        op and, or, xor: the 14 bitwise reduce types; min, max, sum, prod: the 24 reduce types
 *   int nvshmem_<T>_broadcast(team, T *dest, const T *source, size_t nelems, int PE_root)
 *   int nvshmem_<T>_fcollect(team, T *dest, const T *source, size_t nelems)
 *   int nvshmem_<T>_alltoall(team, T *dest, const T *source, size_t nelems)
 *        T: the 25 RMA types; and the byte forms nvshmem_broadcastmem, _fcollectmem,
 *        _alltoallmem (nelems counts bytes)
 *   nvshmemx_..._warp / nvshmemx_..._block of each: the same by a whole warp / block (any
 *        block shape), every thread with the same arguments
 *   int nvshmemx_double2_maxloc_reduce_block(team, double2 *dest, const double2 *source,
 *        size_t nreduce): per element the pair with the largest .x (ties: the higher team PE's)
 * 1,063 functions. The thread forms are host functions of libnvshmem_host too (blocking; the
 * _on_stream forms are host only: niin/host_api.h): __host__ __device__ in a device pass
 * (NIIN_HOSTDEVICE), their device bodies compiled in that pass only. The _warp and _block
 * forms are __device__ (NVSHMEM declares the reduce ones __host__ __device__ but has no host
 * body). nvshmemx_broadcastmem_warp/_block take PE_root as NVSHMEM's device definitions do
 * (its host header's declarations leave it out).
 *
 * Semantics (OpenSHMEM 1.5 team collectives, as NVSHMEM 3.4.5): every member of `team` calls
 * with the same arguments (one call per team at a time per PE: a thread, a warp or a block);
 * `dest` and `source` are symmetric; on return dest is complete on the calling PE and source
 * may be reused. As OpenSHMEM requires, dest must be ready on every member before any member
 * calls: broadcast, fcollect and alltoall may store into a member's dest before that member
 * has entered the call (a PE that reads its dest after one collective and then calls the
 * next into the same dest must sync the team in between, as with NVSHMEM). Team PE numbers (PE_root, the blocks of fcollect and alltoall) are the
 * team's. reduce: dest[i] = op over the team's PEs of source[i], i < nreduce; dest == source
 * (in place) allowed. reducescatter: on team PE k, dest[i] = op over the PEs of
 * source[k * nreduce + i]. fcollect: dest[j * nelems ...] = team PE j's source. alltoall: on
 * team PE k, dest[j * nelems ...] = team PE j's source[k * nelems ...]. broadcast: every
 * member's dest (the root's too) = the root's source. Return 0.
 * Arithmetic: integers wrap around (two's complement), and/or/xor bitwise; float and double
 * sum/prod as IEEE + and *, min/max as (a < b ? a : b) / (a > b ? a : b), half and bfloat16 as
 * CUDA's __hadd, __hmul, __hmin, __hmax. The PEs' values are combined in team-PE order
 * (0, 1, 2, ...) for every element, by one PE, so every PE gets the same bits (on the
 * multimem path below the NVSwitch combines them, in its order, and every PE still gets the
 * one result).
 *
 * Two paths (niin/impl/coll_impl.h picks; every member picks alike, from the arguments):
 *
 * LL, small collectives (niin/impl/coll_ll_impl.h): team handles below 16 (each has a ring
 * in the system area, 1/2048 of the heap, at most 1 MiB), elements of at most 8 bytes, and
 * a collective that needs at most a quarter of the ring (16 ring bytes per 8 data bytes,
 * one region per member; a broadcast one region) and, for fcollect and alltoall, 64 KiB
 * (16 KiB per PE for 2 PEs, 8 KiB for 4, 4 KiB for 8); reductions up to the quarter
 * ring; broadcasts of LSA teams never (they end with released counts, step 3 below). Each member stores its part as flagged 16-byte lines into
 * the other members' rings and waits once, line by line, for what it receives (a broadcast's
 * root does not wait at all); no sync before, no barrier after. When the ring is used up,
 * the members meet in a team sync and start it again. Reductions combine in team order, as
 * below.
 *
 * General path, every member reachable by load/store (LSA):
 *   1. where PEs read their peers' source (reduce, reducescatter, and a broadcast that
 *      pulls, below) a team sync first (nvshmem_team_sync's): every member's source is
 *      ready. fcollect, alltoall and a pushed broadcast only store into peers' dest, which
 *      the rule above makes ready: no wait before them, as NVSHMEM's;
 *   2. the data moves by loads and stores through the LSA peer pointers, the group's threads
 *      sharing the elements (16-byte words where the addresses allow):
 *        reduce         the nreduce elements are cut into n_pes contiguous slices (of 16-byte
 *                       words); team PE i reads slice i from every member's source, combines
 *                       in team order and stores the result into slice i of every member's
 *                       dest -- only PE i touches slice i, so in place is safe
 *        reducescatter  each PE reads its block from every member, writes its own dest
 *        broadcast      the root writes its source into every member's dest; when that is
 *                       more than 256 KiB beyond one member's share ((n - 2) x bytes), each
 *                       PE instead reads the root's source into its own dest (pulls)
 *        fcollect       each PE writes its source into every member's dest
 *        alltoall       each PE writes block k of its source into member k's dest
 *   3. a team barrier after (nvshmem_barrier's: quiet, then sync) where PEs stored into their
 *      peers (reduce, fcollect, alltoall, a pushed broadcast of a team without an LL slot),
 *      a team sync where each PE wrote only its own dest (reducescatter, a pulled
 *      broadcast): then every peer's stores are visible, and no PE reuses its source while
 *      another still reads it. A pushed broadcast of a team with an LL slot ends instead with
 *      the root releasing a count into each member's slot header (a system fence, then a
 *      release max), which the members wait for: the root does not wait at all.
 *   Multimem (NVLS, niin/impl/coll_multimem_impl.h): where NCCL gave the module's devComm a
 *   multimem handle and the team is the whole LSA team, step 2 goes through the multicast
 *   address instead: reduce ld_reduces its slice in the switch and stores it to every
 *   member at once, reducescatter ld_reduces its block, fcollect and broadcast store each
 *   block once for all members (sum of floating types and 32/64-bit integers, min/max/and/
 *   or/xor of 32/64-bit integers; 16-byte aligned heap buffers of whole 16-byte packs).
 *   Compiled, never run (no NVLS on the machines this is tested on).
 *   The syncs are the team barriers of niin/sync.h: NCCL's for WORLD and SHARED / NODE, the
 *   counting barrier for other teams. A team of one PE moves its data and syncs nothing else.
 *   A count of 0 returns at once (after checking the team).
 *
 * Limits and errors:
 *   - GIN: a team with a member outside this PE's LSA team (across nodes, or every peer
 *     under NIIN_GIN_LOOPBACK) takes the LL path at every size, in rounds of a quarter ring;
 *     lines for such a member are staged in this PE's ring and sent with one GIN put each.
 *     Needs a handle below 16, a heap of at least 8 MiB, and room for 2 x 16 bytes per
 *     member in a quarter ring; maxloc (16-byte elements) is not composed over GIN. Those
 *     cases go to the NOT_IMPLEMENTED policy with the reason; nothing is moved and the call
 *     returns nonzero under NIIN_NOOP / NIIN_WARN. All members decide alike.
 *   - NVSHMEM_TEAM_INVALID, or a team this PE is not in, or a PE_root outside the team: a
 *     usage error (printed, then a trap), as nvshmem_barrier(team); a handle the device team
 *     table lacks: NOT_IMPLEMENTED policy. The call returns nonzero in both cases.
 *   - the symmetric heap's peer mappings are assumed 16-byte aligned relative to each other
 *     (NCCL maps windows at page granularity); a peer distance that is not falls back to the
 *     element loop.
 */
#ifndef NIIN_COLL_H
#define NIIN_COLL_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

NIIN_BEGIN_C_DECLS

/* reduce and reducescatter: thread (host and device), warp, block. */
#define NIIN_DECLARE_COLL_REDUCTION(NAME, TYPE, OP)                                            \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_##OP##_reduce(nvshmem_team_t team, TYPE *dest,         \
                                                       const TYPE *source, size_t nreduce);     \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_##OP##_reducescatter(                                  \
        nvshmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce);                   \
    __device__ int nvshmemx_##NAME##_##OP##_reduce_warp(nvshmem_team_t team, TYPE *dest,        \
                                                        const TYPE *source, size_t nreduce);    \
    __device__ int nvshmemx_##NAME##_##OP##_reduce_block(nvshmem_team_t team, TYPE *dest,       \
                                                         const TYPE *source, size_t nreduce);   \
    __device__ int nvshmemx_##NAME##_##OP##_reducescatter_warp(                                 \
        nvshmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce);                   \
    __device__ int nvshmemx_##NAME##_##OP##_reducescatter_block(                                \
        nvshmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce);
NIIN_FOR_EACH_REDUCTION(NIIN_DECLARE_COLL_REDUCTION)
#undef NIIN_DECLARE_COLL_REDUCTION

/* broadcast, fcollect, alltoall of the RMA types: PREFIX nvshmem_ / nvshmemx_, SUFFIX empty
 * / _warp / _block, QUAL the linkage. */
#define NIIN_DECLARE_COLL_MOVE(NAME, TYPE, PREFIX, SUFFIX, QUAL)                                \
    QUAL int PREFIX##NAME##_broadcast##SUFFIX(nvshmem_team_t team, TYPE *dest,                  \
                                              const TYPE *source, size_t nelems, int PE_root);  \
    QUAL int PREFIX##NAME##_fcollect##SUFFIX(nvshmem_team_t team, TYPE *dest,                   \
                                             const TYPE *source, size_t nelems);                \
    QUAL int PREFIX##NAME##_alltoall##SUFFIX(nvshmem_team_t team, TYPE *dest,                   \
                                             const TYPE *source, size_t nelems);
#define NIIN_DECLARE_COLL_MOVE_TYPED(NAME, TYPE)                                                \
    NIIN_DECLARE_COLL_MOVE(NAME, TYPE, nvshmem_, , NIIN_HOSTDEVICE)                             \
    NIIN_DECLARE_COLL_MOVE(NAME, TYPE, nvshmemx_, _warp, __device__)                            \
    NIIN_DECLARE_COLL_MOVE(NAME, TYPE, nvshmemx_, _block, __device__)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DECLARE_COLL_MOVE_TYPED)
#undef NIIN_DECLARE_COLL_MOVE_TYPED

/* The byte forms (nvshmem_broadcastmem, ...: nelems counts bytes). */
#define NIIN_DECLARE_COLL_MOVE_MEM(PREFIX, SUFFIX, QUAL)                                        \
    QUAL int PREFIX##broadcastmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,  \
                                          size_t nelems, int PE_root);                          \
    QUAL int PREFIX##fcollectmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,   \
                                         size_t nelems);                                        \
    QUAL int PREFIX##alltoallmem##SUFFIX(nvshmem_team_t team, void *dest, const void *source,   \
                                         size_t nelems);
NIIN_DECLARE_COLL_MOVE_MEM(nvshmem_, , NIIN_HOSTDEVICE)
NIIN_DECLARE_COLL_MOVE_MEM(nvshmemx_, _warp, __device__)
NIIN_DECLARE_COLL_MOVE_MEM(nvshmemx_, _block, __device__)
#undef NIIN_DECLARE_COLL_MOVE_MEM
#undef NIIN_DECLARE_COLL_MOVE

__device__ int nvshmemx_double2_maxloc_reduce_block(nvshmem_team_t team, double2 *dest,
                                                    const double2 *source, size_t nreduce);

NIIN_END_C_DECLS

#include "niin/impl/coll_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_COLL_H */
