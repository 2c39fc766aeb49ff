// ring.cu -- every PE puts a block to the next PE with a signal and waits for the block of
// the previous one; a scalar put says who sent it. NVSHMEM API only.
//
//   niinrun -n 2 ./ring          prints "ring: OK ..." on PE 0; exits 1 on a wrong value
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

constexpr size_t kInts = 1 << 18;  // 1 MiB a block

static __host__ __device__ int pattern(int pe, size_t i) { return pe * 1000003 + (int)(i % 1000003); }

__global__ void fill(int *src, int pe, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        src[i] = pattern(pe, i);
}

// One block: thread 0 puts this PE's number into `from` on the next PE and orders it before
// the block; the whole block puts the data with the signal; thread 0 waits for the previous
// PE's signal.
__global__ void ring(int *dst, const int *src, int *from, uint64_t *sig, size_t n) {
    const int me = nvshmem_my_pe(), next = (me + 1) % nvshmem_n_pes();
    if (threadIdx.x == 0) {
        nvshmem_int_p(from, me, next);
        nvshmem_fence();  // the scalar lands before the block and its signal
    }
    __syncthreads();
    nvshmemx_putmem_signal_block(dst, src, n * sizeof(int), sig, 1, NVSHMEM_SIGNAL_ADD, next);
    if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 1);
    __syncthreads();
}

int main() {
    nvshmem_init();
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));

    int *src = (int *)nvshmem_malloc(kInts * sizeof(int));
    int *dst = (int *)nvshmem_calloc(kInts, sizeof(int));
    int *from = (int *)nvshmem_calloc(1, sizeof(int));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    if (!src || !dst || !from || !sig) {
        fprintf(stderr, "ring: PE %d: nvshmem_malloc failed\n", me);
        return 1;
    }
    fill<<<64, 256>>>(src, me, kInts);
    CUDA_CHECK(cudaDeviceSynchronize());
    nvshmem_barrier_all();  // every PE's buffers are ready

    ring<<<1, 512>>>(dst, src, from, sig, kInts);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    const int prev = (me + npes - 1) % npes;
    std::vector<int> got(kInts);
    int sender = -1;
    CUDA_CHECK(cudaMemcpy(got.data(), dst, kInts * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&sender, from, sizeof(int), cudaMemcpyDeviceToHost));
    int bad = sender != prev;
    for (size_t i = 0; i < kInts; i++)
        if (got[i] != pattern(prev, i) && bad++ == 0)
            fprintf(stderr, "ring: PE %d: element %zu is %d, PE %d sent %d\n", me, i, got[i], prev,
                    pattern(prev, i));
    if (sender != prev) fprintf(stderr, "ring: PE %d: from is %d, expected %d\n", me, sender, prev);

    nvshmem_barrier_all();
    nvshmem_free(sig);
    nvshmem_free(from);
    nvshmem_free(dst);
    nvshmem_free(src);
    nvshmem_finalize();
    if (bad) return 1;
    if (me == 0) printf("ring: OK, %d PEs, %zu bytes put with a signal to the next PE\n", npes, kInts * sizeof(int));
    return 0;
}
