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
    NIIN_CUDA_OK(cudaStreamDestroy(stream));
    local_free(src);
    nvshmem_free(counter);
    nvshmem_free(sym);
    printf("DONE failures=%d\n", niin_test_failures);
    fflush(stdout);
    nvshmem_finalize();
    return niin_test_failures ? 1 : 0;
}
