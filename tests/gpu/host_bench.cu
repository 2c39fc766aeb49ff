// host_bench.cu -- the host API's speed where issue 14 measured niin-rs behind NVSHMEM:
// nvshmemx_barrier_all_on_stream / sync_all_on_stream, host-initiated nvshmem_putmem
// (blocking) bandwidth, and nvshmem_malloc + nvshmem_free.
//
// One source, built against niin-rs and against NVSHMEM 3.4.5 (scripts/gpu/build-device-
// tests.sh: host_bench_niin, host_bench_nvshmem) and run side by side under one launcher
// (test_init.h: TEST_UID_FILE). NVSHMEM API only. Every PE takes part in the collective
// rows; PE 0 issues the puts while the others wait in a barrier. Wall-clock times
// (steady_clock), each row the median of 5 rounds.
//
// Output (PE 0), one line per row:
//   HB|<op>|<bytes>|<us per op>|<GB/s or 0>
//   ops: barrier_all_on_stream, sync_all_on_stream (bytes 0), putmem (4 KiB ... 64 MiB) with
//        two references beside it (ref_memcpy_ptr_sync, ref_putmem_on_stream: putref_us),
//        malloc_free (4 KiB, 1 MiB, 64 MiB), barrier_all (the blocking nvshmem_barrier_all;
//        with malloc_free, what niin-rs's collective-mismatch check, NIIN_CHECK_COLLECTIVES,
//        adds to on NCCL)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "test_init.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

constexpr int kRounds = 5;

// `iters` stream barriers (or syncs) back to back on every PE, then a stream synchronize.
double stream_collective(cudaStream_t s, bool sync, int iters) {
    std::vector<double> rounds;
    for (int r = 0; r < kRounds; ++r) {
        nvshmem_barrier_all();
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) {
            if (sync)
                nvshmemx_sync_all_on_stream(s);
            else
                nvshmemx_barrier_all_on_stream(s);
        }
        TEST_CUDA(cudaStreamSynchronize(s));
        rounds.push_back(us_since(t0) / iters);
    }
    return median(rounds);
}

// PE 0 puts `bytes` from a device buffer into PE 1's symmetric buffer `iters` times, then
// quiet; the others wait in the barrier after.
double putmem_us(void *sym, const void *src, size_t bytes, int iters, int me) {
    std::vector<double> rounds;
    for (int r = 0; r < kRounds; ++r) {
        nvshmem_barrier_all();
        const auto t0 = Clock::now();
        if (me == 0) {
            for (int i = 0; i < iters; ++i) nvshmem_putmem(sym, src, bytes, 1);
            nvshmem_quiet();
        }
        const double us = us_since(t0) / iters;
        nvshmem_barrier_all();
        rounds.push_back(us);
    }
    return median(rounds);
}

// Two references for the putmem rows, on PE 0 only: `how` 1 = cudaMemcpyAsync into
// nvshmem_ptr(sym, 1) on `s` and a synchronize per copy (a blocking put done by hand);
// 2 = nvshmemx_putmem_on_stream `iters` times and one synchronize.
double putref_us(int how, cudaStream_t s, void *sym, const void *src, size_t bytes, int iters,
                 int me) {
    std::vector<double> rounds;
    void *peer = nvshmem_ptr(sym, 1);
    for (int r = 0; r < kRounds; ++r) {
        nvshmem_barrier_all();
        const auto t0 = Clock::now();
        if (me == 0) {
            for (int i = 0; i < iters; ++i) {
                if (how == 1 && peer != nullptr) {
                    TEST_CUDA(cudaMemcpyAsync(peer, src, bytes, cudaMemcpyDefault, s));
                    TEST_CUDA(cudaStreamSynchronize(s));
                } else if (how == 2) {
                    nvshmemx_putmem_on_stream(sym, src, bytes, 1, s);
                }
            }
            TEST_CUDA(cudaStreamSynchronize(s));
        }
        const double us = us_since(t0) / iters;
        nvshmem_barrier_all();
        rounds.push_back(us);
    }
    return median(rounds);
}

// `iters` collective nvshmem_malloc(bytes) + nvshmem_free pairs.
double malloc_free_us(size_t bytes, int iters) {
    std::vector<double> rounds;
    for (int r = 0; r < kRounds; ++r) {
        nvshmem_barrier_all();
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) {
            void *p = nvshmem_malloc(bytes);
            if (p == nullptr) {
                fprintf(stderr, "host_bench: nvshmem_malloc(%zu) failed\n", bytes);
                exit(2);
            }
            nvshmem_free(p);
        }
        rounds.push_back(us_since(t0) / iters);
    }
    return median(rounds);
}

// `iters` blocking nvshmem_barrier_all calls (host-side collective; its time includes the
// other PEs' arrival).
double barrier_all_us(int iters) {
    std::vector<double> rounds;
    for (int r = 0; r < kRounds; ++r) {
        nvshmem_barrier_all();
        const auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) nvshmem_barrier_all();
        rounds.push_back(us_since(t0) / iters);
    }
    return median(rounds);
}

}  // namespace

int main() {
    test_init();
    const int me = nvshmem_my_pe();
    const int n = nvshmem_n_pes();
    if (n < 2) {
        if (me == 0) fprintf(stderr, "host_bench: needs 2 PEs or more, got %d\n", n);
        nvshmem_finalize();
        return 2;
    }
    cudaStream_t s;
    TEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    const double bar = stream_collective(s, false, 20);
    const double syn = stream_collective(s, true, 20);
    if (me == 0) {
        printf("HB|barrier_all_on_stream|0|%.2f|0\n", bar);
        printf("HB|sync_all_on_stream|0|%.2f|0\n", syn);
    }

    const size_t max_bytes = size_t(64) << 20;
    void *sym = nvshmem_malloc(max_bytes);
    void *src = nullptr;
    TEST_CUDA(cudaMalloc(&src, max_bytes));
    TEST_CUDA(cudaMemset(src, 7, max_bytes));
    TEST_CUDA(cudaDeviceSynchronize());
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        const int iters = bytes <= (size_t(1) << 20) ? 50 : 5;
        const double us = putmem_us(sym, src, bytes, iters, me);
        if (me == 0) printf("HB|putmem|%zu|%.2f|%.3f\n", bytes, us, bytes / us / 1e3);
        const double cp = putref_us(1, s, sym, src, bytes, iters, me);
        if (me == 0 && nvshmem_ptr(sym, 1) != nullptr)
            printf("HB|ref_memcpy_ptr_sync|%zu|%.2f|%.3f\n", bytes, cp, bytes / cp / 1e3);
        const double os = putref_us(2, s, sym, src, bytes, iters, me);
        if (me == 0) printf("HB|ref_putmem_on_stream|%zu|%.2f|%.3f\n", bytes, os, bytes / os / 1e3);
    }
    nvshmem_free(sym);
    TEST_CUDA(cudaFree(src));

    for (size_t bytes : {size_t(4096), size_t(1) << 20, size_t(64) << 20}) {
        const double us = malloc_free_us(bytes, 10);
        if (me == 0) printf("HB|malloc_free|%zu|%.2f|0\n", bytes, us);
    }
    const double ba = barrier_all_us(20);
    if (me == 0) printf("HB|barrier_all|0|%.2f|0\n", ba);
    fflush(stdout);
    TEST_CUDA(cudaStreamDestroy(s));
    nvshmem_barrier_all();
    nvshmem_finalize();
    return 0;
}
