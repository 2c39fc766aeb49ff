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

/* A team as the device sees it: team PE i is world PE start + i * stride. */
struct DeviceTeamView {
    int start, stride, size;
};

/* The team of handle `team`: WORLD and SHARED / NODE (this PE's LSA team, niin-teams: SHARED
 * is the PEs nvshmem_ptr reaches, the node under LSA) from the context, any other from the
 * PE's team table (niin/context.h: entry `team`, kept current by libnvshmem_host as teams are
 * created and destroyed). Returns false for a handle the table does not hold (destroyed,
 * never made, or past its team_slots entries). */
__device__ __forceinline__ bool device_team(const niin_device_context &c, nvshmem_team_t team,
                                            DeviceTeamView *t) {
    switch (team) {
        case NVSHMEM_TEAM_WORLD:
            *t = DeviceTeamView{0, 1, c.n_pes};
            return true;
        case NVSHMEM_TEAM_SHARED:
        case NVSHMEMX_TEAM_NODE:
            *t = DeviceTeamView{c.my_pe - c.team_lsa_rank, 1, c.barrier_lsa_size};
            return true;
        default:
            break;
    }
    if (team < 0 || team >= c.team_slots || c.teams == nullptr) return false;
    const niin_device_team e = c.teams[team];
    if (e.size <= 0) return false;
    *t = DeviceTeamView{e.start, e.stride, e.size};
    return true;
}

/* The number in `t` of world PE `pe`, or -1 if it is not a member. */
__device__ __forceinline__ int team_index_of(const DeviceTeamView &t, int pe) {
    const int d = pe - t.start;
    if (t.stride == 0) return d == 0 && t.size > 0 ? 0 : -1;
    if (d % t.stride != 0) return -1;
    const int i = d / t.stride;
    return i >= 0 && i < t.size ? i : -1;
}

constexpr const char *kTeamWhy =
    "the team is not in this PE's device team table (never created, destroyed, or a handle "
    "of 1024 or more)";

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#if defined(__CUDA_ARCH__)
NIIN_BEGIN_C_DECLS

NIIN_DEVICE_HD int nvshmem_my_pe(void) { return niin::detail::context("nvshmem_my_pe").my_pe; }

NIIN_DEVICE_HD int nvshmem_n_pes(void) { return niin::detail::context("nvshmem_n_pes").n_pes; }

NIIN_DEVICE_HD void *nvshmem_ptr(const void *ptr, int pe) {
    const niin_device_context &c = niin::detail::context("nvshmem_ptr");
    if (!niin::detail::in_symmetric(c, ptr, 1)) return nullptr;
    return niin::detail::lsa_address(c, ptr, pe);
}

NIIN_DEVICE_HD void *nvshmemx_mc_ptr(nvshmem_team_t team, const void *ptr) {
    const niin_device_context &c = niin::detail::context("nvshmemx_mc_ptr");
    niin::detail::DeviceTeamView t;
    if (team == NVSHMEM_TEAM_INVALID || !niin::detail::device_team(c, team, &t)) return nullptr;
    /* The multimem address stands for the heap's window on every PE of the LSA team. */
    if (!c.has_dev_comm || c.dev_comm.lsaMultimem.mcBasePtr == nullptr ||
        !niin::detail::in_heap(c, ptr, 1))
        return nullptr;
    if (t.stride != 1 || t.size != c.lsa_size || t.size != c.dev_comm.lsaSize ||
        niin::detail::lsa_index(c, t.start) != 0)
        return nullptr;
    const size_t offset = static_cast<size_t>(static_cast<const char *>(ptr) - c.heap_base);
    return ncclGetLsaMultimemPointer(c.window, offset, c.dev_comm);
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
    niin::detail::DeviceTeamView t;
    if (team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, team, &t)) {
        niin::detail::not_implemented("nvshmem_team_my_pe", niin::detail::kTeamWhy);
        return -1;
    }
    return niin::detail::team_index_of(t, c.my_pe);
}

NIIN_DEVICE_HD int nvshmem_team_n_pes(nvshmem_team_t team) {
    const niin_device_context &c = niin::detail::context("nvshmem_team_n_pes");
    niin::detail::DeviceTeamView t;
    if (team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, team, &t)) {
        niin::detail::not_implemented("nvshmem_team_n_pes", niin::detail::kTeamWhy);
        return -1;
    }
    return t.size;
}

NIIN_DEVICE_HD int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
                                             nvshmem_team_t dest_team) {
    const niin_device_context &c = niin::detail::context("nvshmem_team_translate_pe");
    niin::detail::DeviceTeamView src, dest;
    if (src_team == NVSHMEM_TEAM_INVALID || dest_team == NVSHMEM_TEAM_INVALID) return -1;
    if (!niin::detail::device_team(c, src_team, &src) ||
        !niin::detail::device_team(c, dest_team, &dest)) {
        niin::detail::not_implemented("nvshmem_team_translate_pe", niin::detail::kTeamWhy);
        return -1;
    }
    if (src_pe < 0 || src_pe >= src.size) return -1;
    return niin::detail::team_index_of(dest, src.start + src_pe * src.stride);
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
