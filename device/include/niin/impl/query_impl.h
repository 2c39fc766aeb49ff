/*
 * niin/impl/query_impl.h -- device bodies of niin/query.h.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal. The functions are declared
 * __host__ __device__ in a device pass only (NIIN_HOSTDEVICE), so their device bodies are
 * compiled in that pass only (__CUDA_ARCH__); the host pass calls libnvshmem_host.
 */
#ifndef NIIN_IMPL_QUERY_IMPL_H
#define NIIN_IMPL_QUERY_IMPL_H

#include "niin/impl/common_impl.h"

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* The PEs of a predefined team the device knows: WORLD, and SHARED = NODE = this PE's
 * LSA team (niin-teams: SHARED is the PEs nvshmem_ptr reaches, the node under LSA).
 * Returns false for any other team. */
__device__ __forceinline__ bool device_team(const niin_device_context &c, nvshmem_team_t team,
                                            int *start, int *size) {
    switch (team) {
        case NVSHMEM_TEAM_WORLD:
            *start = 0;
            *size = c.n_pes;
            return true;
        case NVSHMEM_TEAM_SHARED:
        case NVSHMEMX_TEAM_NODE:
            *start = c.my_pe - c.lsa_rank;
            *size = c.lsa_size;
            return true;
        default:
            return false;
    }
}

constexpr const char *kTeamWhy =
    "only NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED and NVSHMEMX_TEAM_NODE are known to the "
    "device";

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS

NIIN_DEVICE_HD int nvshmem_my_pe(void) { return niin::detail::context("nvshmem_my_pe").my_pe; }

NIIN_DEVICE_HD int nvshmem_n_pes(void) { return niin::detail::context("nvshmem_n_pes").n_pes; }

NIIN_DEVICE_HD void *nvshmem_ptr(const void *ptr, int pe) {
    const niin_device_context &c = niin::detail::context("nvshmem_ptr");
    if (!niin::detail::in_heap(c, ptr, 1)) return nullptr;
    return niin::detail::lsa_address(c, ptr, pe);
}

NIIN_DEVICE_HD void nvshmem_info_get_version(int *major, int *minor) {
    *major = NVSHMEM_MAJOR_VERSION;
    *minor = NVSHMEM_MINOR_VERSION;
}

NIIN_DEVICE_HD void nvshmem_info_get_name(char *name) {
    const char *s = NVSHMEM_VENDOR_STRING;
    int i = 0;
    for (; i < NVSHMEM_MAX_NAME_LEN - 1 && s[i] != '\0'; ++i) name[i] = s[i];
    name[i] = '\0';
}

NIIN_DEVICE_HD void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch) {
    *major = NVSHMEM_VENDOR_MAJOR_VERSION;
    *minor = NVSHMEM_VENDOR_MINOR_VERSION;
    *patch = NVSHMEM_VENDOR_PATCH_VERSION;
}

NIIN_DEVICE_HD int nvshmem_team_my_pe(nvshmem_team_t team) {
    const niin_device_context &c = niin::detail::context("nvshmem_team_my_pe");
    int start = 0, size = 0;
    if (team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, team, &start, &size)) {
        niin::detail::not_implemented("nvshmem_team_my_pe", niin::detail::kTeamWhy);
        return -1;
    }
    return c.my_pe - start;
}

NIIN_DEVICE_HD int nvshmem_team_n_pes(nvshmem_team_t team) {
    const niin_device_context &c = niin::detail::context("nvshmem_team_n_pes");
    int start = 0, size = 0;
    if (team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, team, &start, &size)) {
        niin::detail::not_implemented("nvshmem_team_n_pes", niin::detail::kTeamWhy);
        return -1;
    }
    return size;
}

NIIN_DEVICE_HD int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
                                             nvshmem_team_t dest_team) {
    const niin_device_context &c = niin::detail::context("nvshmem_team_translate_pe");
    int src_start = 0, src_size = 0, dest_start = 0, dest_size = 0;
    if (src_team == NVSHMEM_TEAM_INVALID || dest_team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, src_team, &src_start, &src_size) ||
        !niin::detail::device_team(c, dest_team, &dest_start, &dest_size)) {
        niin::detail::not_implemented("nvshmem_team_translate_pe", niin::detail::kTeamWhy);
        return -1;
    }
    if (src_pe < 0 || src_pe >= src_size) return -1;
    const int dest_pe = src_start + src_pe - dest_start;
    return (dest_pe >= 0 && dest_pe < dest_size) ? dest_pe : -1;
}

NIIN_DEVICE_HD void nvshmem_global_exit(int status) {
    (void)status;
    niin::detail::not_implemented("nvshmem_global_exit",
                                  "a kernel cannot end the job: return to the host and call "
                                  "nvshmem_global_exit there");
}

NIIN_END_C_DECLS
#endif /* __CUDA_ARCH__ */

#endif /* NIIN_IMPL_QUERY_IMPL_H */
