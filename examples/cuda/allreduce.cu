// allreduce.cu -- every PE contributes a vector; a sum reduction over NVSHMEM_TEAM_WORLD, run
// by one block of a collectively launched kernel, leaves the sum on every PE, which checks it.
// NVSHMEM API only.
//
//   niinrun -n 2 ./allreduce     prints "allreduce: OK ..." on PE 0; exits 1 on a wrong value
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#define CUDA_CHECK(call)                                                                      \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                     \
                    cudaGetErrorString(err_));                                                \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

constexpr size_t kInts = 1 << 16;

// What PE `pe` contributes as element i.
static int contribution(int pe, size_t i) { return (pe + 1) * ((int)(i % 1000) - 500); }

__global__ void allreduce(int *dst, const int *src, size_t n, int *status) {
    const int rc = nvshmemx_int_sum_reduce_block(NVSHMEM_TEAM_WORLD, dst, src, n);
    if (threadIdx.x == 0) *status = rc;
}

int main() {
    nvshmem_init();
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));

    int *src = (int *)nvshmem_malloc(kInts * sizeof(int));
    int *dst = (int *)nvshmem_malloc(kInts * sizeof(int));
    int *status = nullptr;
    CUDA_CHECK(cudaMalloc(&status, sizeof(int)));
    if (!src || !dst) {
        fprintf(stderr, "allreduce: PE %d: nvshmem_malloc failed\n", me);
        return 1;
    }
    std::vector<int> mine(kInts);
    for (size_t i = 0; i < kInts; i++) mine[i] = contribution(me, i);
    CUDA_CHECK(cudaMemcpy(src, mine.data(), kInts * sizeof(int), cudaMemcpyHostToDevice));
    nvshmem_barrier_all();  // every PE's source and destination are ready

    // A kernel that calls a collective is launched with nvshmemx_collective_launch.
    size_t n = kInts;
    void *args[] = {&dst, &src, &n, &status};
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    if (nvshmemx_collective_launch((const void *)allreduce, dim3(1), dim3(256), args, 0, stream) != 0) {
        fprintf(stderr, "allreduce: PE %d: nvshmemx_collective_launch failed\n", me);
        return 1;
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));

    std::vector<int> sum(kInts);
    int rc = -1;
    CUDA_CHECK(cudaMemcpy(sum.data(), dst, kInts * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&rc, status, sizeof(int), cudaMemcpyDeviceToHost));
    int bad = rc != 0;
    if (rc != 0) fprintf(stderr, "allreduce: PE %d: nvshmemx_int_sum_reduce_block returned %d\n", me, rc);
    for (size_t i = 0; i < kInts; i++) {
        int want = 0;
        for (int p = 0; p < npes; p++) want += contribution(p, i);
        if (sum[i] != want && bad++ == 0)
            fprintf(stderr, "allreduce: PE %d: element %zu is %d, expected %d\n", me, i, sum[i], want);
    }

    nvshmem_barrier_all();
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(status));
    nvshmem_free(dst);
    nvshmem_free(src);
    nvshmem_finalize();
    if (bad) return 1;
    if (me == 0) printf("allreduce: OK, %d PEs, sum of %zu ints correct on every PE\n", npes, kInts);
    return 0;
}
