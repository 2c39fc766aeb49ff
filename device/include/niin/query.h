/*
 * niin/query.h -- device-side queries: who am I, how many PEs, where is a symmetric
 * object on another PE, what library is this.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5
 * declares these for host and device code alike (NVSHMEMI_HOSTDEVICE_PREFIX); so does
 * niin-rs (NIIN_HOSTDEVICE, niin/config.h): in a device compilation pass they are
 * __host__ __device__ with the device body of niin/impl/query_impl.h, inlined into the
 * kernel; in the host pass they are the host functions of libnvshmem_host.
 *
 *   nvshmem_my_pe, nvshmem_n_pes        this PE and the PE count (the module's context)
 *   nvshmem_ptr(ptr, pe)                 load/store address of symmetric `ptr` on `pe`:
 *                                        `ptr` for this PE, NCCL's LSA peer pointer for an
 *                                        LSA peer, NULL for other PEs and for addresses
 *                                        outside the symmetric heap
 *   nvshmemx_mc_ptr(team, ptr)           NVLink-multicast address of symmetric `ptr` for
 *                                        `team`: NCCL's multimem pointer where this
 *                                        module's devComm has the LSA team's multimem
 *                                        handle (NVLS) and `team` is that whole LSA team;
 *                                        NULL otherwise (as NVSHMEM answers for a team
 *                                        without multicast; the host side always NULL)
 *   nvshmem_info_get_version/_name,      constants (niin/types.h), as on the host
 *   nvshmemx_vendor_get_version_info
 *   nvshmem_team_my_pe/_n_pes,           any team: WORLD and SHARED / NODE (the LSA team)
 *   nvshmem_team_translate_pe            from the context, split teams (and the other
 *                                        predefined ones) from the PE's team table, which
 *                                        libnvshmem_host copies to the GPU after every
 *                                        split and destroy (handles below 1024). A handle
 *                                        the table does not hold: NOT_IMPLEMENTED policy
 *                                        (value -1 under NIIN_NOOP/NIIN_WARN)
 *   nvshmem_global_exit                  device side: NOT_IMPLEMENTED policy
 */
#ifndef NIIN_QUERY_H
#define NIIN_QUERY_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)
NIIN_BEGIN_C_DECLS
NIIN_HOSTDEVICE int nvshmem_my_pe(void);
NIIN_HOSTDEVICE int nvshmem_n_pes(void);
NIIN_HOSTDEVICE void *nvshmem_ptr(const void *ptr, int pe);
NIIN_HOSTDEVICE void *nvshmemx_mc_ptr(nvshmem_team_t team, const void *ptr);
NIIN_HOSTDEVICE void nvshmem_info_get_version(int *major, int *minor);
NIIN_HOSTDEVICE void nvshmem_info_get_name(char *name);
NIIN_HOSTDEVICE void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch);
NIIN_HOSTDEVICE int nvshmem_team_my_pe(nvshmem_team_t team);
NIIN_HOSTDEVICE int nvshmem_team_n_pes(nvshmem_team_t team);
NIIN_HOSTDEVICE int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
                                              nvshmem_team_t dest_team);
NIIN_HOSTDEVICE void nvshmem_global_exit(int status);
NIIN_END_C_DECLS

#include "niin/impl/query_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_QUERY_H */
