/*
 * tests/device/compile_signal_wait.cu -- instantiates every device function of niin/signal.h
 * and niin/wait.h for every type, size and scope, from __global__ kernels (no
 * __launch_bounds__), so that scripts/compile-device-headers.sh compiles all of it with
 * warnings as errors. Compiled only (-c): nothing here is linked or run.
 *
 * Typed put-with-signal calls come from NIIN_FOR_EACH_RMA_TYPE, sized ones from
 * NIIN_FOR_EACH_RMA_SIZE (plus NVSHMEM 3.4.5's put6 spelling of the warp and block put16),
 * the wait and test calls from NIIN_FOR_EACH_WAIT_TYPE (niin/types.h): a function missing
 * for some row fails here. host_side() calls nvshmem_signal_fetch from host code, where it
 * must stay libnvshmem_host's function.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

/* ---- put-with-signal, one thread --------------------------------------------------------- */

#define CALL_THREAD_TYPED(NAME, TYPE)                                            \
    {                                                                            \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                 \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                     \
        nvshmem_##NAME##_put_signal(d, s, n, sig, value, op, pe);                \
        nvshmem_##NAME##_put_signal_nbi(d, s, n, sig, value, op, pe);            \
    }
#define CALL_THREAD_SIZED(BITS, TYPE)                                \
    nvshmem_put##BITS##_signal(sym, src, n, sig, value, op, pe);     \
    nvshmem_put##BITS##_signal_nbi(sym, src, n, sig, value, op, pe);

__global__ void put_signal_thread(char *sym, const char *src, size_t n, uint64_t *sig,
                                  uint64_t value, int op, int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_THREAD_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_THREAD_SIZED)
    nvshmem_putmem_signal(sym, src, n, sig, value, op, pe);
    nvshmem_putmem_signal_nbi(sym, src, n, sig, value, op, pe);
}

/* ---- put-with-signal, a warp or a block ---------------------------------------------------- */

#define CALL_SCOPE_TYPED(NAME, TYPE, SCOPE)                                          \
    {                                                                                \
        TYPE *d = reinterpret_cast<TYPE *>(sym);                                     \
        const TYPE *s = reinterpret_cast<const TYPE *>(src);                         \
        nvshmemx_##NAME##_put_signal_##SCOPE(d, s, n, sig, value, op, pe);           \
        nvshmemx_##NAME##_put_signal_nbi_##SCOPE(d, s, n, sig, value, op, pe);       \
    }
#define CALL_WARP_TYPED(NAME, TYPE) CALL_SCOPE_TYPED(NAME, TYPE, warp)
#define CALL_BLOCK_TYPED(NAME, TYPE) CALL_SCOPE_TYPED(NAME, TYPE, block)

#define CALL_SCOPE_SIZED(BITS, SCOPE)                                            \
    nvshmemx_put##BITS##_signal_##SCOPE(sym, src, n, sig, value, op, pe);        \
    nvshmemx_put##BITS##_signal_nbi_##SCOPE(sym, src, n, sig, value, op, pe);
#define CALL_WARP_SIZED(BITS, TYPE) CALL_SCOPE_SIZED(BITS, warp)
#define CALL_BLOCK_SIZED(BITS, TYPE) CALL_SCOPE_SIZED(BITS, block)

#define CALL_SCOPE_MEM(SCOPE)                                               \
    nvshmemx_putmem_signal_##SCOPE(sym, src, n, sig, value, op, pe);        \
    nvshmemx_putmem_signal_nbi_##SCOPE(sym, src, n, sig, value, op, pe);

__global__ void put_signal_warp(char *sym, const char *src, size_t n, uint64_t *sig,
                                uint64_t value, int op, int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_WARP_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_WARP_SIZED)
    CALL_SCOPE_SIZED(6, warp)
    CALL_SCOPE_MEM(warp)
}

__global__ void put_signal_block(char *sym, const char *src, size_t n, uint64_t *sig,
                                 uint64_t value, int op, int pe) {
    NIIN_FOR_EACH_RMA_TYPE(CALL_BLOCK_TYPED)
    NIIN_FOR_EACH_RMA_SIZE(CALL_BLOCK_SIZED)
    CALL_SCOPE_SIZED(6, block)
    CALL_SCOPE_MEM(block)
}

/* ---- the signal alone ------------------------------------------------------------------------ */

__global__ void signal_ops(uint64_t *sig, uint64_t value, int op, int cmp, int pe,
                           uint64_t *out) {
    nvshmemx_signal_op(sig, value, op, pe);
    out[0] = nvshmem_signal_fetch(sig);
    out[1] = nvshmem_signal_wait_until(sig, cmp, value);
}

/* ---- wait and test ------------------------------------------------------------------------- */

#define CALL_WAIT(NAME, TYPE)                                                              \
    {                                                                                      \
        TYPE *iv = reinterpret_cast<TYPE *>(ivars);                                        \
        TYPE *cv = reinterpret_cast<TYPE *>(values);                                       \
        const TYPE one = static_cast<TYPE>(value);                                         \
        nvshmem_##NAME##_wait_until(iv, cmp, one);                                         \
        nvshmem_##NAME##_wait_until_all(iv, n, status, cmp, one);                          \
        out[0] += nvshmem_##NAME##_wait_until_any(iv, n, status, cmp, one);                \
        out[1] += nvshmem_##NAME##_wait_until_some(iv, n, indices, status, cmp, one);      \
        nvshmem_##NAME##_wait_until_all_vector(iv, n, status, cmp, cv);                    \
        out[2] += nvshmem_##NAME##_wait_until_any_vector(iv, n, status, cmp, cv);          \
        out[3] += nvshmem_##NAME##_wait_until_some_vector(iv, n, indices, status, cmp, cv); \
    }

#define CALL_TEST(NAME, TYPE)                                                        \
    {                                                                                \
        TYPE *iv = reinterpret_cast<TYPE *>(ivars);                                  \
        TYPE *cv = reinterpret_cast<TYPE *>(values);                                 \
        const TYPE one = static_cast<TYPE>(value);                                   \
        out[0] += nvshmem_##NAME##_test(iv, cmp, one);                               \
        out[1] += nvshmem_##NAME##_test_all(iv, n, status, cmp, one);                \
        out[2] += nvshmem_##NAME##_test_any(iv, n, status, cmp, one);                \
        out[3] += nvshmem_##NAME##_test_some(iv, n, indices, status, cmp, one);      \
        out[4] += nvshmem_##NAME##_test_all_vector(iv, n, status, cmp, cv);          \
        out[5] += nvshmem_##NAME##_test_any_vector(iv, n, status, cmp, cv);          \
        out[6] += nvshmem_##NAME##_test_some_vector(iv, n, indices, status, cmp, cv); \
    }

__global__ void wait_all_types(char *ivars, char *values, size_t n, const int *status,
                               size_t *indices, int cmp, long long value, size_t *out) {
    NIIN_FOR_EACH_WAIT_TYPE(CALL_WAIT)
}

__global__ void test_all_types(char *ivars, char *values, size_t n, const int *status,
                               size_t *indices, int cmp, long long value, size_t *out) {
    NIIN_FOR_EACH_WAIT_TYPE(CALL_TEST)
}

/* ---- host code: nvshmem_signal_fetch is libnvshmem_host's function there ---------------- */

uint64_t host_side(uint64_t *sig) { return nvshmem_signal_fetch(sig); }
