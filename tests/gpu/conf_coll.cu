// conf_coll.cu -- GPU conformance of the device team collectives: every reduce and
// reducescatter (the 138 type x operator pairs of NVSHMEM 3.4.5), broadcast, fcollect and
// alltoall (the 25 RMA types and the byte forms), by a thread, a warp and a block, on every
// team shape. NVSHMEM API only (the same source builds against NVSHMEM 3.4.5);
// tests/gpu/conf_harness.h reports.
//
// Team shapes (slots, every PE passes its own team of the slot, or NVSHMEM_TEAM_INVALID when
// it is in none): WORLD; even and odd PEs (stride 2); PEs 1.. (PE 0 outside); the x axis of a
// 2-D split with rows of 2 and its y axis; a team of one (the x axis of a 2-D split with rows
// of 1). NVSHMEM 3.4.5 refuses splits when several PEs share a GPU: those slots are SKIPped.
//
// One launch per (type and operator, scope) runs every slot in turn and, per slot, each count
// of kCounts: reduce, reducescatter and an in-place reduce (dest == source), each into a region
// of its own; the host then checks every region against an oracle computed here. The kernels
// have no __launch_bounds__ and run 1024 threads where their registers allow (block_threads):
// a thread (thread 0), a warp (warp 0) or the whole block calls.
// The host barrier before each launch keeps OpenSHMEM's rule that dest is ready on every
// member before any member calls (broadcast, fcollect and alltoall may store into a peer
// that has not entered yet): here, no PE's stores land before that PE poisoned its dest.
// Within a launch each collective has regions of its own.
//
// CONF_COLL_SCOPES (digits, default "012") picks the scopes; CONF_COLL_TYPES (names separated
// by commas, as in the FAIL lines: int_sum, float_max, char, mem (bytes), ...) runs only
// those reductions and movements (for the slow runs: NIIN_GIN_LOOPBACK with several PEs).
// Progress goes to stdout line by line (NOTE lines), so a run cut short shows how far it got.
//
// Values are small integers (sums of up to 8 PEs fit int8 and are exact in half and
// bfloat16), negative for the signed and floating types, so min and max see signs.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <vector>

#include "conf_harness.h"
#include "test_types.h"

constexpr int kMaxPes = 8;
constexpr int kSlots = 6;
static const char *const kSlotName[kSlots] = {"WORLD", "even/odd PEs (stride 2)", "PEs 1.. (start 1)",
                                              "2-D x axis (rows of 2)", "2-D y axis",
                                              "a team of one (2-D rows of 1)"};
constexpr int kNumCounts = 3;
__constant__ size_t d_counts[kNumCounts] = {1, 13, 1029};
static const size_t kCounts[kNumCounts] = {1, 13, 1029};
constexpr size_t kMaxCount = 1029;
// One region holds kMaxCount * kMaxPes elements of up to 16 bytes (alltoall / fcollect /
// reducescatter's source).
constexpr size_t kRegionBytes = kMaxCount * kMaxPes * 16;
// Regions: per slot and count, 0 reduce, 1 reducescatter, 2 in-place reduce (reductions) or
// 0 broadcast, 1 fcollect, 2 alltoall (movements).
constexpr int kKinds = 3;
constexpr size_t kRegions = static_cast<size_t>(kSlots) * kNumCounts * kKinds;
__host__ __device__ constexpr size_t region(int slot, int c, int kind) {
    return (static_cast<size_t>(slot) * kNumCounts + c) * kKinds + kind;
}

// The reduction lists (TEST_REDUCE_TYPES, TEST_REDUCE_BITWISE_TYPES) are test_types.h's.

enum Op { OpAnd, OpOr, OpXor, OpMin, OpMax, OpSum, OpProd };

// ---- values and the oracle ---------------------------------------------------------------

template <typename T>
constexpr bool is_fp16() {
    return std::is_same<T, half>::value || std::is_same<T, __nv_bfloat16>::value;
}
template <typename T>
constexpr bool is_signed_value() {
    return is_fp16<T>() || std::is_floating_point<T>::value || std::is_signed<T>::value;
}

template <typename T>
static T from_ll(long long v) {
    if constexpr (std::is_same<T, half>::value)
        return __float2half(static_cast<float>(v));
    else if constexpr (std::is_same<T, __nv_bfloat16>::value)
        return __float2bfloat16(static_cast<float>(v));
    else
        return static_cast<T>(v);
}
template <typename T>
static double to_double(T v) {
    if constexpr (std::is_same<T, half>::value)
        return static_cast<double>(__half2float(v));
    else if constexpr (std::is_same<T, __nv_bfloat16>::value)
        return static_cast<double>(__bfloat162float(v));
    else
        return static_cast<double>(v);
}

// The value of element i of team PE k's source for operator `op`.
template <typename T>
static long long value(Op op, int k, size_t i) {
    const long long h = static_cast<long long>((i * 7 + static_cast<size_t>(k) * 3) % 9);
    switch (op) {
    case OpProd: {
        // {1, 2} (and -1 for signed types): products of 8 PEs stay within 256 in magnitude
        const long long p = static_cast<long long>((i + static_cast<size_t>(k)) % 3);
        return is_signed_value<T>() ? (p == 0 ? -1 : p) : p + 1 - (p == 2 ? 1 : 0);
    }
    case OpMin:
    case OpMax: {
        const long long m = static_cast<long long>((i * 5 + static_cast<size_t>(k) * 11) % 13);
        return is_signed_value<T>() ? m - 6 : m;
    }
    case OpSum:
        return is_signed_value<T>() ? h - 4 : h;
    default: {
        // bit patterns for and/or/xor (the bitwise types are integers)
        const unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (k + 1) * 0xC2B2AE3D27D4EB4Full;
        return static_cast<long long>(x ^ (x >> 29));
    }
    }
}

// op over team PEs 0..n-1 of value(op, k, i), in T (integers wrap as T does).
template <typename T>
static T oracle(Op op, int n, size_t i) {
    if constexpr (is_fp16<T>() || std::is_floating_point<T>::value) {
        double acc = static_cast<double>(value<T>(op, 0, i));
        for (int k = 1; k < n; k++) {
            const double v = static_cast<double>(value<T>(op, k, i));
            acc = op == OpMin ? (v < acc ? v : acc)
                  : op == OpMax ? (v > acc ? v : acc)
                  : op == OpSum ? acc + v
                                : acc * v;
        }
        return from_ll<T>(static_cast<long long>(acc));
    } else {
        T acc = static_cast<T>(value<T>(op, 0, i));
        for (int k = 1; k < n; k++) {
            const T v = static_cast<T>(value<T>(op, k, i));
            switch (op) {
            case OpAnd: acc = static_cast<T>(acc & v); break;
            case OpOr: acc = static_cast<T>(acc | v); break;
            case OpXor: acc = static_cast<T>(acc ^ v); break;
            case OpMin: acc = v < acc ? v : acc; break;
            case OpMax: acc = v > acc ? v : acc; break;
            case OpSum:
                acc = static_cast<T>(static_cast<unsigned long long>(acc) + static_cast<unsigned long long>(v));
                break;
            case OpProd:
                acc = static_cast<T>(static_cast<unsigned long long>(acc) * static_cast<unsigned long long>(v));
                break;
            }
        }
        return acc;
    }
}

template <typename T>
static bool same(T a, T b) {
    if constexpr (is_fp16<T>() || std::is_floating_point<T>::value)
        return to_double(a) == to_double(b);
    else
        return a == b;
}

// ---- the kernels -------------------------------------------------------------------------

struct Teams {
    nvshmem_team_t slot[kSlots];
};


// One kernel per scope and family runs every collective of the family, by index, through a
// switch of direct calls (a kernel per type and operator made ~500 kernels, and ptxas took
// over 10 minutes for this file). Each case calls a small wrapper with its own types.

// Host side of a (type, operator): its element type and operator, for values and the oracle.
#define DEFINE_REDUCTION(NAME, TYPE, OP)                                                            \
    struct Red_##NAME##_##OP {                                                                      \
        using T = TYPE;                                                                             \
        static constexpr Op op = Op##OP;                                                            \
        static constexpr const char *name = #NAME "_" #OP;                                          \
    };                                                                                              \
    __device__ int red0_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmem_##NAME##_##OP##_reduce(t, static_cast<TYPE *>(d), static_cast<const TYPE *>(s), n); \
    }                                                                                               \
    __device__ int red1_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmemx_##NAME##_##OP##_reduce_warp(t, static_cast<TYPE *>(d),                      \
                                                    static_cast<const TYPE *>(s), n);               \
    }                                                                                               \
    __device__ int red2_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmemx_##NAME##_##OP##_reduce_block(t, static_cast<TYPE *>(d),                     \
                                                     static_cast<const TYPE *>(s), n);              \
    }                                                                                               \
    __device__ int sca0_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmem_##NAME##_##OP##_reducescatter(t, static_cast<TYPE *>(d),                     \
                                                     static_cast<const TYPE *>(s), n);              \
    }                                                                                               \
    __device__ int sca1_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmemx_##NAME##_##OP##_reducescatter_warp(t, static_cast<TYPE *>(d),               \
                                                           static_cast<const TYPE *>(s), n);        \
    }                                                                                               \
    __device__ int sca2_##NAME##_##OP(nvshmem_team_t t, void *d, const void *s, size_t n) {         \
        return nvshmemx_##NAME##_##OP##_reducescatter_block(t, static_cast<TYPE *>(d),              \
                                                            static_cast<const TYPE *>(s), n);       \
    }
#define Opand OpAnd
#define Opor OpOr
#define Opxor OpXor
#define Opmin OpMin
#define Opmax OpMax
#define Opsum OpSum
#define Opprod OpProd
#define EACH_ARITH(X, NAME, TYPE) X(NAME, TYPE, min) X(NAME, TYPE, max) X(NAME, TYPE, sum) X(NAME, TYPE, prod)
#define EACH_BITWISE(X, NAME, TYPE) X(NAME, TYPE, and) X(NAME, TYPE, or) X(NAME, TYPE, xor)
// Every (type, operator) pair, in one order for the device tables and the host loop.
#define DEFINE_ARITH(NAME, TYPE) EACH_ARITH(DEFINE_REDUCTION, NAME, TYPE)
#define DEFINE_BITWISE(NAME, TYPE) EACH_BITWISE(DEFINE_REDUCTION, NAME, TYPE)
TEST_REDUCE_TYPES(DEFINE_ARITH)
TEST_REDUCE_BITWISE_TYPES(DEFINE_BITWISE)

// The pairs' indices, in the lists' order (the host loop counts the same way).
#define ENUM_PAIR(NAME, TYPE, OP) RI_##NAME##_##OP,
#define ENUM_ARITH(NAME, TYPE) EACH_ARITH(ENUM_PAIR, NAME, TYPE)
#define ENUM_BITWISE(NAME, TYPE) EACH_BITWISE(ENUM_PAIR, NAME, TYPE)
enum ReductionIndex { TEST_REDUCE_TYPES(ENUM_ARITH) TEST_REDUCE_BITWISE_TYPES(ENUM_BITWISE) kReductions };

// Pair `index`'s reduce (or reducescatter) by scope S: a switch of direct calls, as a
// program calls them (function pointers made ptxas give every function 90 registers).
template <int S>
__device__ __noinline__ int call_reduction(int index, bool scatter, nvshmem_team_t t, void *d, const void *s, size_t n) {
    switch (index) {
#define CASE_PAIR(NAME, TYPE, OP)                                                    \
    case RI_##NAME##_##OP:                                                           \
        if (S == 0) return scatter ? sca0_##NAME##_##OP(t, d, s, n) : red0_##NAME##_##OP(t, d, s, n); \
        if (S == 1) return scatter ? sca1_##NAME##_##OP(t, d, s, n) : red1_##NAME##_##OP(t, d, s, n); \
        return scatter ? sca2_##NAME##_##OP(t, d, s, n) : red2_##NAME##_##OP(t, d, s, n);
#define CASE_ARITH(NAME, TYPE) EACH_ARITH(CASE_PAIR, NAME, TYPE)
#define CASE_BITWISE(NAME, TYPE) EACH_BITWISE(CASE_PAIR, NAME, TYPE)
        TEST_REDUCE_TYPES(CASE_ARITH)
        TEST_REDUCE_BITWISE_TYPES(CASE_BITWISE)
#undef CASE_PAIR
#undef CASE_ARITH
#undef CASE_BITWISE
    }
    return -1;
}

// Calls f on the scope's callers (Scope 0: thread 0, 1: warp 0, 2: every thread); a nonzero
// return counts in *bad.
template <int Scope, typename F>
__device__ __forceinline__ void by_scope(F f, int *bad) {
    const bool caller = Scope == 0 ? threadIdx.x == 0 : Scope == 1 ? threadIdx.x < 32 : true;
    if (caller) {
        const int rc = f();
        if (rc != 0) atomicAdd(bad, 1);
    }
    __syncthreads();
}

// Pair `index` on every slot, every count: reduce, reducescatter, in-place reduce.
template <int Scope>
__global__ void reduction_kernel(int index, Teams teams, char *dst, char *src, int *bad) {
    for (int s = 0; s < kSlots; s++) {
        const nvshmem_team_t team = teams.slot[s];
        if (team == NVSHMEM_TEAM_INVALID) continue;
        for (int c = 0; c < kNumCounts; c++) {
            const size_t n = d_counts[c];
            char *d0 = dst + region(s, c, 0) * kRegionBytes;
            const char *s0 = src + region(s, c, 0) * kRegionBytes;
            by_scope<Scope>([&] { return call_reduction<Scope>(index, false, team, d0, s0, n); }, bad);
            char *d1 = dst + region(s, c, 1) * kRegionBytes;
            const char *s1 = src + region(s, c, 1) * kRegionBytes;
            by_scope<Scope>([&] { return call_reduction<Scope>(index, true, team, d1, s1, n); }, bad);
            char *in = src + region(s, c, 2) * kRegionBytes;
            by_scope<Scope>([&] { return call_reduction<Scope>(index, false, team, in, in, n); }, bad);
        }
    }
}

// broadcast (root: the team's last PE), fcollect, alltoall of each RMA type and in bytes.
#define DEFINE_MOVE_AT(NAME, TYPE, S, PREFIX, SUFFIX)                                                \
    __device__ int bca##S##_##NAME(nvshmem_team_t t, void *d, const void *s, size_t n, int root) {   \
        return PREFIX##NAME##_broadcast##SUFFIX(t, static_cast<TYPE *>(d), static_cast<const TYPE *>(s), \
                                                n, root);                                            \
    }                                                                                                \
    __device__ int fco##S##_##NAME(nvshmem_team_t t, void *d, const void *s, size_t n) {             \
        return PREFIX##NAME##_fcollect##SUFFIX(t, static_cast<TYPE *>(d), static_cast<const TYPE *>(s), n); \
    }                                                                                                \
    __device__ int ata##S##_##NAME(nvshmem_team_t t, void *d, const void *s, size_t n) {             \
        return PREFIX##NAME##_alltoall##SUFFIX(t, static_cast<TYPE *>(d), static_cast<const TYPE *>(s), n); \
    }
#define DEFINE_MOVE(NAME, TYPE)                          \
    DEFINE_MOVE_AT(NAME, TYPE, 0, nvshmem_, )            \
    DEFINE_MOVE_AT(NAME, TYPE, 1, nvshmemx_, _warp)      \
    DEFINE_MOVE_AT(NAME, TYPE, 2, nvshmemx_, _block)
TEST_RMA_TYPES(DEFINE_MOVE)
#define DEFINE_MOVE_MEM_AT(S, PREFIX, SUFFIX)                                                     \
    __device__ int bca##S##_mem(nvshmem_team_t t, void *d, const void *s, size_t n, int root) {   \
        return PREFIX##broadcastmem##SUFFIX(t, d, s, n, root);                                    \
    }                                                                                             \
    __device__ int fco##S##_mem(nvshmem_team_t t, void *d, const void *s, size_t n) {             \
        return PREFIX##fcollectmem##SUFFIX(t, d, s, n);                                           \
    }                                                                                             \
    __device__ int ata##S##_mem(nvshmem_team_t t, void *d, const void *s, size_t n) {             \
        return PREFIX##alltoallmem##SUFFIX(t, d, s, n);                                           \
    }
// NVSHMEM 3.4.5's device nvshmemx_broadcastmem_warp/_block take PE_root, its host header's
// declarations do not: the calls are compiled in the device pass only.
#ifdef __CUDA_ARCH__
DEFINE_MOVE_MEM_AT(0, nvshmem_, )
DEFINE_MOVE_MEM_AT(1, nvshmemx_, _warp)
DEFINE_MOVE_MEM_AT(2, nvshmemx_, _block)
#else
DEFINE_MOVE_MEM_AT(0, nvshmem_, )
__device__ int bca1_mem(nvshmem_team_t, void *, const void *, size_t, int) { return 1; }
__device__ int fco1_mem(nvshmem_team_t, void *, const void *, size_t) { return 1; }
__device__ int ata1_mem(nvshmem_team_t, void *, const void *, size_t) { return 1; }
__device__ int bca2_mem(nvshmem_team_t, void *, const void *, size_t, int) { return 1; }
__device__ int fco2_mem(nvshmem_team_t, void *, const void *, size_t) { return 1; }
__device__ int ata2_mem(nvshmem_team_t, void *, const void *, size_t) { return 1; }
#endif
#define ENUM_MOVE(NAME, TYPE) MI_##NAME,
enum MoveIndex { TEST_RMA_TYPES(ENUM_MOVE) MI_mem, kMoves };

// Movement `index`'s broadcast (kind 0), fcollect (1) or alltoall (2) by scope S.
template <int S>
__device__ __noinline__ int call_move(int index, int kind, nvshmem_team_t t, void *d, const void *s, size_t n, int root) {
    switch (index) {
#define CASE_MOVE(NAME, TYPE)                                                                  \
    case MI_##NAME:                                                                            \
        if (S == 0) return kind == 0 ? bca0_##NAME(t, d, s, n, root) : kind == 1 ? fco0_##NAME(t, d, s, n) : ata0_##NAME(t, d, s, n); \
        if (S == 1) return kind == 0 ? bca1_##NAME(t, d, s, n, root) : kind == 1 ? fco1_##NAME(t, d, s, n) : ata1_##NAME(t, d, s, n); \
        return kind == 0 ? bca2_##NAME(t, d, s, n, root) : kind == 1 ? fco2_##NAME(t, d, s, n) : ata2_##NAME(t, d, s, n);
        TEST_RMA_TYPES(CASE_MOVE)
        CASE_MOVE(mem, void)
#undef CASE_MOVE
    }
    return -1;
}

// Host side of a movement: the element type (char for the byte forms: counts are bytes).
#define DEFINE_MOVE_HOST(NAME, TYPE)               \
    struct Move_##NAME {                           \
        using T = TYPE;                            \
        static constexpr const char *name = #NAME; \
    };
TEST_RMA_TYPES(DEFINE_MOVE_HOST)
struct Move_mem {
    using T = char;
    static constexpr const char *name = "mem (bytes)";
};

template <int Scope>
__global__ void move_kernel(int index, Teams teams, char *dst, const char *src, int *bad) {
    for (int s = 0; s < kSlots; s++) {
        const nvshmem_team_t team = teams.slot[s];
        if (team == NVSHMEM_TEAM_INVALID) continue;
        const int root = nvshmem_team_n_pes(team) - 1;
        for (int c = 0; c < kNumCounts; c++) {
            const size_t n = d_counts[c];
            char *d0 = dst + region(s, c, 0) * kRegionBytes;
            const char *s0 = src + region(s, c, 0) * kRegionBytes;
            by_scope<Scope>([&] { return call_move<Scope>(index, 0, team, d0, s0, n, root); }, bad);
            char *d1 = dst + region(s, c, 1) * kRegionBytes;
            const char *s1 = src + region(s, c, 1) * kRegionBytes;
            by_scope<Scope>([&] { return call_move<Scope>(index, 1, team, d1, s1, n, 0); }, bad);
            char *d2 = dst + region(s, c, 2) * kRegionBytes;
            const char *s2 = src + region(s, c, 2) * kRegionBytes;
            by_scope<Scope>([&] { return call_move<Scope>(index, 2, team, d2, s2, n, 0); }, bad);
        }
    }
}

#ifndef TEST_NVSHMEM
// maxloc: the pair with the largest .x, ties to the later team PE (block only, as NVSHMEM).
__global__ void maxloc_kernel(Teams teams, char *dst, const char *src, int *bad) {
    for (int s = 0; s < kSlots; s++) {
        const nvshmem_team_t team = teams.slot[s];
        if (team == NVSHMEM_TEAM_INVALID) continue;
        for (int c = 0; c < kNumCounts; c++) {
            double2 *d = reinterpret_cast<double2 *>(dst + region(s, c, 0) * kRegionBytes);
            const double2 *so = reinterpret_cast<const double2 *>(src + region(s, c, 0) * kRegionBytes);
            by_scope<2>([&] { return nvshmemx_double2_maxloc_reduce_block(team, d, so, d_counts[c]); }, bad);
        }
    }
}
#endif

// ---- the host side -----------------------------------------------------------------------

// The block size a test kernel is launched with: 1024 threads where its registers allow,
// else as many whole warps as they allow. These kernels dispatch to every collective of a
// family through one switch, and ptxas allocates such a dispatcher more registers than any
// one collective needs (the block reductions' dispatcher got 255, the movements' 66);
// a kernel that calls one collective, as a program does, fits 1024 threads (every block
// reduction 58 registers, every movement 64: device/README.md). NVSHMEM 3.4.5's kernels
// need 72-196 registers after its device library is linked. PE 0 prints the size used.
template <typename K>
static int block_threads(K kernel, const char *what) {
    cudaFuncAttributes a{};
    TEST_CUDA(cudaFuncGetAttributes(&a, kernel));
    const int threads = a.maxThreadsPerBlock >= 1024 ? 1024 : a.maxThreadsPerBlock / 32 * 32;
    static std::vector<const void *> reported;
    const void *k = reinterpret_cast<const void *>(kernel);
    if (g_conf_me == 0 && threads < 1024 && std::find(reported.begin(), reported.end(), k) == reported.end()) {
        reported.push_back(k);
        printf("NOTE|%s kernel: blocks of %d threads (%d registers a thread)\n", what, threads, a.numRegs);
    }
    return threads;
}

struct Ctx {
    Teams teams;
    int me[kSlots], size[kSlots];
    char *dst, *src;  // symmetric, kRegions regions each
    int *d_bad;
    std::vector<char> host;
    const char *types;  // CONF_COLL_TYPES, or nullptr: every type
};
static const char *const kScope[3] = {"thread", "warp", "block"};

// Whether `name` is one of CONF_COLL_TYPES's comma-separated names (every name without it).
static bool selected(const Ctx &x, const char *name) {
    if (x.types == nullptr) return true;
    const size_t len = strlen(name);
    for (const char *p = x.types; *p != '\0';) {
        const char *end = strchr(p, ',');
        const size_t n = end == nullptr ? strlen(p) : static_cast<size_t>(end - p);
        if (n == len && strncmp(p, name, n) == 0) return true;
        if (end == nullptr) break;
        p = end + 1;
    }
    return false;
}
constexpr unsigned char kSentinel = 0x5A;

template <typename R, int Scope>
static void run_reduction(Ctx &x, int index) {
    using T = typename R::T;
    if (!selected(x, R::name)) return;
    char label[160];
    snprintf(label, sizeof label, "reduce, reducescatter: %s", kScope[Scope]);
    ConfGroup &g = conf_group(label);
    // sources: region (s, c, 0) and the in-place one (s, c, 2) hold n values, (s, c, 1) n * size
    std::vector<T> v(kMaxCount * kMaxPes);
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        for (size_t i = 0; i < v.size(); i++) v[i] = from_ll<T>(value<T>(R::op, x.me[s], i));
        for (int c = 0; c < kNumCounts; c++)
            for (int kind = 0; kind < kKinds; kind++)
                TEST_CUDA(cudaMemcpy(x.src + region(s, c, kind) * kRegionBytes, v.data(),
                                     v.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    TEST_CUDA(cudaMemset(x.dst, kSentinel, kRegions * kRegionBytes));
    TEST_CUDA(cudaMemset(x.d_bad, 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all(); // every member's dest is ready
    const int threads = block_threads(reduction_kernel<Scope>, kScope[Scope]);
    CONF_LAUNCH(g, reduction_kernel<Scope>, 1, threads, index, x.teams, x.dst, x.src, x.d_bad);
    int bad = 0;
    TEST_CUDA(cudaMemcpy(&bad, x.d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    conf_check(g, bad == 0, "%s: %d calls returned nonzero", R::name, bad);
    x.host.resize(kRegions * kRegionBytes);
    TEST_CUDA(cudaMemcpy(x.host.data(), x.dst, x.host.size(), cudaMemcpyDeviceToHost));
    std::vector<char> inplace(kRegions * kRegionBytes);
    TEST_CUDA(cudaMemcpy(inplace.data(), x.src, inplace.size(), cudaMemcpyDeviceToHost));
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        const int n = x.size[s], me = x.me[s];
        for (int c = 0; c < kNumCounts; c++) {
            const size_t cnt = kCounts[c];
            for (int kind = 0; kind < kKinds; kind++) {
                const char *base = (kind == 2 ? inplace.data() : x.host.data()) + region(s, c, kind) * kRegionBytes;
                size_t wrong = 0, first = 0;
                T got{}, want{};
                for (size_t i = 0; i < cnt; i++) {
                    T d;
                    memcpy(&d, base + i * sizeof(T), sizeof(T));
                    const T w = oracle<T>(R::op, n, kind == 1 ? static_cast<size_t>(me) * cnt + i : i);
                    if (!same(d, w) && wrong++ == 0) first = i, got = d, want = w;
                }
                // nothing written past the count (reduce and reducescatter)
                size_t past = 0;
                if (kind != 2)
                    for (size_t b = cnt * sizeof(T); b < (cnt + 16) * sizeof(T) && b < kRegionBytes; b++)
                        past += static_cast<unsigned char>(base[b]) != kSentinel;
                static const char *const kKind[3] = {"reduce", "reducescatter", "reduce in place"};
                conf_check(g, wrong == 0 && past == 0,
                           "%s %s on %s (team PE %d of %d), %zu elements: %zu wrong (first [%zu] = %g, "
                           "want %g), %zu bytes written past the end",
                           R::name, kKind[kind], kSlotName[s], me, n, cnt, wrong, first, to_double(got),
                           to_double(want), past);
            }
        }
    }
}

// The byte at offset b of team PE k's source in a movement region.
static unsigned char move_byte(int k, size_t b) {
    return static_cast<unsigned char>((k * 37 + b * 13 + 1) & 0xff);
}

template <typename M, int Scope>
static void run_move(Ctx &x, int index) {
    using T = typename M::T;
    if (!selected(x, M::name)) return;
    char label[160];
    snprintf(label, sizeof label, "broadcast, fcollect, alltoall: %s", kScope[Scope]);
    ConfGroup &g = conf_group(label);
    std::vector<unsigned char> v(kRegionBytes);
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        for (size_t b = 0; b < v.size(); b++) v[b] = move_byte(x.me[s], b);
        for (int c = 0; c < kNumCounts; c++)
            for (int kind = 0; kind < kKinds; kind++)
                TEST_CUDA(cudaMemcpy(x.src + region(s, c, kind) * kRegionBytes, v.data(), v.size(),
                                     cudaMemcpyHostToDevice));
    }
    TEST_CUDA(cudaMemset(x.dst, kSentinel, kRegions * kRegionBytes));
    TEST_CUDA(cudaMemset(x.d_bad, 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all(); // every member's dest is ready
    const int threads = block_threads(move_kernel<Scope>, kScope[Scope]);
    CONF_LAUNCH(g, move_kernel<Scope>, 1, threads, index, x.teams, x.dst, x.src, x.d_bad);
    int bad = 0;
    TEST_CUDA(cudaMemcpy(&bad, x.d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    conf_check(g, bad == 0, "%s: %d calls returned nonzero", M::name, bad);
    x.host.resize(kRegions * kRegionBytes);
    TEST_CUDA(cudaMemcpy(x.host.data(), x.dst, x.host.size(), cudaMemcpyDeviceToHost));
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        const int n = x.size[s], me = x.me[s];
        for (int c = 0; c < kNumCounts; c++) {
            const size_t bytes = kCounts[c] * sizeof(T);
            static const char *const kKind[3] = {"broadcast (root: last)", "fcollect", "alltoall"};
            for (int kind = 0; kind < kKinds; kind++) {
                const unsigned char *base =
                    reinterpret_cast<const unsigned char *>(x.host.data()) + region(s, c, kind) * kRegionBytes;
                const size_t total = kind == 0 ? bytes : bytes * n;
                size_t wrong = 0, first = 0;
                for (size_t b = 0; b < total; b++) {
                    unsigned char want;
                    if (kind == 0)
                        want = move_byte(n - 1, b);
                    else if (kind == 1)
                        want = move_byte(static_cast<int>(b / bytes), b % bytes);
                    else  // block j comes from team PE j's block `me`
                        want = move_byte(static_cast<int>(b / bytes), me * bytes + b % bytes);
                    if (base[b] != want && wrong++ == 0) first = b;
                }
                size_t past = 0;
                for (size_t b = total; b < total + 64 && b < kRegionBytes; b++) past += base[b] != kSentinel;
                conf_check(g, wrong == 0 && past == 0,
                           "%s %s on %s (team PE %d of %d), %zu elements: %zu bytes wrong (first at %zu), "
                           "%zu written past the end",
                           M::name, kKind[kind], kSlotName[s], me, n, kCounts[c], wrong, first, past);
            }
        }
    }
}

#ifndef TEST_NVSHMEM
static void run_maxloc(Ctx &x) {
    if (!selected(x, "maxloc")) return;
    const char *loopback = getenv("NIIN_GIN_LOOPBACK");
    if (loopback != nullptr && strcmp(loopback, "0") != 0 && g_conf_npes > 1) {
        // every team of several PEs goes through GIN there, and maxloc's 16-byte elements are
        // not composed over GIN (NOT_IMPLEMENTED, niin/coll.h): not run, not counted
        if (g_conf_me == 0)
            printf("SKIP|maxloc reduce: block|NIIN_GIN_LOOPBACK: maxloc is not composed over GIN\n");
        return;
    }
    ConfGroup &g = conf_group("maxloc reduce: block");
    std::vector<double2> v(kMaxCount);
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        // values with ties: .x = (i + k) % 3 (so several PEs share the maximum), .y = k
        for (size_t i = 0; i < v.size(); i++)
            v[i] = make_double2(static_cast<double>((i + x.me[s]) % 3), static_cast<double>(x.me[s]));
        for (int c = 0; c < kNumCounts; c++)
            TEST_CUDA(cudaMemcpy(x.src + region(s, c, 0) * kRegionBytes, v.data(), v.size() * sizeof(double2),
                                 cudaMemcpyHostToDevice));
    }
    TEST_CUDA(cudaMemset(x.dst, kSentinel, kRegions * kRegionBytes));
    TEST_CUDA(cudaMemset(x.d_bad, 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all(); // every member's dest is ready
    CONF_LAUNCH(g, maxloc_kernel, 1, block_threads(maxloc_kernel, "maxloc"), x.teams, x.dst, x.src,
                x.d_bad);
    x.host.resize(kRegions * kRegionBytes);
    TEST_CUDA(cudaMemcpy(x.host.data(), x.dst, x.host.size(), cudaMemcpyDeviceToHost));
    for (int s = 0; s < kSlots; s++) {
        if (x.teams.slot[s] == NVSHMEM_TEAM_INVALID) continue;
        const int n = x.size[s];
        for (int c = 0; c < kNumCounts; c++) {
            size_t wrong = 0;
            for (size_t i = 0; i < kCounts[c]; i++) {
                double2 d;
                memcpy(&d, x.host.data() + region(s, c, 0) * kRegionBytes + i * sizeof d, sizeof d);
                // the largest (i + k) % 3, the last k that has it
                int best = 0;
                for (int k = 1; k < n; k++)
                    if ((i + k) % 3 >= (i + best) % 3) best = k;
                if (d.x != static_cast<double>((i + best) % 3) || d.y != best) wrong++;
            }
            conf_check(g, wrong == 0, "maxloc on %s, %zu elements: %zu wrong", kSlotName[s], kCounts[c], wrong);
        }
    }
}
#endif

// Every pair and movement by one scope, in the tables' order.
template <int Scope>
static void run_scope(Ctx &x) {
    int index = 0;
#define RUN_PAIR(NAME, TYPE, OP) run_reduction<Red_##NAME##_##OP, Scope>(x, index++);
#define RUN_ARITH(NAME, TYPE) EACH_ARITH(RUN_PAIR, NAME, TYPE)
#define RUN_BITWISE(NAME, TYPE) EACH_BITWISE(RUN_PAIR, NAME, TYPE)
    TEST_REDUCE_TYPES(RUN_ARITH)
    TEST_REDUCE_BITWISE_TYPES(RUN_BITWISE)
    if (index != kReductions) fprintf(stderr, "conf_coll: %d reductions, the tables have %d\n", index, kReductions);
    index = 0;
#define RUN_MOVE(NAME, TYPE) run_move<Move_##NAME, Scope>(x, index++);
    TEST_RMA_TYPES(RUN_MOVE)
    run_move<Move_mem, Scope>(x, index++);
#undef RUN_PAIR
#undef RUN_ARITH
#undef RUN_BITWISE
#undef RUN_MOVE
}

int main() {
    conf_begin("conf_coll");
    const int n = g_conf_npes, me = g_conf_me;
    Ctx x;
    for (int s = 0; s < kSlots; s++) x.teams.slot[s] = NVSHMEM_TEAM_INVALID;
    x.teams.slot[0] = NVSHMEM_TEAM_WORLD;
    nvshmem_team_t even = NVSHMEM_TEAM_INVALID, odd = NVSHMEM_TEAM_INVALID, tail = NVSHMEM_TEAM_INVALID;
    nvshmem_team_t x2 = NVSHMEM_TEAM_INVALID, y2 = NVSHMEM_TEAM_INVALID, x1 = NVSHMEM_TEAM_INVALID,
                   y1 = NVSHMEM_TEAM_INVALID;
    int split_failed = 0;
#ifdef TEST_NVSHMEM
    // NVSHMEM 3.4.5 ends the process in nvshmem_team_split_* when several PEs share a GPU
    // ("not supported with limited MPG runs"): no splits there.
    int devices = 0;
    TEST_CUDA(cudaGetDeviceCount(&devices));
    if (nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) > devices) split_failed = 1;
#endif
    if (split_failed == 0) {
        split_failed |= nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even);
        if (n > 1) {
            split_failed |= nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd);
            split_failed |= nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 1, 1, n - 1, nullptr, 0, &tail);
        }
        split_failed |= nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 2, nullptr, 0, &x2, nullptr, 0, &y2);
        split_failed |= nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 1, nullptr, 0, &x1, nullptr, 0, &y1);
    }
    if (split_failed != 0 && me == 0)
        printf("SKIP|split teams|no team splits here (NVSHMEM 3.4.5 refuses them when several PEs "
               "share a GPU): WORLD only\n");
    x.teams.slot[1] = me % 2 == 0 ? even : odd;
    x.teams.slot[2] = tail;
    x.teams.slot[3] = x2;
    x.teams.slot[4] = y2;
    x.teams.slot[5] = x1;
    if (split_failed != 0)
        for (int s = 1; s < kSlots; s++) x.teams.slot[s] = NVSHMEM_TEAM_INVALID;
    for (int s = 0; s < kSlots; s++) {
        x.me[s] = x.teams.slot[s] == NVSHMEM_TEAM_INVALID ? -1 : nvshmem_team_my_pe(x.teams.slot[s]);
        x.size[s] = x.teams.slot[s] == NVSHMEM_TEAM_INVALID ? 0 : nvshmem_team_n_pes(x.teams.slot[s]);
    }
    x.dst = static_cast<char *>(nvshmem_malloc(kRegions * kRegionBytes));
    x.src = static_cast<char *>(nvshmem_malloc(kRegions * kRegionBytes));
    TEST_CUDA(cudaMalloc(&x.d_bad, sizeof(int)));
    if (x.dst == nullptr || x.src == nullptr) {
        fprintf(stderr, "conf_coll: nvshmem_malloc of 2 x %zu bytes failed\n", kRegions * kRegionBytes);
        return 2;
    }
    // CONF_COLL_SCOPES (digits, default "012"): the scopes to run -- 0 thread, 1 warp, 2 block.
    // With 4 PEs time-sharing one GPU every collective costs a few time slices, and the whole
    // program runs longer than a run may take: scripts/gpu/device-tests.sh runs it per scope.
    const char *scopes = getenv("CONF_COLL_SCOPES");
    if (scopes == nullptr) scopes = "012";
    x.types = getenv("CONF_COLL_TYPES");
    if (x.types != nullptr && x.types[0] == '\0') x.types = nullptr;
    if (me == 0)
        printf("NOTE|scopes run: %s (0 thread, 1 warp, 2 block); types: %s\n", scopes,
               x.types == nullptr ? "all" : x.types);
    const auto start = std::chrono::steady_clock::now();
    auto done = [&](const char *what) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (me == 0) printf("NOTE|%s done at %.1f s\n", what, s);
    };
    if (strchr(scopes, '0') != nullptr) run_scope<0>(x), done("thread scope");
    if (strchr(scopes, '1') != nullptr) run_scope<1>(x), done("warp scope");
    if (strchr(scopes, '2') != nullptr) run_scope<2>(x), done("block scope");
#ifndef TEST_NVSHMEM
    if (strchr(scopes, '2') != nullptr) run_maxloc(x);
#endif
    nvshmem_barrier_all();
    for (nvshmem_team_t t : {even, odd, tail, x2, y2, x1, y1})
        if (t != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(t);
    nvshmem_free(x.dst);
    nvshmem_free(x.src);
    cudaFree(x.d_bad);
    return conf_end();
}
