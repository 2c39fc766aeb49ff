/*
 * niin/sync.h -- ordering, completion and barriers on the device.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures; the functions that libnvshmem_host also has are __host__ __device__ in a
 * device pass (NIIN_HOSTDEVICE, niin/config.h), the others __device__.
 *
 *   nvshmem_fence()        orders this thread's earlier puts before its later ones:
 *                          __threadfence_system(); with GIN, a flush of this CTA's GIN
 *                          context first (GIN has no lighter ordering operation)
 *   nvshmem_quiet()        completes this thread's earlier puts and _nbi operations:
 *                          GIN flush of this CTA's context (when the devComm has GIN), then
 *                          __threadfence_system()
 *   nvshmem_barrier_all()  quiet, then a barrier of all PEs; nvshmem_sync_all(): the
 *                          barrier without the quiet (nor GIN's put/get fence). Called by
 *                          one thread of a CTA; the _warp/_block forms by all threads of
 *                          the warp/block (a 2-D or 3-D block runs the NCCL session in its
 *                          first thread, between two __syncthreads()).
 *                          Several CTAs may be inside a barrier at once: CTA b (linear
 *                          index in the grid) uses NCCL barrier index b % barrier_count, so
 *                          the same CTA on every PE meets,
 *                          and at most barrier_count CTAs (the count the devComm was made
 *                          with) may be in one at the same time, each with one caller (a
 *                          thread, a warp or the block) at a time.
 *                          One LSA team (lsa_size == n_pes): NCCL's LSA barrier session;
 *                          otherwise the hybrid (LSA + GIN) world barrier session (NCCL
 *                          >= 2.28.7; older headers: NOT_IMPLEMENTED policy).
 *   nvshmem_barrier(team), nvshmem_team_sync(team), and their nvshmemx _warp/_block forms
 *   (and nvshmemx_barrier_warpgroup: 4 warps, NVSHMEM's named-barrier rule, common_impl.h):
 *                          NVSHMEM_TEAM_WORLD as above; NVSHMEM_TEAM_SHARED and
 *                          NVSHMEMX_TEAM_NODE (the LSA team): the LSA barrier session;
 *                          any other team (splits, SAME_MYPE_NODE, SAME_GPU, GPU_LEADERS):
 *                          a counting barrier in the team's slot of the library's system
 *                          area (sync_impl.h), one at a time per team and PE. A handle the
 *                          device table lacks: NOT_IMPLEMENTED policy; NVSHMEM_TEAM_INVALID,
 *                          or a team this PE is not in: a usage error. Return 0.
 *   (nvshmem_signal_fetch: niin/signal.h)
 */
#ifndef NIIN_SYNC_H
#define NIIN_SYNC_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
NIIN_BEGIN_C_DECLS

NIIN_HOSTDEVICE void nvshmem_fence(void);
NIIN_HOSTDEVICE void nvshmem_quiet(void);
NIIN_HOSTDEVICE void nvshmem_barrier_all(void);
NIIN_HOSTDEVICE void nvshmem_sync_all(void);
NIIN_HOSTDEVICE int nvshmem_barrier(nvshmem_team_t team);
NIIN_HOSTDEVICE int nvshmem_team_sync(nvshmem_team_t team);

__device__ void nvshmemx_barrier_all_warp(void);
__device__ void nvshmemx_barrier_all_block(void);
__device__ void nvshmemx_sync_all_warp(void);
__device__ void nvshmemx_sync_all_block(void);
__device__ int nvshmemx_barrier_warp(nvshmem_team_t team);
__device__ int nvshmemx_barrier_warpgroup(nvshmem_team_t team);
__device__ int nvshmemx_barrier_block(nvshmem_team_t team);
__device__ int nvshmemx_team_sync_warp(nvshmem_team_t team);
__device__ int nvshmemx_team_sync_block(nvshmem_team_t team);

NIIN_END_C_DECLS

#include "niin/impl/sync_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_SYNC_H */
