// moe_dispatch.cu -- MoE token dispatch: every PE holds kTokens tokens of kHidden ints, each
// routed to one of the world's experts (kExperts per PE). The PEs first exchange how many
// tokens each sends to each (nvshmem_uint64_p, then a barrier), then every PE puts its
// tokens for PE d into its own slot of d's receive buffer with a put-with-signal (one block
// per destination); each PE waits for the signal of every PE that sends it tokens and
// checks every token it received. NVSHMEM API only.
//
//   niinrun -n 2 ./moe_dispatch  prints "moe_dispatch: OK ..." on PE 0; exits 1 on a wrong value
#include <cstdint>
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

constexpr int kTokens = 256, kHidden = 128, kExperts = 2;
constexpr int kMaxPes = 1024;

// The expert (of npes * kExperts) that token t of PE pe goes to.
static int route(int pe, int t, int npes) {
    uint64_t x = (uint64_t)pe << 32 | (uint32_t)t;
    x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 32)) * 0x94d049bb133111ebull;
    return (int)((x ^ (x >> 31)) % (uint64_t)(npes * kExperts));
}

// Word j of token t of PE pe, routed to expert e: a header (pe, t, e), then a pattern.
static int word(int pe, int t, int e, int j) {
    return j == 0 ? pe : j == 1 ? t : j == 2 ? e : (pe << 20) ^ (t << 8) ^ j;
}

// Tokens of PE src for PE dst, in order: (token, expert).
static std::vector<std::pair<int, int>> routed(int src, int dst, int npes) {
    std::vector<std::pair<int, int>> out;
    for (int t = 0; t < kTokens; t++) {
        const int e = route(src, t, npes);
        if (e / kExperts == dst) out.push_back({t, e});
    }
    return out;
}

// Thread d tells PE d how many tokens it gets from this PE.
__global__ void send_counts(const uint64_t *count_out, uint64_t *count_in) {
    const int me = nvshmem_my_pe(), d = threadIdx.x;
    if (d < nvshmem_n_pes()) {
        nvshmem_uint64_p(count_in + me, count_out[d], d);
        nvshmem_quiet();
    }
}

// Block d puts this PE's tokens for PE d (rows offset[d] .. of `send`) into this PE's slot
// of d's `recv`, then sets this PE's signal there.
__global__ void dispatch(const int *send, const uint64_t *offset, const uint64_t *count_out,
                         int *recv, uint64_t *sig) {
    const int me = nvshmem_my_pe(), d = blockIdx.x;
    const size_t slot = (size_t)kTokens * kHidden;
    if (count_out[d] == 0) return;
    nvshmemx_putmem_signal_block(recv + me * slot, send + offset[d] * kHidden,
                                 count_out[d] * kHidden * sizeof(int), sig + me, 1,
                                 NVSHMEM_SIGNAL_SET, d);
}

// Thread s waits for PE s's tokens, if it sends any.
__global__ void wait_tokens(const uint64_t *count_in, uint64_t *sig) {
    const int s = threadIdx.x;
    if (s < nvshmem_n_pes() && count_in[s] != 0) nvshmem_signal_wait_until(sig + s, NVSHMEM_CMP_EQ, 1);
}

int main() {
    nvshmem_init();
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));
    if (npes > kMaxPes) {
        fprintf(stderr, "moe_dispatch: at most %d PEs\n", kMaxPes);
        return 1;
    }
    const size_t slot = (size_t)kTokens * kHidden;

    // This PE's tokens, grouped by destination PE (what a real MoE layer's permute does).
    std::vector<int> send_h;
    std::vector<uint64_t> count_h(npes), offset_h(npes);
    for (int d = 0; d < npes; d++) {
        offset_h[d] = send_h.size() / kHidden;
        for (auto [t, e] : routed(me, d, npes))
            for (int j = 0; j < kHidden; j++) send_h.push_back(word(me, t, e, j));
        count_h[d] = send_h.size() / kHidden - offset_h[d];
    }

    int *send = (int *)nvshmem_malloc(slot * sizeof(int));
    int *recv = (int *)nvshmem_calloc(npes * slot, sizeof(int));  // slot s: PE s's tokens
    uint64_t *count_in = (uint64_t *)nvshmem_calloc(npes, sizeof(uint64_t));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(npes, sizeof(uint64_t));
    uint64_t *count_out = nullptr, *offset = nullptr;
    CUDA_CHECK(cudaMalloc(&count_out, npes * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&offset, npes * sizeof(uint64_t)));
    if (!send || !recv || !count_in || !sig) {
        fprintf(stderr, "moe_dispatch: PE %d: nvshmem_malloc failed\n", me);
        return 1;
    }
    CUDA_CHECK(cudaMemcpy(send, send_h.data(), send_h.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(count_out, count_h.data(), npes * sizeof(uint64_t), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(offset, offset_h.data(), npes * sizeof(uint64_t), cudaMemcpyHostToDevice));
    nvshmem_barrier_all();  // every PE's buffers are ready

    // 1. Counts, then a barrier: every PE knows what it will receive.
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    send_counts<<<1, npes, 0, stream>>>(count_out, count_in);
    CUDA_CHECK(cudaGetLastError());
    nvshmemx_barrier_all_on_stream(stream);
    // 2. Tokens: one put-with-signal per destination. 3. Wait for every sender.
    dispatch<<<npes, 256, 0, stream>>>(send, offset, count_out, recv, sig);
    CUDA_CHECK(cudaGetLastError());
    wait_tokens<<<1, npes, 0, stream>>>(count_in, sig);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(stream));

    // Check: the counts and every received token against the routing.
    std::vector<uint64_t> got_count(npes);
    std::vector<int> got(npes * slot);
    CUDA_CHECK(cudaMemcpy(got_count.data(), count_in, npes * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got.data(), recv, npes * slot * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    long received = 0;
    for (int s = 0; s < npes; s++) {
        const auto want = routed(s, me, npes);
        if (got_count[s] != want.size() && bad++ == 0)
            fprintf(stderr, "moe_dispatch: PE %d: PE %d announced %llu tokens, expected %zu\n", me,
                    s, (unsigned long long)got_count[s], want.size());
        for (size_t k = 0; k < want.size(); k++)
            for (int j = 0; j < kHidden; j++) {
                const int v = got[s * slot + k * kHidden + j], w = word(s, want[k].first, want[k].second, j);
                if (v != w && bad++ == 0)
                    fprintf(stderr, "moe_dispatch: PE %d: from PE %d, token %d word %d is %d, expected %d\n",
                            me, s, want[k].first, j, v, w);
            }
        received += (long)want.size();
    }

    nvshmem_barrier_all();
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(offset));
    CUDA_CHECK(cudaFree(count_out));
    nvshmem_free(sig);
    nvshmem_free(count_in);
    nvshmem_free(recv);
    nvshmem_free(send);
    nvshmem_finalize();
    if (bad) return 1;
    if (me == 0)
        printf("moe_dispatch: OK, %d PEs, %d experts, %d tokens x %d ints per PE; PE 0 received and checked %ld tokens\n",
               npes, npes * kExperts, kTokens, kHidden, received);
    return 0;
}
