// test_types.h -- NVSHMEM 3.4.5's 25 standard RMA types (NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES)
// and its sized forms, for the GPU test programs (device_rma.cu, conf_*.cu).
//
// Written out here rather than taken from niin-rs's header (niin/types.h), so that the tests
// check that every name exists (taking niin's own list would be circular), and so that the
// NVSHMEM builds of the same sources have one.
#ifndef NIIN_TESTS_GPU_TEST_TYPES_H
#define NIIN_TESTS_GPU_TEST_TYPES_H

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// X(NAME, TYPE) per standard RMA type, in NVSHMEM's order.
#define TEST_RMA_TYPES(X)            \
    X(bfloat16, __nv_bfloat16)       \
    X(half, half)                    \
    X(float, float)                  \
    X(double, double)                \
    X(char, char)                    \
    X(short, short)                  \
    X(schar, signed char)            \
    X(int, int)                      \
    X(long, long)                    \
    X(longlong, long long)           \
    X(uchar, unsigned char)          \
    X(ushort, unsigned short)        \
    X(uint, unsigned int)            \
    X(ulong, unsigned long)          \
    X(ulonglong, unsigned long long) \
    X(int8, int8_t)                  \
    X(int16, int16_t)                \
    X(int32, int32_t)                \
    X(int64, int64_t)                \
    X(uint8, uint8_t)                \
    X(uint16, uint16_t)              \
    X(uint32, uint32_t)              \
    X(uint64, uint64_t)              \
    X(size, size_t)                  \
    X(ptrdiff, ptrdiff_t)

// X(BITS, TYPE) per sized form nvshmem_put<BITS> ... (int4 for 128).
#define TEST_RMA_SIZES(X) \
    X(8, uint8_t)         \
    X(16, uint16_t)       \
    X(32, uint32_t)       \
    X(64, uint64_t)       \
    X(128, int4)

#endif // NIIN_TESTS_GPU_TEST_TYPES_H
