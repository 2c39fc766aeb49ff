/*
 * graph_capture.c -- NVSHMEM's stream-ordered operations inside CUDA graph capture (GPU
 * only: the mock has no graphs), run as every PE of a job (2 PEs or more):
 *
 *   capture on a stream: nvshmemx_putmem_on_stream (this PE's source to the next PE),
 *   nvshmemx_barrier_all_on_stream, nvshmemx_int_p_on_stream (a round counter to the next
 *   PE), nvshmemx_int_wait_until_on_stream (the previous PE's counter, on this PE), and
 *   nvshmemx_quiet_on_stream; instantiate; then 100 times: write round i's pattern into the
 *   source (outside the graph), launch the graph, synchronize, and check that this PE's
 *   symmetric buffer holds the previous PE's round-i pattern and its counter is i.
 *
 *   A second graph, replayed 100 times the same way, holds the other families:
 *   nvshmemx_putmem_signal_on_stream (signal ADD) and nvshmemx_signal_wait_until_on_stream,
 *   nvshmemx_signal_op_on_stream (SET) waited for with nvshmemx_uint64_wait_until_on_stream,
 *   nvshmemx_int_iput_on_stream, nvshmemx_sync_all_on_stream, nvshmemx_getmem_on_stream,
 *   and the world collectives nvshmemx_int_sum_reduce_on_stream,
 *   nvshmemx_fcollectmem_on_stream, nvshmemx_broadcastmem_on_stream and
 *   nvshmemx_alltoallmem_on_stream, each with a value the host changes between replays.
 *
 * Prints "PASS <check>" or "FAIL <check>: <why>" and "DONE failures=<n>"; exits 1 if a check
 * failed. Build: nvcc -x cu -DNIIN_TEST_CUDA -I$NIIN_HOME/include -Itests/c
 *                tests/c/graph_capture.c -L$NIIN_HOME/lib -lnvshmem_host
 */
#define _POSIX_C_SOURCE 200809L
#include "niin_test.h"

#ifndef NIIN_TEST_CUDA
#error "graph_capture.c needs CUDA: build it with -DNIIN_TEST_CUDA"
#endif

#define BYTES 4096
#define ROUNDS 100

static unsigned char pattern(int pe, int round, size_t i) {
    return (unsigned char)(pe * 37 + round * 13 + i * 7 + 1);
}

/* Words per PE of the second graph's collectives. */
#define COLL 4

/* Round `round`'s word `k` of PE `pe` in the second graph. */
static int word(int pe, int round, int k) { return pe * 1000 + round * 10 + k + 1; }

/* The second graph (see the top): returns the failures it found. */
static int second_graph(int me, int n, cudaStream_t stream) {
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    unsigned char *sym = (unsigned char *)nvshmem_malloc(BYTES);
    unsigned char *src = (unsigned char *)local_alloc(BYTES);
    unsigned char *back = (unsigned char *)local_alloc(BYTES);
    uint64_t *sig = (uint64_t *)nvshmem_calloc(2, sizeof(uint64_t));
    int *strided = (int *)nvshmem_calloc(2 * COLL, sizeof(int));
    int *red = (int *)nvshmem_malloc(2 * sizeof(int));
    int *coll_src = (int *)nvshmem_malloc(COLL * (size_t)n * sizeof(int));
    int *gathered = (int *)nvshmem_malloc(COLL * (size_t)n * sizeof(int));
    int *bcast = (int *)nvshmem_malloc(COLL * sizeof(int));
    int *a2a = (int *)nvshmem_malloc(COLL * (size_t)n * sizeof(int));
    int *vals = (int *)local_alloc(COLL * (size_t)n * sizeof(int));
    unsigned char host[BYTES], got[BYTES];
    int hv[COLL * 64], hg[COLL * 64], ha[COLL * 64], hb[COLL], hs[2 * COLL], hr[2];
    uint64_t hsig[2];
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaError_t err;
    int round, k, p, bad[8] = {0}, failures = 0;
    size_t i;

    if (n > 64 || !sym || !src || !back || !sig || !strided || !red || !coll_src || !gathered ||
        !bcast || !a2a || !vals) {
        CHECK("graph2_alloc", 0, "n %d (at most 64) or an allocation failed", n);
        return 1;
    }
    NIIN_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    nvshmemx_putmem_signal_on_stream(sym, src, BYTES, &sig[0], 1, NVSHMEM_SIGNAL_ADD, next, stream);
    nvshmemx_signal_wait_until_on_stream(&sig[0], NVSHMEM_CMP_EQ, 1, stream);
    nvshmemx_signal_op_on_stream(&sig[1], 7, NVSHMEM_SIGNAL_SET, next, stream);
    nvshmemx_uint64_wait_until_on_stream(&sig[1], NVSHMEM_CMP_EQ, 7, stream);
    nvshmemx_int_iput_on_stream(strided, vals, 2, 1, COLL, next, stream);
    nvshmemx_sync_all_on_stream(stream);
    nvshmemx_getmem_on_stream(back, sym, BYTES, next, stream);
    nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, red, coll_src, 2, stream);
    nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, gathered, coll_src, COLL * sizeof(int),
                                   stream);
    nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, bcast, coll_src, COLL * sizeof(int),
                                    n - 1, stream);
    nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, a2a, coll_src, COLL * sizeof(int),
                                   stream);
    nvshmemx_barrier_all_on_stream(stream);
    err = cudaStreamEndCapture(stream, &graph);
    CHECK("graph2_capture", err == cudaSuccess, "%s", cudaGetErrorString(err));
    if (err != cudaSuccess) return 1;
    err = cudaGraphInstantiate(&exec, graph, 0);
    CHECK("graph2_instantiate", err == cudaSuccess, "%s", cudaGetErrorString(err));
    if (err != cudaSuccess) return 1;

    for (round = 0; round < ROUNDS; round++) {
        uint64_t zero[2] = {0, 0};
        int sum0 = 0, sum1 = 0;
        for (i = 0; i < BYTES; i++) host[i] = pattern(me, round, i);
        /* coll_src: COLL * n words; the first COLL are this PE's contribution to fcollect
         * and broadcast, block j (COLL words) goes to PE j in the alltoall. */
        for (k = 0; k < COLL * n; k++) hv[k] = word(me, round, k);
        copy_in(src, host, BYTES);
        copy_in(sig, zero, sizeof zero);
        copy_in(coll_src, hv, COLL * (size_t)n * sizeof(int));
        copy_in(vals, hv, COLL * (size_t)n * sizeof(int));
        nvshmem_barrier_all();
        NIIN_CUDA_OK(cudaGraphLaunch(exec, stream));
        NIIN_CUDA_OK(cudaStreamSynchronize(stream));
        nvshmem_barrier_all();
        copy_out(got, sym, BYTES);
        for (i = 0; i < BYTES && got[i] == pattern(prev, round, i); i++) {}
        bad[0] += i != BYTES;
        copy_out(got, back, BYTES); /* the next PE's sym: this PE's data */
        for (i = 0; i < BYTES && got[i] == pattern(me, round, i); i++) {}
        bad[1] += i != BYTES;
        copy_out(hsig, sig, sizeof hsig);
        bad[2] += hsig[0] != 1 || hsig[1] != 7;
        copy_out(hs, strided, sizeof hs);
        for (k = 0; k < COLL; k++) bad[3] += hs[2 * k] != word(prev, round, k) || hs[2 * k + 1] != 0;
        copy_out(hr, red, sizeof hr);
        for (p = 0; p < n; p++) {
            sum0 += word(p, round, 0);
            sum1 += word(p, round, 1);
        }
        bad[4] += hr[0] != sum0 || hr[1] != sum1;
        copy_out(hg, gathered, COLL * (size_t)n * sizeof(int));
        copy_out(ha, a2a, COLL * (size_t)n * sizeof(int));
        copy_out(hb, bcast, sizeof hb);
        for (p = 0; p < n; p++)
            for (k = 0; k < COLL; k++) {
                bad[5] += hg[p * COLL + k] != word(p, round, k);
                bad[6] += ha[p * COLL + k] != word(p, round, me * COLL + k);
            }
        for (k = 0; k < COLL; k++) bad[7] += hb[k] != word(n - 1, round, k);
        nvshmem_barrier_all(); /* checked before the next replay overwrites anything */
    }
    {
        static const char *names[8] = {"putmem_signal", "getmem",  "signals", "iput",
                                       "sum_reduce",    "fcollect", "alltoall", "broadcast"};
        char check[64];
        for (k = 0; k < 8; k++) {
            snprintf(check, sizeof check, "graph2_replays_%s", names[k]);
            CHECK(check, bad[k] == 0, "%d wrong over %d rounds", bad[k], ROUNDS);
            failures += bad[k] != 0;
        }
    }
    NIIN_CUDA_OK(cudaGraphExecDestroy(exec));
    NIIN_CUDA_OK(cudaGraphDestroy(graph));
    local_free(vals);
    local_free(back);
    local_free(src);
    nvshmem_free(a2a);
    nvshmem_free(bcast);
    nvshmem_free(gathered);
    nvshmem_free(coll_src);
    nvshmem_free(red);
    nvshmem_free(strided);
    nvshmem_free(sig);
    nvshmem_free(sym);
    return failures;
}

int main(void) {
    int me, n, next, prev, round, bad_rounds = 0, counter_bad = 0, first_bad = -1;
    unsigned char host[BYTES], got[BYTES];
    unsigned char *sym, *src;
    int *counter;
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaError_t err;
    size_t i;

    select_device();
    nvshmem_init();
    me = nvshmem_my_pe();
    n = nvshmem_n_pes();
    next = (me + 1) % n;
    prev = (me + n - 1) % n;
    sym = (unsigned char *)nvshmem_malloc(BYTES);
    counter = (int *)nvshmem_calloc(1, sizeof(int));
    src = (unsigned char *)local_alloc(BYTES);
    NIIN_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    nvshmem_barrier_all();

    /* The graph stores 1 into the next PE's counter (p takes its value at the call, so the
     * captured value is fixed) and waits for its own: a replay completes once the previous
     * PE's replay has stored into it. The host resets the counters before each launch. */
    NIIN_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    nvshmemx_putmem_on_stream(sym, src, BYTES, next, stream);
    nvshmemx_quiet_on_stream(stream);
    nvshmemx_int_p_on_stream(counter, 1, next, stream);
    nvshmemx_int_wait_until_on_stream(counter, NVSHMEM_CMP_EQ, 1, stream);
    nvshmemx_barrier_all_on_stream(stream);
    err = cudaStreamEndCapture(stream, &graph);
    CHECK("capture", err == cudaSuccess, "%s", cudaGetErrorString(err));
    if (err != cudaSuccess) return 1;
    err = cudaGraphInstantiate(&exec, graph, 0);
    CHECK("instantiate", err == cudaSuccess, "%s", cudaGetErrorString(err));
    if (err != cudaSuccess) return 1;

    for (round = 0; round < ROUNDS; round++) {
        int c = 0;
        for (i = 0; i < BYTES; i++) host[i] = pattern(me, round, i);
        copy_in(src, host, BYTES);
        copy_in(counter, &c, sizeof c);
        nvshmem_barrier_all(); /* every PE's counter is 0 before any graph runs */
        NIIN_CUDA_OK(cudaGraphLaunch(exec, stream));
        NIIN_CUDA_OK(cudaStreamSynchronize(stream));
        nvshmem_barrier_all(); /* every PE's graph has run */
        copy_out(got, sym, BYTES);
        copy_out(&c, counter, sizeof c);
        for (i = 0; i < BYTES; i++)
            if (got[i] != pattern(prev, round, i)) break;
        if (i != BYTES) {
            bad_rounds++;
            if (first_bad < 0) first_bad = round;
        }
        counter_bad += c != 1;
        nvshmem_barrier_all(); /* checked before the next round's put overwrites it */
    }
    CHECK("graph_replays_move_the_data", bad_rounds == 0,
          "%d of %d rounds wrong (first: round %d)", bad_rounds, ROUNDS, first_bad);
    CHECK("graph_replays_signal", counter_bad == 0, "%d of %d rounds without the counter",
          counter_bad, ROUNDS);

    NIIN_CUDA_OK(cudaGraphExecDestroy(exec));
    NIIN_CUDA_OK(cudaGraphDestroy(graph));
    second_graph(me, n, stream);
    NIIN_CUDA_OK(cudaStreamDestroy(stream));
    local_free(src);
    nvshmem_free(counter);
    nvshmem_free(sym);
    printf("DONE failures=%d\n", niin_test_failures);
    fflush(stdout);
    nvshmem_finalize();
    return niin_test_failures ? 1 : 0;
}
