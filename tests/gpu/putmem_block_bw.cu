// Device-initiated put bandwidth: nvshmemx_putmem_block from every CTA of one kernel,
// PE 0 to PE 1 (or to itself when alone).
//
// NVSHMEM API only: one source, built against niin-rs and against NVSHMEM 3.4.5 and run
// side by side by scripts/gpu/device-tests.sh. Start-up: test_init.h.
//
// For each size (1 MiB ... 256 MiB by default, doubling), one kernel of CTAS blocks x
// THREADS threads (default 132 x 1024, one CTA per H200 SM) runs `iters` rounds; in each
// round CTA b puts its share of the buffer -- consecutive 16-byte aligned pieces, the last
// CTA taking the rest -- from the local symmetric buffer to the same offset on the peer with
// nvshmemx_putmem_block; after the last round every thread calls nvshmem_quiet. CUDA
// events around the kernel give the time; bandwidth = size * iters / time (GB/s, 1e9).
// Rounds: enough for ~2 GiB per size (at least 10), after two warm-up rounds.
//
// The peer waits on the host meanwhile (no GPU work of its own: see main). Then the peer
// checks every byte of the largest transfer (a pattern PE 0 wrote).
//
// Output (PE 0): "putmem_block <bytes> B: <GB/s> GB/s (<us> us/round)" per size, then
// "raw_copy ..." for the same rounds done with plain loads and stores through the host's
// nvshmem_ptr of the peer's buffer (raw_kernel: the mapping's own speed, no API), and
// "data check: ok" or "data check: FAILED ...". Exit status 1 on a failed check.
//
// Arguments: [max_bytes [ctas [threads]]].

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

#include "test_init.h"

// No __launch_bounds__: an NVSHMEM program launches 1024-thread blocks without one, so the
// device API must fit 64 registers a thread by itself, GIN path compiled in (niin-rs's GIN
// code runs in the GIN proxy's worker kernel, niin/impl/gin_proxy_impl.h). NVSHMEM builds
// the same source.
__global__ void bw_kernel(char *buf, size_t bytes, int peer, int iters) {
    // CTA b's piece: 16-byte aligned boundaries, the last CTA takes the remainder.
    const size_t per = (bytes / gridDim.x) & ~static_cast<size_t>(15);
    const size_t off = per * blockIdx.x;
    const size_t len = blockIdx.x + 1 == gridDim.x ? bytes - off : per;
    for (int i = 0; i < iters; i++) nvshmemx_putmem_block(buf + off, buf + off, len, peer);
    nvshmem_quiet();
}

// The same rounds without the API: plain 16-byte loads and stores from every thread straight
// to `peer_buf` (the peer's buffer as the host's nvshmem_ptr maps it), a __syncthreads before
// and after each round as nvshmemx_putmem_block has. What the mapping itself allows, for
// either library.
__global__ void raw_kernel(char *peer_buf, const char *buf, size_t bytes, int iters) {
    const size_t per = (bytes / gridDim.x) & ~static_cast<size_t>(15);
    const size_t off = per * blockIdx.x;
    const size_t len = blockIdx.x + 1 == gridDim.x ? bytes - off : per;
    const uint4 *s = reinterpret_cast<const uint4 *>(buf + off);
    uint4 *d = reinterpret_cast<uint4 *>(peer_buf + off);
    for (int i = 0; i < iters; i++) {
        __syncthreads();
        for (size_t w = threadIdx.x; w < len / 16; w += blockDim.x) d[w] = s[w];
        __syncthreads();
    }
}

__global__ void set_done_kernel(int *done, int peer) {
    nvshmem_int_p(done, 1, peer);
    nvshmem_quiet();
}

__global__ void fill_kernel(unsigned *buf, size_t words, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = static_cast<unsigned>(i) * 2654435761u + seed;
}

__global__ void check_kernel(const unsigned *buf, size_t words, unsigned seed,
                             unsigned long long *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        if (buf[i] != static_cast<unsigned>(i) * 2654435761u + seed) atomicAdd(bad, 1ull);
}

int main(int argc, char **argv) {
    size_t max_bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : (256u << 20);
    unsigned ctas = argc > 2 ? static_cast<unsigned>(atoi(argv[2])) : 132;
    unsigned threads = argc > 3 ? static_cast<unsigned>(atoi(argv[3])) : 1024;
    if (max_bytes < (1u << 20) || ctas == 0 || threads == 0 || threads > 1024) {
        fprintf(stderr, "usage: %s [max_bytes >= 1 MiB [ctas [threads <= 1024]]]\n", argv[0]);
        return 2;
    }
    test_init();
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    const int peer = npes > 1 ? 1 : 0;
    char *buf = static_cast<char *>(nvshmem_malloc(max_bytes));
    if (buf == nullptr) {
        fprintf(stderr, "PE %d: nvshmem_malloc(%zu) failed\n", me, max_bytes);
        return 2;
    }
    const unsigned seed = 12345u;
    const size_t words = max_bytes / sizeof(unsigned);
    if (me == 0)
        fill_kernel<<<264, 512>>>(reinterpret_cast<unsigned *>(buf), words, seed);
    else
        TEST_CUDA(cudaMemset(buf, 0, max_bytes));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    // While PE 0 measures, the peer runs no GPU work of its own: it waits on the host,
    // polling `done` (set by PE 0 with nvshmem_int_p after its last kernel) every
    // millisecond, then both barrier. So the comparison does not depend on how each
    // library's host barrier waits (niin-rs's is an ncclAllReduce kernel on the shared GPU;
    // measured on the H200, waiting in it instead made no difference).
    int *done = static_cast<int *>(nvshmem_calloc(1, sizeof(int)));
    if (done == nullptr) {
        fprintf(stderr, "PE %d: nvshmem_calloc of the done flag failed\n", me);
        return 2;
    }
    nvshmem_barrier_all();

    if (me == 0) {
        printf("putmem_block: %d PEs, PE 0 -> PE %d, %u CTAs x %u threads\n", npes, peer, ctas,
               threads);
        // The peer's buffer as a load/store address (NULL: not reachable so; no raw rounds).
        char *peer_buf = static_cast<char *>(nvshmem_ptr(buf, peer));
        cudaEvent_t start, stop;
        TEST_CUDA(cudaEventCreate(&start));
        TEST_CUDA(cudaEventCreate(&stop));
        // Times `iters` rounds of `launch(rounds)` after a 2-round warm-up; GB/s and us/round.
        auto timed = [&](const char *what, size_t bytes, int iters, auto launch) {
            launch(2);
            TEST_CUDA(cudaGetLastError());
            TEST_CUDA(cudaEventRecord(start));
            launch(iters);
            TEST_CUDA(cudaEventRecord(stop));
            TEST_CUDA(cudaEventSynchronize(stop));
            float ms = 0;
            TEST_CUDA(cudaEventElapsedTime(&ms, start, stop));
            double gbs = static_cast<double>(bytes) * iters / (ms * 1e-3) / 1e9;
            printf("%s %zu B: %.1f GB/s (%.2f us/round)\n", what, bytes, gbs, ms * 1e3 / iters);
        };
        for (size_t bytes = 1u << 20; bytes <= max_bytes; bytes *= 2) {
            int iters = static_cast<int>((2ull << 30) / bytes);
            if (iters < 10) iters = 10;
            timed("putmem_block", bytes, iters,
                  [&](int n) { bw_kernel<<<ctas, threads>>>(buf, bytes, peer, n); });
            if (peer_buf != nullptr)
                timed("raw_copy", bytes, iters,
                      [&](int n) { raw_kernel<<<ctas, threads>>>(peer_buf, buf, bytes, n); });
            fflush(stdout);
        }
        set_done_kernel<<<1, 1>>>(done, peer);
        TEST_CUDA(cudaDeviceSynchronize());
    } else if (me == peer) {
        for (int seen = 0; seen == 0; usleep(1000))
            TEST_CUDA(cudaMemcpy(&seen, done, sizeof seen, cudaMemcpyDeviceToHost));
    }
    nvshmem_barrier_all();

    int failed = 0;
    if (me == peer) {
        unsigned long long *bad = nullptr;
        TEST_CUDA(cudaMalloc(&bad, sizeof *bad));
        TEST_CUDA(cudaMemset(bad, 0, sizeof *bad));
        check_kernel<<<264, 512>>>(reinterpret_cast<const unsigned *>(buf), words, seed, bad);
        unsigned long long n = 0;
        TEST_CUDA(cudaMemcpy(&n, bad, sizeof n, cudaMemcpyDeviceToHost));
        TEST_CUDA(cudaFree(bad));
        failed = n != 0;
        if (failed)
            printf("data check: FAILED, %llu of %zu words wrong on PE %d\n", n, words, me);
        else
            printf("data check: ok (%zu bytes on PE %d)\n", max_bytes, me);
        fflush(stdout);
    }
    nvshmem_barrier_all();
    nvshmem_free(done);
    nvshmem_free(buf);
    nvshmem_finalize();
    return failed;
}
