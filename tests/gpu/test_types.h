// test_types.h -- NVSHMEM 3.4.5's 25 standard RMA types (NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES),
// which of them its team reductions take, and its sized forms, for the GPU test programs
// (device_rma.cu, conf_*.cu).
//
// Written out here rather than taken from niin-rs's header (niin/types.h), so that the tests
// check that every name exists (taking niin's own list would be circular), and so that the
// NVSHMEM builds of the same sources have one.
#ifndef NIIN_TESTS_GPU_TEST_TYPES_H
#define NIIN_TESTS_GPU_TEST_TYPES_H

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The standard RMA types in NVSHMEM's order, one ROW(X, NAME, TYPE, REDUCE, BITWISE) each:
// REDUCE 1 for the 24 types of its min/max/sum/prod team reductions
// (NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES), BITWISE 1 for the 14 of and/or/xor
// (_BITWISE_REDUCE_TYPES). The lists below take their rows, each as X(NAME, TYPE):
//   TEST_RMA_TYPES             every row (25)
//   TEST_REDUCE_TYPES          REDUCE rows
//   TEST_REDUCE_BITWISE_TYPES  BITWISE rows
#define TEST_TYPE_TABLE(ROW, X)                 \
    ROW(X, bfloat16, __nv_bfloat16, 1, 0)       \
    ROW(X, half, half, 1, 0)                    \
    ROW(X, float, float, 1, 0)                  \
    ROW(X, double, double, 1, 0)                \
    ROW(X, char, char, 1, 0)                    \
    ROW(X, short, short, 1, 0)                  \
    ROW(X, schar, signed char, 1, 0)            \
    ROW(X, int, int, 1, 0)                      \
    ROW(X, long, long, 1, 0)                    \
    ROW(X, longlong, long long, 1, 0)           \
    ROW(X, uchar, unsigned char, 1, 1)          \
    ROW(X, ushort, unsigned short, 1, 1)        \
    ROW(X, uint, unsigned int, 1, 1)            \
    ROW(X, ulong, unsigned long, 1, 1)          \
    ROW(X, ulonglong, unsigned long long, 1, 1) \
    ROW(X, int8, int8_t, 1, 1)                  \
    ROW(X, int16, int16_t, 1, 1)                \
    ROW(X, int32, int32_t, 1, 1)                \
    ROW(X, int64, int64_t, 1, 1)                \
    ROW(X, uint8, uint8_t, 1, 1)                \
    ROW(X, uint16, uint16_t, 1, 1)              \
    ROW(X, uint32, uint32_t, 1, 1)              \
    ROW(X, uint64, uint64_t, 1, 1)              \
    ROW(X, size, size_t, 1, 1)                  \
    ROW(X, ptrdiff, ptrdiff_t, 0, 0)
#define TEST_IF_1(x) x
#define TEST_IF_0(x)
#define TEST_ROW_RMA(X, NAME, TYPE, REDUCE, BITWISE) X(NAME, TYPE)
#define TEST_ROW_REDUCE(X, NAME, TYPE, REDUCE, BITWISE) TEST_IF_##REDUCE(X(NAME, TYPE))
#define TEST_ROW_BITWISE(X, NAME, TYPE, REDUCE, BITWISE) TEST_IF_##BITWISE(X(NAME, TYPE))
#define TEST_RMA_TYPES(X) TEST_TYPE_TABLE(TEST_ROW_RMA, X)
#define TEST_REDUCE_TYPES(X) TEST_TYPE_TABLE(TEST_ROW_REDUCE, X)
#define TEST_REDUCE_BITWISE_TYPES(X) TEST_TYPE_TABLE(TEST_ROW_BITWISE, X)

// X(BITS, TYPE) per sized form nvshmem_put<BITS> ... (int4 for 128).
#define TEST_RMA_SIZES(X) \
    X(8, uint8_t)         \
    X(16, uint16_t)       \
    X(32, uint32_t)       \
    X(64, uint64_t)       \
    X(128, int4)

#endif // NIIN_TESTS_GPU_TEST_TYPES_H
