/*
 * app.c -- an NVSHMEM host program, built with CMake's find_package(nvshmem) against an
 * NIIN_HOME (scripts/build-niin-home.sh). See CMakeLists.txt.
 *
 * Every PE puts one int into the next PE's symmetric slot, waits in a barrier, reads its
 * own slot back and prints one line: "app: PE <me> of <n> got <v> from PE <prev>: OK".
 * Host API only, so it runs on niin-rs's CPU mock as well as on GPUs.
 */
#include <stdio.h>

#include <nvshmem.h>

int main(void) {
    int me, npes, next, prev, got, status = 0;
    int *slot;

    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;

    slot = (int *)nvshmem_malloc(sizeof(int));
    if (slot == NULL) {
        fprintf(stderr, "app: PE %d: nvshmem_malloc failed\n", me);
        nvshmem_global_exit(1);
    }
    nvshmem_int_p(slot, 1000 + me, next);
    nvshmem_barrier_all();
    got = nvshmem_int_g(slot, me);

    if (got == 1000 + prev) {
        printf("app: PE %d of %d got %d from PE %d: OK\n", me, npes, got, prev);
    } else {
        printf("app: PE %d of %d got %d, expected %d: FAIL\n", me, npes, got,
               1000 + prev);
        status = 1;
    }
    nvshmem_barrier_all();
    nvshmem_free(slot);
    nvshmem_finalize();
    return status;
}
