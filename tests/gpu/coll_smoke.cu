// coll_smoke.cu -- one device collective of each kind over NVSHMEM_TEAM_WORLD, each launch
// guarded by a host watchdog that names the step that did not finish: the first program to
// run on a new transport or routing mode (NIIN_GIN_LOOPBACK=1: every peer through the GIN
// proxy, so the collectives take their GIN composition, niin/impl/coll_ll_impl.h).
//
// Steps, each one kernel of one block (a thread, then a warp, then a block calls), checked on
// the host:
//   0. nvshmem_int_p to the next PE, nvshmem_quiet, nvshmem_barrier_all (the transport alone)
//   1. nvshmem_int_sum_reduce, 1 and 3000 elements (3000: several rounds over GIN)
//   2. nvshmem_int_fcollect, 1 and 3000 elements per PE
//   3. nvshmem_int_alltoall, 1 and 3000 elements per PE
//   4. nvshmem_int_broadcast from the last PE, 1 and 3000 elements
//   5. nvshmem_int_sum_reducescatter, 1 and 3000 elements per PE
// A step that does not finish within SMOKE_TIMEOUT_S seconds (default 20) prints
// "HANG|<step>" and ends the process with status 3; a wrong element prints "FAIL|...".
// NVSHMEM API only. Built with -DNIIN_DEBUG_LL=1 a stuck LL wait prints what it sees.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_init.h"

constexpr int kMaxPes = 8;
static int g_failed = 0;
constexpr size_t kBig = 3000;
constexpr size_t kBytes = kBig * kMaxPes * sizeof(int);

enum Kind { KPut, KReduce, KFcollect, KAlltoall, KBroadcast, KReduceScatter };
static const char *const kKindName[] = {"put+quiet+barrier", "sum_reduce", "fcollect", "alltoall",
                                        "broadcast", "sum_reducescatter"};
static const char *const kScopeName[] = {"thread", "warp", "block"};

template <int Scope>
__device__ int call(Kind kind, int *dst, const int *src, size_t n, int root) {
    nvshmem_team_t w = NVSHMEM_TEAM_WORLD;
    switch (kind) {
    case KReduce:
        return Scope == 0   ? nvshmem_int_sum_reduce(w, dst, src, n)
               : Scope == 1 ? nvshmemx_int_sum_reduce_warp(w, dst, src, n)
                            : nvshmemx_int_sum_reduce_block(w, dst, src, n);
    case KFcollect:
        return Scope == 0   ? nvshmem_int_fcollect(w, dst, src, n)
               : Scope == 1 ? nvshmemx_int_fcollect_warp(w, dst, src, n)
                            : nvshmemx_int_fcollect_block(w, dst, src, n);
    case KAlltoall:
        return Scope == 0   ? nvshmem_int_alltoall(w, dst, src, n)
               : Scope == 1 ? nvshmemx_int_alltoall_warp(w, dst, src, n)
                            : nvshmemx_int_alltoall_block(w, dst, src, n);
    case KBroadcast:
        return Scope == 0   ? nvshmem_int_broadcast(w, dst, src, n, root)
               : Scope == 1 ? nvshmemx_int_broadcast_warp(w, dst, src, n, root)
                            : nvshmemx_int_broadcast_block(w, dst, src, n, root);
    case KReduceScatter:
        return Scope == 0   ? nvshmem_int_sum_reducescatter(w, dst, src, n)
               : Scope == 1 ? nvshmemx_int_sum_reducescatter_warp(w, dst, src, n)
                            : nvshmemx_int_sum_reducescatter_block(w, dst, src, n);
    default:
        return 1;
    }
}

template <int Scope>
__global__ void smoke_kernel(Kind kind, int *dst, const int *src, size_t n, int root, int *bad) {
    const bool caller = Scope == 2 || (Scope == 1 ? threadIdx.x < 32 : threadIdx.x == 0);
    if (kind == KPut) {
        if (threadIdx.x == 0) {
            const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
            nvshmem_int_p(dst, 1000 + me, (me + 1) % npes);
            nvshmem_quiet();
            nvshmem_barrier_all();
        }
        return;
    }
    if (!caller) return;
    const int rc = call<Scope>(kind, dst, src, n, root);
    if (rc != 0 && (threadIdx.x & 31) == 0) atomicAdd(bad, 1);
}

// The value of element i of PE p's source.
static int value(int p, size_t i) { return static_cast<int>(p * 100000 + i); }

// Launches and waits at most `limit` seconds (polling: a hung kernel must not hang the check).
template <int Scope>
static void run(Kind kind, int *dst, int *src, size_t n, int *bad, double limit) {
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    std::vector<int> v(kBig * kMaxPes);
    for (size_t i = 0; i < v.size(); i++) v[i] = value(me, i);
    TEST_CUDA(cudaMemcpy(src, v.data(), v.size() * sizeof(int), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemset(dst, 0xff, kBytes));
    TEST_CUDA(cudaMemset(bad, 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();  // dest ready everywhere
    char step[128];
    snprintf(step, sizeof step, "%s, %s, %zu elements", kKindName[kind], kScopeName[Scope], n);
    const auto t0 = std::chrono::steady_clock::now();
    smoke_kernel<Scope><<<1, Scope == 0 ? 32 : Scope == 1 ? 64 : 1024>>>(kind, dst, src, n, npes - 1, bad);
    TEST_CUDA(cudaGetLastError());
    cudaError_t e;
    while ((e = cudaStreamQuery(0)) == cudaErrorNotReady) {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) {
            printf("HANG|%s|PE %d: not done after %.0f s\n", step, me, limit);
            fflush(stdout);
            _exit(3);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (e != cudaSuccess) {
        printf("FAIL|%s|PE %d: %s\n", step, me, cudaGetErrorString(e));
        _exit(3);
    }
    const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
    int nbad = 0;
    TEST_CUDA(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
    std::vector<int> got(kBig * kMaxPes);
    TEST_CUDA(cudaMemcpy(got.data(), dst, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    size_t total = n, wrong = 0, first = 0;
    auto want = [&](size_t i) -> int {
        switch (kind) {
        case KPut: return 1000 + (me + npes - 1) % npes;
        case KReduce: {
            long long s = 0;
            for (int p = 0; p < npes; p++) s += value(p, i);
            return static_cast<int>(s);
        }
        case KReduceScatter: {
            long long s = 0;
            for (int p = 0; p < npes; p++) s += value(p, me * n + i);
            return static_cast<int>(s);
        }
        case KFcollect: return value(static_cast<int>(i / n), i % n);
        case KAlltoall: return value(static_cast<int>(i / n), me * n + i % n);
        default: return value(npes - 1, i);
        }
    };
    if (kind == KPut) total = 1;
    if (kind == KFcollect || kind == KAlltoall) total = n * npes;
    for (size_t i = 0; i < total; i++)
        if (got[i] != want(i) && wrong++ == 0) first = i;
    if (wrong != 0 || nbad != 0)
        g_failed++, printf("FAIL|%s|PE %d: %zu of %zu wrong (first [%zu] = %d, want %d), %d nonzero returns\n",
               step, me, wrong, total, first, got[first], want(first), nbad);
    else
        printf("PASS|%s|PE %d: %.1f ms\n", step, me, ms);
    fflush(stdout);
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    test_init();
    const int npes = nvshmem_n_pes();
    if (npes > kMaxPes) {
        fprintf(stderr, "coll_smoke: at most %d PEs\n", kMaxPes);
        return 2;
    }
    const char *t = getenv("SMOKE_TIMEOUT_S");
    const double limit = t != nullptr ? atof(t) : 20.0;
    int *dst = static_cast<int *>(nvshmem_malloc(kBytes));
    int *src = static_cast<int *>(nvshmem_malloc(kBytes));
    int *bad = nullptr;
    TEST_CUDA(cudaMalloc(&bad, sizeof(int)));
    run<0>(KPut, dst, src, 1, bad, limit);
    for (int k = KReduce; k <= KReduceScatter; k++)
        for (size_t n : {static_cast<size_t>(1), kBig}) {
            run<0>(static_cast<Kind>(k), dst, src, n, bad, limit);
            run<1>(static_cast<Kind>(k), dst, src, n, bad, limit);
            run<2>(static_cast<Kind>(k), dst, src, n, bad, limit);
        }
    nvshmem_barrier_all();
    nvshmem_free(dst);
    nvshmem_free(src);
    cudaFree(bad);
    const int me = nvshmem_my_pe();
    nvshmem_finalize();
    printf("coll_smoke PE %d: %d failed\n", me, g_failed);
    return g_failed == 0 ? 0 : 1;
}
