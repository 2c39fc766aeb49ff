// barrier_lat.cu -- latency of the device barriers over NVSHMEM_TEAM_WORLD, built against
// niin-rs and against NVSHMEM 3.4.5 from this one source (NVSHMEM API only).
//
// Rows (one kernel of one CTA per PE; every PE runs it): nvshmem_barrier_all and
// nvshmem_sync_all called by thread 0, and nvshmemx_barrier_all_block /
// nvshmemx_sync_all_block called by a 256-thread CTA. Each row: BARRIER_LAT_ITERS barriers
// (default 2000) after 100 of warm-up, timed with CUDA events on PE 0; printed as
// "ROW|<name>|<PEs>|<us per barrier>". BARRIER_LAT_REPS (default 3) repeats every row, the
// rows interleaved, so drift shows as spread rather than as a difference between rows.
#include <cstdio>
#include <cstdlib>

#include "test_init.h"

enum Row { kBarrierThread, kSyncThread, kBarrierBlock, kSyncBlock, kRows };
static const char *const kRowName[] = {"barrier_all", "sync_all", "barrier_all_block",
                                       "sync_all_block"};

__global__ void run(int row, int iters) {
    for (int i = 0; i < iters; ++i) {
        switch (row) {
        case kBarrierThread:
            if (threadIdx.x == 0) nvshmem_barrier_all();
            break;
        case kSyncThread:
            if (threadIdx.x == 0) nvshmem_sync_all();
            break;
        case kBarrierBlock: nvshmemx_barrier_all_block(); break;
        default: nvshmemx_sync_all_block(); break;
        }
        __syncthreads();
    }
}

int main() {
    test_init();
    const int me = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();
    const char *it = getenv("BARRIER_LAT_ITERS");
    const char *rp = getenv("BARRIER_LAT_REPS");
    const int iters = it != nullptr ? atoi(it) : 2000;
    const int reps = rp != nullptr ? atoi(rp) : 3;
    cudaEvent_t a, b;
    TEST_CUDA(cudaEventCreate(&a));
    TEST_CUDA(cudaEventCreate(&b));
    for (int rep = 0; rep < reps; ++rep) {
        for (int row = 0; row < kRows; ++row) {
            const int threads = row >= kBarrierBlock ? 256 : 32;
            run<<<1, threads>>>(row, 100);
            TEST_CUDA(cudaGetLastError());
            TEST_CUDA(cudaDeviceSynchronize());
            nvshmem_barrier_all();
            TEST_CUDA(cudaEventRecord(a));
            run<<<1, threads>>>(row, iters);
            TEST_CUDA(cudaGetLastError());
            TEST_CUDA(cudaEventRecord(b));
            TEST_CUDA(cudaEventSynchronize(b));
            float ms = 0;
            TEST_CUDA(cudaEventElapsedTime(&ms, a, b));
            if (me == 0) printf("ROW|%s|%d|%.3f\n", kRowName[row], npes, ms * 1000.0 / iters);
            fflush(stdout);
            nvshmem_barrier_all();
        }
    }
    nvshmem_finalize();
    return 0;
}
