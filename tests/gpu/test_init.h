// test_init.h -- start-up shared by the GPU test programs that are built both against
// niin-rs and against NVSHMEM 3.4.5 (device_rma.cu, putmem_block_bw.cu). NVSHMEM API only.
//
// test_init():
//   - TEST_UID_FILE unset: nvshmem_init() (niin-rs under niinrun);
//   - TEST_UID_FILE set: NVSHMEM's unique-id path without MPI. The rank, size and local
//     rank come from the launcher's environment (Open MPI's OMPI_COMM_WORLD_*, or niinrun's
//     NIIN_PE / NIIN_NPES / NIIN_LOCAL_PE); rank 0 writes the id to the file (written to a
//     temporary name, then renamed, so readers never see half of it), the others wait up to
//     60 s for it. The launcher script removes the file before each run. This is how
//     NVSHMEM 3.4.5 starts on the GPU machine (its MPI/PMIx plugins do not, GPU.md), and
//     running niin-rs the same way compares the two libraries under one launcher.
// The CUDA device is the local rank modulo the device count.

#ifndef NIIN_TESTS_GPU_TEST_INIT_H
#define NIIN_TESTS_GPU_TEST_INIT_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "cuda_check.h"


// The first of two environment variables that is set, as an int; `fallback` if neither.
static inline int test_env_int(const char *a, const char *b, int fallback) {
    const char *v = getenv(a);
    if (v == nullptr) v = getenv(b);
    return v != nullptr ? atoi(v) : fallback;
}

static inline void test_uid_exchange(const char *path, int rank, nvshmemx_uniqueid_t *id) {
    if (rank == 0) {
        if (nvshmemx_get_uniqueid(id) != 0) {
            fprintf(stderr, "test_init: nvshmemx_get_uniqueid failed\n");
            exit(2);
        }
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (f == nullptr || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 ||
            rename(tmp, path) != 0) {
            fprintf(stderr, "test_init: cannot write the unique id to %s\n", path);
            exit(2);
        }
        return;
    }
    for (int waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
        FILE *f = fopen(path, "rb");
        if (f != nullptr) {
            size_t n = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (n == 1) return;
        }
        usleep(10000);
    }
    fprintf(stderr, "test_init: rank %d: no unique id in %s after 60 s\n", rank, path);
    exit(2);
}

static inline void test_init() {
    const char *uid_file = getenv("TEST_UID_FILE");
    if (uid_file == nullptr) {
        nvshmem_init();
        return;
    }
    int rank = test_env_int("OMPI_COMM_WORLD_RANK", "NIIN_PE", -1);
    int size = test_env_int("OMPI_COMM_WORLD_SIZE", "NIIN_NPES", -1);
    int local = test_env_int("OMPI_COMM_WORLD_LOCAL_RANK", "NIIN_LOCAL_PE", rank);
    if (rank < 0 || size < 1 || rank >= size) {
        fprintf(stderr, "test_init: TEST_UID_FILE is set but the launcher gave no rank/size "
                        "(OMPI_COMM_WORLD_RANK/SIZE or NIIN_PE/NIIN_NPES)\n");
        exit(2);
    }
    int ndev = 0;
    TEST_CUDA(cudaGetDeviceCount(&ndev));
    TEST_CUDA(cudaSetDevice(local % ndev));
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    test_uid_exchange(uid_file, rank, &id);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "test_init: rank %d: nvshmemx_init_attr failed\n", rank);
        exit(2);
    }
}

#endif // NIIN_TESTS_GPU_TEST_INIT_H
