/*
 * mismatch.c -- collective calls that differ between PEs are an error on every PE, naming
 * both calls, and the world stays usable (NIIN_CHECK_COLLECTIVES: on by default on the
 * mock, opt-in on NCCL). Run as every PE of a job of 2 PEs or more; PE 0 differs from the
 * others:
 *
 *   1. PE 0 nvshmem_malloc(256), the others nvshmem_malloc(512): NULL on every PE
 *   2. then the same nvshmem_malloc(1024) everywhere: it succeeds (nothing was left behind)
 *   3. PE 0 nvshmem_barrier_all(), the others nvshmem_malloc(64): the others get NULL
 *   4. then a put to the next PE, nvshmem_barrier_all and a read: the world still works
 *
 * Prints "EXPECT_NIIN_LINES <k>" (the NIIN: lines this PE's library must have written) and
 * "DONE failures=<n>". Plain C11/C++; with NIIN_TEST_CUDA the buffers are device memory.
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "niin_test.h"

int main(void) {
    nvshmem_init();
    const int me = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();
    int expected_lines = 0;
    if (npes < 2) {
        printf("mismatch.c needs 2 PEs or more, got %d\n", npes);
        nvshmem_finalize();
        return 2;
    }

    void *p = nvshmem_malloc(me == 0 ? 256 : 512);
    expected_lines++;
    CHECK("mismatched_malloc_fails_everywhere", p == NULL, "got %p", p);

    int *q = (int *)nvshmem_malloc(1024);
    CHECK("matching_malloc_after_a_mismatch", q != NULL, "NULL");

    if (me == 0) {
        nvshmem_barrier_all();
    } else {
        void *r = nvshmem_malloc(64);
        CHECK("malloc_against_a_barrier_fails", r == NULL, "got %p", r);
    }
    expected_lines++;

    if (q != NULL) {
        const int value = 1000 + me;
        nvshmem_int_p(q, value, (me + 1) % npes);
        nvshmem_barrier_all();
        int got = -1;
        copy_out(&got, q, sizeof got);
        const int want = 1000 + (me + npes - 1) % npes;
        CHECK("put_and_barrier_after_the_mismatches", got == want, "got %d, want %d", got, want);
        nvshmem_free(q);
    }
    printf("EXPECT_NIIN_LINES %d\n", expected_lines);
    printf("DONE failures=%d\n", niin_test_failures);
    fflush(stdout);
    nvshmem_finalize();
    return niin_test_failures == 0 ? 0 : 1;
}
