/*
 * tests/device/compile_coll.cu -- names every device function of niin/coll.h (1,063: reduce
 * and reducescatter for the 138 type x operator pairs, broadcast, fcollect, alltoall for the
 * 25 RMA types and in bytes, each for a thread, a warp and a block, and
 * nvshmemx_double2_maxloc_reduce_block), so that scripts/compile-device-headers.sh compiles
 * all of them with warnings as errors (whole program, -rdc=true, -DNIIN_DEVICE_GIN=0).
 * Compiled only (-c).
 *
 * Every typed name comes from the lists of niin/types.h (NIIN_FOR_EACH_REDUCTION,
 * NIIN_FOR_EACH_RMA_TYPE): a function missing for some row fails here. The addresses are
 * taken in inline device functions that nothing calls: the front end instantiates and checks
 * every body (a static_assert planted in one reduction's body fails this TU), while ptxas
 * compiles only what kernels reach -- all ~160 bodies through ptxas took over 10 minutes
 * and 3 GB per compile, too much for CI; tests/gpu/conf_coll.cu builds and runs every one.
 * The *_one kernels call one collective each, as a program would: their register counts
 * (-Xptxas -v) are the cost of a collective in a caller (the script holds every kernel to
 * 64). host_side() calls the thread forms, which are also libnvshmem_host's, from host code:
 * the script checks that they stay calls to the library (undefined in the object).
 */
#include <nvshmem.h>
#include <nvshmemx.h>

/* The addresses go into `out`, one function per scope and family (never called: see above). */
#define NIIN_TAKE(F) out[i++] = reinterpret_cast<void *>(&F);

#define TAKE_REDUCTION(NAME, TYPE, OP, PREFIX, SUFFIX)          \
    NIIN_TAKE(PREFIX##NAME##_##OP##_reduce##SUFFIX)             \
    NIIN_TAKE(PREFIX##NAME##_##OP##_reducescatter##SUFFIX)
#define TAKE_REDUCTION_THREAD(NAME, TYPE, OP) TAKE_REDUCTION(NAME, TYPE, OP, nvshmem_, )
#define TAKE_REDUCTION_WARP(NAME, TYPE, OP) TAKE_REDUCTION(NAME, TYPE, OP, nvshmemx_, _warp)
#define TAKE_REDUCTION_BLOCK(NAME, TYPE, OP) TAKE_REDUCTION(NAME, TYPE, OP, nvshmemx_, _block)

#define TAKE_MOVE(NAME, TYPE, PREFIX, SUFFIX)   \
    NIIN_TAKE(PREFIX##NAME##_broadcast##SUFFIX) \
    NIIN_TAKE(PREFIX##NAME##_fcollect##SUFFIX)  \
    NIIN_TAKE(PREFIX##NAME##_alltoall##SUFFIX)
#define TAKE_MOVE_THREAD(NAME, TYPE) TAKE_MOVE(NAME, TYPE, nvshmem_, )
#define TAKE_MOVE_WARP(NAME, TYPE) TAKE_MOVE(NAME, TYPE, nvshmemx_, _warp)
#define TAKE_MOVE_BLOCK(NAME, TYPE) TAKE_MOVE(NAME, TYPE, nvshmemx_, _block)
#define TAKE_MOVE_MEM(PREFIX, SUFFIX)           \
    NIIN_TAKE(PREFIX##broadcastmem##SUFFIX)     \
    NIIN_TAKE(PREFIX##fcollectmem##SUFFIX)      \
    NIIN_TAKE(PREFIX##alltoallmem##SUFFIX)

__device__ inline void reductions_thread(void **out) {
    int i = 0;
    NIIN_FOR_EACH_REDUCTION(TAKE_REDUCTION_THREAD)
}

__device__ inline void reductions_warp(void **out) {
    int i = 0;
    NIIN_FOR_EACH_REDUCTION(TAKE_REDUCTION_WARP)
}

__device__ inline void reductions_block(void **out) {
    int i = 0;
    NIIN_FOR_EACH_REDUCTION(TAKE_REDUCTION_BLOCK)
    NIIN_TAKE(nvshmemx_double2_maxloc_reduce_block)
}

__device__ inline void movements(void **out) {
    int i = 0;
    NIIN_FOR_EACH_RMA_TYPE(TAKE_MOVE_THREAD)
    NIIN_FOR_EACH_RMA_TYPE(TAKE_MOVE_WARP)
    NIIN_FOR_EACH_RMA_TYPE(TAKE_MOVE_BLOCK)
    TAKE_MOVE_MEM(nvshmem_, )
    TAKE_MOVE_MEM(nvshmemx_, _warp)
    TAKE_MOVE_MEM(nvshmemx_, _block)
}

/* One collective per kernel, as a program would call it (a 1024-thread launch needs <= 64
 * registers). */
__global__ void float_sum_reduce_block_one(nvshmem_team_t team, float *dest, const float *source,
                                           size_t n, int *status) {
    status[threadIdx.x] = nvshmemx_float_sum_reduce_block(team, dest, source, n);
}

__global__ void fcollectmem_block_one(nvshmem_team_t team, void *dest, const void *source,
                                      size_t n, int *status) {
    status[threadIdx.x] = nvshmemx_fcollectmem_block(team, dest, source, n);
}

__global__ void alltoallmem_block_one(nvshmem_team_t team, void *dest, const void *source,
                                      size_t n, int *status) {
    status[threadIdx.x] = nvshmemx_alltoallmem_block(team, dest, source, n);
}

__global__ void double_max_reduce_warp_one(nvshmem_team_t team, double *dest,
                                           const double *source, size_t n, int *status) {
    status[threadIdx.x] = nvshmemx_double_max_reduce_warp(team, dest, source, n);
}

__global__ void half_prod_reducescatter_one(nvshmem_team_t team, half *dest, const half *source,
                                            size_t n, int *status) {
    if (threadIdx.x == 0) status[0] = nvshmem_half_prod_reducescatter(team, dest, source, n);
}

__global__ void int_broadcast_one(nvshmem_team_t team, int *dest, const int *source, size_t n,
                                  int root, int *status) {
    if (threadIdx.x == 0) status[0] = nvshmem_int_broadcast(team, dest, source, n, root);
}

__global__ void maxloc_one(nvshmem_team_t team, double2 *dest, const double2 *source, size_t n,
                           int *status) {
    status[threadIdx.x] = nvshmemx_double2_maxloc_reduce_block(team, dest, source, n);
}

/* Every multimem (NVLS) form of the reductions (niin/impl/coll_multimem_impl.h: sum of the
 * floating types and 32/64-bit integers, min/max/and/or/xor of 32/64-bit integers, signed and
 * unsigned), reached by a kernel so that ptxas checks each multimem.ld_reduce instruction:
 * the lent machines have no NVLS, so this compile is all the checking that path gets. */
__global__ void multimem_forms_one(nvshmem_team_t team, char *dest, const char *source, size_t n,
                                   int which, int *status) {
    if (threadIdx.x != 0) return;
    int r = 0;
#define NIIN_MM_FORM(K, NAME, TYPE, OP)                                                       \
    case K:                                                                                   \
        r = nvshmem_##NAME##_##OP##_reduce(team, reinterpret_cast<TYPE *>(dest),              \
                                          reinterpret_cast<const TYPE *>(source), n);        \
        break;
    switch (which) {
        NIIN_MM_FORM(0, double, double, sum)
        NIIN_MM_FORM(1, half, half, sum)
        NIIN_MM_FORM(2, bfloat16, __nv_bfloat16, sum)
        NIIN_MM_FORM(3, int, int, sum)
        NIIN_MM_FORM(4, int64, int64_t, sum)
        NIIN_MM_FORM(5, int, int, min)
        NIIN_MM_FORM(6, uint32, uint32_t, max)
        NIIN_MM_FORM(7, int64, int64_t, max)
        NIIN_MM_FORM(8, uint64, uint64_t, min)
        NIIN_MM_FORM(9, int32, int32_t, and)
        NIIN_MM_FORM(10, int64, int64_t, or)
        NIIN_MM_FORM(11, uint32, uint32_t, xor)
        default:
            r = nvshmem_uint64_xor_reducescatter(team, reinterpret_cast<uint64_t *>(dest),
                                                 reinterpret_cast<const uint64_t *>(source), n);
            break;
    }
#undef NIIN_MM_FORM
    status[0] = r;
}

/* ---- host code: the thread forms are libnvshmem_host's functions ---------------------- */

int host_side(nvshmem_team_t team, char *sym, const char *src, size_t n, cudaStream_t stream) {
    int *d = reinterpret_cast<int *>(sym);
    const int *s = reinterpret_cast<const int *>(src);
    return nvshmem_int_sum_reduce(team, d, s, n) + nvshmem_uint64_xor_reducescatter(
                                                       team, reinterpret_cast<uint64_t *>(sym),
                                                       reinterpret_cast<const uint64_t *>(src), n) +
           nvshmem_int_broadcast(team, d, s, n, 0) + nvshmem_int_fcollect(team, d, s, n) +
           nvshmem_int_alltoall(team, d, s, n) + nvshmem_broadcastmem(team, sym, src, n, 0) +
           nvshmem_fcollectmem(team, sym, src, n) + nvshmem_alltoallmem(team, sym, src, n) +
           nvshmemx_int_sum_reduce_on_stream(team, d, s, n, stream) +
           nvshmemx_half_max_reducescatter_on_stream(team, reinterpret_cast<half *>(sym),
                                                     reinterpret_cast<const half *>(src), n,
                                                     stream) +
           nvshmemx_fcollectmem_on_stream(team, sym, src, n, stream);
}
