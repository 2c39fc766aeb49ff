/*
 * peer_death.c -- the last PE of the job kills itself (SIGKILL) while the others wait for
 * it in nvshmem_barrier_all. Under niinrun every survivor's barrier must fail at once with
 * one NIIN: line naming that PE and how it died ("PE 3 died (killed by signal 9
 * (SIGKILL))"), not wait out NIIN_TIMEOUT, and nvshmem_finalize must return (on NCCL the
 * communicator is aborted, not finalized with a peer that is gone). niinrun then ends the
 * job with the dead PE's status (137) and blames it.
 *
 * A survivor prints "SURVIVOR barrier returned after <s> s" and "SURVIVOR finalized", and
 * exits 3 (its barrier failed). Needs 2 PEs or more; plain C11 (the mock, or a GPU world
 * with NIIN_TEST_CUDA and the NCCL transport).
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <time.h>

#include "niin_test.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    nvshmem_init();
    const int me = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();
    if (npes < 2) {
        printf("peer_death.c needs 2 PEs or more, got %d\n", npes);
        nvshmem_finalize();
        return 2;
    }
    nvshmem_barrier_all(); /* everyone is up */
    if (me == npes - 1) {
        fflush(stdout);
        raise(SIGKILL);
    }
    const double t0 = now_s();
    nvshmem_barrier_all();
    printf("SURVIVOR barrier returned after %.3f s\n", now_s() - t0);
    fflush(stdout);
    nvshmem_finalize();
    printf("SURVIVOR finalized\n");
    fflush(stdout);
    return 3 + niin_test_failures; /* (niin_test.h's counter: no CHECK here) */
}
