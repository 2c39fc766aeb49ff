// conf_signal_wait.cu -- GPU conformance of the device signal family (niin/signal.h) and of
// the wait and test family (niin/wait.h).
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5. 1, 2 or 4 PEs (any number works). Groups:
//   - put-with-signal, data and signal: every typed (25 types), sized (8 ... 128 bits) and mem
//     form, one thread / warp / block, blocking and _nbi, SET and ADD, from every PE to every
//     PE (itself included) at once: a kernel of n_pes CTAs, CTA b sending to PE
//     (my_pe + b) % n_pes, each of the 12 variants (3 scopes x 2 forms x 2 ops) into a slot of
//     its own. Every byte of every slot is checked on the host (the transferred bytes are the
//     source's, kGuard bytes before and after are untouched), and every signal word exactly:
//     SET leaves the sender's value, ADD the host's initial value plus it (64-bit values with
//     the top bit set). Local sources alternate between private (cudaMalloc) memory and the
//     symmetric heap; sizes, offsets and block shapes (1-D up to 1024 threads, 3-D) vary, so
//     both the aligned fast path and the general copy run.
//   - nvshmemx_signal_op (SET and ADD, to every PE; 1024 threads adding to one word),
//     nvshmem_signal_fetch, and nvshmem_signal_wait_until with all six comparisons (values
//     across the sign bit: the comparison must be unsigned) and its returned value.
//   - ordering: PE p sends 32 rounds of 4 KiB with put-with-signal to PE p + 1 (12 variants);
//     a CTA of p + 1's kernel waits with nvshmem_signal_wait_until and checks, for every round
//     the signal has passed, that its data is all there (its whole block reads it, after a
//     __syncthreads()).
//   - many producers, one consumer: 8 CTAs of every PE send 16 rounds each to PE 0 with
//     put-with-signal ADD 1 (one launch per form: thread, warp, block, blocking and _nbi); a
//     CTA of PE 0 waits for the exact total with NVSHMEM_CMP_EQ and checks every round's data.
//   - wait and test, values set by the host: 14 types x 6 comparisons x 4 status masks (NULL,
//     some elements excluded, all excluded, nelems 0) x single / _vector values x 3 patterns
//     of values (extremes of the type: the comparison must have the type's signedness).
//     Exact results: test 1/0; test_all; test_some's count and indices; test_any an index of
//     a satisfied included element, or SIZE_MAX; the wait forms are called where the host's
//     model says they return (wait_until_all: every included element satisfied;
//     _any/_some: one satisfied, or none included), with the same checks.
//   - wait forms woken by another PE: a waiting CTA (one thread per form) on PE p, and PE
//     p - 1's kernel setting the words with nvshmem_<T>_p after a delay; excluded elements hold
//     satisfying values from the start, so a wait that ignored status would return early
//     with the wrong index.
//   - register budget: plain loops of nvshmem(x)_int_put_signal[_warp/_block] (the kernels of
//     the other groups keep loop counters in local memory and have one call form each, so that
//     they test the semantics at 1024 threads; these are what a program writes).
// Every kernel is launched with 1024-thread blocks somewhere (no __launch_bounds__); a kernel
// whose registers do not allow it is a failure under niin-rs (NVSHMEM: a SKIP line), and runs
// with the largest block it allows.
//
// NVSHMEM 3.4.5 and this test (see the SKIP lines): its headers have no
// nvshmemx_put16_signal[_nbi]_warp/_block (their list of sizes reads 8, 6, 32, ...), and
// their nvshmemx_put6_signal[_nbi]_warp/_block moves nelems * (6 / 8) = 0 bytes. niin-rs has
// both names, moving 16-bit elements; the NVSHMEM build leaves them out.
// Symmetric heap: about 12 * (n_pes + 1) + 4 MiB. Run time: a few seconds.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conf_harness.h"

// ---- the API surface under test -----------------------------------------------------------

// NVSHMEM 3.4.5's 25 standard RMA types and its 14 wait types, written out here rather than
// taken from niin's header, so that the test checks every name exists.
#include "test_types.h" // TEST_RMA_TYPES, TEST_RMA_SIZES

#define TEST_WAIT_TYPES(X)           \
    X(short, short)                  \
    X(int, int)                      \
    X(long, long)                    \
    X(longlong, long long)           \
    X(ushort, unsigned short)        \
    X(uint, unsigned int)            \
    X(ulong, unsigned long)          \
    X(ulonglong, unsigned long long) \
    X(int32, int32_t)                \
    X(int64, int64_t)                \
    X(uint32, uint32_t)              \
    X(uint64, uint64_t)              \
    X(size, size_t)                  \
    X(ptrdiff, ptrdiff_t)

// The six functions of a put-with-signal family, numbered call = scope * 2 + nbi: 0 thread,
// 1 thread _nbi, 2 warp, 3 warp _nbi, 4 block, 5 block _nbi. PFX: the name before
// "_signal" (int_put, put8, putmem).
#define TEST_PS_THREAD_CASES(PFX)                                          \
    case 0: nvshmem_##PFX##_signal(d, s, n, sig, v, op, pe); break;        \
    case 1: nvshmem_##PFX##_signal_nbi(d, s, n, sig, v, op, pe); break;
#define TEST_PS_GROUP_CASES(PFX)                                           \
    case 2: nvshmemx_##PFX##_signal_warp(d, s, n, sig, v, op, pe); break;  \
    case 3: nvshmemx_##PFX##_signal_nbi_warp(d, s, n, sig, v, op, pe); break; \
    case 4: nvshmemx_##PFX##_signal_block(d, s, n, sig, v, op, pe); break; \
    case 5: nvshmemx_##PFX##_signal_nbi_block(d, s, n, sig, v, op, pe); break;

// One struct per family: T, a name, the calls it has (bit c: call c), call(c, ...).
#define TEST_PS_STRUCT(ID, TYPE, LABEL, CALLS, CASES)                                         \
    struct Ps_##ID {                                                                          \
        using T = TYPE;                                                                       \
        static constexpr const char *name = LABEL;                                            \
        static constexpr unsigned calls = CALLS;                                              \
        __device__ static void call(int c, T *d, const T *s, size_t n, uint64_t *sig,         \
                                    uint64_t v, int op, int pe) {                             \
            switch (c) {                                                                      \
                CASES                                                                         \
            default: break;                                                                   \
            }                                                                                 \
        }                                                                                     \
    };

#define TEST_PS_TYPED(NAME, TYPE)                                                       \
    TEST_PS_STRUCT(NAME, TYPE, #NAME "_put_signal", 0x3Fu,                             \
                   TEST_PS_THREAD_CASES(NAME##_put) TEST_PS_GROUP_CASES(NAME##_put))
TEST_RMA_TYPES(TEST_PS_TYPED)
#undef TEST_PS_TYPED

#define TEST_PS_SIZED(BITS, TYPE)                                                       \
    TEST_PS_STRUCT(bits##BITS, TYPE, "put" #BITS "_signal", 0x3Fu,                     \
                   TEST_PS_THREAD_CASES(put##BITS) TEST_PS_GROUP_CASES(put##BITS))
TEST_PS_SIZED(8, uint8_t)
TEST_PS_SIZED(32, uint32_t)
TEST_PS_SIZED(64, uint64_t)
TEST_PS_SIZED(128, int4)
#ifdef TEST_NVSHMEM
// NVSHMEM 3.4.5 has no warp/block put16_signal (it spells them put6: see the file's header).
TEST_PS_STRUCT(bits16, uint16_t, "put16_signal", 0x03u, TEST_PS_THREAD_CASES(put16))
TEST_PS_STRUCT(bits6, int16_t, "put6_signal (warp/block: NVSHMEM's spelling of put16)", 0u, )
#else
TEST_PS_SIZED(16, uint16_t)
TEST_PS_STRUCT(bits6, int16_t, "put6_signal (warp/block: NVSHMEM's spelling of put16)", 0x3Cu,
               TEST_PS_GROUP_CASES(put6))
#endif
#undef TEST_PS_SIZED
TEST_PS_STRUCT(mem, char, "putmem_signal", 0x3Fu,
               TEST_PS_THREAD_CASES(putmem) TEST_PS_GROUP_CASES(putmem))

// Every family, numbered: ps_kernel dispatches on the number (one kernel rather than one per
// family: a whole-program build compiles a kernel's callees again for every kernel).
#define TEST_PS_EACH(X)                                          \
    TEST_RMA_TYPES(TEST_PS_OF_TYPE)                              \
    X(bits8) X(bits16) X(bits32) X(bits64) X(bits128) X(bits6) X(mem)
#define TEST_PS_OF_TYPE(NAME, TYPE) TEST_PS_X(NAME)

enum PsId {
#define TEST_PS_X(ID) PS_##ID,
    TEST_PS_EACH(TEST_PS_X)
#undef TEST_PS_X
};
template <typename Ops>
struct PsIdOf;
#define TEST_PS_X(ID)                          \
    template <>                                \
    struct PsIdOf<Ps_##ID> {                   \
        static constexpr int value = PS_##ID;  \
    };
TEST_PS_EACH(TEST_PS_X)
#undef TEST_PS_X

// The 14 wait and test functions of a wait type.
#define TEST_WAIT_OPS(NAME, TYPE)                                                               \
    struct W_##NAME {                                                                           \
        using T = TYPE;                                                                         \
        static constexpr const char *name = #NAME;                                              \
        __device__ static void wait_until(T *i, int c, T v) { nvshmem_##NAME##_wait_until(i, c, v); } \
        __device__ static void wait_until_all(T *i, size_t n, const int *st, int c, T v) {      \
            nvshmem_##NAME##_wait_until_all(i, n, st, c, v);                                    \
        }                                                                                       \
        __device__ static size_t wait_until_any(T *i, size_t n, const int *st, int c, T v) {    \
            return nvshmem_##NAME##_wait_until_any(i, n, st, c, v);                             \
        }                                                                                       \
        __device__ static size_t wait_until_some(T *i, size_t n, size_t *x, const int *st,      \
                                                 int c, T v) {                                  \
            return nvshmem_##NAME##_wait_until_some(i, n, x, st, c, v);                         \
        }                                                                                       \
        __device__ static void wait_until_all_vector(T *i, size_t n, const int *st, int c,      \
                                                     T *v) {                                    \
            nvshmem_##NAME##_wait_until_all_vector(i, n, st, c, v);                             \
        }                                                                                       \
        __device__ static size_t wait_until_any_vector(T *i, size_t n, const int *st, int c,    \
                                                       T *v) {                                  \
            return nvshmem_##NAME##_wait_until_any_vector(i, n, st, c, v);                      \
        }                                                                                       \
        __device__ static size_t wait_until_some_vector(T *i, size_t n, size_t *x,              \
                                                        const int *st, int c, T *v) {           \
            return nvshmem_##NAME##_wait_until_some_vector(i, n, x, st, c, v);                  \
        }                                                                                       \
        __device__ static int test(T *i, int c, T v) { return nvshmem_##NAME##_test(i, c, v); } \
        __device__ static int test_all(T *i, size_t n, const int *st, int c, T v) {             \
            return nvshmem_##NAME##_test_all(i, n, st, c, v);                                   \
        }                                                                                       \
        __device__ static size_t test_any(T *i, size_t n, const int *st, int c, T v) {          \
            return nvshmem_##NAME##_test_any(i, n, st, c, v);                                   \
        }                                                                                       \
        __device__ static size_t test_some(T *i, size_t n, size_t *x, const int *st, int c,     \
                                           T v) {                                               \
            return nvshmem_##NAME##_test_some(i, n, x, st, c, v);                               \
        }                                                                                       \
        __device__ static int test_all_vector(T *i, size_t n, const int *st, int c, T *v) {     \
            return nvshmem_##NAME##_test_all_vector(i, n, st, c, v);                            \
        }                                                                                       \
        __device__ static size_t test_any_vector(T *i, size_t n, const int *st, int c, T *v) {  \
            return nvshmem_##NAME##_test_any_vector(i, n, st, c, v);                            \
        }                                                                                       \
        __device__ static size_t test_some_vector(T *i, size_t n, size_t *x, const int *st,     \
                                                  int c, T *v) {                                \
            return nvshmem_##NAME##_test_some_vector(i, n, x, st, c, v);                        \
        }                                                                                       \
        __device__ static void p(T *d, T v, int pe) { nvshmem_##NAME##_p(d, v, pe); }           \
    };
TEST_WAIT_TYPES(TEST_WAIT_OPS)
#undef TEST_WAIT_OPS

enum WaitId {
#define TEST_W_X(NAME, TYPE) W_ID_##NAME,
    TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X
    W_TYPES
};
template <typename W>
struct WIdOf;
#define TEST_W_X(NAME, TYPE)                        \
    template <>                                     \
    struct WIdOf<W_##NAME> {                        \
        static constexpr int value = W_ID_##NAME;   \
    };
TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X

// ---- shared helpers -------------------------------------------------------------------------

static constexpr unsigned char kUntouched = 0xEE;
static constexpr size_t kGuard = 64;
static constexpr int kVariants = 12; // put-with-signal: call (6) x SET/ADD
static constexpr size_t kSlot = (1u << 20) + 4096;

// The byte at position i of PE pe's source in case `salt` (a hash: a byte moved to the wrong
// place, or taken from the wrong PE or case, shows).
__host__ __device__ inline unsigned char pattern(int pe, unsigned salt, size_t i) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) * 40503u;
    x ^= static_cast<uint32_t>(pe + 1) * 0x9E3779B9u ^ salt * 0x85EBCA6Bu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return static_cast<unsigned char>(x ^ (x >> 24));
}

// The signal PE `from` sends in variant v of case `salt`: 64 bits, top bit set.
__host__ __device__ inline uint64_t signal_value(int from, int v, unsigned salt) {
    return 0x8000000000000000ull ^ (static_cast<uint64_t>(salt * 131u + v) << 32) ^
           (static_cast<uint64_t>(from + 1) << 8) ^ static_cast<uint64_t>(v);
}
// A signal word's value before an ADD.
static inline uint64_t add_initial(int v) { return 0x0123456700000000ull + static_cast<uint64_t>(v); }

__host__ __device__ inline bool is_add(int v) { return v % 2 == 1; }
__host__ __device__ inline int call_of(int v) { return v / 2; }

// Finishes a launch: a failed launch or kernel is a failed check of `g` (as CONF_LAUNCH, for
// launches with 2-D or 3-D shapes).
static void finish_launch(ConfGroup &g, const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    conf_check(g, e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: CUDA error, stopping\n", g_conf_program);
        exit(3);
    }
}

// The block size `kernel` can be launched with, at most `want` threads: under niin-rs a
// kernel that cannot take `want` (registers) is a failed check; NVSHMEM gets a SKIP line for
// the full-size launch. Either way the largest block it allows is used.
template <typename K>
static int fit_block(ConfGroup &g, K *kernel, const char *name, int want) {
    cudaFuncAttributes a;
    TEST_CUDA(cudaFuncGetAttributes(&a, kernel));
    if (a.maxThreadsPerBlock >= want) return want;
#ifdef TEST_NVSHMEM
    if (g_conf_me == 0)
        printf("SKIP|%s, %d-thread blocks|%s uses %d registers: at most %d threads a block\n",
               g.name.c_str(), want, name, a.numRegs, a.maxThreadsPerBlock);
#else
    conf_check(g, false, "%s uses %d registers: a %d-thread block cannot be launched (at most %d)",
               name, a.numRegs, want, a.maxThreadsPerBlock);
#endif
    return a.maxThreadsPerBlock / 32 * 32;
}

__device__ inline unsigned linear_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// Spins for about `ns` nanoseconds.
__device__ inline void spin_ns(long long ns) {
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

struct Buffers {
    char *recv;      // symmetric: kVariants * n_pes slots
    char *sym_src;   // symmetric: kVariants slots
    char *priv_src;  // cudaMalloc: kVariants slots
    uint64_t *sigs;  // symmetric: signal words
    char *work;      // symmetric: 4 MiB for the ordering, fan-in and wait groups
    char *priv;      // cudaMalloc: 4 MiB of results
};
static Buffers g_buf;
static unsigned g_salt = 0;
static constexpr size_t kSigWords = 4096;
static constexpr size_t kWork = 4u << 20;

// ---- put-with-signal: data and signal -------------------------------------------------------

__global__ void fill_kernel(char *buf, size_t slot, size_t bytes, int pe, unsigned salt) {
    char *b = buf + blockIdx.y * slot;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x)
        b[i] = static_cast<char>(pattern(pe, salt + blockIdx.y, i));
}

struct PsArgs {
    char *recv;
    const char *sym_src, *priv_src;
    uint64_t *sigs;
    size_t slot, dst_off, src_off, nelems;
    int ops, me, npes, v;
    unsigned salt;
};

template <typename Ops>
__device__ void ps_call(const PsArgs &a, int c, char *dest, const char *src, uint64_t *sig,
                        uint64_t v, int op, int pe) {
    using T = typename Ops::T;
    Ops::call(c, reinterpret_cast<T *>(dest), reinterpret_cast<const T *>(src), a.nelems, sig, v,
              op, pe);
}

// Variant a.v: CTA b sends to PE (me + b) % npes, the data into slot v * npes + me of the
// target's recv, the signal into word v * npes + me of the target's sigs. One variant a launch
// (a loop over them kept its state in registers across the calls: 105 registers).
__global__ void ps_kernel(PsArgs a) {
    const int target = (a.me + static_cast<int>(blockIdx.x)) % a.npes;
    const unsigned lin = linear_thread();
    const int v = a.v, c = call_of(v), scope = c / 2;
    const bool caller = scope == 2 || (scope == 1 && lin < 32) || (scope == 0 && lin == 0);
    if (!caller) return;
    char *dest = a.recv + static_cast<size_t>(v * a.npes + a.me) * a.slot + a.dst_off;
    const char *src = (v % 3 == 0 ? a.priv_src : a.sym_src) + v * a.slot + a.src_off;
    uint64_t *sig = a.sigs + v * a.npes + a.me;
    const int op = is_add(v) ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET;
    const uint64_t value = signal_value(a.me, v, a.salt);
    switch (a.ops) {
#define TEST_PS_X(ID)                                                  \
    case PS_##ID:                                                      \
        ps_call<Ps_##ID>(a, c, dest, src, sig, value, op, target);     \
        break;
        TEST_PS_EACH(TEST_PS_X)
#undef TEST_PS_X
    }
    if (c % 2 == 1) nvshmem_quiet();
}

// One case of a family: every variant it has, every PE with every PE.
template <typename Ops>
static void ps_case(ConfGroup &g, size_t nelems, size_t dst_off, size_t src_off, dim3 block) {
    using T = typename Ops::T;
    const size_t bytes = nelems * sizeof(T);
    const unsigned salt = (g_salt += kVariants);
    const int npes = g_conf_npes, me = g_conf_me;
    const size_t used = dst_off + bytes + kGuard;
    TEST_CUDA(cudaMemset2D(g_buf.recv, kSlot, kUntouched, used, kVariants * npes));
    std::vector<uint64_t> sig0(kVariants * npes);
    for (int v = 0; v < kVariants; v++)
        for (int p = 0; p < npes; p++)
            sig0[v * npes + p] = is_add(v) ? add_initial(v) : 0xEEEEEEEEEEEEEEEEull;
    TEST_CUDA(cudaMemcpy(g_buf.sigs, sig0.data(), sig0.size() * 8, cudaMemcpyHostToDevice));
    if (src_off + bytes > 0) {
        fill_kernel<<<dim3(64, kVariants), 256>>>(g_buf.sym_src, kSlot, src_off + bytes, me, salt);
        fill_kernel<<<dim3(64, kVariants), 256>>>(g_buf.priv_src, kSlot, src_off + bytes, me, salt);
    }
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    PsArgs a{g_buf.recv, g_buf.sym_src, g_buf.priv_src, g_buf.sigs, kSlot, dst_off, src_off,
             nelems, PsIdOf<Ops>::value, me, npes, 0, salt};
    char what[256];
    snprintf(what, sizeof what, "%s, %zu x %zu B, dst+%zu src+%zu, block %ux%ux%u", Ops::name,
             nelems, sizeof(T), dst_off, src_off, block.x, block.y, block.z);
    for (a.v = 0; a.v < kVariants; a.v++)
        if ((Ops::calls >> call_of(a.v)) & 1u) ps_kernel<<<npes, block>>>(a);
    finish_launch(g, what);
    nvshmem_barrier_all();

    std::vector<unsigned char> got(used * kVariants * npes);
    TEST_CUDA(cudaMemcpy2D(got.data(), used, g_buf.recv, kSlot, used, kVariants * npes,
                           cudaMemcpyDeviceToHost));
    std::vector<uint64_t> sig(kVariants * npes);
    TEST_CUDA(cudaMemcpy(sig.data(), g_buf.sigs, sig.size() * 8, cudaMemcpyDeviceToHost));
    static const char *const kCall[] = {"", "_nbi", "_warp", "_nbi_warp", "_block", "_nbi_block"};
    for (int v = 0; v < kVariants; v++) {
        if (!((Ops::calls >> call_of(v)) & 1u)) continue;
        for (int p = 0; p < npes; p++) {
            const unsigned char *s = got.data() + (v * npes + p) * used;
            size_t bad = 0, first = SIZE_MAX;
            for (size_t i = 0; i < used; i++) {
                const unsigned char want = (i < dst_off || i >= dst_off + bytes)
                                               ? kUntouched
                                               : pattern(p, salt + v, src_off + (i - dst_off));
                if (s[i] != want) {
                    bad++;
                    if (first == SIZE_MAX) first = i;
                }
            }
            conf_check(g, bad == 0,
                       "%s%s %s, PE %d -> PE %d: %zu of %zu bytes wrong (data at %zu, first bad "
                       "byte %zu)",
                       what, kCall[call_of(v)], is_add(v) ? "ADD" : "SET", p, me, bad, used,
                       dst_off, first);
            const uint64_t value = signal_value(p, v, salt);
            const uint64_t want = is_add(v) ? add_initial(v) + value : value;
            conf_check(g, sig[v * npes + p] == want,
                       "%s%s %s, PE %d -> PE %d: signal word %#llx, want %#llx", what,
                       kCall[call_of(v)], is_add(v) ? "ADD" : "SET", p, me,
                       (unsigned long long)sig[v * npes + p], (unsigned long long)want);
        }
    }
    // The next case clears recv: nobody may still be reading it.
    nvshmem_barrier_all();
}

static void ps_checks() {
    ConfGroup &gt = conf_group("put_signal: nvshmem_<T>_put_signal[_nbi] and nvshmemx_ _warp/_block, "
                               "25 types, SET/ADD, to every PE");
    const int b1024 = fit_block(gt, ps_kernel, "ps_kernel", 1024);
#define TEST_TYPED(NAME, TYPE)                                                   \
    {                                                                            \
        const size_t e = sizeof(TYPE);                                           \
        ps_case<Ps_##NAME>(gt, 1, 0, 0, dim3(16, 4, 2));                         \
        ps_case<Ps_##NAME>(gt, 1000, e, 3 * e, dim3(b1024));                     \
        ps_case<Ps_##NAME>(gt, 1024, 0, 0, dim3(b1024));                         \
    }
    TEST_RMA_TYPES(TEST_TYPED)
#undef TEST_TYPED

    ConfGroup &gs = conf_group("put_signal: nvshmem(x)_put<8..128>_signal[_nbi][_warp/_block]");
#define TEST_SIZED(ID)                                                            \
    {                                                                             \
        const size_t e = sizeof(Ps_##ID::T);                                      \
        ps_case<Ps_##ID>(gs, 3, e, 0, dim3(16, 4, 2));                            \
        ps_case<Ps_##ID>(gs, 517, 2 * e, 5 * e, dim3(256));                       \
        ps_case<Ps_##ID>(gs, 1024, 0, 0, dim3(b1024));                            \
    }
    TEST_SIZED(bits8)
    TEST_SIZED(bits16)
    TEST_SIZED(bits32)
    TEST_SIZED(bits64)
    TEST_SIZED(bits128)
#ifdef TEST_NVSHMEM
    if (g_conf_me == 0)
        printf("SKIP|%s|nvshmemx_put16_signal[_nbi]_warp/_block: not in NVSHMEM 3.4.5 (its "
               "headers spell them put6); the thread forms are checked\n",
               gs.name.c_str());
    if (g_conf_me == 0)
        printf("SKIP|put_signal: nvshmemx_put6_signal[_nbi]_warp/_block (NVSHMEM 3.4.5's "
               "spelling of put16)|NVSHMEM 3.4.5's put6 moves nelems * (6 / 8) = 0 bytes\n");
#else
    ConfGroup &g6 = conf_group("put_signal: nvshmemx_put6_signal[_nbi]_warp/_block (NVSHMEM "
                               "3.4.5's spelling of put16)");
    ps_case<Ps_bits6>(g6, 3, 2, 0, dim3(16, 4, 2));
    ps_case<Ps_bits6>(g6, 517, 4, 10, dim3(256));
    ps_case<Ps_bits6>(g6, 1024, 0, 0, dim3(b1024));
#endif
#undef TEST_SIZED

    ConfGroup &gm = conf_group("put_signal: nvshmem(x)_putmem_signal[_nbi][_warp/_block], 0 B - 1 MiB");
    struct MemCase {
        size_t bytes, dst_off, src_off;
    };
    static const MemCase kCases[] = {{0, 0, 0},        {1, 3, 5},         {31, 7, 3},
                                     {4096, 0, 0},     {4096, 4, 0},      {65537, 13, 6},
                                     {1u << 20, 0, 0}, {(1u << 20) + 3, 1, 2}};
    int variant = 0;
    for (const MemCase &c : kCases) {
        const dim3 block = variant % 3 == 0 ? dim3(b1024) : variant % 3 == 1 ? dim3(256) : dim3(16, 4, 2);
        ps_case<Ps_mem>(gm, c.bytes, c.dst_off, c.src_off, block);
        variant++;
    }
}

// ---- nvshmemx_signal_op, nvshmem_signal_fetch, nvshmem_signal_wait_until ---------------------

// Words of sigs: [0, n) SET by PE i, [n, 2n) ADD by PE i, 2n: every thread of the previous PE
// adds its rank + 1.
__global__ void sigop_kernel(uint64_t *sigs, int me, int npes, unsigned salt) {
    const unsigned t = threadIdx.x;
    if (t < static_cast<unsigned>(npes)) {
        nvshmemx_signal_op(sigs + me, signal_value(me, 100, salt), NVSHMEM_SIGNAL_SET, t);
        nvshmemx_signal_op(sigs + npes + me, signal_value(me, 101, salt), NVSHMEM_SIGNAL_ADD, t);
    }
    nvshmemx_signal_op(sigs + 2 * npes, t + 1, NVSHMEM_SIGNAL_ADD, (me + 1) % npes);
}

__global__ void fetch_kernel(uint64_t *sigs, int n, uint64_t *out) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = nvshmem_signal_fetch(sigs + i);
}

// Thread i waits on *sig (== x, set by the host) with comparison i % 6 and a value that holds
// for x as an unsigned number, and returns what nvshmem_signal_wait_until returned.
__global__ void sigwait_kernel(uint64_t *sig, uint64_t x, uint64_t *out) {
    const uint64_t i = threadIdx.x;
    uint64_t r = 0;
    switch (i % 6) {
    case 0: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, x); break;
    case 1: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_NE, i); break;
    case 2: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GT, 5 + i); break;
    case 3: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, x - i); break;
    case 4: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_LT, ~0ull - i); break;
    case 5: r = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_LE, x + i); break;
    }
    out[i] = r;
}

static void signal_op_checks() {
    ConfGroup &g = conf_group("nvshmemx_signal_op, nvshmem_signal_fetch, nvshmem_signal_wait_until");
    const int npes = g_conf_npes, me = g_conf_me;
    const unsigned salt = ++g_salt;
    const int words = 2 * npes + 1;
    std::vector<uint64_t> init(words);
    for (int i = 0; i < words; i++) init[i] = i < npes ? 0xEEEEEEEEEEEEEEEEull : add_initial(i);
    TEST_CUDA(cudaMemcpy(g_buf.sigs, init.data(), words * 8, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    const int b = fit_block(g, sigop_kernel, "sigop_kernel", 1024);
    CONF_LAUNCH(g, sigop_kernel, 1, b, g_buf.sigs, me, npes, salt);
    nvshmem_barrier_all();
    std::vector<uint64_t> got(words);
    TEST_CUDA(cudaMemcpy(got.data(), g_buf.sigs, words * 8, cudaMemcpyDeviceToHost));
    for (int p = 0; p < npes; p++) {
        conf_check(g, got[p] == signal_value(p, 100, salt),
                   "nvshmemx_signal_op SET PE %d -> PE %d: %#llx, want %#llx", p, me,
                   (unsigned long long)got[p], (unsigned long long)signal_value(p, 100, salt));
        const uint64_t want = add_initial(npes + p) + signal_value(p, 101, salt);
        conf_check(g, got[npes + p] == want, "nvshmemx_signal_op ADD PE %d -> PE %d: %#llx, want %#llx",
                   p, me, (unsigned long long)got[npes + p], (unsigned long long)want);
    }
    const uint64_t sum = add_initial(2 * npes) + static_cast<uint64_t>(b) * (b + 1) / 2;
    conf_check(g, got[2 * npes] == sum,
               "nvshmemx_signal_op ADD from %d threads of PE %d: %#llx, want %#llx", b,
               (me + npes - 1) % npes, (unsigned long long)got[2 * npes], (unsigned long long)sum);

    uint64_t *out = reinterpret_cast<uint64_t *>(g_buf.priv);
    CONF_LAUNCH(g, fetch_kernel, 1, 64, g_buf.sigs, words, out);
    std::vector<uint64_t> fetched(words);
    TEST_CUDA(cudaMemcpy(fetched.data(), out, words * 8, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < words; i++) bad += fetched[i] != got[i];
    conf_check(g, bad == 0, "nvshmem_signal_fetch: %d of %d words differ from the memory", bad, words);

    const uint64_t xs[] = {0x8000000000001234ull, 0x7FFFFFFFFFFFF000ull, 4096};
    const int bw = fit_block(g, sigwait_kernel, "sigwait_kernel", 1024);
    for (uint64_t x : xs) {
        TEST_CUDA(cudaMemcpy(g_buf.sigs, &x, 8, cudaMemcpyHostToDevice));
        CONF_LAUNCH(g, sigwait_kernel, 1, bw, g_buf.sigs, x, out);
        std::vector<uint64_t> r(bw);
        TEST_CUDA(cudaMemcpy(r.data(), out, bw * 8, cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (int i = 0; i < bw; i++) wrong += r[i] != x;
        conf_check(g, wrong == 0,
                   "nvshmem_signal_wait_until on %#llx, six comparisons, %d threads: %d returned "
                   "another value (first: %#llx)",
                   (unsigned long long)x, bw, wrong, (unsigned long long)r[0]);
    }
    nvshmem_barrier_all();
}

// ---- ordering: put-with-signal, then signal_wait_until and the data ------------------------

static constexpr int kRounds = 32, kWords = 1024; // 4 KiB a round

struct OrderOut {
    unsigned long long wrong, seen, last;
};

// Variant V (0 ... 23): call V / 4 (thread, thread _nbi, warp, warp _nbi, block, block _nbi)
// of the int (V % 4 < 2) or the mem family, SET of the round's number or ADD 1 (V % 2). One
// kernel per variant, and the round counter in local memory: one kernel for all 24 took 71
// registers, and a thread-scope variant with its counter in a register 68 (loop_checks has
// the plain loops).
template <int V>
__global__ void order_kernel(int *data, uint64_t *sig, const int *src, int me, int npes,
                             OrderOut *out) {
    constexpr int v = V;
    const unsigned lin = linear_thread();
    const int c = v / 4, scope = c / 2;
    const bool add = v % 2 == 1, typed = v % 4 < 2;
    if (blockIdx.x == 0) {
        const int next = (me + 1) % npes;
        const bool caller = scope == 2 || (scope == 1 && lin < 32) || (scope == 0 && lin == 0);
        if (!caller) return;
        for (volatile int round = 1; round <= kRounds; round = round + 1) {
            const int i = round;
            int *d = data + i * kWords;
            const int *s = src + i * kWords;
            const uint64_t value = add ? 1 : static_cast<uint64_t>(i);
            const int op = add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET;
            const size_t n = typed ? kWords : kWords * sizeof(int);
            switch (c * 2 + (typed ? 0 : 1)) {
            case 0: nvshmem_int_put_signal(d, s, n, sig, value, op, next); break;
            case 1: nvshmem_putmem_signal(d, s, n, sig, value, op, next); break;
            case 2: nvshmem_int_put_signal_nbi(d, s, n, sig, value, op, next); break;
            case 3: nvshmem_putmem_signal_nbi(d, s, n, sig, value, op, next); break;
            case 4: nvshmemx_int_put_signal_warp(d, s, n, sig, value, op, next); break;
            case 5: nvshmemx_putmem_signal_warp(d, s, n, sig, value, op, next); break;
            case 6: nvshmemx_int_put_signal_nbi_warp(d, s, n, sig, value, op, next); break;
            case 7: nvshmemx_putmem_signal_nbi_warp(d, s, n, sig, value, op, next); break;
            case 8: nvshmemx_int_put_signal_block(d, s, n, sig, value, op, next); break;
            case 9: nvshmemx_putmem_signal_block(d, s, n, sig, value, op, next); break;
            case 10: nvshmemx_int_put_signal_nbi_block(d, s, n, sig, value, op, next); break;
            case 11: nvshmemx_putmem_signal_nbi_block(d, s, n, sig, value, op, next); break;
            }
        }
        nvshmem_quiet();
        return;
    }
    // The consumer: thread 0 waits, the block checks the rounds the signal has passed.
    __shared__ unsigned long long s_seen, s_got, s_wrong;
    if (lin == 0) {
        s_seen = 0;
        s_wrong = 0;
    }
    __syncthreads();
    while (s_seen < kRounds) {
        if (lin == 0) s_got = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, s_seen + 1);
        __syncthreads();
        const unsigned long long from = s_seen + 1, to = s_got < kRounds ? s_got : kRounds;
        unsigned long long wrong = 0;
        for (unsigned long long i = from; i <= to; i++)
            for (unsigned k = lin; k < kWords; k += block_threads())
                wrong += data[i * kWords + k] != static_cast<int>(i * 100003 + k + v * 7);
        if (wrong) atomicAdd(&s_wrong, wrong);
        __syncthreads();
        if (lin == 0) {
            out->last = s_got;
            s_seen = s_got > kRounds ? kRounds : s_got;
        }
        __syncthreads();
    }
    if (lin == 0) {
        out->wrong = s_wrong;
        out->seen = s_seen;
    }
}

template <int... V>
static constexpr auto order_kernels(std::integer_sequence<int, V...>) {
    return std::array<void (*)(int *, uint64_t *, const int *, int, int, OrderOut *),
                      sizeof...(V)>{order_kernel<V>...};
}

static void order_checks() {
    ConfGroup &g = conf_group("ordering: put_signal, then signal_wait_until and the data in one kernel");
    static constexpr auto kKernels = order_kernels(std::make_integer_sequence<int, 24>());
    const size_t words = (kRounds + 1) * kWords;
    int *data = reinterpret_cast<int *>(g_buf.work);
    int *src = reinterpret_cast<int *>(g_buf.sym_src);
    uint64_t *sig = g_buf.sigs;
    OrderOut *res = reinterpret_cast<OrderOut *>(g_buf.priv);
    static const char *const kName[] = {
        "nvshmem_int_put_signal SET",           "nvshmem_int_put_signal ADD",
        "nvshmem_putmem_signal SET",            "nvshmem_putmem_signal ADD",
        "nvshmem_int_put_signal_nbi SET",       "nvshmem_int_put_signal_nbi ADD",
        "nvshmem_putmem_signal_nbi SET",        "nvshmem_putmem_signal_nbi ADD",
        "nvshmemx_int_put_signal_warp SET",     "nvshmemx_int_put_signal_warp ADD",
        "nvshmemx_putmem_signal_warp SET",      "nvshmemx_putmem_signal_warp ADD",
        "nvshmemx_int_put_signal_nbi_warp SET", "nvshmemx_int_put_signal_nbi_warp ADD",
        "nvshmemx_putmem_signal_nbi_warp SET",  "nvshmemx_putmem_signal_nbi_warp ADD",
        "nvshmemx_int_put_signal_block SET",    "nvshmemx_int_put_signal_block ADD",
        "nvshmemx_putmem_signal_block SET",     "nvshmemx_putmem_signal_block ADD",
        "nvshmemx_int_put_signal_nbi_block SET", "nvshmemx_int_put_signal_nbi_block ADD",
        "nvshmemx_putmem_signal_nbi_block SET", "nvshmemx_putmem_signal_nbi_block ADD",
    };
    std::vector<int> host(words);
    for (int v = 0; v < 24; v++) { // order_kernel's numbering
        char kname[32];
        snprintf(kname, sizeof kname, "order_kernel<%d>", v);
        const int b = fit_block(g, kKernels[v], kname, 1024);
        for (size_t i = 0; i < words; i++)
            host[i] = static_cast<int>((i / kWords) * 100003 + i % kWords + v * 7);
        TEST_CUDA(cudaMemcpy(src, host.data(), words * sizeof(int), cudaMemcpyHostToDevice));
        TEST_CUDA(cudaMemset(data, 0, words * sizeof(int)));
        TEST_CUDA(cudaMemset(sig, 0, 8));
        TEST_CUDA(cudaMemset(res, 0, sizeof(OrderOut)));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        kKernels[v]<<<2, b>>>(data, sig, src, g_conf_me, g_conf_npes, res);
        finish_launch(g, kname);
        OrderOut r;
        TEST_CUDA(cudaMemcpy(&r, res, sizeof r, cudaMemcpyDeviceToHost));
        const int prev = (g_conf_me + g_conf_npes - 1) % g_conf_npes;
        conf_check(g, r.seen == kRounds && r.wrong == 0 && r.last == kRounds,
                   "%s (%s), PE %d -> PE %d, %d threads: %llu of %d rounds seen, last signal %llu, "
                   "%llu words not there when their signal was",
                   kName[v], v % 4 < 2 ? "typed" : "mem", prev, g_conf_me, b, r.seen, kRounds,
                   r.last, r.wrong);
        nvshmem_barrier_all();
    }
}

// ---- many producers, one consumer -----------------------------------------------------------

static constexpr int kFanCtas = 8, kFanRounds = 16, kFanWords = 128;

__host__ __device__ inline int fan_value(int pe, int cta, int round, int k) {
    return ((pe * kFanCtas + cta) * kFanRounds + round) * 1000 + k;
}

// CTAs [0, kFanCtas): producers (call C: thread, thread _nbi, warp, warp _nbi, block, block
// _nbi), every round's data into its own region of PE 0's `data` and ADD 1 to PE 0's *sig. On
// PE 0, CTA kFanCtas waits for the exact total, then its block checks every region. One kernel
// per call, the round counter in local memory (as order_kernel: one kernel for all six took
// 74 registers, one per scope alternating blocking and _nbi 67-69).
template <int C>
__global__ void fanin_kernel(int *data, uint64_t *sig, const int *src, int me, int npes,
                             unsigned long long *out) {
    const unsigned lin = linear_thread();
    const int cta = blockIdx.x;
    if (cta < kFanCtas) {
        const int *s = src + cta * kFanRounds * kFanWords; // filled by the host
        constexpr int scope = C / 2;
        const bool caller = scope == 2 || (scope == 1 && lin < 32) || (scope == 0 && lin == 0);
        if (!caller) return;
        for (volatile int round = 0; round < kFanRounds; round = round + 1) {
            const int r = round;
            int *d = data + ((me * kFanCtas + cta) * kFanRounds + r) * kFanWords;
            const int *x = s + r * kFanWords;
            switch (C) {
            case 0: nvshmem_int_put_signal(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            case 1: nvshmem_int_put_signal_nbi(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            case 2: nvshmemx_int_put_signal_warp(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            case 3: nvshmemx_int_put_signal_nbi_warp(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            case 4: nvshmemx_int_put_signal_block(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            case 5: nvshmemx_int_put_signal_nbi_block(d, x, kFanWords, sig, 1, NVSHMEM_SIGNAL_ADD, 0); break;
            }
        }
        nvshmem_quiet();
        return;
    }
    __shared__ unsigned long long s_total, s_wrong;
    const unsigned long long total = static_cast<unsigned long long>(npes) * kFanCtas * kFanRounds;
    if (lin == 0) {
        s_wrong = 0;
        s_total = nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, total);
    }
    __syncthreads();
    unsigned long long wrong = 0;
    for (int pe = 0; pe < npes; pe++)
        for (int c = 0; c < kFanCtas; c++)
            for (int r = 0; r < kFanRounds; r++)
                for (unsigned k = lin; k < kFanWords; k += block_threads())
                    wrong += data[((pe * kFanCtas + c) * kFanRounds + r) * kFanWords + k] !=
                             fan_value(pe, c, r, k);
    if (wrong) atomicAdd(&s_wrong, wrong);
    __syncthreads();
    if (lin == 0) {
        out[0] = s_total;
        out[1] = s_wrong;
    }
}

static void fanin_checks() {
    ConfGroup &g = conf_group("many producers, one consumer: put_signal ADD from 8 CTAs of every PE "
                              "to PE 0");
    void (*const kKernels[6])(int *, uint64_t *, const int *, int, int, unsigned long long *) = {
        fanin_kernel<0>, fanin_kernel<1>, fanin_kernel<2>,
        fanin_kernel<3>, fanin_kernel<4>, fanin_kernel<5>};
    static const char *const kName[6] = {
        "fanin_kernel (nvshmem_int_put_signal)",       "fanin_kernel (nvshmem_int_put_signal_nbi)",
        "fanin_kernel (nvshmemx_int_put_signal_warp)", "fanin_kernel (nvshmemx_int_put_signal_nbi_warp)",
        "fanin_kernel (nvshmemx_int_put_signal_block)",
        "fanin_kernel (nvshmemx_int_put_signal_nbi_block)"};
    const int npes = g_conf_npes, me = g_conf_me;
    const size_t words = static_cast<size_t>(npes) * kFanCtas * kFanRounds * kFanWords;
    int *data = reinterpret_cast<int *>(g_buf.work);
    int *src = reinterpret_cast<int *>(g_buf.sym_src);
    uint64_t *sig = g_buf.sigs;
    unsigned long long *out = reinterpret_cast<unsigned long long *>(g_buf.priv);
    std::vector<int> host(kFanCtas * kFanRounds * kFanWords);
    for (int c = 0; c < kFanCtas; c++)
        for (int r = 0; r < kFanRounds; r++)
            for (int k = 0; k < kFanWords; k++)
                host[(c * kFanRounds + r) * kFanWords + k] = fan_value(me, c, r, k);
    TEST_CUDA(cudaMemcpy(src, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice));
    for (int rep = 0; rep < 6; rep++) {
        const int b = fit_block(g, kKernels[rep], kName[rep], 1024);
        TEST_CUDA(cudaMemset(data, 0, words * sizeof(int)));
        TEST_CUDA(cudaMemset(sig, 0, 8));
        TEST_CUDA(cudaMemset(out, 0, 16));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        kKernels[rep]<<<me == 0 ? kFanCtas + 1 : kFanCtas, b>>>(data, sig, src, me, npes, out);
        finish_launch(g, kName[rep]);
        nvshmem_barrier_all();
        if (me == 0) {
            unsigned long long r[2];
            uint64_t final_sig = 0;
            TEST_CUDA(cudaMemcpy(r, out, 16, cudaMemcpyDeviceToHost));
            TEST_CUDA(cudaMemcpy(&final_sig, sig, 8, cudaMemcpyDeviceToHost));
            const unsigned long long total = static_cast<unsigned long long>(npes) * kFanCtas * kFanRounds;
            conf_check(g, r[0] == total && r[1] == 0 && final_sig == total,
                       "%s: %d PEs x %d CTAs x %d rounds (%d threads a CTA): wait returned %llu, "
                       "final signal %llu, want %llu; %llu words not there when the total was",
                       kName[rep], npes, kFanCtas, kFanRounds, b, r[0],
                       (unsigned long long)final_sig, total, r[1]);
        }
        nvshmem_barrier_all();
    }
}

// ---- wait and test: values set by the host ---------------------------------------------------

static constexpr int kN = 8;          // elements of a case
static constexpr int kMasks = 4;      // NULL status, some excluded, all excluded, nelems 0
static constexpr int kPatterns = 3;
static constexpr int kWtCases = 6 * kMasks * 2 * kPatterns;

template <typename T>
struct Vals {
    T lo, mid, hi;
};
// The extremes of T and 7: with a signed T lo is negative (an unsigned comparison would see it
// huge), with an unsigned T hi has the top bit set (a signed one would see it negative).
template <typename T>
static Vals<T> vals() {
    if (std::is_signed<T>::value)
        return {static_cast<T>(std::numeric_limits<T>::min() + 1), static_cast<T>(7),
                static_cast<T>(std::numeric_limits<T>::max() - 1)};
    return {static_cast<T>(1), static_cast<T>(7), static_cast<T>(std::numeric_limits<T>::max() - 1)};
}

template <typename T>
__host__ __device__ inline bool model_sat(T v, int cmp, T x) {
    switch (cmp) {
    case NVSHMEM_CMP_EQ: return v == x;
    case NVSHMEM_CMP_NE: return v != x;
    case NVSHMEM_CMP_GT: return v > x;
    case NVSHMEM_CMP_GE: return v >= x;
    case NVSHMEM_CMP_LT: return v < x;
    case NVSHMEM_CMP_LE: return v <= x;
    }
    return false;
}

static const int kCmps[6] = {NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE, NVSHMEM_CMP_GT,
                             NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE};
static const char *const kCmpName[6] = {"EQ", "NE", "GT", "GE", "LT", "LE"};

// What the kernel is told about a case (the host's model decides which waits return).
struct WtCase {
    int cmp, vec, nelems, use_status;
    int may_wait_all, may_wait_any; // wait_until_all: all included satisfied; _any/_some: one
                                    // satisfied, or none included
    int sat[kN];                    // element i satisfies (scalar wait_until may be called)
};

struct WtOut {
    int test[kN], waited[kN];
    int test_all, wait_all_done;
    size_t test_any, test_some_n, wait_any, wait_some_n;
    size_t test_some_idx[kN], wait_some_idx[kN];
};

struct WtArgs {
    char *ivars, *cmpv, *one; // typed arrays: kWtCases x kN, kWtCases x kN, kWtCases
    const int *status;        // kWtCases x kN
    const WtCase *cases;
    WtOut *out;
    int type;
};

template <typename W>
__device__ void wt_case(const WtArgs &a, int ci) {
    using T = typename W::T;
    const WtCase &c = a.cases[ci];
    T *iv = reinterpret_cast<T *>(a.ivars) + ci * kN;
    T *cv = reinterpret_cast<T *>(a.cmpv) + ci * kN;
    const T one = reinterpret_cast<const T *>(a.one)[ci];
    const int *st = c.use_status ? a.status + ci * kN : nullptr;
    const size_t n = c.nelems;
    WtOut &o = a.out[ci];
    for (int i = 0; i < kN; i++) {
        const T x = c.vec ? cv[i] : one;
        o.test[i] = W::test(iv + i, c.cmp, x);
        if (c.sat[i]) {
            W::wait_until(iv + i, c.cmp, x);
            o.waited[i] = 1;
        }
    }
    if (c.vec) {
        o.test_all = W::test_all_vector(iv, n, st, c.cmp, cv);
        o.test_any = W::test_any_vector(iv, n, st, c.cmp, cv);
        o.test_some_n = W::test_some_vector(iv, n, o.test_some_idx, st, c.cmp, cv);
        if (c.may_wait_all) {
            W::wait_until_all_vector(iv, n, st, c.cmp, cv);
            o.wait_all_done = 1;
        }
        if (c.may_wait_any) {
            o.wait_any = W::wait_until_any_vector(iv, n, st, c.cmp, cv);
            o.wait_some_n = W::wait_until_some_vector(iv, n, o.wait_some_idx, st, c.cmp, cv);
        }
    } else {
        o.test_all = W::test_all(iv, n, st, c.cmp, one);
        o.test_any = W::test_any(iv, n, st, c.cmp, one);
        o.test_some_n = W::test_some(iv, n, o.test_some_idx, st, c.cmp, one);
        if (c.may_wait_all) {
            W::wait_until_all(iv, n, st, c.cmp, one);
            o.wait_all_done = 1;
        }
        if (c.may_wait_any) {
            o.wait_any = W::wait_until_any(iv, n, st, c.cmp, one);
            o.wait_some_n = W::wait_until_some(iv, n, o.wait_some_idx, st, c.cmp, one);
        }
    }
}

// One thread per case.
__global__ void wt_kernel(WtArgs a) {
    for (int ci = linear_thread(); ci < kWtCases; ci += block_threads()) {
        switch (a.type) {
#define TEST_W_X(NAME, TYPE)                 \
    case W_ID_##NAME: wt_case<W_##NAME>(a, ci); break;
            TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X
        }
    }
}

static const char *kMaskName[kMasks] = {"status NULL", "status excluding some", "all excluded",
                                        "nelems 0"};

template <typename W>
static void wt_type(ConfGroup &g, int block) {
    using T = typename W::T;
    const Vals<T> vv = vals<T>();
    const T pick[3] = {vv.lo, vv.mid, vv.hi};
    std::vector<T> iv(kWtCases * kN), cv(kWtCases * kN), one(kWtCases);
    std::vector<int> status(kWtCases * kN);
    std::vector<WtCase> cases(kWtCases);
    for (int ci = 0; ci < kWtCases; ci++) {
        const int cmpi = ci % 6, mask = (ci / 6) % kMasks, vec = (ci / (6 * kMasks)) % 2,
                  pat = ci / (6 * kMasks * 2);
        WtCase &c = cases[ci];
        c.cmp = kCmps[cmpi];
        c.vec = vec;
        c.nelems = mask == 3 ? 0 : kN;
        c.use_status = mask == 1 || mask == 2;
        one[ci] = pick[(pat + 1) % 3];
        for (int i = 0; i < kN; i++) {
            iv[ci * kN + i] = pick[(i * (pat + 1) + pat + i / 3) % 3];
            cv[ci * kN + i] = pick[(i + 2 * pat) % 3];
            status[ci * kN + i] = mask == 2 ? 1 : mask == 1 ? (i % 3 == 1) : 0;
        }
        bool all = true, any = false, included = false;
        for (int i = 0; i < kN; i++) {
            const T x = vec ? cv[ci * kN + i] : one[ci];
            c.sat[i] = model_sat(iv[ci * kN + i], c.cmp, x);
            if (i >= c.nelems || (c.use_status && status[ci * kN + i])) continue;
            included = true;
            all = all && c.sat[i];
            any = any || c.sat[i];
        }
        c.may_wait_all = all;
        c.may_wait_any = any || !included;
    }
    // Symmetric ivars (the wait functions' words are normally symmetric); the rest private,
    // each array at a 64 KiB step of g_buf.priv.
    char *d_iv = g_buf.work;
    char *d_cv = g_buf.priv;
    char *d_one = g_buf.priv + (64 << 10);
    int *d_status = reinterpret_cast<int *>(g_buf.priv + (128 << 10));
    WtCase *d_cases = reinterpret_cast<WtCase *>(g_buf.priv + (192 << 10));
    WtOut *d_out = reinterpret_cast<WtOut *>(g_buf.priv + (256 << 10));
    static_assert(kWtCases * kN * 8 <= (64 << 10) && kWtCases * sizeof(WtCase) <= (64 << 10),
                  "the wait/test arrays fit their 64 KiB steps");
    TEST_CUDA(cudaMemcpy(d_iv, iv.data(), iv.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_cv, cv.data(), cv.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_one, one.data(), one.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_status, status.data(), status.size() * sizeof(int), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_cases, cases.data(), cases.size() * sizeof(WtCase), cudaMemcpyHostToDevice));
    // Sentinels: indices SIZE_MAX - 1 (never a valid answer), flags 0.
    std::vector<WtOut> init(kWtCases);
    for (WtOut &o : init) {
        memset(&o, 0, sizeof o);
        o.test_any = o.wait_any = o.test_some_n = o.wait_some_n = SIZE_MAX - 1;
        for (int i = 0; i < kN; i++) o.test_some_idx[i] = o.wait_some_idx[i] = SIZE_MAX - 1;
        for (int i = 0; i < kN; i++) o.test[i] = -1;
        o.test_all = -1;
    }
    TEST_CUDA(cudaMemcpy(d_out, init.data(), init.size() * sizeof(WtOut), cudaMemcpyHostToDevice));
    WtArgs a{d_iv, d_cv, d_one, d_status, d_cases, d_out, WIdOf<W>::value};
    char what[128];
    snprintf(what, sizeof what, "wt_kernel<<<1, %d>>> (%s)", block, W::name);
    wt_kernel<<<1, block>>>(a);
    finish_launch(g, what);
    std::vector<WtOut> res(kWtCases);
    TEST_CUDA(cudaMemcpy(res.data(), d_out, res.size() * sizeof(WtOut), cudaMemcpyDeviceToHost));

    for (int ci = 0; ci < kWtCases; ci++) {
        const WtCase &c = cases[ci];
        const WtOut &o = res[ci];
        const int mask = (ci / 6) % kMasks;
        char tag[160];
        snprintf(tag, sizeof tag, "nvshmem_%s_*%s, cmp %s, %s, pattern %d", W::name,
                 c.vec ? "_vector" : "", kCmpName[ci % 6], kMaskName[mask], ci / (6 * kMasks * 2));
        // The model: included satisfied elements, in increasing order.
        std::vector<size_t> sat;
        bool included = false;
        for (int i = 0; i < c.nelems; i++) {
            if (c.use_status && status[ci * kN + i]) continue;
            included = true;
            if (c.sat[i]) sat.push_back(i);
        }
        int bad_test = 0, bad_wait = 0;
        for (int i = 0; i < kN; i++) {
            bad_test += o.test[i] != c.sat[i];
            bad_wait += o.waited[i] != c.sat[i];
        }
        conf_check(g, bad_test == 0, "%s: test wrong for %d of %d elements", tag, bad_test, kN);
        conf_check(g, bad_wait == 0, "%s: wait_until did not return for %d of the satisfied elements",
                   tag, bad_wait);
        const int want_all = c.may_wait_all; // every included element satisfied (or none)
        conf_check(g, o.test_all == want_all, "%s: test_all %d, want %d", tag, o.test_all, want_all);
        const bool any_ok = sat.empty() ? o.test_any == SIZE_MAX
                                        : std::find(sat.begin(), sat.end(), o.test_any) != sat.end();
        conf_check(g, any_ok, "%s: test_any %zu, want %s", tag, o.test_any,
                   sat.empty() ? "SIZE_MAX" : "a satisfied included index");
        bool some_ok = o.test_some_n == sat.size();
        for (size_t k = 0; some_ok && k < sat.size(); k++) some_ok = o.test_some_idx[k] == sat[k];
        conf_check(g, some_ok, "%s: test_some %zu (first index %zu), want %zu", tag, o.test_some_n,
                   o.test_some_idx[0], sat.size());
        conf_check(g, o.wait_all_done == c.may_wait_all, "%s: wait_until_all %s", tag,
                   c.may_wait_all ? "did not return" : "was called");
        if (c.may_wait_any) {
            const bool wany = !included ? o.wait_any == SIZE_MAX
                                        : std::find(sat.begin(), sat.end(), o.wait_any) != sat.end();
            conf_check(g, wany, "%s: wait_until_any %zu, want %s", tag, o.wait_any,
                       included ? "a satisfied included index" : "SIZE_MAX");
            bool wsome = o.wait_some_n == sat.size();
            for (size_t k = 0; wsome && k < sat.size(); k++) wsome = o.wait_some_idx[k] == sat[k];
            conf_check(g, wsome, "%s: wait_until_some %zu (first index %zu), want %zu", tag,
                       o.wait_some_n, o.wait_some_idx[0], sat.size());
        }
    }
}

static void wt_checks() {
    ConfGroup &g = conf_group("wait/test: 14 types x 6 comparisons x status masks x _vector, values "
                              "set by the host");
    const int b = fit_block(g, wt_kernel, "wt_kernel", 1024);
#define TEST_W_X(NAME, TYPE) wt_type<W_##NAME>(g, b);
    TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X
}

// ---- wait forms woken by another PE ---------------------------------------------------------

enum WakePhase {
    WAKE_UNTIL,
    WAKE_ALL,
    WAKE_ANY,
    WAKE_SOME,
    WAKE_ALL_VECTOR,
    WAKE_ANY_VECTOR,
    WAKE_SOME_VECTOR,
    WAKE_PHASES
};
static const char *const kWakeName[] = {"wait_until", "wait_until_all", "wait_until_any",
                                        "wait_until_some", "wait_until_all_vector",
                                        "wait_until_any_vector", "wait_until_some_vector"};
// The element each _any/_some phase's setter makes satisfied; element kExcluded of every phase
// is excluded (status 1) and satisfied from the start, and in the _all phases so is every
// element i % 4 == 3 (excluded, never satisfied: the wait must not need them).
__host__ __device__ constexpr int wake_index(int ph) {
    return ph == WAKE_UNTIL ? 0 : ph == WAKE_ANY ? 5 : ph == WAKE_SOME ? 6
           : ph == WAKE_ANY_VECTOR ? 1 : ph == WAKE_SOME_VECTOR ? 3 : -1;
}
static constexpr int kExcluded = 2;

struct WakeOut {
    size_t result[WAKE_PHASES];
    size_t idx[WAKE_PHASES];
    int done[WAKE_PHASES];
};

struct WakeArgs {
    char *ivars;       // symmetric, typed: WAKE_PHASES x kN
    const char *cmpv;  // typed: kN (the value of the _vector phases for element i)
    const int *status; // WAKE_PHASES x kN
    WakeOut *out;
    int type, cmp, me, npes;
    long long s_bits, x_bits; // the setter's satisfying value and the comparison value (T's
                              // value through long long, back to T in the kernel)
    unsigned long long set_mask; // bit ph * kN + i: the setter satisfies element i of phase ph
};

template <typename W>
__device__ void wake_run(const WakeArgs &a) {
    using T = typename W::T;
    T *iv = reinterpret_cast<T *>(a.ivars);
    const T *cv = reinterpret_cast<const T *>(a.cmpv);
    const T x = static_cast<T>(a.x_bits);
    const unsigned lin = linear_thread();
    if (blockIdx.x == 1) {
        // The setter: after a delay, on the next PE, satisfy what each phase waits for.
        if (lin != 0) return;
        const int next = (a.me + 1) % a.npes;
        const T s = static_cast<T>(a.s_bits);
        spin_ns(50000);
        // Element k = ph * kN + i is set when a.set_mask says so; the counter in local memory,
        // as in order_kernel.
        for (volatile int word = 0; word < WAKE_PHASES * kN; word = word + 1) {
            const int k = word;
            if ((a.set_mask >> k) & 1ull) W::p(iv + k, s, next);
            if (k % kN == kN - 1) spin_ns(5000);
        }
        nvshmem_quiet();
        return;
    }
    if (lin >= WAKE_PHASES) return;
    const int ph = lin;
    T *p = iv + ph * kN;
    const int *st = a.status + ph * kN;
    WakeOut *o = a.out;
    size_t idx[kN];
    switch (ph) {
    case WAKE_UNTIL: W::wait_until(p, a.cmp, x); break;
    case WAKE_ALL: W::wait_until_all(p, kN, st, a.cmp, x); break;
    case WAKE_ANY: o->result[ph] = W::wait_until_any(p, kN, st, a.cmp, x); break;
    case WAKE_SOME:
        o->result[ph] = W::wait_until_some(p, kN, idx, st, a.cmp, x);
        o->idx[ph] = idx[0];
        break;
    case WAKE_ALL_VECTOR: W::wait_until_all_vector(p, kN, st, a.cmp, const_cast<T *>(cv)); break;
    case WAKE_ANY_VECTOR:
        o->result[ph] = W::wait_until_any_vector(p, kN, st, a.cmp, const_cast<T *>(cv));
        break;
    case WAKE_SOME_VECTOR:
        o->result[ph] = W::wait_until_some_vector(p, kN, idx, st, a.cmp, const_cast<T *>(cv));
        o->idx[ph] = idx[0];
        break;
    }
    o->done[ph] = 1;
}

__global__ void wake_kernel(WakeArgs a) {
    switch (a.type) {
#define TEST_W_X(NAME, TYPE) \
    case W_ID_##NAME: wake_run<W_##NAME>(a); break;
        TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X
    }
}

// Type number t uses comparison t % 6. u: a value that does not satisfy it, s: one that does,
// against x (the _vector phases use x too, as every element's value, so the same u/s work).
template <typename W>
static void wake_type(ConfGroup &g, int block) {
    using T = typename W::T;
    const int t = WIdOf<W>::value, cmpi = t % 6, cmp = kCmps[cmpi];
    const Vals<T> v = vals<T>();
    T u, s;
    switch (cmpi) {
    case 0: u = v.lo; s = v.mid; break;  // EQ mid
    case 1: u = v.mid; s = v.hi; break;  // NE mid
    case 2: u = v.mid; s = v.hi; break;  // GT mid
    case 3: u = v.lo; s = v.mid; break;  // GE mid
    case 4: u = v.mid; s = v.lo; break;  // LT mid
    default: u = v.hi; s = v.mid; break; // LE mid
    }
    const T x = v.mid;
    std::vector<T> iv(WAKE_PHASES * kN, u), cv(kN, x);
    std::vector<int> status(WAKE_PHASES * kN, 0);
    for (int ph = 0; ph < WAKE_PHASES; ph++) {
        if (ph == WAKE_UNTIL) continue;
        status[ph * kN + kExcluded] = 1;
        iv[ph * kN + kExcluded] = s;
        if (wake_index(ph) < 0)
            for (int i = 3; i < kN; i += 4) status[ph * kN + i] = 1; // excluded, never satisfied
    }
    char *d_iv = g_buf.work;
    char *d_cv = g_buf.priv;
    int *d_status = reinterpret_cast<int *>(g_buf.priv + 256);
    WakeOut *d_out = reinterpret_cast<WakeOut *>(g_buf.priv + 1024);
    TEST_CUDA(cudaMemcpy(d_iv, iv.data(), iv.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_cv, cv.data(), cv.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(d_status, status.data(), status.size() * sizeof(int), cudaMemcpyHostToDevice));
    WakeOut init;
    memset(&init, 0, sizeof init);
    for (int ph = 0; ph < WAKE_PHASES; ph++) init.result[ph] = init.idx[ph] = SIZE_MAX - 1;
    TEST_CUDA(cudaMemcpy(d_out, &init, sizeof init, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    unsigned long long set_mask = 0;
    for (int ph = 0; ph < WAKE_PHASES; ph++)
        for (int i = 0; i < kN; i++)
            if (wake_index(ph) >= 0 ? i == wake_index(ph) : status[ph * kN + i] == 0)
                set_mask |= 1ull << (ph * kN + i);
    static_assert(WAKE_PHASES * kN <= 64, "one bit a word");
    WakeArgs a{d_iv,      d_cv,        d_status,
               d_out,     t,           cmp,
               g_conf_me, g_conf_npes, static_cast<long long>(s),
               static_cast<long long>(x), set_mask};
    char what[128];
    snprintf(what, sizeof what, "wake_kernel<<<2, %d>>> (%s, %s)", block, W::name, kCmpName[cmpi]);
    wake_kernel<<<2, block>>>(a);
    finish_launch(g, what);
    nvshmem_barrier_all();
    WakeOut r;
    TEST_CUDA(cudaMemcpy(&r, d_out, sizeof r, cudaMemcpyDeviceToHost));
    const int prev = (g_conf_me + g_conf_npes - 1) % g_conf_npes;
    for (int ph = 0; ph < WAKE_PHASES; ph++) {
        bool ok = r.done[ph] == 1;
        size_t want = 0;
        if (ph == WAKE_ANY || ph == WAKE_ANY_VECTOR) {
            want = wake_index(ph);
            ok = ok && r.result[ph] == want;
        } else if (ph == WAKE_SOME || ph == WAKE_SOME_VECTOR) {
            want = 1;
            ok = ok && r.result[ph] == 1 && r.idx[ph] == static_cast<size_t>(wake_index(ph));
        }
        conf_check(g, ok,
                   "nvshmem_%s_%s, cmp %s, woken by PE %d's nvshmem_%s_p: returned %zu (index "
                   "%zu), want %zu (index %d)",
                   W::name, kWakeName[ph], kCmpName[cmpi], prev, W::name, r.result[ph],
                   r.idx[ph], want, wake_index(ph));
    }
    // The next type rewrites the words: nobody may still be writing them.
    nvshmem_barrier_all();
}

static void wake_checks() {
    ConfGroup &g = conf_group("wait forms woken by another PE's nvshmem_<T>_p, 14 types");
    const int b = fit_block(g, wake_kernel, "wake_kernel", 1024);
#define TEST_W_X(NAME, TYPE) wake_type<W_##NAME>(g, b);
    TEST_WAIT_TYPES(TEST_W_X)
#undef TEST_W_X
}

// ---- register budget: plain loops -----------------------------------------------------------

// What an NVSHMEM program writes: a loop of put-with-signal in a kernel without
// __launch_bounds__, launched with 1024-thread blocks. The kernels of the other groups keep
// their loop counters out of registers (volatile, in local memory), so that they test the
// semantics at 1024 threads; these do not, so a device API that leaves an ordinary loop too
// few registers fails here (fit_block), and their transfers are still checked.
static constexpr int kLoopRounds = 16, kLoopWords = 1024;

__global__ void loop_thread_kernel(int *data, const int *src, uint64_t *sig, int pe) {
    if (linear_thread() != 0) return;
    for (int i = 0; i < kLoopRounds; i++)
        nvshmem_int_put_signal(data + i * kLoopWords, src + i * kLoopWords, kLoopWords, sig, 1,
                               NVSHMEM_SIGNAL_ADD, pe);
}
__global__ void loop_warp_kernel(int *data, const int *src, uint64_t *sig, int pe) {
    if (linear_thread() >= 32) return;
    for (int i = 0; i < kLoopRounds; i++)
        nvshmemx_int_put_signal_warp(data + i * kLoopWords, src + i * kLoopWords, kLoopWords, sig,
                                     1, NVSHMEM_SIGNAL_ADD, pe);
}
__global__ void loop_block_kernel(int *data, const int *src, uint64_t *sig, int pe) {
    for (int i = 0; i < kLoopRounds; i++)
        nvshmemx_int_put_signal_block(data + i * kLoopWords, src + i * kLoopWords, kLoopWords,
                                      sig, 1, NVSHMEM_SIGNAL_ADD, pe);
}

static void loop_checks() {
    ConfGroup &g = conf_group("register budget: plain loops of nvshmem(x)_int_put_signal[_warp/_block], "
                              "1024-thread blocks");
    void (*const kernels[3])(int *, const int *, uint64_t *, int) = {
        loop_thread_kernel, loop_warp_kernel, loop_block_kernel};
    static const char *const kName[3] = {"loop_thread_kernel", "loop_warp_kernel",
                                         "loop_block_kernel"};
    const int me = g_conf_me, npes = g_conf_npes, next = (me + 1) % npes,
              prev = (me + npes - 1) % npes;
    const size_t words = static_cast<size_t>(kLoopRounds) * kLoopWords;
    int *data = reinterpret_cast<int *>(g_buf.work);
    int *src = reinterpret_cast<int *>(g_buf.sym_src);
    std::vector<int> host(words);
    for (int k = 0; k < 3; k++) {
        const int b = fit_block(g, kernels[k], kName[k], 1024);
        for (size_t i = 0; i < words; i++) host[i] = static_cast<int>(me * 7919 + k * 131 + i);
        TEST_CUDA(cudaMemcpy(src, host.data(), words * sizeof(int), cudaMemcpyHostToDevice));
        TEST_CUDA(cudaMemset(data, 0, words * sizeof(int)));
        TEST_CUDA(cudaMemset(g_buf.sigs, 0, 8));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        kernels[k]<<<1, b>>>(data, src, g_buf.sigs, next);
        finish_launch(g, kName[k]);
        nvshmem_barrier_all();
        TEST_CUDA(cudaMemcpy(host.data(), data, words * sizeof(int), cudaMemcpyDeviceToHost));
        uint64_t sig = 0;
        TEST_CUDA(cudaMemcpy(&sig, g_buf.sigs, 8, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < words; i++) bad += host[i] != static_cast<int>(prev * 7919 + k * 131 + i);
        conf_check(g, bad == 0 && sig == kLoopRounds,
                   "%s<<<1, %d>>>, PE %d -> PE %d: %zu of %zu words wrong, signal %llu (want %d)",
                   kName[k], b, prev, me, bad, words, (unsigned long long)sig, kLoopRounds);
        nvshmem_barrier_all();
    }
}

// ---- main -----------------------------------------------------------------------------------

int main() {
    conf_begin("conf_signal_wait");
    const int npes = g_conf_npes;
    g_buf.recv = static_cast<char *>(nvshmem_malloc(kVariants * npes * kSlot));
    g_buf.sym_src = static_cast<char *>(nvshmem_malloc(kVariants * kSlot));
    g_buf.sigs = static_cast<uint64_t *>(nvshmem_malloc(kSigWords * sizeof(uint64_t)));
    g_buf.work = static_cast<char *>(nvshmem_malloc(kWork));
    if (!g_buf.recv || !g_buf.sym_src || !g_buf.sigs || !g_buf.work) {
        fprintf(stderr, "conf_signal_wait PE %d: nvshmem_malloc of %zu bytes failed (set "
                        "NVSHMEM_SYMMETRIC_SIZE larger)\n",
                g_conf_me, (kVariants * (npes + 1)) * kSlot + kWork);
        return 2;
    }
    TEST_CUDA(cudaMalloc(&g_buf.priv_src, kVariants * kSlot));
    TEST_CUDA(cudaMalloc(&g_buf.priv, kWork));

    ps_checks();
    signal_op_checks();
    order_checks();
    fanin_checks();
    wt_checks();
    wake_checks();
    loop_checks();

    const int rc = conf_end();
    cudaFree(g_buf.priv);
    cudaFree(g_buf.priv_src);
    return rc;
}
