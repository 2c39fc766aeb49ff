// cuda_check.h -- TEST_CUDA(call): the GPU test programs' check of a CUDA runtime call.
// On an error it prints the file, line, call and CUDA's message, and exits with status 2
// (the programs use 1 for a failed check, 2 for a broken set-up).

#ifndef NIIN_TESTS_GPU_CUDA_CHECK_H
#define NIIN_TESTS_GPU_CUDA_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TEST_CUDA(x)                                                                       \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

#endif // NIIN_TESTS_GPU_CUDA_CHECK_H
