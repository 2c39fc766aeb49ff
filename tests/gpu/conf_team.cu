// conf_team.cu -- GPU conformance of the device team queries for split teams
// (nvshmem_team_my_pe, _n_pes, _translate_pe), checked against the host's answers, with the
// team table updated by splits and a destroy between kernels. NVSHMEM API only (the same
// source builds against NVSHMEM 3.4.5); tests/gpu/conf_harness.h reports.
//
// Teams: the world split into even and odd PEs (stride 2), a team of every PE from 1 on, a
// 2-D split with rows of 2, and a team made after another was destroyed (its handle may be
// reused: the device must see the new team). Each query kernel runs 1024-thread blocks
// without __launch_bounds__; every thread computes the same answers (all are checked).
//
// Device barriers of those teams (and of WORLD, SHARED and SAME_MYPE_NODE): nvshmem_barrier
// and nvshmem_team_sync (after nvshmem_quiet) from a thread, nvshmemx_barrier_warp /
// _team_sync_warp from a warp, and the _block forms from a 1024-thread block. Each round,
// every member stores the round number into its slot of every member's array (nvshmem_int_p),
// the barrier, then each member reads every slot of its own array: all must hold the round
// (a barrier that let a PE through early shows an older round), and a second barrier keeps
// the next round's stores out until every member has read.
#include "conf_harness.h"

constexpr int kMaxPes = 8;

// Per team: my_pe, n_pes, then translate of each team PE to WORLD and of each world PE
// into the team.
struct TeamAnswers {
    int my_pe, n_pes;
    int to_world[kMaxPes];
    int from_world[kMaxPes];
};

__global__ void team_query_kernel(nvshmem_team_t team, int npes, TeamAnswers *out, int *bad) {
    TeamAnswers a;
    a.my_pe = nvshmem_team_my_pe(team);
    a.n_pes = nvshmem_team_n_pes(team);
    for (int i = 0; i < kMaxPes; i++) {
        a.to_world[i] = i < a.n_pes ? nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD) : -2;
        a.from_world[i] = i < npes ? nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, i, team) : -2;
    }
    // every thread of a block must have computed what its thread 0 did (blocks are not
    // ordered with each other, so each compares within itself), and block 0 reports
    __shared__ TeamAnswers first;
    if (threadIdx.x == 0) first = a;
    __syncthreads();
    bool same = a.my_pe == first.my_pe && a.n_pes == first.n_pes;
    for (int i = 0; i < kMaxPes; i++)
        same = same && a.to_world[i] == first.to_world[i] && a.from_world[i] == first.from_world[i];
    if (!same) atomicAdd(bad, 1);
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = a;
}

static void check_team(const char *what, nvshmem_team_t team, TeamAnswers *d_out, int *d_bad) {
    ConfGroup &g = conf_group(what);
    if (team == NVSHMEM_TEAM_INVALID) {
        conf_check(g, nvshmem_team_my_pe(team) == -1, "host: team_my_pe of an invalid team");
        return;
    }
    TEST_CUDA(cudaMemset(d_bad, 0, sizeof(int)));
    CONF_LAUNCH(g, team_query_kernel, 2, 1024, team, g_conf_npes, d_out, d_bad);
    TeamAnswers a;
    int bad = 0;
    TEST_CUDA(cudaMemcpy(&a, d_out, sizeof a, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    conf_check(g, bad == 0, "%d threads disagreed with thread 0", bad);
    conf_check(g, a.my_pe == nvshmem_team_my_pe(team), "team_my_pe: device %d, host %d", a.my_pe,
               nvshmem_team_my_pe(team));
    conf_check(g, a.n_pes == nvshmem_team_n_pes(team), "team_n_pes: device %d, host %d", a.n_pes,
               nvshmem_team_n_pes(team));
    for (int i = 0; i < kMaxPes && i < a.n_pes; i++) {
        int host = nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD);
        conf_check(g, a.to_world[i] == host, "translate team PE %d to WORLD: device %d, host %d", i,
                   a.to_world[i], host);
    }
    for (int i = 0; i < g_conf_npes && i < kMaxPes; i++) {
        int host = nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, i, team);
        conf_check(g, a.from_world[i] == host, "translate WORLD PE %d: device %d, host %d", i,
                   a.from_world[i], host);
    }
}

// Team barrier rounds (above), by a thread (Scope 0), warp 0 (1), the block (2) or
// warpgroup 0 (3: the first 128 threads); Mode 0: nvshmem[x]_barrier[_warp/_block/
// _warpgroup], 1: nvshmem_quiet then nvshmem[x]_team_sync[_warp/_block] (the warpgroup has
// no team_sync: nvshmemx_barrier_warpgroup again).
// One kernel per scope and mode, as an application would write it (each form alone fits a
// 1024-thread block; all six in one kernel would not need to).
template <int Scope, int Mode>
__device__ __forceinline__ void team_barrier_by(nvshmem_team_t team) {
    if (Scope == 0) {
        if (threadIdx.x == 0) {
            if (Mode == 1) nvshmem_quiet();
            if (Mode == 0)
                nvshmem_barrier(team);
            else
                nvshmem_team_sync(team);
        }
    } else if (Scope == 1) {
        if (threadIdx.x < 32) {
            if (Mode == 1) nvshmem_quiet();
            if (Mode == 0)
                nvshmemx_barrier_warp(team);
            else
                nvshmemx_team_sync_warp(team);
        }
    } else if (Scope == 2) {
        if (Mode == 1) nvshmem_quiet();
        if (Mode == 0)
            nvshmemx_barrier_block(team);
        else
            nvshmemx_team_sync_block(team);
    } else {
#ifndef TEST_NVSHMEM
        if (threadIdx.x < 128) {
            if (Mode == 1) nvshmem_quiet();
            nvshmemx_barrier_warpgroup(team);
        }
#endif
    }
    __syncthreads();
}

template <int Scope, int Mode>
__global__ void team_barrier_kernel(nvshmem_team_t team, int rounds, int *slots, int *bad) {
    __shared__ int world_pe[kMaxPes];
    const int n = nvshmem_team_n_pes(team), me = nvshmem_team_my_pe(team);
    if (threadIdx.x < kMaxPes && static_cast<int>(threadIdx.x) < n)
        world_pe[threadIdx.x] = nvshmem_team_translate_pe(team, threadIdx.x, NVSHMEM_TEAM_WORLD);
    __syncthreads();
    // every member's slot `me` gets the round: spread over the threads that call the barrier
    const int callers = Scope == 0 ? 1 : Scope == 1 ? 32 : Scope == 3 ? 128 : static_cast<int>(blockDim.x);
    for (int r = 1; r <= rounds; r++) {
        if (static_cast<int>(threadIdx.x) < callers)
            for (int i = threadIdx.x; i < n; i += callers) nvshmem_int_p(slots + me, r, world_pe[i]);
        __syncthreads();
        team_barrier_by<Scope, Mode>(team);
        if (threadIdx.x == 0)
            for (int i = 0; i < n; i++) {
                const int v = *reinterpret_cast<volatile int *>(slots + i);
                if (v != r) atomicAdd(bad, 1);
            }
        __syncthreads();
        team_barrier_by<Scope, 0>(team);
    }
}

using TeamBarrierKernel = void (*)(nvshmem_team_t, int, int *, int *);
static const TeamBarrierKernel kTeamBarrierKernels[4][2] = {
    {team_barrier_kernel<0, 0>, team_barrier_kernel<0, 1>},
    {team_barrier_kernel<1, 0>, team_barrier_kernel<1, 1>},
    {team_barrier_kernel<2, 0>, team_barrier_kernel<2, 1>},
#ifndef TEST_NVSHMEM
    {team_barrier_kernel<3, 0>, team_barrier_kernel<3, 1>},
#endif
};

// The launches: each scope in a 1024-thread block, and the warpgroup also as a block of
// its own 128 threads. Not against NVSHMEM 3.4.5: a kernel that calls its
// nvshmemx_barrier_warpgroup does not link (libnvshmem_device.a lacks
// nvshmemi_transfer_quiet<warpgroup>), and it would run warpgroup 0 on named barrier 0,
// which the other warps' __syncthreads uses at the same time.
struct TeamBarrierLaunch {
    int scope, threads;
    const char *name;
};
static const TeamBarrierLaunch kTeamBarrierLaunches[] = {
    {0, 1024, "thread"}, {1, 1024, "warp"}, {2, 1024, "block"},
#ifndef TEST_NVSHMEM
    {3, 128, "warpgroup (128-thread block)"},
    {3, 1024, "warpgroup 0 of a 1024-thread block"},
#endif
};

// Barrier rounds on `team` (NVSHMEM_TEAM_INVALID on this PE: it only joins the host
// barriers, which every PE calls alike).
static void check_team_barrier(const char *what, nvshmem_team_t team, int *sym, int *d_bad) {
    ConfGroup &g = conf_group(what);
    TEST_CUDA(cudaMemset(sym, 0, kMaxPes * sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
#ifdef TEST_NVSHMEM
    if (g_conf_me == 0)
        printf("SKIP|%s|nvshmemx_barrier_warpgroup: does not link against NVSHMEM 3.4.5\n", what);
#endif
    static const char *const kMode[] = {"barrier", "quiet + team_sync"};
    const int rounds = 40;
    for (const TeamBarrierLaunch &l : kTeamBarrierLaunches)
        for (int mode = 0; mode < 2; mode++) {
            if (team != NVSHMEM_TEAM_INVALID) {
                TEST_CUDA(cudaMemset(d_bad, 0, sizeof(int)));
                TeamBarrierKernel kernel = kTeamBarrierKernels[l.scope][mode];
                CONF_LAUNCH(g, kernel, 1, l.threads, team, rounds, sym, d_bad);
                int bad = 0;
                TEST_CUDA(cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost));
                conf_check(g, bad == 0, "%s by a %s: %d stale slots in %d rounds of %d PEs",
                           kMode[mode], l.name, bad, rounds, nvshmem_team_n_pes(team));
            }
            // The next kernel starts from round 1 again: every member must have finished
            // reading before any stores. A barrier of all PEs, which every PE calls alike:
            // NVSHMEM 3.4.5 refuses the host nvshmem_team_sync with several PEs per GPU
            // ("not supported with limited MPG runs").
            nvshmem_barrier_all();
        }
}

int main() {
    conf_begin("conf_team");
    TeamAnswers *d_out = nullptr;
    int *d_bad = nullptr;
    TEST_CUDA(cudaMalloc(&d_out, sizeof(TeamAnswers)));
    TEST_CUDA(cudaMalloc(&d_bad, sizeof(int)));
    const int n = g_conf_npes, me = g_conf_me;
    int *sym = static_cast<int *>(nvshmem_malloc(kMaxPes * sizeof(int)));

    check_team("team queries: WORLD", NVSHMEM_TEAM_WORLD, d_out, d_bad);
    check_team("team queries: SHARED", NVSHMEM_TEAM_SHARED, d_out, d_bad);
    check_team_barrier("team barriers: WORLD", NVSHMEM_TEAM_WORLD, sym, d_bad);
    check_team_barrier("team barriers: SHARED", NVSHMEM_TEAM_SHARED, sym, d_bad);
    check_team_barrier("team barriers: SAME_MYPE_NODE", NVSHMEMX_TEAM_SAME_MYPE_NODE, sym, d_bad);

    nvshmem_team_t even = NVSHMEM_TEAM_INVALID, odd = NVSHMEM_TEAM_INVALID;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even);
    if (n > 1) nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd);
    check_team("team queries: even PEs (stride 2)", me % 2 == 0 ? even : odd, d_out, d_bad);
    check_team_barrier("team barriers: even PEs and odd PEs (stride 2)", me % 2 == 0 ? even : odd,
                       sym, d_bad);

    nvshmem_team_t tail = NVSHMEM_TEAM_INVALID;
    if (n > 1) {
        nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 1, n - 1, nullptr, 0, &tail);
        check_team("team queries: PEs 1.. (stride 1, start 1)", tail, d_out, d_bad);
        check_team_barrier("team barriers: PEs 1.. (PE 0 outside)", tail, sym, d_bad);
    }

    nvshmem_team_t xt = NVSHMEM_TEAM_INVALID, yt = NVSHMEM_TEAM_INVALID;
    nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 2, nullptr, 0, &xt, nullptr, 0, &yt);
    check_team("team queries: 2-D split, x axis (rows of 2)", xt, d_out, d_bad);
    check_team("team queries: 2-D split, y axis", yt, d_out, d_bad);
    check_team_barrier("team barriers: 2-D split, x axis", xt, sym, d_bad);
    check_team_barrier("team barriers: 2-D split, y axis", yt, sym, d_bad);

    // A destroy, then a new team: the table on the device follows.
    if (tail != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(tail);
    nvshmem_barrier_all();
    nvshmem_team_t again = NVSHMEM_TEAM_INVALID;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, n, nullptr, 0, &again);
    check_team("team queries: a team made after a destroy", again, d_out, d_bad);
    check_team_barrier("team barriers: a team made after a destroy", again, sym, d_bad);

    if (again != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(again);
    if (xt != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(xt);
    if (yt != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(yt);
    if (even != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(even);
    if (odd != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(odd);
    nvshmem_free(sym);
    cudaFree(d_out);
    cudaFree(d_bad);
    return conf_end();
}
