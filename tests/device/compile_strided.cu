/*
 * tests/device/compile_strided.cu -- instantiates every function of niin/strided.h (iput and
 * iget: typed for every RMA type, sized for every size, thread, warp and block) from
 * __global__ kernels, so that scripts/compile-device-headers.sh compiles all of it with
 * warnings as errors (whole program, -rdc=true, -DNIIN_DEVICE_GIN=0). Compiled only (-c).
 *
 * Every typed call comes from NIIN_FOR_EACH_RMA_TYPE, every sized one from
 * NIIN_FOR_EACH_RMA_SIZE (niin/types.h): a function missing for some row fails here.
 * Strides of every sign are passed (NVSHMEM takes any ptrdiff_t).
 */
#include <nvshmem.h>
#include <nvshmemx.h>

/* One kernel per scope (a kernel calling all 180 functions needed more than 64 registers of
 * its own for the arguments it keeps across the calls: scripts/compile-device-headers.sh
 * holds every kernel to 64). */
#define CALL_STRIDED_TYPED(NAME, TYPE, PREFIX, SUFFIX)                                \
    {                                                                                 \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                      \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                          \
        PREFIX##NAME##_iput##SUFFIX(d, s, dst, sst, n, pe);                           \
        PREFIX##NAME##_iget##SUFFIX(d + 64, d, -dst, 0, n, pe);                       \
    }
#define CALL_THREAD_TYPED(NAME, TYPE) CALL_STRIDED_TYPED(NAME, TYPE, nvshmem_, )
#define CALL_WARP_TYPED(NAME, TYPE) CALL_STRIDED_TYPED(NAME, TYPE, nvshmemx_, _warp)
#define CALL_BLOCK_TYPED(NAME, TYPE) CALL_STRIDED_TYPED(NAME, TYPE, nvshmemx_, _block)

#define CALL_STRIDED_SIZED(BITS, PREFIX, SUFFIX)                                      \
    PREFIX##iput##BITS##SUFFIX(sym, src, dst, sst, n, pe);                            \
    PREFIX##iget##BITS##SUFFIX(sym + 1024, sym, dst, -sst, n, pe);
#define CALL_THREAD_SIZED(BITS, TYPE) CALL_STRIDED_SIZED(BITS, nvshmem_, )
#define CALL_WARP_SIZED(BITS, TYPE) CALL_STRIDED_SIZED(BITS, nvshmemx_, _warp)
#define CALL_BLOCK_SIZED(BITS, TYPE) CALL_STRIDED_SIZED(BITS, nvshmemx_, _block)

__global__ void strided_thread(char *sym, const char *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                               int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_THREAD_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_THREAD_SIZED)
}

__global__ void strided_warp(char *sym, const char *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                             int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_WARP_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_WARP_SIZED)
}

__global__ void strided_block(char *sym, const char *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                              int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_BLOCK_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_BLOCK_SIZED)
}

/* One function alone, as a program would call it: its register count (-Xptxas -v) is the
 * cost of iput in a caller. */
__global__ void iput_one(double *sym, const double *src, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                         int pe) {
    nvshmemx_double_iput_block(sym, src, dst, sst, n, pe);
}

__global__ void iget_one(float *dst_buf, const float *sym, ptrdiff_t dst, ptrdiff_t sst, size_t n,
                         int pe) {
    nvshmem_float_iget(dst_buf, sym, dst, sst, n, pe);
}
