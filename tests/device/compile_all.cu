/*
 * tests/device/compile_all.cu -- instantiates every device function of niin-rs's device
 * API (first slice) for every RMA type and every scope, from __global__ kernels, so that
 * scripts/compile-device-headers.sh compiles all of it with warnings as errors. Compiled
 * only (-c): nothing here is linked or run.
 *
 * Every typed call comes from NIIN_FOR_EACH_RMA_TYPE, every sized one from
 * NIIN_FOR_EACH_RMA_SIZE (niin/types.h): a function missing for some row fails here.
 * host_side() calls the functions that are also host functions of libnvshmem_host from
 * host code, which must resolve to the library's declarations (undefined symbols in the
 * object), not to the device bodies.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

/* ---- one thread: niin/query.h, niin/rma.h ------------------------------------------- */

#define CALL_THREAD_TYPED(NAME, TYPE)                                  \
    {                                                                  \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                       \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);           \
        nvshmem_##NAME##_p(d, s[0], pe);                               \
        d[1] = nvshmem_##NAME##_g(d + 2, pe);                          \
        nvshmem_##NAME##_put(d, s, n, pe);                             \
        nvshmem_##NAME##_get(d, d + 4, n, pe);                         \
        nvshmem_##NAME##_put_nbi(d, s, n, pe);                         \
        nvshmem_##NAME##_get_nbi(d, d + 4, n, pe);                     \
    }

#define CALL_THREAD_SIZED(BITS, TYPE)                \
    nvshmem_put##BITS(sym, src, n, pe);              \
    nvshmem_get##BITS(sym, sym, n, pe);              \
    nvshmem_put##BITS##_nbi(sym, src, n, pe);        \
    nvshmem_get##BITS##_nbi(sym, sym, n, pe);

__global__ void thread_scope(char *sym, const char *src, size_t n, int pe, int *out) {
    int major = 0, minor = 0, patch = 0;
    char name[NVSHMEM_MAX_NAME_LEN];
    out[0] = nvshmem_my_pe();
    out[1] = nvshmem_n_pes();
    out[2] = nvshmem_ptr(sym, pe) != nullptr;
    out[2] += nvshmemx_mc_ptr(NVSHMEM_TEAM_WORLD, sym) != nullptr;
    nvshmem_info_get_version(&major, &minor);
    nvshmemx_vendor_get_version_info(&major, &minor, &patch);
    nvshmem_info_get_name(name);
    out[3] = major + minor + patch + name[0];
    out[4] = nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED) + nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) +
             nvshmem_team_translate_pe(NVSHMEM_TEAM_SHARED, 0, NVSHMEM_TEAM_WORLD);
    NIIN_FOR_EACH_RMA_TYPE(CALL_THREAD_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_THREAD_SIZED)
    nvshmem_putmem(sym, src, n, pe);
    nvshmem_getmem(sym, sym + 8, n, pe);
    nvshmem_putmem_nbi(sym, src, n, pe);
    nvshmem_getmem_nbi(sym, sym + 8, n, pe);
    if (out[5] == 42) nvshmem_global_exit(1);
}

/* ---- warp and block: niin/threadgroup.h ---------------------------------------------- */

#define CALL_SCOPE_TYPED(NAME, TYPE, SCOPE)                           \
    {                                                                 \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                      \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);          \
        nvshmemx_##NAME##_put_##SCOPE(d, s, n, pe);                   \
        nvshmemx_##NAME##_get_##SCOPE(d, d + 4, n, pe);               \
        nvshmemx_##NAME##_put_nbi_##SCOPE(d, s, n, pe);               \
        nvshmemx_##NAME##_get_nbi_##SCOPE(d, d + 4, n, pe);           \
    }
#define CALL_WARP_TYPED(NAME, TYPE) CALL_SCOPE_TYPED(NAME, TYPE, warp)
#define CALL_BLOCK_TYPED(NAME, TYPE) CALL_SCOPE_TYPED(NAME, TYPE, block)

#define CALL_SCOPE_SIZED(BITS, SCOPE)                     \
    nvshmemx_put##BITS##_##SCOPE(sym, src, n, pe);        \
    nvshmemx_get##BITS##_##SCOPE(sym, sym, n, pe);        \
    nvshmemx_put##BITS##_nbi_##SCOPE(sym, src, n, pe);    \
    nvshmemx_get##BITS##_nbi_##SCOPE(sym, sym, n, pe);
#define CALL_WARP_SIZED(BITS, TYPE) CALL_SCOPE_SIZED(BITS, warp)
#define CALL_BLOCK_SIZED(BITS, TYPE) CALL_SCOPE_SIZED(BITS, block)

#define CALL_SCOPE_MEM(SCOPE)                           \
    nvshmemx_putmem_##SCOPE(sym, src, n, pe);           \
    nvshmemx_getmem_##SCOPE(sym, sym + 8, n, pe);       \
    nvshmemx_putmem_nbi_##SCOPE(sym, src, n, pe);       \
    nvshmemx_getmem_nbi_##SCOPE(sym, sym + 8, n, pe);

__global__ void warp_scope(char *sym, const char *src, size_t n, int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_WARP_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_WARP_SIZED)
    CALL_SCOPE_MEM(warp)
}

__global__ void block_scope(char *sym, const char *src, size_t n, int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_BLOCK_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_BLOCK_SIZED)
    CALL_SCOPE_MEM(block)
}

/* ---- ordering and barriers: niin/sync.h ---------------------------------------------- */

__global__ void sync_thread(uint64_t *sig, int *out) {
    nvshmem_fence();
    nvshmem_quiet();
    nvshmem_barrier_all();
    nvshmem_sync_all();
    out[0] = nvshmem_barrier(NVSHMEM_TEAM_WORLD) + nvshmem_barrier(NVSHMEM_TEAM_SHARED) +
             nvshmem_team_sync(NVSHMEMX_TEAM_NODE) + nvshmem_sync(NVSHMEM_TEAM_WORLD);
    out[1] = static_cast<int>(nvshmem_signal_fetch(sig));
}

__global__ void sync_warp(int *out) {
    nvshmemx_barrier_all_warp();
    nvshmemx_sync_all_warp();
    out[0] = nvshmemx_barrier_warp(NVSHMEM_TEAM_WORLD) +
             nvshmemx_team_sync_warp(NVSHMEM_TEAM_SHARED);
}

__global__ void sync_block(int *out) {
    nvshmemx_barrier_all_block();
    nvshmemx_sync_all_block();
    out[0] = nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD) +
             nvshmemx_team_sync_block(NVSHMEM_TEAM_SHARED);
}

/* A team known only at run time (a split team): every scope's barrier and sync. */
__global__ void sync_team(nvshmem_team_t team, int *out) {
    out[0] = nvshmem_barrier(team) + nvshmem_team_sync(team);
}

__global__ void sync_team_warp(nvshmem_team_t team, int *out) {
    out[0] = nvshmemx_barrier_warp(team) + nvshmemx_team_sync_warp(team);
}

__global__ void sync_team_warpgroup(nvshmem_team_t team, int *out) {
    out[0] = nvshmemx_barrier_warpgroup(team);
}

__global__ void sync_team_block(nvshmem_team_t team, int *out) {
    out[0] = nvshmemx_barrier_block(team) + nvshmemx_team_sync_block(team);
}

/* ---- host code: the same names are libnvshmem_host's functions ------------------------ */

int host_side(char *sym, const char *src, size_t n, int pe) {
    int major = 0, minor = 0, patch = 0;
    nvshmem_info_get_version(&major, &minor);
    nvshmemx_vendor_get_version_info(&major, &minor, &patch);
    nvshmem_putmem(sym, src, n, pe);
    nvshmem_getmem(sym, sym + 8, n, pe);
    nvshmem_putmem_nbi(sym, src, n, pe);
    nvshmem_getmem_nbi(sym, sym + 8, n, pe);
    int *isym = reinterpret_cast<int *>(sym);
    const int *isrc = reinterpret_cast<const int *>(src);
    nvshmem_int_p(isym, 7, pe);
    nvshmem_int_put(isym, isrc, n, pe);
    nvshmem_int_get_nbi(isym, isym + 2, n, pe);
    nvshmem_int_iput(isym, isrc, 2, 1, n, pe);
    nvshmem_half_iget(reinterpret_cast<half *>(sym), reinterpret_cast<const half *>(src), 1, 2,
                      n, pe);
    nvshmem_put64_nbi(sym, src, n, pe);
    nvshmem_iget128(sym, src, 1, 1, n, pe);
    nvshmem_uint64_atomic_fetch_xor(reinterpret_cast<uint64_t *>(sym), 5, pe);
    nvshmem_double_atomic_set(reinterpret_cast<double *>(sym), 1.5, pe);
    nvshmem_fence();
    nvshmem_quiet();
    nvshmem_barrier_all();
    nvshmem_sync_all();
    nvshmemx_buffer_register(const_cast<char *>(src), n);
    nvshmemx_buffer_unregister(const_cast<char *>(src));
    nvshmemx_buffer_unregister_all();
    return nvshmem_my_pe() + nvshmem_n_pes() + (nvshmem_ptr(sym, pe) != nullptr) +
           (nvshmemx_mc_ptr(NVSHMEM_TEAM_WORLD, sym) != nullptr) + major + minor +
           patch + nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD) + nvshmem_barrier(NVSHMEM_TEAM_WORLD) +
           static_cast<int>(nvshmem_signal_fetch(reinterpret_cast<uint64_t *>(sym))) +
           nvshmem_int_g(isym, pe) + nvshmem_int_atomic_compare_swap(isym, 1, 2, pe);
}
