// Device collectives' time per operation and bandwidth on NVSHMEM_TEAM_WORLD, by one block of
// 1024 threads; and, in the niin-rs build, NCCL's own collectives on the same buffers.
//
// NVSHMEM API only: one source, built against niin-rs and against NVSHMEM 3.4.5
// (-DTEST_NVSHMEM, which leaves out the NCCL part) and run side by side by
// scripts/gpu/device-tests.sh (PART collectives). Start-up: test_init.h.
//
// Collectives (one kernel per collective, one CTA of 1024 threads -- fewer only where the
// kernel's registers do not allow it, see below -- every thread calling with the same
// arguments):
//   reduce     nvshmemx_float_sum_reduce_block(WORLD, dst, src, bytes / 4)
//   fcollect   nvshmemx_fcollectmem_block(WORLD, dst, src, bytes)
//   alltoall   nvshmemx_alltoallmem_block(WORLD, dst, src, bytes)
//   broadcast  nvshmemx_broadcastmem_block(WORLD, dst, src, bytes, 0)
// (NVSHMEM 3.4.5 defines all four block forms as device functions in
// device/nvshmemx_coll_defines.cuh.) `bytes` is each PE's contribution: the reduced array,
// or the block of fcollect / alltoall / broadcast: 8 B, 64 B, 512 B, 4 KiB, 32 KiB, 256 KiB,
// 2 MiB, 16 MiB, 64 MiB.
// Host forms on a stream (both builds): nvshmemx_float_sum_reduce_on_stream,
// nvshmemx_fcollectmem_on_stream, nvshmemx_alltoallmem_on_stream and
// nvshmemx_broadcastmem_on_stream (root 0), NVSHMEM_TEAM_WORLD, `iters` calls enqueued back to
// back on the stream, timed and checked as the device ones.
// NCCL (niin-rs build only; NCCL is dlopen'ed, NIIN_NCCL_LIBRARY or libnccl.so.2, never
// linked): ncclAllReduce (float, sum), ncclAllGather, ncclAlltoAll (when the loaded NCCL has
// it), ncclBroadcast (root 0), bytes as above, on a communicator of its own
// (ncclCommInitRank; PE 0's unique id reaches the others through the symmetric heap with the
// host nvshmem_broadcastmem), on one cudaStream, one NCCL call per operation.
//
// Each (collective, size): the source is filled and the destination poisoned, host barrier;
// one launch of 2 warm-up operations; one launch of 1 operation, timed (cudaEvents) to pick
// `iters`: about kTargetS seconds' worth, at least kMinIters and at most kMaxIters, but no more
// than kCapS seconds' worth (two PEs time-share the one GPU, so one collective may take
// milliseconds); PE 0's choice goes to every PE (nvshmem_int_p, host barrier). Then one launch
// (NCCL: `iters` calls enqueued back to back) of `iters` operations between two cudaEvents:
//   us per op = time / iters
//   GB/s      = algorithm bytes * iters / time / 1e9, where algorithm bytes = bytes for
//               reduce and broadcast, bytes * npes for fcollect and alltoall (what lands in
//               each PE's destination)
// Afterwards every PE checks its destination of every size (NCCL's too): float values are
// small integers, so the sum is exact in any order; bytes are a hash of (source PE, block,
// word).
//
// COLL_BW_PARTS (environment, optional): a comma-separated subset of "device,stream,nccl", the
// parts to run (default: all three); e.g. COLL_BW_PARTS=device for interleaved runs of several
// builds that compare the device collectives only.
//
// Output (PE 0), '|'-separated, one line per (implementation, collective, size):
//   COLLPES|<npes>                     (first; then the COLLTHREADS lines, see below)
//   COLL|<impl>|<collective>|<bytes>|<us per op>|<GB/s>|<iters>
// impl: niin (niin-rs build), nvshmem (-DTEST_NVSHMEM), niin-stream / nvshmem-stream (the host
// forms on a stream, below) or nccl; collective: reduce, fcollect,
// alltoall, broadcast. "SKIP nccl: <reason>" / "SKIP nccl alltoall" when NCCL (or its
// ncclAlltoAll) cannot be used. A failed check is printed by its PE ("data check: FAILED
// <detail>"); at the end PE 0 prints "data check: ok (...)" or "data check: FAILED <n>
// check(s) ...". Exit status 1 if a check failed on any PE, 2 for a broken set-up.
//
// No kernel has __launch_bounds__: the API must fit 64 registers a thread by itself for the
// 1024-thread block (niin-rs's collectives are written for that). A kernel whose registers do
// not allow 1024 threads (cudaFuncGetAttributes) runs with as many whole warps as they allow:
// NVSHMEM 3.4.5's -rdc build settles its register count only when linked against
// libnvshmem_device.a, and there its block collectives need 72-196 registers a thread. PE 0
// prints each kernel's block size and registers first:
//   COLLTHREADS|<impl>|<collective>|<threads a block>|<registers a thread>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifndef TEST_NVSHMEM
#include <dlfcn.h>
#endif

#include "test_init.h"

// ---- parameters ------------------------------------------------------------------------------

enum Coll { C_REDUCE, C_FCOLLECT, C_ALLTOALL, C_BROADCAST, kColls };
static const char *const kCollName[kColls] = {"reduce", "fcollect", "alltoall", "broadcast"};
static const size_t kSizes[] = {8,         64,        512,        4u << 10, 32u << 10,
                                256u << 10, 2u << 20, 16u << 20, 64u << 20};
static constexpr int kNumSizes = sizeof kSizes / sizeof kSizes[0];
static constexpr size_t kMaxBytes = 64u << 20;
static constexpr int kThreads = 1024;
static constexpr double kTargetS = 0.2; // time of the timed launch, aimed at
static constexpr double kCapS = 2.0;    // ... and at most (overrides kMinIters)
static constexpr int kMinIters = 5, kMaxIters = 1000;
#ifdef TEST_NVSHMEM
static const char *const kImpl = "nvshmem";
#else
static const char *const kImpl = "niin";
#endif

// ---- kernels ---------------------------------------------------------------------------------

// `iters` collectives back to back by the whole block. One instantiation per collective: the
// loop keeps three values of its own, the collective's registers are the kernel's.
template <int C>
__global__ void coll_kernel(void *dst, const void *src, size_t bytes, int iters) {
#pragma unroll 1
    for (int i = 0; i < iters; i++) {
        if constexpr (C == C_REDUCE)
            nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, static_cast<float *>(dst),
                                            static_cast<const float *>(src), bytes / sizeof(float));
        else if constexpr (C == C_FCOLLECT)
            nvshmemx_fcollectmem_block(NVSHMEM_TEAM_WORLD, dst, src, bytes);
        else if constexpr (C == C_ALLTOALL)
            nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, dst, src, bytes);
        else {
            // Device pass only: NVSHMEM 3.4.5's host header declares nvshmemx_broadcastmem_block
            // without PE_root (its device definition, which this calls, has it).
#ifdef __CUDA_ARCH__
            nvshmemx_broadcastmem_block(NVSHMEM_TEAM_WORLD, dst, src, bytes, 0);
#endif
        }
    }
}

// The 32-bit word `w` of block `block` of PE `pe`'s source (byte collectives).
__host__ __device__ __forceinline__ unsigned word_value(int pe, int block, size_t w) {
    return (static_cast<unsigned>(w) * 2654435761u) ^ (static_cast<unsigned>(block) * 0x9E3779B9u) ^
           (static_cast<unsigned>(pe) * 0x85EBCA6Bu + 0x27D4EB2Fu);
}
// Element `i` of PE `pe`'s reduce source: an integer below 4096 (sums stay exact).
__host__ __device__ __forceinline__ float reduce_value(int pe, size_t i) {
    return static_cast<float>((static_cast<unsigned>(i) * 37u + static_cast<unsigned>(pe) * 11u) % 4096u);
}

// The words (or floats) of one block of `bytes`, and the blocks of each side.
static inline size_t block_words(size_t bytes) { return std::max<size_t>(bytes / 4, 1); }
static inline int src_blocks(int coll, int npes) { return coll == C_ALLTOALL ? npes : 1; }
static inline int dst_blocks(int coll, int npes) {
    return coll == C_FCOLLECT || coll == C_ALLTOALL ? npes : 1;
}

__global__ void fill_kernel(unsigned *src, int coll, size_t wpb, int nblocks, int me) {
    const size_t total = wpb * nblocks;
    for (size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<size_t>(gridDim.x) * blockDim.x) {
        if (coll == C_REDUCE)
            reinterpret_cast<float *>(src)[t] = reduce_value(me, t);
        else
            src[t] = word_value(me, static_cast<int>(t / wpb), t % wpb);
    }
}

// bad[0]: words wrong; bad[1]: the first wrong word (atomicMin; ULLONG_MAX if none).
__global__ void check_kernel(const unsigned *dst, int coll, size_t wpb, int npes, int me,
                             unsigned long long *bad) {
    const size_t total = wpb * (coll == C_FCOLLECT || coll == C_ALLTOALL ? npes : 1);
    for (size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<size_t>(gridDim.x) * blockDim.x) {
        bool ok;
        if (coll == C_REDUCE) {
            float want = 0;
            for (int p = 0; p < npes; p++) want += reduce_value(p, t);
            ok = reinterpret_cast<const float *>(dst)[t] == want;
        } else {
            const int j = static_cast<int>(t / wpb); // the block: from team PE j
            const size_t w = t % wpb;
            unsigned want = coll == C_FCOLLECT   ? word_value(j, 0, w)
                            : coll == C_ALLTOALL ? word_value(j, me, w)
                                                 : word_value(0, 0, w); // broadcast, root 0
            ok = dst[t] == want;
        }
        if (!ok) {
            atomicAdd(&bad[0], 1ull);
            atomicMin(&bad[1], static_cast<unsigned long long>(t));
        }
    }
}

// ---- host helpers ------------------------------------------------------------------------------

struct Bench {
    int me = 0, npes = 1;
    void *src = nullptr, *dst = nullptr; // symmetric, kMaxBytes * npes each
    char *scratch = nullptr;             // symmetric: the small exchanges below
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    unsigned long long *bad = nullptr; // check_kernel's result (device)
    int failures = 0;                  // checks failed on this PE
    int threads[kColls] = {kThreads, kThreads, kThreads, kThreads}; // per collective kernel
};
// scratch: [0, 256) NCCL's unique id (nccl_setup), then the two ints below (zero at start).
static constexpr size_t kIntShare = 256, kIntSum = 260, kScratch = 512;

// Writes `v` into `slot` on every PE (add: atomically adds it), then a quiet. One thread.
__global__ void to_all_kernel(int *slot, int v, int npes, int add) {
    for (int pe = 0; pe < npes; pe++) {
        if (add)
            nvshmem_int_atomic_add(slot, v, pe);
        else
            nvshmem_int_p(slot, v, pe);
    }
    nvshmem_quiet();
}

// The small exchanges between the PEs go through device puts and host barriers, what
// latency.cu and putmem_block_bw.cu already use with both libraries; each ends with a barrier,
// so the next may reuse the slot.
// PE 0's `v` on every PE.
static int share_from_pe0(Bench &b, int v) {
    int *slot = reinterpret_cast<int *>(b.scratch + kIntShare);
    if (b.me == 0) {
        to_all_kernel<<<1, 1, 0, b.stream>>>(slot, v, b.npes, 0);
        TEST_CUDA(cudaGetLastError());
        TEST_CUDA(cudaStreamSynchronize(b.stream));
    }
    nvshmem_barrier_all();
    TEST_CUDA(cudaMemcpy(&v, slot, sizeof v, cudaMemcpyDeviceToHost));
    nvshmem_barrier_all();
    return v;
}

// The sum of every PE's `v`.
static int sum_over_pes(Bench &b, int v) {
    int *slot = reinterpret_cast<int *>(b.scratch + kIntSum);
    to_all_kernel<<<1, 1, 0, b.stream>>>(slot, v, b.npes, 1);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    nvshmem_barrier_all();
    int total = 0;
    TEST_CUDA(cudaMemcpy(&total, slot, sizeof total, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemset(slot, 0, sizeof total));
    nvshmem_barrier_all();
    return total;
}

static int choose_iters(float one_ms) {
    const double t = std::max(static_cast<double>(one_ms) * 1e-3, 1e-7);
    long n = std::lround(kTargetS / t);
    n = std::min<long>(std::max<long>(n, kMinIters), kMaxIters);
    if (static_cast<double>(n) * t > kCapS) n = std::max<long>(1, static_cast<long>(kCapS / t));
    return static_cast<int>(n);
}

// Milliseconds of launch(n) between two events on the stream.
template <typename Launch>
static float timed_ms(Bench &b, Launch &launch, int n) {
    TEST_CUDA(cudaEventRecord(b.start, b.stream));
    launch(n);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaEventRecord(b.stop, b.stream));
    TEST_CUDA(cudaEventSynchronize(b.stop));
    float ms = 0;
    TEST_CUDA(cudaEventElapsedTime(&ms, b.start, b.stop));
    return ms;
}

// One (implementation, collective, size): fill, warm up, pick iters, time, check, print.
template <typename Launch>
static void measure(Bench &b, const char *impl, int coll, size_t bytes, Launch launch) {
    const size_t wpb = block_words(bytes);
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    nvshmem_barrier_all(); // every PE is done with the previous measurement's buffers
    fill_kernel<<<264, 512, 0, b.stream>>>(static_cast<unsigned *>(b.src), coll, wpb,
                                          src_blocks(coll, b.npes), b.me);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaMemsetAsync(b.dst, 0xEE, wpb * 4 * dst_blocks(coll, b.npes), b.stream));
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    nvshmem_barrier_all(); // every PE's source is ready

    launch(2); // warm-up
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    const float one_ms = timed_ms(b, launch, 1);
    const int iters = share_from_pe0(b, choose_iters(one_ms));
    const float ms = timed_ms(b, launch, iters);

    TEST_CUDA(cudaMemsetAsync(b.bad, 0, sizeof(unsigned long long), b.stream));
    TEST_CUDA(cudaMemsetAsync(b.bad + 1, 0xFF, sizeof(unsigned long long), b.stream));
    check_kernel<<<264, 512, 0, b.stream>>>(static_cast<const unsigned *>(b.dst), coll, wpb, b.npes,
                                           b.me, b.bad);
    TEST_CUDA(cudaGetLastError());
    unsigned long long bad[2] = {0, 0};
    TEST_CUDA(cudaMemcpyAsync(bad, b.bad, sizeof bad, cudaMemcpyDeviceToHost, b.stream));
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    if (bad[0] != 0) {
        b.failures++;
        printf("data check: FAILED %s %s %zu B on PE %d: %llu of %zu words wrong, the first at "
               "word %llu\n",
               impl, kCollName[coll], bytes, b.me, bad[0], wpb * dst_blocks(coll, b.npes), bad[1]);
    }
    if (b.me == 0) {
        const double alg = static_cast<double>(bytes) *
                           (coll == C_FCOLLECT || coll == C_ALLTOALL ? b.npes : 1);
        const double s = ms * 1e-3;
        printf("COLL|%s|%s|%zu|%.2f|%.3f|%d\n", impl, kCollName[coll], bytes, s * 1e6 / iters,
               alg * iters / s / 1e9, iters);
    }
    fflush(stdout);
}

static void launch_device(Bench &b, int coll, size_t bytes, int n) {
    const int t = b.threads[coll];
    switch (coll) {
    case C_REDUCE:
        coll_kernel<C_REDUCE><<<1, t, 0, b.stream>>>(b.dst, b.src, block_words(bytes) * 4, n);
        break;
    case C_FCOLLECT: coll_kernel<C_FCOLLECT><<<1, t, 0, b.stream>>>(b.dst, b.src, bytes, n); break;
    case C_ALLTOALL: coll_kernel<C_ALLTOALL><<<1, t, 0, b.stream>>>(b.dst, b.src, bytes, n); break;
    default: coll_kernel<C_BROADCAST><<<1, t, 0, b.stream>>>(b.dst, b.src, bytes, n); break;
    }
}

// The block size of a collective kernel: 1024 threads, or as many whole warps as its
// registers allow (PE 0 prints a COLLTHREADS line). None at all is a broken set-up.
template <typename K>
static int block_threads(const char *name, K kernel, int me) {
    cudaFuncAttributes a;
    TEST_CUDA(cudaFuncGetAttributes(&a, kernel));
    const int t = std::min(kThreads, a.maxThreadsPerBlock / 32 * 32);
    if (t < 32) {
        fprintf(stderr, "PE %d: %s kernel: %d registers a thread, at most %d threads a block\n", me,
                name, a.numRegs, a.maxThreadsPerBlock);
        exit(2);
    }
    if (me == 0) printf("COLLTHREADS|%s|%s|%d|%d\n", kImpl, name, t, a.numRegs);
    return t;
}

// ---- host-initiated collectives on a stream (both builds) --------------------------------------
// `n` calls of the collective's host form on the stream, enqueued back to back:
// nvshmemx_float_sum_reduce_on_stream, nvshmemx_fcollectmem_on_stream,
// nvshmemx_alltoallmem_on_stream, nvshmemx_broadcastmem_on_stream (root 0), on
// NVSHMEM_TEAM_WORLD. Printed as impl "<impl>-stream".
static void launch_host_stream(Bench &b, int coll, size_t bytes, int n) {
    for (int i = 0; i < n; i++) {
        int r = 0;
        switch (coll) {
        case C_REDUCE:
            r = nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, static_cast<float *>(b.dst),
                                                    static_cast<const float *>(b.src), block_words(bytes),
                                                    b.stream);
            break;
        case C_FCOLLECT: r = nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, bytes, b.stream); break;
        case C_ALLTOALL: r = nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, bytes, b.stream); break;
        default: r = nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, b.dst, b.src, bytes, 0, b.stream); break;
        }
        if (r != 0) {
            fprintf(stderr, "PE %d: %s on stream, %zu B: returned %d\n", b.me, kCollName[coll], bytes, r);
            exit(2);
        }
    }
}

// ---- NCCL (niin-rs build only) ------------------------------------------------------------------
#ifndef TEST_NVSHMEM
// The few declarations of nccl.h this needs (NCCL 2.31.2's values): ncclResult_t,
// ncclDataType_t and ncclRedOp_t are C enums (int); ncclUniqueId is 128 bytes, passed by value.
struct NcclUniqueId {
    char internal[128];
};
struct NcclComm;
using NcclCommT = NcclComm *;
static constexpr int kNcclSuccess = 0, kNcclInt8 = 0, kNcclFloat32 = 7, kNcclSum = 0;
using NcclGetVersionFn = int (*)(int *);
using NcclGetUniqueIdFn = int (*)(NcclUniqueId *);
using NcclCommInitRankFn = int (*)(NcclCommT *, int, NcclUniqueId, int);
using NcclCommDestroyFn = int (*)(NcclCommT);
using NcclGetErrorStringFn = const char *(*)(int);
using NcclAllReduceFn = int (*)(const void *, void *, size_t, int, int, NcclCommT, cudaStream_t);
using NcclAllGatherFn = int (*)(const void *, void *, size_t, int, NcclCommT, cudaStream_t);
using NcclAlltoAllFn = int (*)(const void *, void *, size_t, int, NcclCommT, cudaStream_t);
using NcclBroadcastFn = int (*)(const void *, void *, size_t, int, int, NcclCommT, cudaStream_t);

struct Nccl {
    NcclGetVersionFn get_version = nullptr;
    NcclGetUniqueIdFn get_unique_id = nullptr;
    NcclCommInitRankFn comm_init_rank = nullptr;
    NcclCommDestroyFn comm_destroy = nullptr;
    NcclGetErrorStringFn error_string = nullptr;
    NcclAllReduceFn all_reduce = nullptr;
    NcclAllGatherFn all_gather = nullptr;
    NcclAlltoAllFn all_to_all = nullptr; // NULL: not in the loaded NCCL
    NcclBroadcastFn broadcast = nullptr;
    NcclCommT comm = nullptr;
};

template <typename F>
static bool nccl_sym(void *lib, const char *name, F *fn, char *why, size_t whylen) {
    *fn = reinterpret_cast<F>(dlsym(lib, name));
    if (*fn == nullptr) snprintf(why, whylen, "no %s in the library", name);
    return *fn != nullptr;
}

static void nccl_call(const Nccl &n, int r, const char *what) {
    if (r != kNcclSuccess) {
        fprintf(stderr, "%s: NCCL error %d (%s)\n", what, r, n.error_string(r));
        exit(2);
    }
}

// Opens NCCL and makes the communicator, every PE alike; false (after PE 0 printed a SKIP
// line) when any PE could not.
static bool nccl_setup(Bench &b, Nccl &n) {
    const char *path = getenv("NIIN_NCCL_LIBRARY");
    if (path == nullptr || *path == '\0') path = "libnccl.so.2";
    char why[512] = "";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    bool ok = lib != nullptr;
    if (!ok) snprintf(why, sizeof why, "dlopen(%s): %s", path, dlerror());
    ok = ok && nccl_sym(lib, "ncclGetVersion", &n.get_version, why, sizeof why) &&
         nccl_sym(lib, "ncclGetUniqueId", &n.get_unique_id, why, sizeof why) &&
         nccl_sym(lib, "ncclCommInitRank", &n.comm_init_rank, why, sizeof why) &&
         nccl_sym(lib, "ncclCommDestroy", &n.comm_destroy, why, sizeof why) &&
         nccl_sym(lib, "ncclGetErrorString", &n.error_string, why, sizeof why) &&
         nccl_sym(lib, "ncclAllReduce", &n.all_reduce, why, sizeof why) &&
         nccl_sym(lib, "ncclAllGather", &n.all_gather, why, sizeof why) &&
         nccl_sym(lib, "ncclBroadcast", &n.broadcast, why, sizeof why);
    if (ok) n.all_to_all = reinterpret_cast<NcclAlltoAllFn>(dlsym(lib, "ncclAlltoAll"));
    if (!ok) fprintf(stderr, "PE %d: nccl: %s\n", b.me, why);
    int bad = sum_over_pes(b, ok ? 0 : 1);
    if (bad != 0) {
        if (b.me == 0) printf("SKIP nccl: %s\n", ok ? "NCCL cannot be opened on another PE" : why);
        return false;
    }
    int version = 0;
    n.get_version(&version);

    // PE 0's unique id, to every PE through the symmetric heap (scratch: source, destination).
    constexpr size_t kUidSrc = 0, kUidDst = 128;
    NcclUniqueId id;
    memset(&id, 0, sizeof id);
    int r = kNcclSuccess;
    if (b.me == 0) {
        r = n.get_unique_id(&id);
        if (r != kNcclSuccess) snprintf(why, sizeof why, "ncclGetUniqueId: %s", n.error_string(r));
        TEST_CUDA(cudaMemcpy(b.scratch + kUidSrc, &id, sizeof id, cudaMemcpyHostToDevice));
    }
    static_assert(sizeof(NcclUniqueId) == 128, "ncclUniqueId is 128 bytes");
    nvshmem_broadcastmem(NVSHMEM_TEAM_WORLD, b.scratch + kUidDst, b.scratch + kUidSrc, sizeof id, 0);
    TEST_CUDA(cudaMemcpy(&id, b.scratch + kUidDst, sizeof id, cudaMemcpyDeviceToHost));
    if (share_from_pe0(b, r) != kNcclSuccess) {
        if (b.me == 0) printf("SKIP nccl: %s\n", why);
        return false;
    }
    r = n.comm_init_rank(&n.comm, b.npes, id, b.me);
    if (r != kNcclSuccess) {
        snprintf(why, sizeof why, "ncclCommInitRank: %s", n.error_string(r));
        fprintf(stderr, "PE %d: nccl: %s\n", b.me, why);
        n.comm = nullptr;
    }
    bad = sum_over_pes(b, r != kNcclSuccess ? 1 : 0);
    if (bad != 0) {
        if (b.me == 0)
            printf("SKIP nccl: %s\n", r != kNcclSuccess ? why : "ncclCommInitRank failed on another PE");
        if (n.comm != nullptr) n.comm_destroy(n.comm);
        n.comm = nullptr;
        return false;
    }
    if (sum_over_pes(b, n.all_to_all != nullptr ? 0 : 1) != 0) n.all_to_all = nullptr;
    if (b.me == 0) printf("nccl: %s, version %d, %d ranks\n", path, version, b.npes);
    return true;
}

static void nccl_part(Bench &b) {
    Nccl n;
    if (!nccl_setup(b, n)) return;
    for (int coll = 0; coll < kColls; coll++) {
        if (coll == C_ALLTOALL && n.all_to_all == nullptr) {
            if (b.me == 0) printf("SKIP nccl alltoall\n");
            continue;
        }
        for (int k = 0; k < kNumSizes; k++) {
            const size_t bytes = kSizes[k];
            auto launch = [&](int iters) {
                for (int i = 0; i < iters; i++) {
                    switch (coll) {
                    case C_REDUCE:
                        nccl_call(n, n.all_reduce(b.src, b.dst, block_words(bytes), kNcclFloat32, kNcclSum,
                                                  n.comm, b.stream),
                                  "ncclAllReduce");
                        break;
                    case C_FCOLLECT:
                        nccl_call(n, n.all_gather(b.src, b.dst, bytes, kNcclInt8, n.comm, b.stream),
                                  "ncclAllGather");
                        break;
                    case C_ALLTOALL:
                        nccl_call(n, n.all_to_all(b.src, b.dst, bytes, kNcclInt8, n.comm, b.stream),
                                  "ncclAlltoAll");
                        break;
                    default:
                        nccl_call(n, n.broadcast(b.src, b.dst, bytes, kNcclInt8, 0, n.comm, b.stream),
                                  "ncclBroadcast");
                        break;
                    }
                }
            };
            measure(b, "nccl", coll, bytes, launch);
        }
    }
    TEST_CUDA(cudaStreamSynchronize(b.stream));
    nccl_call(n, n.comm_destroy(n.comm), "ncclCommDestroy");
}
#endif // TEST_NVSHMEM

// ---- main ----------------------------------------------------------------------------------------

// Whether COLL_BW_PARTS (unset: every part) names `part`.
static bool part_wanted(const char *part) {
    const char *parts = getenv("COLL_BW_PARTS");
    if (parts == nullptr || *parts == '\0') return true;
    const size_t n = strlen(part);
    for (const char *p = parts; *p != '\0';) {
        const char *end = strchr(p, ',');
        const size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
        if (len == n && strncmp(p, part, n) == 0) return true;
        if (end == nullptr) break;
        p = end + 1;
    }
    return false;
}

int main() {
    test_init();
    Bench b;
    b.me = nvshmem_my_pe();
    b.npes = nvshmem_n_pes();
    const size_t side = kMaxBytes * static_cast<size_t>(b.npes);
    b.src = nvshmem_malloc(side);
    b.dst = nvshmem_malloc(side);
    b.scratch = static_cast<char *>(nvshmem_malloc(kScratch));
    if (b.src == nullptr || b.dst == nullptr || b.scratch == nullptr) {
        fprintf(stderr, "PE %d: nvshmem_malloc of 2 x %zu bytes failed\n", b.me, side);
        return 2;
    }
    TEST_CUDA(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    TEST_CUDA(cudaEventCreate(&b.start));
    TEST_CUDA(cudaEventCreate(&b.stop));
    TEST_CUDA(cudaMalloc(&b.bad, 2 * sizeof(unsigned long long)));
    TEST_CUDA(cudaMemset(b.scratch, 0, kScratch));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    if (b.me == 0) printf("COLLPES|%d\n", b.npes);
    b.threads[C_REDUCE] = block_threads(kCollName[C_REDUCE], coll_kernel<C_REDUCE>, b.me);
    b.threads[C_FCOLLECT] = block_threads(kCollName[C_FCOLLECT], coll_kernel<C_FCOLLECT>, b.me);
    b.threads[C_ALLTOALL] = block_threads(kCollName[C_ALLTOALL], coll_kernel<C_ALLTOALL>, b.me);
    b.threads[C_BROADCAST] = block_threads(kCollName[C_BROADCAST], coll_kernel<C_BROADCAST>, b.me);
    fflush(stdout);

    for (int coll = 0; part_wanted("device") && coll < kColls; coll++)
        for (int k = 0; k < kNumSizes; k++) {
            const size_t bytes = kSizes[k];
            measure(b, kImpl, coll, bytes, [&](int n) { launch_device(b, coll, bytes, n); });
        }
    char stream_impl[32];
    snprintf(stream_impl, sizeof stream_impl, "%s-stream", kImpl);
    bool host_stream = part_wanted("stream");
#ifdef TEST_NVSHMEM
    // NVSHMEM 3.4.5 ends the process in its host collectives on a stream when several PEs share
    // a GPU ("not supported with limited MPG runs"): not measured there.
    int devices = 0;
    TEST_CUDA(cudaGetDeviceCount(&devices));
    if (host_stream && nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) > devices) {
        host_stream = false;
        if (b.me == 0)
            printf("SKIP %s: NVSHMEM 3.4.5 refuses host collectives on a stream with several PEs "
                   "per GPU\n",
                   stream_impl);
    }
#endif
    for (int coll = 0; host_stream && coll < kColls; coll++)
        for (int k = 0; k < kNumSizes; k++) {
            const size_t bytes = kSizes[k];
            measure(b, stream_impl, coll, bytes, [&](int n) { launch_host_stream(b, coll, bytes, n); });
        }
#ifndef TEST_NVSHMEM
    if (part_wanted("nccl")) nccl_part(b);
#endif

    TEST_CUDA(cudaStreamSynchronize(b.stream));
    const int total = sum_over_pes(b, b.failures);
    if (b.me == 0) {
        if (total == 0)
            printf("data check: ok (every size of every collective, %d PE(s))\n", b.npes);
        else
            printf("data check: FAILED %d check(s) over the PEs (lines above)\n", total);
        fflush(stdout);
    }
    nvshmem_barrier_all();
    TEST_CUDA(cudaFree(b.bad));
    TEST_CUDA(cudaEventDestroy(b.start));
    TEST_CUDA(cudaEventDestroy(b.stop));
    TEST_CUDA(cudaStreamDestroy(b.stream));
    nvshmem_free(b.scratch);
    nvshmem_free(b.dst);
    nvshmem_free(b.src);
    nvshmem_finalize();
    return total != 0 ? 1 : 0;
}
