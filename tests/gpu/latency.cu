// Device-initiated latency and small-operation throughput: PE 0 -> PE 1.
//
// NVSHMEM API only: one source, built against niin-rs and against NVSHMEM 3.4.5 and run side
// by side by scripts/gpu/device-tests.sh (PART latency). Start-up: test_init.h.
//
// Meant for 2 PEs on one GPU: PE 0 issues everything while PE 1 waits in nvshmem_barrier_all
// (kernels of two processes on one GPU time-slice, so a cross-process ping-pong would time
// the scheduler, not the API). What is timed is PE 0's own operations against PE 1's memory.
// With 1 PE the target is PE 0 itself.
//
// Latency (LAT): per operation, inside one kernel of one CTA, by the globaltimer (ns). The
// kernel runs a warm-up (kWarm operations), then kRounds rounds of `iters` operations
// each; thread 0 takes the time after a __syncthreads at the start of each round and at the
// end; a round's mean is its time over `iters`. Reported: the median of the kRounds round means (a round that PE 1's
// time slice interrupts is an outlier, not a shift of the mean). `iters` is fixed for the
// scalar operations (kScalarIters) and, for the transfers, chosen from the warm-up so that a
// round lasts about kRoundNs (2 ... kMaxIters). A scalar operation is measured from every SM
// in turn (one launch each; near and far L2 slices make a single launch bimodal) and LAT is
// the mean over the SMs; a LATSM line gives the fastest SM, the mean and the slowest.
// Operations:
//   p_int64, p_double      nvshmem_<T>_p of 8 B then nvshmem_quiet, per iteration
//   g_int64, g_double      nvshmem_<T>_g of 8 B; each address depends on the previous value
//                          (+ (value & mask), mask = 0 at run time) so the loads do not
//                          overlap
//   putmem_<scope>         nvshmem_putmem / nvshmemx_putmem_warp / _block, then
//                          nvshmem_quiet (every thread), per iteration; 1 thread, 1 warp, or a
//                          1024-thread block; 8 B and 16 B ... 64 KiB in powers of 4
//   getmem_<scope>         nvshmem_getmem / nvshmemx_getmem_warp / _block (blocking: no quiet)
//   putmem_signal_<scope>  nvshmem_putmem_signal / nvshmemx_putmem_signal_warp / _block,
//                          blocking, NVSHMEM_SIGNAL_ADD of 1, then nvshmem_quiet
//   amo_fetch_add_uint64   nvshmem_uint64_atomic_fetch_add(ctr + (old & mask), 1, PE 1)
//   amo_compare_swap_uint64 nvshmem_uint64_atomic_compare_swap(ctr, cur, cur + 1, PE 1), the
//                          next cur from the value fetched (every swap succeeds)
//   signal_wait_until_set  nvshmem_signal_wait_until(sig + (v & mask), NVSHMEM_CMP_GE, 1) on
//                          a local signal already 1
// Throughput (TPUT): one kernel of kTputCtas x kTputThreads (132 x 1024), every thread
// kTputOps (atomics: kTputAmoOps) operations to PE 1; cudaEvents around the kernel; the best
// of kTputRuns launches after one warm-up launch; ops/s = all threads' operations / time:
//   p_int64                nvshmem_int64_p to a distinct word per operation, then one quiet
//   g_int64                nvshmem_int64_g of a distinct word per operation (independent)
//   amo_fetch_add_one / amo_add_one            uint64 fetch_add / add of 1, one counter
//   amo_fetch_add_distinct / amo_add_distinct  the same, a counter per thread
// No kernel has __launch_bounds__: the 1024-thread launches check that the API fits (64
// registers a thread). The benchmark's own loops are kept lean for that (#pragma unroll 1,
// timestamps in shared memory, operands as separate kernel arguments): with niin-rs's
// headers the block-scope and throughput kernels need 58-64 registers.
//
// Output (PE 0, then the checks of both PEs), one line each, '|'-separated:
//   LAT|<name>|<bytes>|<microseconds>
//   LATSM|<name>|<fastest SM>|<mean>|<slowest SM>|<SMs measured>   (scalar operations, us)
//   TPUT|<name>|<operations per second>
//   CHECK|<what>|ok   or   CHECK|<what>|FAILED <detail>
// After the measurements PE 1 checks what landed in its memory (the put and put-with-signal
// bytes, the signal's count, every p word, every counter's exact total, which PE 0 tells it
// through the heap), PE 0 what it read (the getmem bytes, the g sums). Exit status 1 if a
// check failed.

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "test_init.h"

// ---- parameters ------------------------------------------------------------------------------

static constexpr int kWarm = 16;             // operations before the timed rounds
static constexpr int kRounds = 15;           // timed rounds per measurement (median reported)
static constexpr int kScalarIters = 200;     // operations per round, scalar operations
static constexpr long long kRoundNs = 100000; // target length of a transfer round
static constexpr int kMaxIters = 200;        // operations per round, at most (transfers)
static constexpr size_t kMaxBytes = 64u << 10;
static constexpr int kBlockThreads = 1024;   // the block scope's CTA
static constexpr int kTputCtas = 132, kTputThreads = 1024;
static constexpr int kTputOps = 64, kTputAmoOps = 16;
static constexpr int kTputRuns = 5;
static constexpr size_t kTputThreadsAll = static_cast<size_t>(kTputCtas) * kTputThreads;

enum Scope { SCOPE_THREAD = 0, SCOPE_WARP = 1, SCOPE_BLOCK = 2 };
static const char *const kScopeName[] = {"thread", "warp", "block"};
static const int kScopeThreads[] = {1, 32, kBlockThreads};

// ---- timing ------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// What a latency kernel reports: each round's time, and the operations per round.
struct Rounds {
    unsigned long long ns[kRounds];
    int iters;
    long long sink; // a value the operations produced (keeps them live)
};

// Runs `op` kWarm times, then kRounds timed rounds, every thread of the CTA (all must call).
// iters <= 0: chosen from the warm-up (about kRoundNs per round). op(i) gets the operation's
// number. One flat loop, the timestamps in shared memory: the loop keeps four values of its
// own across the operations, so a block-scope kernel stays within 64 registers.
template <typename Op>
__device__ __forceinline__ void timed_rounds(Rounds *out, int iters, Op op) {
    __shared__ unsigned long long s_t[kRounds + 1];
    __shared__ int s_iters;
    __syncthreads();
    if (threadIdx.x == 0) s_t[0] = now_ns();
#pragma unroll 1
    for (int i = 0; i < kWarm; i++) op(i);
    __syncthreads();
    if (threadIdx.x == 0) {
        const long long per = static_cast<long long>(now_ns() - s_t[0]) / kWarm;
        const long long fit = kRoundNs / (per > 0 ? per : 1);
        s_iters = iters > 0 ? iters : fit < 2 ? 2 : fit > kMaxIters ? kMaxIters : static_cast<int>(fit);
    }
    __syncthreads();
    const int n = s_iters;
    const int end = kWarm + n * kRounds;
    int left = 0; // operations left in this round
#pragma unroll 1
    for (int j = kWarm; j < end; j++, left--) {
        if (left == 0) { // a round starts: its operations begin together
            __syncthreads();
            if (threadIdx.x == 0) s_t[(j - kWarm) / n] = now_ns();
            left = n;
        }
        op(j);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        s_t[kRounds] = now_ns();
        for (int r = 0; r < kRounds; r++) out->ns[r] = s_t[r + 1] - s_t[r];
        out->iters = n;
    }
}

// ---- latency kernels -----------------------------------------------------------------------------

enum ScalarOp {
    S_P_INT64,
    S_P_DOUBLE,
    S_G_INT64,
    S_G_DOUBLE,
    S_FETCH_ADD,
    S_COMPARE_SWAP,
    S_WAIT,
};

struct Sym { // symmetric buffers (the same addresses on both PEs)
    char *put_dst;         // kMaxBytes: putmem and putmem_signal land here on PE 1
    char *src;             // kMaxBytes: PE 0's source of puts (its pattern)
    char *pub;             // kMaxBytes: PE 1's source of gets (its pattern)
    char *get_dst;         // kMaxBytes: PE 0's destination of gets
    long long *scalar;     // 8 words: [0] p_int64, [1] p_double, [2..3] zeros for g
    uint64_t *counters;    // [0] fetch_add latency, [1] compare_swap, [2] fetch_add one,
                           // [3] add one, [4] signal of putmem_signal, [5] local signal (= 1)
    uint64_t *fadd_each;   // kTputThreadsAll: fetch_add, a counter per thread
    uint64_t *add_each;    // kTputThreadsAll: add, a counter per thread
    long long *p_words;    // kTputOps x kTputThreadsAll: p throughput targets
    long long *g_words;    // kTputOps x kTputThreadsAll: g throughput sources (word j = j)
    long long *expect;     // what PE 0 tells PE 1 to expect (kExpect words)
};
enum Expect { E_FETCH_ADD, E_COMPARE_SWAP, E_SIGNAL, E_P_INT64, E_P_DOUBLE, E_TPUT_LAUNCHES, kExpect };

// scalar: Sym::scalar, counters: Sym::counters. (Separate arguments: a lambda that took the
// address of a structure argument would copy it to local memory.)
// The SM this thread runs on.
__device__ __forceinline__ int sm_id() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return static_cast<int>(s);
}

// A scalar kernel is launched as one 1-thread block per SM; only the first block that runs on
// SM `target` measures (it sets *claim), the others return at once. `base`: the operations
// of this kind done by earlier launches (p stores base + i; compare_swap starts from the
// counter's value, base, so every swap succeeds).
template <int Op>
__global__ void scalar_kernel(long long *scalar, uint64_t *counters, int peer, long long mask,
                              long long base, int target, int *claim, Rounds *out) {
    if (sm_id() != target || atomicCAS(claim, 0, 1) != 0) return;
    long long v = 0;
    double dv = 0;
    uint64_t cur = static_cast<uint64_t>(base);
    timed_rounds(out, kScalarIters, [&, scalar, counters, peer, mask, base](int i) {
        if constexpr (Op == S_P_INT64) {
            nvshmem_int64_p(reinterpret_cast<int64_t *>(scalar), base + i, peer);
            nvshmem_quiet();
        } else if constexpr (Op == S_P_DOUBLE) {
            nvshmem_double_p(reinterpret_cast<double *>(scalar + 1), static_cast<double>(base + i),
                             peer);
            nvshmem_quiet();
        } else if constexpr (Op == S_G_INT64) {
            v = nvshmem_int64_g(reinterpret_cast<const int64_t *>(scalar + 2 + (v & mask)), peer);
        } else if constexpr (Op == S_G_DOUBLE) {
            dv = nvshmem_double_g(
                reinterpret_cast<const double *>(scalar + 3 + (static_cast<long long>(dv) & mask)),
                peer);
        } else if constexpr (Op == S_FETCH_ADD) {
            v = static_cast<long long>(
                nvshmem_uint64_atomic_fetch_add(counters + (v & mask), 1, peer));
        } else if constexpr (Op == S_COMPARE_SWAP) {
            cur = nvshmem_uint64_atomic_compare_swap(counters + 1, cur, cur + 1, peer) + 1;
        } else {
            v = static_cast<long long>(
                nvshmem_signal_wait_until(counters + 5 + (v & mask), NVSHMEM_CMP_GE, 1));
        }
    });
    out->sink = v + static_cast<long long>(dv) + static_cast<long long>(cur);
}

enum MemOp { M_PUT, M_GET, M_PUT_SIGNAL };
static const char *const kMemName[] = {"putmem", "getmem", "putmem_signal"};

// One operation of the group: put from `src` to `dst` on `peer` (get: from `src` on `peer` to
// `dst`); the signal of putmem_signal at `sig` on `peer`.
template <int Op, int Sc>
__device__ __forceinline__ void mem_op(char *dst, const char *src, uint64_t *sig, size_t bytes,
                                       int peer) {
    if constexpr (Op == M_PUT) {
        if constexpr (Sc == SCOPE_THREAD) nvshmem_putmem(dst, src, bytes, peer);
        else if constexpr (Sc == SCOPE_WARP) nvshmemx_putmem_warp(dst, src, bytes, peer);
        else nvshmemx_putmem_block(dst, src, bytes, peer);
        nvshmem_quiet();
    } else if constexpr (Op == M_GET) {
        if constexpr (Sc == SCOPE_THREAD) nvshmem_getmem(dst, src, bytes, peer);
        else if constexpr (Sc == SCOPE_WARP) nvshmemx_getmem_warp(dst, src, bytes, peer);
        else nvshmemx_getmem_block(dst, src, bytes, peer);
    } else {
        if constexpr (Sc == SCOPE_THREAD)
            nvshmem_putmem_signal(dst, src, bytes, sig, 1, NVSHMEM_SIGNAL_ADD, peer);
        else if constexpr (Sc == SCOPE_WARP)
            nvshmemx_putmem_signal_warp(dst, src, bytes, sig, 1, NVSHMEM_SIGNAL_ADD, peer);
        else
            nvshmemx_putmem_signal_block(dst, src, bytes, sig, 1, NVSHMEM_SIGNAL_ADD, peer);
        nvshmem_quiet();
    }
}

// The operands are separate arguments, captured by value: a lambda that took the address of
// a structure argument would copy it to local memory.
template <int Op, int Sc>
__global__ void mem_kernel(char *dst, const char *src, uint64_t *sig, size_t bytes, int peer,
                           Rounds *out) {
    timed_rounds(out, 0, [=](int) { mem_op<Op, Sc>(dst, src, sig, bytes, peer); });
}

// ---- throughput kernels -------------------------------------------------------------------------

enum TputOp { T_P, T_G, T_FETCH_ADD_ONE, T_FETCH_ADD_EACH, T_ADD_ONE, T_ADD_EACH };
static const char *const kTputName[] = {"p_int64",           "g_int64",
                                        "amo_fetch_add_one", "amo_fetch_add_distinct",
                                        "amo_add_one",       "amo_add_distinct"};

// words: p_words (T_P), g_words (T_G), the per-thread counters (_EACH), or the one counter.
template <int Op>
__global__ void tput_kernel(long long *words, int peer, long long *sums) {
    const size_t n = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    uint64_t *counter = reinterpret_cast<uint64_t *>(words) +
                        (Op == T_FETCH_ADD_EACH || Op == T_ADD_EACH ? t : 0);
    long long acc = 0;
    if constexpr (Op == T_P) {
        // Word i * n + t gets i * n + t + 1.
        long long *w = words + t;
#pragma unroll 1
        for (int i = 0; i < kTputOps; i++, w += n)
            nvshmem_int64_p(reinterpret_cast<int64_t *>(w), w - words + 1, peer);
        nvshmem_quiet();
    } else if constexpr (Op == T_G) {
        const long long *w = words + t;
#pragma unroll 1
        for (int i = 0; i < kTputOps; i++, w += n)
            acc += nvshmem_int64_g(reinterpret_cast<const int64_t *>(w), peer);
    } else if constexpr (Op == T_FETCH_ADD_ONE || Op == T_FETCH_ADD_EACH) {
        for (int i = 0; i < kTputAmoOps; i++)
            acc += static_cast<long long>(nvshmem_uint64_atomic_fetch_add(counter, 1, peer));
    } else {
        for (int i = 0; i < kTputAmoOps; i++) nvshmem_uint64_atomic_add(counter, 1, peer);
    }
    sums[t] = acc;
}

// ---- set-up and checks ---------------------------------------------------------------------------

__host__ __device__ inline unsigned char pattern(int pe, size_t i) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(pe + 1) * 0x9E3779B9u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    return static_cast<unsigned char>(x ^ (x >> 13));
}

__global__ void fill_pattern(char *buf, size_t bytes, int pe) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = static_cast<char>(pattern(pe, i));
}

__global__ void fill_index(long long *w, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        w[i] = static_cast<long long>(i);
}

// Counts bytes of buf that differ from PE pe's pattern.
__global__ void check_pattern(const char *buf, size_t bytes, int pe, unsigned long long *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x)
        if (static_cast<unsigned char>(buf[i]) != pattern(pe, i)) atomicAdd(bad, 1ull);
}

// Counts words w[j] != j + 1 (the p throughput targets).
__global__ void check_p_words(const long long *w, size_t n, unsigned long long *bad) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        if (w[j] != static_cast<long long>(j + 1)) atomicAdd(bad, 1ull);
}

// Counts counters c[t] != want.
__global__ void check_counters(const uint64_t *c, size_t n, uint64_t want, unsigned long long *bad) {
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < n;
         t += (size_t)gridDim.x * blockDim.x)
        if (c[t] != want) atomicAdd(bad, 1ull);
}

// Counts threads whose g sum is not sum over i of (i * n + t).
__global__ void check_g_sums(const long long *sums, size_t n, unsigned long long *bad) {
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < n;
         t += (size_t)gridDim.x * blockDim.x) {
        const long long ops = kTputOps;
        const long long want = static_cast<long long>(n) * (ops * (ops - 1) / 2) +
                               ops * static_cast<long long>(t);
        if (sums[t] != want) atomicAdd(bad, 1ull);
    }
}

// PE 1 reads what PE 0 wrote to expect.
__global__ void fetch_expect(long long *dst, const long long *src, int from) {
    nvshmem_getmem(dst, src, kExpect * sizeof(long long), from);
}

static int g_failed = 0;

// One CHECK line; `fmt` and the rest say what was found when the check failed.
__attribute__((format(printf, 3, 4))) static void report(const char *what, bool ok,
                                                         const char *fmt, ...) {
    if (ok) {
        printf("CHECK|%s|ok\n", what);
        return;
    }
    g_failed = 1;
    char detail[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    printf("CHECK|%s|FAILED %s\n", what, detail);
}

// Runs a kernel that counts bad items into a fresh counter; returns the count.
template <typename Launch>
static unsigned long long count_bad(unsigned long long *bad, Launch launch) {
    TEST_CUDA(cudaMemset(bad, 0, sizeof *bad));
    launch();
    TEST_CUDA(cudaGetLastError());
    unsigned long long n = 0;
    TEST_CUDA(cudaMemcpy(&n, bad, sizeof n, cudaMemcpyDeviceToHost));
    return n;
}

// ---- the measurements (PE 0) ---------------------------------------------------------------------

static Rounds *g_rounds; // device

// Launches a latency kernel, prints its LAT line; returns the operations it did.
template <typename Launch>
static long long latency(const char *name, size_t bytes, Launch launch) {
    launch();
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    Rounds r;
    TEST_CUDA(cudaMemcpy(&r, g_rounds, sizeof r, cudaMemcpyDeviceToHost));
    std::vector<double> us(kRounds);
    for (int i = 0; i < kRounds; i++) us[i] = r.ns[i] * 1e-3 / r.iters;
    std::sort(us.begin(), us.end());
    printf("LAT|%s|%zu|%.3f\n", name, bytes, us[kRounds / 2]);
    fflush(stdout);
    return kWarm + static_cast<long long>(kRounds) * r.iters;
}

static int *g_claim; // device: set by the block that measured (scalar kernels)
static int g_sms;     // the GPU's SMs

// A scalar operation's latency depends on where its CTA runs: from half of the SMs the
// target's L2 slice is near, from the others far (H200: about 0.16 against 0.26 us for an
// atomic), so a single launch lands in either mode. The kernel is run once from every SM in
// turn; LAT is the mean over the SMs of each SM's median round (the mean, not the median: the
// SMs split into two groups, and a median would pick one). LATSM gives the spread: the
// fastest SM, the mean, the slowest, and how many SMs were measured.
template <int Op>
static void scalar_latency(const char *name, const Sym &s, int peer, long long *ops) {
    std::vector<double> per_sm;
    for (int sm = 0; sm < g_sms; sm++) {
        for (int attempt = 0; attempt < 4; attempt++) { // the grid may leave an SM empty
            TEST_CUDA(cudaMemset(g_claim, 0, sizeof *g_claim));
            scalar_kernel<Op><<<g_sms, 1>>>(s.scalar, s.counters, peer, 0, *ops, sm, g_claim,
                                            g_rounds);
            TEST_CUDA(cudaGetLastError());
            TEST_CUDA(cudaDeviceSynchronize());
            int ran = 0;
            TEST_CUDA(cudaMemcpy(&ran, g_claim, sizeof ran, cudaMemcpyDeviceToHost));
            if (!ran) continue;
            Rounds r;
            TEST_CUDA(cudaMemcpy(&r, g_rounds, sizeof r, cudaMemcpyDeviceToHost));
            std::vector<double> us(kRounds);
            for (int i = 0; i < kRounds; i++) us[i] = r.ns[i] * 1e-3 / r.iters;
            std::sort(us.begin(), us.end());
            per_sm.push_back(us[kRounds / 2]);
            *ops += kWarm + static_cast<long long>(kRounds) * r.iters;
            break;
        }
    }
    if (per_sm.empty()) {
        report(name, false, "no launch ran on any SM");
        return;
    }
    double sum = 0;
    for (double u : per_sm) sum += u;
    const double mean = sum / static_cast<double>(per_sm.size());
    std::sort(per_sm.begin(), per_sm.end());
    printf("LAT|%s|8|%.3f\n", name, mean);
    printf("LATSM|%s|%.3f|%.3f|%.3f|%zu of %d SMs\n", name, per_sm.front(), mean, per_sm.back(),
           per_sm.size(), g_sms);
    fflush(stdout);
}

template <int Op, int Sc>
static long long mem_latencies(const Sym &s, int peer) {
    long long ops = 0;
    char name[64];
    snprintf(name, sizeof name, "%s_%s", kMemName[Op], kScopeName[Sc]);
    for (size_t bytes = 4; bytes <= kMaxBytes; bytes *= 4) {
        const size_t b = bytes == 4 ? 8 : bytes; // 8 B, then 16 B ... 64 KiB
        char *dst = Op == M_GET ? s.get_dst : s.put_dst;
        const char *src = Op == M_GET ? s.pub : s.src;
        ops += latency(name, b, [&] {
            mem_kernel<Op, Sc><<<1, kScopeThreads[Sc]>>>(dst, src, s.counters + 4, b, peer, g_rounds);
        });
    }
    return ops;
}

template <int Op>
static void throughput(const Sym &s, int peer, long long *sums, cudaEvent_t a, cudaEvent_t b) {
    long long *words = Op == T_P                                    ? s.p_words
                       : Op == T_G                                  ? s.g_words
                       : Op == T_FETCH_ADD_EACH                     ? reinterpret_cast<long long *>(s.fadd_each)
                       : Op == T_ADD_EACH                           ? reinterpret_cast<long long *>(s.add_each)
                       : Op == T_FETCH_ADD_ONE                      ? reinterpret_cast<long long *>(s.counters + 2)
                                                                    : reinterpret_cast<long long *>(s.counters + 3);
    float best = 0;
    for (int run = 0; run <= kTputRuns; run++) { // run 0: warm-up
        TEST_CUDA(cudaEventRecord(a));
        tput_kernel<Op><<<kTputCtas, kTputThreads>>>(words, peer, sums);
        TEST_CUDA(cudaEventRecord(b));
        TEST_CUDA(cudaGetLastError());
        TEST_CUDA(cudaEventSynchronize(b));
        float ms = 0;
        TEST_CUDA(cudaEventElapsedTime(&ms, a, b));
        if (run > 0 && (best == 0 || ms < best)) best = ms;
    }
    const double ops = static_cast<double>(kTputThreadsAll) *
                       (Op == T_P || Op == T_G ? kTputOps : kTputAmoOps);
    printf("TPUT|%s|%.4e\n", kTputName[Op], ops / (best * 1e-3));
    fflush(stdout);
}

static void measure(const Sym &s, int peer, long long *expect) {
    long long ops[kExpect] = {0};
    scalar_latency<S_P_INT64>("p_int64", s, peer, &ops[E_P_INT64]);
    scalar_latency<S_P_DOUBLE>("p_double", s, peer, &ops[E_P_DOUBLE]);
    long long ignored = 0;
    scalar_latency<S_G_INT64>("g_int64", s, peer, &ignored);
    scalar_latency<S_G_DOUBLE>("g_double", s, peer, &ignored);
    mem_latencies<M_PUT, SCOPE_THREAD>(s, peer);
    mem_latencies<M_PUT, SCOPE_WARP>(s, peer);
    mem_latencies<M_PUT, SCOPE_BLOCK>(s, peer);
    mem_latencies<M_GET, SCOPE_THREAD>(s, peer);
    mem_latencies<M_GET, SCOPE_WARP>(s, peer);
    mem_latencies<M_GET, SCOPE_BLOCK>(s, peer);
    ops[E_SIGNAL] += mem_latencies<M_PUT_SIGNAL, SCOPE_THREAD>(s, peer);
    ops[E_SIGNAL] += mem_latencies<M_PUT_SIGNAL, SCOPE_WARP>(s, peer);
    ops[E_SIGNAL] += mem_latencies<M_PUT_SIGNAL, SCOPE_BLOCK>(s, peer);
    scalar_latency<S_FETCH_ADD>("amo_fetch_add_uint64", s, peer, &ops[E_FETCH_ADD]);
    scalar_latency<S_COMPARE_SWAP>("amo_compare_swap_uint64", s, peer, &ops[E_COMPARE_SWAP]);
    scalar_latency<S_WAIT>("signal_wait_until_set", s, peer, &ignored);

    long long *sums = nullptr;
    TEST_CUDA(cudaMalloc(&sums, kTputThreadsAll * sizeof(long long)));
    cudaEvent_t a, b;
    TEST_CUDA(cudaEventCreate(&a));
    TEST_CUDA(cudaEventCreate(&b));
    throughput<T_P>(s, peer, sums, a, b);
    throughput<T_G>(s, peer, sums, a, b);
    unsigned long long *bad = nullptr;
    TEST_CUDA(cudaMalloc(&bad, sizeof *bad));
    const unsigned long long g_bad =
        count_bad(bad, [&] { check_g_sums<<<264, 512>>>(sums, kTputThreadsAll, bad); });
    report("g_int64 throughput: every thread's sum of the words it read", g_bad == 0,
           "%llu of %zu threads wrong", g_bad, kTputThreadsAll);
    throughput<T_FETCH_ADD_ONE>(s, peer, sums, a, b);
    throughput<T_FETCH_ADD_EACH>(s, peer, sums, a, b);
    throughput<T_ADD_ONE>(s, peer, sums, a, b);
    throughput<T_ADD_EACH>(s, peer, sums, a, b);
    ops[E_TPUT_LAUNCHES] = kTputRuns + 1;

    // The get destination holds the peer's pattern (every getmem read [0, bytes) of it).
    const unsigned long long get_bad =
        count_bad(bad, [&] { check_pattern<<<64, 256>>>(s.get_dst, kMaxBytes, peer, bad); });
    report("getmem: bytes read from the peer", get_bad == 0, "%llu of %zu bytes wrong", get_bad,
           kMaxBytes);
    TEST_CUDA(cudaFree(bad));
    TEST_CUDA(cudaEventDestroy(a));
    TEST_CUDA(cudaEventDestroy(b));
    TEST_CUDA(cudaFree(sums));
    for (int i = 0; i < kExpect; i++) expect[i] = ops[i];
}

// ---- PE 1's checks -------------------------------------------------------------------------------

static void check_target(const Sym &s, const long long *e, int from) {
    unsigned long long *bad = nullptr;
    TEST_CUDA(cudaMalloc(&bad, sizeof *bad));
    const unsigned long long put_bad =
        count_bad(bad, [&] { check_pattern<<<64, 256>>>(s.put_dst, kMaxBytes, from, bad); });
    report("putmem/putmem_signal: bytes that landed", put_bad == 0, "%llu of %zu bytes wrong",
           put_bad, kMaxBytes);
    uint64_t c[6];
    long long sc[2];
    TEST_CUDA(cudaMemcpy(c, s.counters, sizeof c, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(sc, s.scalar, sizeof sc, cudaMemcpyDeviceToHost));
    double last_d = 0;
    memcpy(&last_d, &sc[1], sizeof last_d);
    report("p_int64: the last value", sc[0] == e[E_P_INT64] - 1, "%lld, want %lld", sc[0],
           e[E_P_INT64] - 1);
    report("p_double: the last value", last_d == static_cast<double>(e[E_P_DOUBLE] - 1),
           "%g, want %lld", last_d, e[E_P_DOUBLE] - 1);
    report("putmem_signal: the signal counts every SIGNAL_ADD",
           c[4] == static_cast<uint64_t>(e[E_SIGNAL]), "%llu, want %lld",
           static_cast<unsigned long long>(c[4]), e[E_SIGNAL]);
    report("amo_fetch_add latency counter", c[0] == static_cast<uint64_t>(e[E_FETCH_ADD]),
           "%llu, want %lld", static_cast<unsigned long long>(c[0]), e[E_FETCH_ADD]);
    report("amo_compare_swap: every swap succeeded", c[1] == static_cast<uint64_t>(e[E_COMPARE_SWAP]),
           "%llu, want %lld", static_cast<unsigned long long>(c[1]), e[E_COMPARE_SWAP]);
    const uint64_t per_thread = static_cast<uint64_t>(e[E_TPUT_LAUNCHES]) * kTputAmoOps;
    const uint64_t one = per_thread * kTputThreadsAll;
    report("amo_fetch_add_one: the counter's total", c[2] == one, "%llu, want %llu",
           static_cast<unsigned long long>(c[2]), static_cast<unsigned long long>(one));
    report("amo_add_one: the counter's total", c[3] == one, "%llu, want %llu",
           static_cast<unsigned long long>(c[3]), static_cast<unsigned long long>(one));
    const unsigned long long fadd_bad = count_bad(bad, [&] {
        check_counters<<<264, 512>>>(s.fadd_each, kTputThreadsAll, per_thread, bad);
    });
    report("amo_fetch_add_distinct: every counter's total", fadd_bad == 0,
           "%llu of %zu counters wrong", fadd_bad, kTputThreadsAll);
    const unsigned long long add_bad = count_bad(bad, [&] {
        check_counters<<<264, 512>>>(s.add_each, kTputThreadsAll, per_thread, bad);
    });
    report("amo_add_distinct: every counter's total", add_bad == 0, "%llu of %zu counters wrong",
           add_bad, kTputThreadsAll);
    const size_t pw = static_cast<size_t>(kTputOps) * kTputThreadsAll;
    const unsigned long long p_bad =
        count_bad(bad, [&] { check_p_words<<<264, 512>>>(s.p_words, pw, bad); });
    report("p_int64 throughput: every word", p_bad == 0, "%llu of %zu words wrong", p_bad, pw);
    TEST_CUDA(cudaFree(bad));
}

// ---- main ------------------------------------------------------------------------------------------

template <typename T>
static T *sym_alloc(size_t count, int me) {
    void *p = nvshmem_malloc(count * sizeof(T));
    if (p == nullptr) {
        fprintf(stderr, "latency PE %d: nvshmem_malloc(%zu) failed\n", me, count * sizeof(T));
        exit(2);
    }
    TEST_CUDA(cudaMemset(p, 0, count * sizeof(T)));
    return static_cast<T *>(p);
}

int main() {
    test_init();
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    const int peer = npes > 1 ? 1 : 0;
    const size_t words = static_cast<size_t>(kTputOps) * kTputThreadsAll;
    Sym s;
    s.put_dst = sym_alloc<char>(kMaxBytes, me);
    s.src = sym_alloc<char>(kMaxBytes, me);
    s.pub = sym_alloc<char>(kMaxBytes, me);
    s.get_dst = sym_alloc<char>(kMaxBytes, me);
    s.scalar = sym_alloc<long long>(8, me);
    s.counters = sym_alloc<uint64_t>(8, me);
    s.fadd_each = sym_alloc<uint64_t>(kTputThreadsAll, me);
    s.add_each = sym_alloc<uint64_t>(kTputThreadsAll, me);
    s.p_words = sym_alloc<long long>(words, me);
    s.g_words = sym_alloc<long long>(words, me);
    s.expect = sym_alloc<long long>(kExpect, me);
    fill_pattern<<<64, 256>>>(s.src, kMaxBytes, me);
    fill_pattern<<<64, 256>>>(s.pub, kMaxBytes, me);
    fill_index<<<264, 512>>>(s.g_words, words);
    TEST_CUDA(cudaGetLastError());
    const uint64_t one = 1;
    TEST_CUDA(cudaMemcpy(s.counters + 5, &one, sizeof one, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMalloc(&g_rounds, sizeof(Rounds)));
    TEST_CUDA(cudaMalloc(&g_claim, sizeof *g_claim));
    {
        int dev = 0;
        TEST_CUDA(cudaGetDevice(&dev));
        TEST_CUDA(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev));
    }
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    // PE 0 measures; PE 1 waits in the barrier meanwhile.
    if (me == 0) {
        printf("latency: %d PEs, PE 0 -> PE %d; LAT: median of %d rounds' mean (globaltimer, "
               "one CTA); TPUT: best of %d launches, %d x %d threads\n",
               npes, peer, kRounds, kTputRuns, kTputCtas, kTputThreads);
        fflush(stdout);
        long long expect[kExpect];
        measure(s, peer, expect);
        TEST_CUDA(cudaMemcpy(s.expect, expect, sizeof expect, cudaMemcpyHostToDevice));
        TEST_CUDA(cudaDeviceSynchronize());
    }
    nvshmem_barrier_all();

    if (me == peer) {
        long long *e_dev = nullptr;
        TEST_CUDA(cudaMalloc(&e_dev, kExpect * sizeof(long long)));
        fetch_expect<<<1, 1>>>(e_dev, s.expect, 0);
        TEST_CUDA(cudaGetLastError());
        long long e[kExpect];
        TEST_CUDA(cudaMemcpy(e, e_dev, sizeof e, cudaMemcpyDeviceToHost));
        TEST_CUDA(cudaFree(e_dev));
        check_target(s, e, 0);
    }
    fflush(stdout);
    nvshmem_barrier_all();
    TEST_CUDA(cudaFree(g_claim));
    TEST_CUDA(cudaFree(g_rounds));
    nvshmem_free(s.expect);
    nvshmem_free(s.g_words);
    nvshmem_free(s.p_words);
    nvshmem_free(s.add_each);
    nvshmem_free(s.fadd_each);
    nvshmem_free(s.counters);
    nvshmem_free(s.scalar);
    nvshmem_free(s.get_dst);
    nvshmem_free(s.pub);
    nvshmem_free(s.src);
    nvshmem_free(s.put_dst);
    nvshmem_finalize();
    return g_failed;
}
