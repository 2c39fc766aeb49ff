// peer_death_device.cu -- a PE that never reaches a device barrier: the others' kernels must
// stop, each with one NIIN: line naming that PE, and nvshmem_finalize must return. Run under
// niinrun on the NCCL transport with 2 PEs or more (niin-rs only: NVSHMEM's device barriers
// wait for ever).
//
// Every PE first runs one kernel of barriers that all complete (the barrier works). Then the
// last PE leaves, as PEER_DEATH_MODE says:
//   kill   (default) it kills itself with SIGKILL: the survivors' barriers must stop within
//          a fraction of a second (libnvshmem_host's watchdog reads niinrun's status board),
//          printing "PE <last> died";
//   stall  it sleeps PEER_DEATH_STALL_S seconds (default 30) and never launches the kernel:
//          the survivors' barriers must stop after NIIN_TIMEOUT, naming it as not arrived.
// PEER_DEATH_SCOPE picks the barrier: thread (nvshmem_barrier_all, the default), block
// (nvshmemx_barrier_all_block, 256 threads) or team (nvshmem_barrier on a team split from
// WORLD with every PE: the counting barrier of split teams).
//
// A survivor prints "SURVIVOR kernel ended after <s> s: <CUDA's error>" (the stopped kernel
// is a launch failure), waits PEER_DEATH_LINGER_S seconds (default 0: a program that does
// host work after the error, which libnvshmem_host's watchdog must leave alone), then
// prints "SURVIVOR finalized" after nvshmem_finalize, and exits 3. A
// kernel that completes is a failure of this test: "FAIL barrier completed without PE <n>",
// exit 1.
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "test_init.h"

enum Scope { kThread, kBlock, kTeam };

__global__ void barriers(int scope, nvshmem_team_t team, int iters) {
    for (int i = 0; i < iters; ++i) {
        if (scope == kBlock) {
            nvshmemx_barrier_all_block();
        } else if (threadIdx.x == 0) {
            if (scope == kTeam)
                nvshmem_barrier(team);
            else
                nvshmem_barrier_all();
        }
        __syncthreads();
    }
}

int main() {
    test_init();
    const int me = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();
    if (npes < 2) {
        printf("peer_death_device needs 2 PEs or more, got %d\n", npes);
        nvshmem_finalize();
        return 2;
    }
    const char *scope_name = getenv("PEER_DEATH_SCOPE");
    if (scope_name == nullptr) scope_name = "thread";
    const Scope scope = strcmp(scope_name, "block") == 0  ? kBlock
                        : strcmp(scope_name, "team") == 0 ? kTeam
                                                          : kThread;
    const char *mode = getenv("PEER_DEATH_MODE");
    const bool kill_mode = mode == nullptr || strcmp(mode, "stall") != 0;
    nvshmem_team_t team = NVSHMEM_TEAM_INVALID;
    if (scope == kTeam &&
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, npes, nullptr, 0, &team) != 0) {
        printf("FAIL team split\n");
        return 1;
    }
    const int threads = scope == kBlock ? 256 : 32;
    barriers<<<1, threads>>>(scope, team, 100);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    printf("PE %d: 100 %s barriers completed\n", me, scope_name);
    fflush(stdout);
    if (me == npes - 1) {
        if (kill_mode) raise(SIGKILL);
        const char *stall = getenv("PEER_DEATH_STALL_S");
        std::this_thread::sleep_for(std::chrono::seconds(stall != nullptr ? atoi(stall) : 30));
        printf("PE %d: leaving without the barrier\n", me);
        return 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    barriers<<<1, threads>>>(scope, team, 1);
    cudaError_t launched = cudaGetLastError();
    cudaError_t ended = cudaDeviceSynchronize();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (launched == cudaSuccess && ended == cudaSuccess) {
        printf("FAIL barrier completed without PE %d\n", npes - 1);
        return 1;
    }
    printf("SURVIVOR kernel ended after %.3f s: %s\n", s,
           cudaGetErrorString(ended != cudaSuccess ? ended : launched));
    fflush(stdout);
    const char *linger = getenv("PEER_DEATH_LINGER_S");
    if (linger != nullptr && atoi(linger) > 0) {
        std::this_thread::sleep_for(std::chrono::seconds(atoi(linger)));
        printf("SURVIVOR lingered %d s\n", atoi(linger));
        fflush(stdout);
    }
    nvshmem_finalize();
    printf("SURVIVOR finalized\n");
    fflush(stdout);
    return 3;
}
