// conf_launch.cu -- GPU conformance of NVSHMEM's collective launch:
// nvshmemx_collective_launch and nvshmemx_collective_launch_query_gridsize (niin/launch.h in
// niin-rs; the host part of libnvshmem_device.a in NVSHMEM 3.4.5).
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5. Groups:
//   - query_gridsize: for the exchange kernel with 256-, 512- and 1024-thread blocks (and with
//     dynamic shared memory), the answer is the CUDA runtime's resident-CTA count per SM
//     times the SM count, computed here independently, and positive.
//   - device-wide exchange: a grid of exactly query_gridsize CTAs, launched with
//     nvshmemx_collective_launch, 3 rounds: every CTA's thread 0 puts a tag into its word of
//     every PE's buffer, the grid synchronizes (cooperative groups: this needs every CTA
//     resident, which the collective launch guarantees), one CTA runs
//     nvshmemx_barrier_all_block (NVSHMEM allows one collective per team at a time), the grid
//     synchronizes again, and every CTA checks the words of all PEs.
//   - auto grid: gridDims (0, 0, 0) launches the largest resident grid, (query_gridsize, 1, 1);
//     the kernel records its gridDim and synchronizes the grid.
//   - errors: a grid of query_gridsize + 1 CTAs, a grid with some dimensions 0, and a block of
//     2048 threads are not launched (their kernel never runs) and return NVSHMEM's
//     NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED (the block too large may instead fail the
//     occupancy query: NVSHMEMX_ERROR_INTERNAL; either is NVSHMEM's answer, from the same
//     runtime calls); a launch after them works.
#include <cooperative_groups.h>

#include "conf_harness.h"

namespace cg = cooperative_groups;

constexpr int kRounds = 3;

// Round r: thread 0 of CTA b stores tag(r, me, b) into word [me][b] of buffer r % 2 on every
// PE; grid sync; CTA 0 runs the barrier of all PEs; grid sync; thread 0 of CTA b checks word
// [s][b] of every PE s. Two buffers suffice (see device_rma.cu's barrier kernel).
__global__ void exchange_kernel(int *recv, int ctas, int me, int npes, unsigned long long *wrong) {
    cg::grid_group grid = cg::this_grid();
    const int b = static_cast<int>(blockIdx.x);
    for (int r = 0; r < kRounds; r++) {
        int *buf = recv + (r & 1) * npes * ctas;
        if (threadIdx.x == 0)
            for (int pe = 0; pe < npes; pe++)
                nvshmem_int_p(&buf[me * ctas + b], (r + 1) * 1000000 + me * 10000 + b, pe);
        grid.sync();
        if (blockIdx.x == 0) nvshmemx_barrier_all_block();
        grid.sync();
        if (threadIdx.x == 0) {
            volatile int *w = buf;
            for (int s = 0; s < npes; s++)
                if (w[s * ctas + b] != (r + 1) * 1000000 + s * 10000 + b) atomicAdd(wrong, 1ull);
        }
        grid.sync();
    }
}

// Records the grid's size, after a grid sync (all CTAs resident).
__global__ void grid_size_kernel(int *out) {
    cg::this_grid().sync();
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = static_cast<int>(gridDim.x * gridDim.y * gridDim.z);
}

// Sets *flag: the kernel ran.
__global__ void flag_kernel(int *flag) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *flag = 1;
}

static int sm_count() {
    int device = 0, sms = 0;
    TEST_CUDA(cudaGetDevice(&device));
    TEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

static void query_checks() {
    ConfGroup &g = conf_group("nvshmemx_collective_launch_query_gridsize");
    const int sms = sm_count();
    const struct {
        unsigned threads;
        size_t smem;
    } cases[] = {{256, 0}, {512, 0}, {1024, 0}, {256, 48 * 1024}};
    for (const auto &c : cases) {
        int per_sm = -1, grid = -1;
        TEST_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, reinterpret_cast<const void *>(exchange_kernel), static_cast<int>(c.threads),
            c.smem));
        int status = nvshmemx_collective_launch_query_gridsize(
            reinterpret_cast<const void *>(exchange_kernel), dim3(c.threads), nullptr, c.smem,
            &grid);
        conf_check(g, status == 0 && grid == per_sm * sms && grid > 0,
                   "block %u, %zu B shared: status %d, gridsize %d; runtime: %d per SM x %d SMs",
                   c.threads, c.smem, status, grid, per_sm, sms);
    }
}

static void exchange_checks() {
    ConfGroup &g = conf_group("nvshmemx_collective_launch: device-wide exchange, grid sync");
    const unsigned threads = 256;
    int ctas = 0;
    int status = nvshmemx_collective_launch_query_gridsize(
        reinterpret_cast<const void *>(exchange_kernel), dim3(threads), nullptr, 0, &ctas);
    if (!conf_check(g, status == 0 && ctas > 0, "query_gridsize: status %d, gridsize %d", status,
                    ctas))
        return;
    int *recv = static_cast<int *>(nvshmem_malloc(2 * sizeof(int) * g_conf_npes * ctas));
    unsigned long long *wrong = nullptr;
    TEST_CUDA(cudaMalloc(&wrong, sizeof *wrong));
    TEST_CUDA(cudaMemset(wrong, 0, sizeof *wrong));
    TEST_CUDA(cudaMemset(recv, 0, 2 * sizeof(int) * g_conf_npes * ctas));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int me = g_conf_me, npes = g_conf_npes;
    void *args[] = {&recv, &ctas, &me, &npes, &wrong};
    status = nvshmemx_collective_launch(reinterpret_cast<const void *>(exchange_kernel), dim3(ctas),
                                        dim3(threads), args, 0, stream);
    conf_check(g, status == 0, "launch of %d CTAs x %u threads: status %d", ctas, threads, status);
    cudaError_t e = cudaStreamSynchronize(stream);
    conf_check(g, e == cudaSuccess, "the exchange kernel: %s", cudaGetErrorString(e));
    unsigned long long w = ~0ull;
    TEST_CUDA(cudaMemcpy(&w, wrong, sizeof w, cudaMemcpyDeviceToHost));
    conf_check(g, status == 0 && w == 0,
               "%llu of %d words wrong after the barrier (%d CTAs, %d PEs, %d rounds)", w,
               kRounds * ctas * npes, ctas, npes, kRounds);
    TEST_CUDA(cudaStreamDestroy(stream));
    TEST_CUDA(cudaFree(wrong));
    nvshmem_barrier_all();
    nvshmem_free(recv);
}

static void auto_grid_checks() {
    ConfGroup &g = conf_group("nvshmemx_collective_launch: gridDims 0 launches query_gridsize CTAs");
    int expected = 0;
    int status = nvshmemx_collective_launch_query_gridsize(
        reinterpret_cast<const void *>(grid_size_kernel), dim3(512), nullptr, 0, &expected);
    int *out = nullptr;
    TEST_CUDA(cudaMalloc(&out, sizeof *out));
    TEST_CUDA(cudaMemset(out, 0, sizeof *out));
    void *args[] = {&out};
    int launched = nvshmemx_collective_launch(reinterpret_cast<const void *>(grid_size_kernel),
                                              dim3(0, 0, 0), dim3(512), args, 0, 0);
    cudaError_t e = cudaDeviceSynchronize();
    int got = -1;
    TEST_CUDA(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    conf_check(g, status == 0 && launched == 0 && e == cudaSuccess && got == expected && got > 0,
               "query status %d (%d CTAs), launch status %d, kernel: %s, gridDim %d", status,
               expected, launched, cudaGetErrorString(e), got);
    TEST_CUDA(cudaFree(out));
}

static void error_checks() {
    ConfGroup &g = conf_group("nvshmemx_collective_launch: grids that cannot be resident");
    int *flag = nullptr;
    TEST_CUDA(cudaMalloc(&flag, sizeof *flag));
    TEST_CUDA(cudaMemset(flag, 0, sizeof *flag));
    void *args[] = {&flag};
    const void *k = reinterpret_cast<const void *>(flag_kernel);
    int limit = 0;
    int status = nvshmemx_collective_launch_query_gridsize(k, dim3(1024), nullptr, 0, &limit);
    conf_check(g, status == 0 && limit > 0, "query_gridsize: status %d, gridsize %d", status,
               limit);

    status = nvshmemx_collective_launch(k, dim3(limit + 1), dim3(1024), args, 0, 0);
    conf_check(g, status == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
               "%d CTAs (one more than query_gridsize): status %d, expected %d", limit + 1,
               status, (int)NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED);
    status = nvshmemx_collective_launch(k, dim3(limit, 2), dim3(1024), args, 0, 0);
    conf_check(g, status == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
               "%dx2 CTAs: status %d, expected %d", limit, status,
               (int)NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED);
    status = nvshmemx_collective_launch(k, dim3(1, 0, 1), dim3(1024), args, 0, 0);
    conf_check(g, status == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
               "grid 1x0x1: status %d, expected %d", status,
               (int)NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED);
    status = nvshmemx_collective_launch(k, dim3(1), dim3(2048), args, 0, 0);
    conf_check(g,
               status == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED ||
                   status == NVSHMEMX_ERROR_INTERNAL,
               "a block of 2048 threads: status %d, expected %d or %d", status,
               (int)NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED, (int)NVSHMEMX_ERROR_INTERNAL);
    (void)cudaGetLastError(); // the refused occupancy query may leave its error behind
    TEST_CUDA(cudaDeviceSynchronize());
    int ran = -1;
    TEST_CUDA(cudaMemcpy(&ran, flag, sizeof ran, cudaMemcpyDeviceToHost));
    conf_check(g, ran == 0, "a refused launch ran its kernel");

    status = nvshmemx_collective_launch(k, dim3(limit), dim3(1024), args, 0, 0);
    cudaError_t e = cudaDeviceSynchronize();
    TEST_CUDA(cudaMemcpy(&ran, flag, sizeof ran, cudaMemcpyDeviceToHost));
    conf_check(g, status == 0 && e == cudaSuccess && ran == 1,
               "%d CTAs after the refusals: status %d, kernel %s, ran %d", limit, status,
               cudaGetErrorString(e), ran);
    TEST_CUDA(cudaFree(flag));
}

int main() {
    conf_begin("conf_launch");
    query_checks();
    exchange_checks();
    auto_grid_checks();
    error_checks();
    return conf_end();
}
