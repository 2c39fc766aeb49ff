/*
 * niin_test.h -- helpers of the C test programs: PASS/FAIL reporting and the memory the
 * programs own.
 *
 * The programs are plain C11 that also compiles as C++ (and as CUDA C++ with nvcc -x cu),
 * using only the NVSHMEM API, so the same source runs on niin-rs's CPU mock and, built
 * with -DNIIN_TEST_CUDA, on a GPU against niin-rs or NVSHMEM itself:
 *
 *   default            local buffers are host memory; symmetric memory is host memory
 *                      (the mock), read and written directly; streams are waited for
 *                      with niin_stream_synchronize (niin-rs's extension)
 *   -DNIIN_TEST_CUDA   local buffers come from cudaMalloc; symmetric memory is device
 *                      memory, reached with cudaMemcpy; cudaStreamSynchronize
 *
 * The including file defines _POSIX_C_SOURCE before any include.
 */
#ifndef NIIN_TEST_H
#define NIIN_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NIIN_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <nvshmem.h>
#include <nvshmemx.h>

#include "niin_rendezvous.h"

static int niin_test_failures = 0;

/* Prints "PASS name", or "FAIL name: <why>" and counts the failure. */
#define CHECK(name, cond, ...)            \
    do {                                  \
        if (cond) {                       \
            printf("PASS %s\n", name);    \
        } else {                          \
            printf("FAIL %s: ", name);    \
            printf(__VA_ARGS__);          \
            printf("\n");                 \
            niin_test_failures++;         \
        }                                 \
        fflush(stdout);                   \
    } while (0)

#ifdef NIIN_TEST_CUDA
#define NIIN_CUDA_OK(call)                                                              \
    do {                                                                                \
        cudaError_t niin_err_ = (call);                                                 \
        if (niin_err_ != cudaSuccess) {                                                 \
            printf("FAIL cuda: %s: %s\n", #call, cudaGetErrorString(niin_err_));        \
            fflush(stdout);                                                             \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)
#endif

/* Memory this program owns, usable as the local side of puts and gets. */
static inline void *local_alloc(size_t size) {
#ifdef NIIN_TEST_CUDA
    void *p = NULL;
    NIIN_CUDA_OK(cudaMalloc(&p, size));
    return p;
#else
    return malloc(size);
#endif
}

static inline void local_free(void *p) {
#ifdef NIIN_TEST_CUDA
    NIIN_CUDA_OK(cudaFree(p));
#else
    free(p);
#endif
}

/* Copies host bytes into local or symmetric memory of this PE. With CUDA the copy has
 * landed on return (cudaMemcpy from pageable memory may return once the bytes are staged,
 * and the library's own copies run on streams of their own). */
static inline void copy_in(void *dst, const void *host_src, size_t size) {
#ifdef NIIN_TEST_CUDA
    NIIN_CUDA_OK(cudaMemcpy(dst, host_src, size, cudaMemcpyDefault));
    NIIN_CUDA_OK(cudaDeviceSynchronize());
#else
    memcpy(dst, host_src, size);
#endif
}

/* Copies bytes of local or symmetric memory of this PE to the host. */
static inline void copy_out(void *host_dst, const void *src, size_t size) {
#ifdef NIIN_TEST_CUDA
    NIIN_CUDA_OK(cudaMemcpy(host_dst, src, size, cudaMemcpyDefault));
#else
    memcpy(host_dst, src, size);
#endif
}

/* Waits for everything enqueued on `stream`; returns 0 on success. */
static inline int stream_sync(cudaStream_t stream) {
#ifdef NIIN_TEST_CUDA
    return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 1;
#else
    return niin_stream_synchronize(stream);
#endif
}

/* Picks this process's GPU (local rank modulo the device count) before init. */
static inline void select_device(void) {
#ifdef NIIN_TEST_CUDA
    int n = 0, local = niin_env_int("NIIN_LOCAL_PE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID");
    NIIN_CUDA_OK(cudaGetDeviceCount(&n));
    NIIN_CUDA_OK(cudaSetDevice(local > 0 && n > 0 ? local % n : 0));
#endif
}

#endif /* NIIN_TEST_H */
