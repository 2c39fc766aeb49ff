/*
 * niin/types.h -- NVSHMEM's constants and types, as NVSHMEM 3.4.5 defines them.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. Every value
 * and every structure layout here is NVSHMEM 3.4.5's, so a program written for NVSHMEM
 * compiles unchanged and passes the same bytes; the sizes are checked below.
 *
 * Versions reported (see nvshmem_info_get_version / nvshmemx_vendor_get_version_info):
 *   NVSHMEM_MAJOR/MINOR_VERSION         1.3    the OpenSHMEM specification NVSHMEM 3.4.5
 *                                              follows; niin-rs follows the same API
 *   NVSHMEM_VENDOR_MAJOR/MINOR/PATCH    3.4.5  the NVSHMEM release whose API, constants
 *                                              and layouts niin-rs implements, so version
 *                                              checks written for NVSHMEM behave the same
 *   NIIN_VERSION_MAJOR/MINOR/PATCH      niin-rs's own version, also in the name string
 */
#ifndef NIIN_TYPES_H
#define NIIN_TYPES_H

#include "niin/config.h"

#if !defined(__CUDACC_RTC__)
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#else
#include <cuda/std/climits>
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#endif

/* ---- versions and names --------------------------------------------------------- */

#define NVSHMEM_MAJOR_VERSION 1
#define NVSHMEM_MINOR_VERSION 3

#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5
#define NVSHMEM_VENDOR_PACKAGE_VERSION 0
#define NVSHMEM_VENDOR_VERSION                                                          \
    ((NVSHMEM_VENDOR_MAJOR_VERSION) * 10000 + (NVSHMEM_VENDOR_MINOR_VERSION) * 100 + \
     (NVSHMEM_VENDOR_PATCH_VERSION))

#define NIIN_VERSION_MAJOR 0
#define NIIN_VERSION_MINOR 1
#define NIIN_VERSION_PATCH 0
#define NIIN_VERSION_STRING "0.1.0"

/* What nvshmem_info_get_name writes (OpenSHMEM: the vendor string and the name agree). */
#define NVSHMEM_VENDOR_STRING "NIIN-RS (NVSHMEM Implemented In NCCL, Rust) v" NIIN_VERSION_STRING

/* Size of the buffer nvshmem_info_get_name fills, terminating NUL included. */
#define NVSHMEM_MAX_NAME_LEN 256

/* ---- return values ---------------------------------------------------------------- */

enum nvshmemx_status {
    NVSHMEMX_SUCCESS = 0,
    NVSHMEMX_ERROR_INVALID_VALUE,          /* 1: bad argument, or wrong library state */
    NVSHMEMX_ERROR_OUT_OF_MEMORY,          /* 2: the symmetric heap is full */
    NVSHMEMX_ERROR_NOT_SUPPORTED,          /* 3: not in this build or transport */
    NVSHMEMX_ERROR_SYMMETRY,               /* 4: PEs allocated asymmetrically */
    NVSHMEMX_ERROR_GPU_NOT_SELECTED,       /* 5 */
    NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED, /* 6 */
    NVSHMEMX_ERROR_INTERNAL,               /* 7: transport failure, or a niin-rs bug */
    NVSHMEMX_ERROR_SENTINEL = INT_MAX
};

/* ---- initialization ----------------------------------------------------------------- */

/* Flags of nvshmemx_init_attr. The enumeration's tag is NVSHMEM's. NVSHMEM writes the
 * last value as 1 << 31, which ISO C does not accept as a constant; INT_MIN is the same
 * int. */
enum flags {
    NVSHMEMX_INIT_THREAD_PES = 1,
    NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
    NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
    NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3,
    NVSHMEMX_INIT_MAX = INT_MIN
};

/* Thread levels of nvshmem_init_thread / nvshmem_query_thread. */
enum nvshmemi_thread_support {
    NVSHMEM_THREAD_SINGLE = 0,
    NVSHMEM_THREAD_FUNNELED,
    NVSHMEM_THREAD_SERIALIZED,
    NVSHMEM_THREAD_MULTIPLE,
    NVSHMEM_THREAD_TYPE_SENTINEL = INT_MAX
};

/* What nvshmemx_init_status returns. */
typedef enum {
    NVSHMEM_STATUS_NOT_INITIALIZED = 0,
    NVSHMEM_STATUS_IS_BOOTSTRAPPED,
    NVSHMEM_STATUS_IS_INITIALIZED,
    NVSHMEM_STATUS_LIMITED_MPG,
    NVSHMEM_STATUS_FULL_MPG,
    NVSHMEM_STATUS_INVALID = INT_MAX
} nvshmemx_init_status_t;

/* The unique ID of the unique-ID bootstrap: 128 bytes, a version and 124 bytes the
 * library fills (niin-rs: a tagged job identity; see niin-ffi's uid module). */
#define UNIQUEID_PADDING 124
#define UNIQUEID_ARGS_INVALID -1

typedef struct {
    int version;
    char internal[UNIQUEID_PADDING];
} nvshmemx_uniqueid_v1;
typedef nvshmemx_uniqueid_v1 nvshmemx_uniqueid_t;

typedef struct {
    int version;
    nvshmemx_uniqueid_v1 *id;
    int myrank;
    int nranks;
} nvshmemx_uniqueid_args_v1;
typedef nvshmemx_uniqueid_args_v1 nvshmemx_uniqueid_args_t;

#define INIT_ARGS_PADDING 96
#define NVSHMEM_INIT_ATTR_VER 1

typedef struct {
    int version;
    nvshmemx_uniqueid_args_t uid_args;
    char content[INIT_ARGS_PADDING];
} nvshmemx_init_args_v1;
typedef nvshmemx_init_args_v1 nvshmemx_init_args_t;

typedef struct {
    int version;
    void *mpi_comm; /* points to an MPI_Comm (NVSHMEMX_INIT_WITH_MPI_COMM) */
    nvshmemx_init_args_t args;
} nvshmemx_init_attr_v1;
typedef nvshmemx_init_attr_v1 nvshmemx_init_attr_t;

/* Initializers: each structure's version is (1 << 16) + its size. */
#define NVSHMEMX_UNIQUEID_INITIALIZER                  \
    {                                                  \
        (1 << 16) + sizeof(nvshmemx_uniqueid_t), { 0 } \
    }

#define NVSHMEMX_UNIQUEID_ARGS_INITIALIZER                                        \
    {                                                                             \
        (1 << 16) + sizeof(nvshmemx_uniqueid_args_t), NULL, UNIQUEID_ARGS_INVALID, \
            UNIQUEID_ARGS_INVALID                                                 \
    }

#define NVSHMEMX_INIT_ARGS_INITIALIZER                                                  \
    {                                                                                   \
        (1 << 16) + sizeof(nvshmemx_init_args_t), NVSHMEMX_UNIQUEID_ARGS_INITIALIZER, { \
            0                                                                           \
        }                                                                               \
    }

#define NVSHMEMX_INIT_ATTR_INITIALIZER                                         \
    {                                                                          \
        (1 << 16) + sizeof(nvshmemx_init_attr_t), NULL, NVSHMEMX_INIT_ARGS_INITIALIZER \
    }

/* Sets the three version fields of an nvshmemx_init_attr_t (NVSHMEM's helper). */
#define nvshmemx_init_init_attr_ver_only(attr)                                     \
    do {                                                                           \
        (attr).version = (1 << 16) + sizeof(nvshmemx_init_attr_t);                 \
        (attr).args.version = (1 << 16) + sizeof(nvshmemx_init_args_t);            \
        (attr).args.uid_args.version = (1 << 16) + sizeof(nvshmemx_uniqueid_args_t); \
    } while (0)

/* ---- teams ------------------------------------------------------------------------- */

typedef int32_t nvshmem_team_t;
typedef nvshmem_team_t nvshmemx_team_t;
typedef uint64_t nvshmemx_team_uniqueid_t;

typedef enum {
    NVSHMEM_TEAM_INVALID = -1,
    NVSHMEM_TEAM_WORLD = 0,
    NVSHMEM_TEAM_WORLD_INDEX = 0,
    NVSHMEM_TEAM_SHARED = 1,
    NVSHMEM_TEAM_SHARED_INDEX = 1,
    NVSHMEMX_TEAM_NODE = 2,
    NVSHMEM_TEAM_NODE_INDEX = 2,
    NVSHMEMX_TEAM_SAME_MYPE_NODE = 3,
    NVSHMEM_TEAM_SAME_MYPE_NODE_INDEX = 3,
    NVSHMEMI_TEAM_SAME_GPU = 4,
    NVSHMEM_TEAM_SAME_GPU_INDEX = 4,
    NVSHMEMI_TEAM_GPU_LEADERS = 5,
    NVSHMEM_TEAM_GPU_LEADERS_INDEX = 5,
    NVSHMEM_TEAMS_MIN = 6,
    NVSHMEM_TEAM_INDEX_MAX = INT_MAX
} nvshmem_team_id_t;

#define TEAM_CONFIG_V2_PADDING 48
#define TEAM_CONFIG_PADDING 56
#define TEAM_CONFIG_SCALAR_INVALID -1
#define TEAM_ULSCALAR_INVALID 0xFFFFFFFFFFFFFFFF
#define NVSHMEM_TEAM_UNIQUID_INITIALIZER TEAM_ULSCALAR_INVALID

typedef struct {
    int version;
    int num_contexts;
    nvshmemx_team_uniqueid_t uniqueid;
    char padding[TEAM_CONFIG_V2_PADDING];
} nvshmem_team_config_v2;

typedef struct {
    int version;
    int num_contexts;
    char padding[TEAM_CONFIG_PADDING];
} nvshmem_team_config_v1;

typedef nvshmem_team_config_v2 nvshmem_team_config_t;

#define NVSHMEMI_TEAM_CONFIG_VERSION_2_IDENTIFIER (2 << 16) + sizeof(nvshmem_team_config_t)
#define NVSHMEMI_TEAM_CONFIG_VERSION_1_IDENTIFIER (1 << 16) + sizeof(nvshmem_team_config_v1)

#define NVSHMEMI_TEAM_CONFIG_INITIALIZER                                                     \
    {                                                                                        \
        NVSHMEMI_TEAM_CONFIG_VERSION_2_IDENTIFIER, TEAM_CONFIG_SCALAR_INVALID,               \
            TEAM_ULSCALAR_INVALID, { 0 }                                                     \
    }
#define NVSHMEM_TEAM_CONFIG_INITIALIZER NVSHMEMI_TEAM_CONFIG_INITIALIZER
#define NVSHMEMI_TEAM_CONFIG_V1_INITIALIZER                                                  \
    {                                                                                        \
        NVSHMEMI_TEAM_CONFIG_VERSION_1_IDENTIFIER, TEAM_CONFIG_SCALAR_INVALID, { 0 }         \
    }

#define NVSHMEM_TEAM_CONFIG_MASK_NUM_CONTEXTS 0x0000000000000001
#define NVSHMEM_TEAM_CONFIG_MASK_UNIQUEID 0x0000000000000002

/* ---- point-to-point synchronization and signals ------------------------------------ */

typedef enum nvshmemi_cmp_type {
    NVSHMEM_CMP_EQ = 0,
    NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT,
    NVSHMEM_CMP_LE,
    NVSHMEM_CMP_LT,
    NVSHMEM_CMP_GE,
    NVSHMEM_CMP_SENTINEL = INT_MAX
} nvshmemx_cmp_type_t;

typedef enum { NVSHMEM_SIGNAL_SET = 9, NVSHMEM_SIGNAL_ADD = 10 } nvshmemx_signal_op_t;

/* ---- element types of the typed API: the one list every nvshmem_<NAME>_* comes from ---- */
/*
 * NIIN_FOR_EACH_RMA_TYPE(X) expands X(NAME, TYPE) once per standard RMA type of NVSHMEM
 * 3.4.5, in NVSHMEM's order: 25 rows (NVSHMEM's NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES;
 * the "24 RMA types" of older notes left one out). niin-api's for_each_nvshmem_type! has
 * the same names in the same order; keep the two identical. `half` and `__nv_bfloat16`
 * come from <cuda_fp16.h> and <cuda_bf16.h>, which the device headers include; code that
 * expands the list without them (plain C) expands NIIN_FOR_EACH_RMA_TYPE_PLAIN only.
 */
#define NIIN_FOR_EACH_RMA_TYPE(X) NIIN_FOR_EACH_RMA_TYPE_FP16(X) NIIN_FOR_EACH_RMA_TYPE_PLAIN(X)
/* The list's first two rows, whose types come from CUDA's headers, and the other 23, which
 * every C compiler has. */
#define NIIN_FOR_EACH_RMA_TYPE_FP16(X) NIIN_RMA_TABLE_FP16(NIIN_ROW_EVERY, X)
#define NIIN_FOR_EACH_RMA_TYPE_PLAIN(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_EVERY, X)
/* NIIN_FOR_EACH_WAIT_TYPE(X): NVSHMEM's 14 wait types (NVSHMEMI_REPT_FOR_WAIT_TYPES), the
 * rows marked WAIT = 1 (niin-api's rows marked `wait`). */
#define NIIN_FOR_EACH_WAIT_TYPE(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_WAIT, X)
/* The AMO types of NVSHMEM 3.4.5 (host/nvshmem_api.h, OpenSHMEM 1.4's tables), in table
 * order, each X(NAME, TYPE):
 *   NIIN_FOR_EACH_AMO_STANDARD_TYPE  12 rows marked AMO = 1 (niin-api: `amo`): fetch, set,
 *                                    swap, compare_swap, inc, fetch_inc, add, fetch_add
 *                                    (NVSHMEM's bitwise group plus its int, long, longlong,
 *                                    size, ptrdiff)
 *   NIIN_FOR_EACH_AMO_BITWISE_TYPE   7 rows marked BITWISE = 1 (`bitwise`): and, or, xor and
 *                                    their fetch_ forms
 *   NIIN_FOR_EACH_AMO_EXTENDED_TYPE  2 rows marked EXTENDED = 1 (`ext`): float and double,
 *                                    fetch, set and swap only */
#define NIIN_FOR_EACH_AMO_STANDARD_TYPE(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_AMO, X)
#define NIIN_FOR_EACH_AMO_BITWISE_TYPE(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_BITWISE, X)
#define NIIN_FOR_EACH_AMO_EXTENDED_TYPE(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_EXTENDED, X)
/* The reduction types of NVSHMEM 3.4.5's team collectives (nvshmem_<NAME>_<op>_reduce and
 * _reducescatter; NVSHMEMI_REPT_FOR_STANDARD_REDUCE_TYPES and _BITWISE_REDUCE_TYPES), in
 * table order, each X(NAME, TYPE):
 *   NIIN_FOR_EACH_REDUCE_TYPE          24 rows marked REDUCE = 1 (niin-api: `reduce`): min,
 *                                      max, sum, prod -- every RMA row but ptrdiff
 *   NIIN_FOR_EACH_REDUCE_BITWISE_TYPE  14 rows marked REDUCE_BITWISE = 1 (`reduce_bitwise`):
 *                                      and, or, xor -- the unsigned and fixed-width integers
 *                                      and size
 * NIIN_FOR_EACH_REDUCE_TYPE_FP16 / _PLAIN split the first as the RMA list is split.
 * NIIN_FOR_EACH_REDUCTION(X) expands X(NAME, TYPE, OP) for every pair NVSHMEM has (OP: and,
 * or, xor for the bitwise rows; min, max, sum, prod for the reduce rows), 138 in all; its
 * _FP16 and _PLAIN halves likewise. */
#define NIIN_FOR_EACH_REDUCE_TYPE(X) \
    NIIN_FOR_EACH_REDUCE_TYPE_FP16(X) NIIN_FOR_EACH_REDUCE_TYPE_PLAIN(X)
#define NIIN_FOR_EACH_REDUCE_TYPE_FP16(X) NIIN_RMA_TABLE_FP16(NIIN_ROW_REDUCE, X)
#define NIIN_FOR_EACH_REDUCE_TYPE_PLAIN(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_REDUCE, X)
#define NIIN_FOR_EACH_REDUCE_BITWISE_TYPE(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_REDUCE_BITWISE, X)
#define NIIN_FOR_EACH_REDUCTION(X) NIIN_FOR_EACH_REDUCTION_FP16(X) NIIN_FOR_EACH_REDUCTION_PLAIN(X)
#define NIIN_FOR_EACH_REDUCTION_FP16(X) NIIN_RMA_TABLE_FP16(NIIN_ROW_REDUCTION, X)
#define NIIN_FOR_EACH_REDUCTION_PLAIN(X) NIIN_RMA_TABLE_PLAIN(NIIN_ROW_REDUCTION, X)

/* The table: ROW(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) per
 * type; the last six columns (1 or 0) say which of the lists above have the row. */
#define NIIN_RMA_TABLE_FP16(ROW, X)                       \
    ROW(X, bfloat16, __nv_bfloat16, 0, 0, 0, 0, 1, 0)     \
    ROW(X, half, half, 0, 0, 0, 0, 1, 0)
#define NIIN_RMA_TABLE_PLAIN(ROW, X)                            \
    ROW(X, float, float, 0, 0, 0, 1, 1, 0)                      \
    ROW(X, double, double, 0, 0, 0, 1, 1, 0)                    \
    ROW(X, char, char, 0, 0, 0, 0, 1, 0)                        \
    ROW(X, short, short, 1, 0, 0, 0, 1, 0)                      \
    ROW(X, schar, signed char, 0, 0, 0, 0, 1, 0)                \
    ROW(X, int, int, 1, 1, 0, 0, 1, 0)                          \
    ROW(X, long, long, 1, 1, 0, 0, 1, 0)                        \
    ROW(X, longlong, long long, 1, 1, 0, 0, 1, 0)               \
    ROW(X, uchar, unsigned char, 0, 0, 0, 0, 1, 1)              \
    ROW(X, ushort, unsigned short, 1, 0, 0, 0, 1, 1)            \
    ROW(X, uint, unsigned int, 1, 1, 1, 0, 1, 1)                \
    ROW(X, ulong, unsigned long, 1, 1, 1, 0, 1, 1)              \
    ROW(X, ulonglong, unsigned long long, 1, 1, 1, 0, 1, 1)     \
    ROW(X, int8, int8_t, 0, 0, 0, 0, 1, 1)                      \
    ROW(X, int16, int16_t, 0, 0, 0, 0, 1, 1)                    \
    ROW(X, int32, int32_t, 1, 1, 1, 0, 1, 1)                    \
    ROW(X, int64, int64_t, 1, 1, 1, 0, 1, 1)                    \
    ROW(X, uint8, uint8_t, 0, 0, 0, 0, 1, 1)                    \
    ROW(X, uint16, uint16_t, 0, 0, 0, 0, 1, 1)                  \
    ROW(X, uint32, uint32_t, 1, 1, 1, 0, 1, 1)                  \
    ROW(X, uint64, uint64_t, 1, 1, 1, 0, 1, 1)                  \
    ROW(X, size, size_t, 1, 1, 0, 0, 1, 1)                      \
    ROW(X, ptrdiff, ptrdiff_t, 1, 1, 0, 0, 0, 0)
#define NIIN_ROW_EVERY(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    X(NAME, TYPE)
#define NIIN_ROW_WAIT(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##WAIT(X(NAME, TYPE))
#define NIIN_ROW_AMO(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##AMO(X(NAME, TYPE))
#define NIIN_ROW_BITWISE(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##BITWISE(X(NAME, TYPE))
#define NIIN_ROW_EXTENDED(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##EXTENDED(X(NAME, TYPE))
#define NIIN_ROW_REDUCE(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##REDUCE(X(NAME, TYPE))
#define NIIN_ROW_REDUCE_BITWISE(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE,        \
                                REDUCE_BITWISE)                                              \
    NIIN_ROW_IF_##REDUCE_BITWISE(X(NAME, TYPE))
#define NIIN_ROW_REDUCTION(X, NAME, TYPE, WAIT, AMO, BITWISE, EXTENDED, REDUCE, REDUCE_BITWISE) \
    NIIN_ROW_IF_##REDUCE_BITWISE(X(NAME, TYPE, and) X(NAME, TYPE, or) X(NAME, TYPE, xor))       \
    NIIN_ROW_IF_##REDUCE(X(NAME, TYPE, min) X(NAME, TYPE, max) X(NAME, TYPE, sum)               \
                             X(NAME, TYPE, prod))
#define NIIN_ROW_IF_1(row) row
#define NIIN_ROW_IF_0(row)

/* NIIN_FOR_EACH_RMA_SIZE(X) expands X(BITS, TYPE) for the sized forms nvshmem_put<BITS>,
 * nvshmem_get<BITS>, ...: TYPE is the element moved (int4, CUDA's 16-byte vector, for 128). */
#define NIIN_FOR_EACH_RMA_SIZE(X) \
    X(8, int8_t)                  \
    X(16, int16_t)                \
    X(32, int32_t)                \
    X(64, int64_t)                \
    X(128, int4)

/* ---- layout checks (NVSHMEM 3.4.5's sizes; field offsets of an LP64 ABI) ------------ */

NIIN_STATIC_ASSERT(sizeof(nvshmemx_uniqueid_t) == 128, "nvshmemx_uniqueid_t is 128 bytes");
NIIN_STATIC_ASSERT(sizeof(nvshmemx_uniqueid_args_t) == 24, "nvshmemx_uniqueid_args_t is 24 bytes");
NIIN_STATIC_ASSERT(sizeof(nvshmemx_init_args_t) == 128, "nvshmemx_init_args_t is 128 bytes");
NIIN_STATIC_ASSERT(sizeof(nvshmemx_init_attr_t) == 144, "nvshmemx_init_attr_t is 144 bytes");
NIIN_STATIC_ASSERT(sizeof(nvshmem_team_config_v1) == 64, "nvshmem_team_config_v1 is 64 bytes");
NIIN_STATIC_ASSERT(sizeof(nvshmem_team_config_t) == 64, "nvshmem_team_config_t is 64 bytes");
NIIN_STATIC_ASSERT(offsetof(nvshmemx_init_attr_t, args) == 16, "init_attr.args at offset 16");
NIIN_STATIC_ASSERT(offsetof(nvshmemx_init_args_t, uid_args) == 8, "init_args.uid_args at 8");
NIIN_STATIC_ASSERT(offsetof(nvshmemx_uniqueid_args_t, myrank) == 16, "uid_args.myrank at 16");
NIIN_STATIC_ASSERT(sizeof(nvshmem_team_t) == 4, "nvshmem_team_t is 32 bits");

#endif /* NIIN_TYPES_H */
