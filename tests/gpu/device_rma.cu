// device_rma.cu -- GPU conformance test of the device API's first slice: queries,
// nvshmem_ptr, put/get of every RMA type and size at thread, warp and block scope, fence,
// quiet and the device barriers.
//
// NVSHMEM API only, so the same source builds against niin-rs and against NVSHMEM 3.4.5
// (which checks the test's expectations; scripts/gpu/device-tests.sh runs both). Start-up:
// test_init.h (nvshmem_init under niinrun, or the unique-id file under mpirun).
//
// Every PE runs every case against every PE at once, itself included: a kernel of
// n_pes CTAs where CTA b works with PE (my_pe + b) % n_pes. Puts go from a local buffer
// (private cudaMalloc memory or the symmetric heap, alternating) to slot my_pe of the
// target's symmetric receive buffer; gets go from the target's symmetric source to slot
// `target` of a local buffer. Each case uses its own byte pattern (pattern() of source
// PE, case number and position), and every byte of a slot is checked on the GPU after a
// barrier: the bytes before and after the transfer must be untouched (0xEE), the bytes
// of the transfer must be the source's bytes at the source offset.
//
// Output, per PE: "FAIL|<group>|<what>" for each failure (the first 8 per group), then
// "RESULT|<group>|<passed>|<failed>" per group and a last line
// "device_rma PE <n>: <N> passed, <M> failed"; exit status 1 if anything failed.
// Needs a symmetric heap of 2 * n_pes + 2 slots of 64 MiB + 4 KiB (NVSHMEM_SYMMETRIC_SIZE=2G
// covers 8 PEs; scripts/gpu/device-tests.sh sets it).

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "test_init.h"

// ---- the API surface under test -------------------------------------------------------

// NVSHMEM 3.4.5's RMA types and sizes: TEST_RMA_TYPES, TEST_RMA_SIZES.
#include "test_types.h"

enum Fn { FN_PUT = 0, FN_GET = 1, FN_PUT_NBI = 2, FN_GET_NBI = 3 };
enum Scope { SCOPE_THREAD = 0, SCOPE_WARP = 1, SCOPE_BLOCK = 2 };
static const char *const kFnName[] = {"put", "get", "put_nbi", "get_nbi"};
static const char *const kScopeName[] = {"thread", "warp", "block"};

static __host__ __device__ bool is_put(int fn) { return fn == FN_PUT || fn == FN_PUT_NBI; }
static __host__ __device__ bool is_nbi(int fn) { return fn == FN_PUT_NBI || fn == FN_GET_NBI; }

// One struct per family: T (the element), name, and call(fn, scope, ...) dispatching to
// the 12 functions (put/get/put_nbi/get_nbi x thread/warp/block) of the family.
#define TEST_TYPED_OPS(NAME, TYPE)                                                          \
    struct Ops_##NAME {                                                                     \
        using T = TYPE;                                                                     \
        static constexpr const char *name = #NAME;                                          \
        __device__ static void call(int fn, int scope, T *d, const T *s, size_t n, int pe) { \
            switch (scope * 4 + fn) {                                                       \
            case 0: nvshmem_##NAME##_put(d, s, n, pe); break;                               \
            case 1: nvshmem_##NAME##_get(d, s, n, pe); break;                               \
            case 2: nvshmem_##NAME##_put_nbi(d, s, n, pe); break;                           \
            case 3: nvshmem_##NAME##_get_nbi(d, s, n, pe); break;                           \
            case 4: nvshmemx_##NAME##_put_warp(d, s, n, pe); break;                         \
            case 5: nvshmemx_##NAME##_get_warp(d, s, n, pe); break;                         \
            case 6: nvshmemx_##NAME##_put_nbi_warp(d, s, n, pe); break;                     \
            case 7: nvshmemx_##NAME##_get_nbi_warp(d, s, n, pe); break;                     \
            case 8: nvshmemx_##NAME##_put_block(d, s, n, pe); break;                        \
            case 9: nvshmemx_##NAME##_get_block(d, s, n, pe); break;                        \
            case 10: nvshmemx_##NAME##_put_nbi_block(d, s, n, pe); break;                   \
            case 11: nvshmemx_##NAME##_get_nbi_block(d, s, n, pe); break;                   \
            }                                                                               \
        }                                                                                   \
        __device__ static void p(T *d, T v, int pe) { nvshmem_##NAME##_p(d, v, pe); }       \
        __device__ static T g(const T *s, int pe) { return nvshmem_##NAME##_g(s, pe); }     \
    };
TEST_RMA_TYPES(TEST_TYPED_OPS)
#undef TEST_TYPED_OPS

#define TEST_SIZED_OPS(BITS, TYPE)                                                          \
    struct Ops_bits##BITS {                                                                 \
        using T = TYPE;                                                                     \
        static constexpr const char *name = "put/get" #BITS;                                \
        __device__ static void call(int fn, int scope, T *d, const T *s, size_t n, int pe) { \
            switch (scope * 4 + fn) {                                                       \
            case 0: nvshmem_put##BITS(d, s, n, pe); break;                                  \
            case 1: nvshmem_get##BITS(d, s, n, pe); break;                                  \
            case 2: nvshmem_put##BITS##_nbi(d, s, n, pe); break;                            \
            case 3: nvshmem_get##BITS##_nbi(d, s, n, pe); break;                            \
            case 4: nvshmemx_put##BITS##_warp(d, s, n, pe); break;                          \
            case 5: nvshmemx_get##BITS##_warp(d, s, n, pe); break;                          \
            case 6: nvshmemx_put##BITS##_nbi_warp(d, s, n, pe); break;                      \
            case 7: nvshmemx_get##BITS##_nbi_warp(d, s, n, pe); break;                      \
            case 8: nvshmemx_put##BITS##_block(d, s, n, pe); break;                         \
            case 9: nvshmemx_get##BITS##_block(d, s, n, pe); break;                         \
            case 10: nvshmemx_put##BITS##_nbi_block(d, s, n, pe); break;                    \
            case 11: nvshmemx_get##BITS##_nbi_block(d, s, n, pe); break;                    \
            }                                                                               \
        }                                                                                   \
    };
TEST_RMA_SIZES(TEST_SIZED_OPS)
#undef TEST_SIZED_OPS

struct Ops_mem {
    using T = char;
    static constexpr const char *name = "putmem/getmem";
    __device__ static void call(int fn, int scope, T *d, const T *s, size_t n, int pe) {
        switch (scope * 4 + fn) {
        case 0: nvshmem_putmem(d, s, n, pe); break;
        case 1: nvshmem_getmem(d, s, n, pe); break;
        case 2: nvshmem_putmem_nbi(d, s, n, pe); break;
        case 3: nvshmem_getmem_nbi(d, s, n, pe); break;
        case 4: nvshmemx_putmem_warp(d, s, n, pe); break;
        case 5: nvshmemx_getmem_warp(d, s, n, pe); break;
        case 6: nvshmemx_putmem_nbi_warp(d, s, n, pe); break;
        case 7: nvshmemx_getmem_nbi_warp(d, s, n, pe); break;
        case 8: nvshmemx_putmem_block(d, s, n, pe); break;
        case 9: nvshmemx_getmem_block(d, s, n, pe); break;
        case 10: nvshmemx_putmem_nbi_block(d, s, n, pe); break;
        case 11: nvshmemx_getmem_nbi_block(d, s, n, pe); break;
        }
    }
};

// ---- results ----------------------------------------------------------------------------

struct Group {
    std::string name;
    long passed = 0, failed = 0;
};

static std::vector<Group> g_groups;
static int g_me = -1, g_npes = 0;

static Group &group(const char *name) {
    for (auto &g : g_groups)
        if (g.name == name) return g;
    g_groups.push_back(Group{name});
    return g_groups.back();
}

__attribute__((format(printf, 3, 4))) static bool check(Group &g, bool ok, const char *fmt, ...) {
    if (ok) {
        g.passed++;
        return true;
    }
    if (g.failed++ < 8) {
        char detail[512];
        va_list args;
        va_start(args, fmt);
        vsnprintf(detail, sizeof detail, fmt, args);
        va_end(args);
        printf("FAIL|%s|PE %d: %s\n", g.name.c_str(), g_me, detail);
        fflush(stdout);
    }
    return false;
}

// ---- patterns and checks on the GPU -----------------------------------------------------

static constexpr unsigned char kUntouched = 0xEE;
static constexpr size_t kGuard = 64;        // untouched bytes checked after each transfer
static constexpr size_t kMaxBytes = 64u << 20;
static constexpr size_t kSlot = kMaxBytes + 4096; // offset + transfer + guard fit in a slot

// The byte at position i of PE pe's source in case `salt`: a hash, so that a byte moved
// to the wrong place (by any distance) or taken from the wrong PE or case shows.
__host__ __device__ inline unsigned char pattern(int pe, unsigned salt, size_t i) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) * 40503u;
    x ^= static_cast<uint32_t>(pe + 1) * 0x9E3779B9u ^ salt * 0x85EBCA6Bu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return static_cast<unsigned char>(x ^ (x >> 24));
}

__global__ void fill_kernel(char *buf, size_t bytes, int pe, unsigned salt) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = static_cast<char>(pattern(pe, salt, i));
}

struct SlotCheck {
    unsigned long long bad;   // bytes that differ
    unsigned long long first; // position of the first (~0 when none)
};

// Slot y (blockIdx.y) of `base` (slots `slot` bytes apart) must hold PE y's pattern at
// [dst_off, dst_off + bytes) -- source position src_off + k at dst_off + k -- and
// kUntouched in [0, dst_off) and [dst_off + bytes, dst_off + bytes + kGuard).
__global__ void verify_kernel(const char *base, size_t slot, size_t dst_off, size_t bytes,
                              size_t src_off, unsigned salt, SlotCheck *out) {
    const int pe = blockIdx.y;
    const unsigned char *s = reinterpret_cast<const unsigned char *>(base + pe * slot);
    const size_t end = dst_off + bytes + kGuard;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < end;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned char want = (i < dst_off || i >= dst_off + bytes)
                                 ? kUntouched
                                 : pattern(pe, salt, src_off + (i - dst_off));
        if (s[i] != want) {
            atomicAdd(&out[pe].bad, 1ull);
            atomicMin(&out[pe].first, static_cast<unsigned long long>(i));
        }
    }
}

// ---- the transfer cases -------------------------------------------------------------------

struct Buffers {
    char *recv;      // symmetric, n_pes slots: puts land in slot <source PE>
    char *pub;       // symmetric, one slot: what gets read
    char *sym_src;   // symmetric, one slot: a put's local source in the heap
    char *sym_gdst;  // symmetric, n_pes slots: a get's local destination in the heap
    char *priv_src;  // cudaMalloc, one slot
    char *priv_gdst; // cudaMalloc, n_pes slots
    SlotCheck *checks;
};
static Buffers g_buf;
static unsigned g_salt = 0;

struct RmaArgs {
    char *recv, *pub, *src, *gdst;
    size_t slot, dst_off, src_off, nelems;
    int ops, fn, scope, me, npes;
};

// Every transfer family, numbered: the one rma_kernel below dispatches on the number. One
// kernel rather than one per family: a whole-program build has ptxas compile a kernel's
// callees (the device API's out-of-line put/get bodies) again for every kernel.
#define TEST_EACH_OPS(X)                                  \
    TEST_RMA_TYPES(TEST_OPS_OF_TYPE)                      \
    TEST_RMA_SIZES(TEST_OPS_OF_SIZE)                      \
    X(mem)
#define TEST_OPS_OF_TYPE(NAME, TYPE) TEST_OPS_X(NAME)
#define TEST_OPS_OF_SIZE(BITS, TYPE) TEST_OPS_X(bits##BITS)

enum OpsId {
#define TEST_OPS_X(ID) OPS_##ID,
    TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X
};
template <typename Ops>
struct OpsIdOf;
#define TEST_OPS_X(ID)                                    \
    template <>                                           \
    struct OpsIdOf<Ops_##ID> {                            \
        static constexpr int value = OPS_##ID;            \
    };
TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X

__global__ void rma_kernel(RmaArgs a) {
    const int target = (a.me + static_cast<int>(blockIdx.x)) % a.npes;
    char *dest;
    const char *source;
    if (is_put(a.fn)) {
        dest = a.recv + a.me * a.slot + a.dst_off;
        source = a.src + a.src_off;
    } else {
        dest = a.gdst + target * a.slot + a.dst_off;
        source = a.pub + a.src_off;
    }
    const unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const bool caller = a.scope == SCOPE_BLOCK || (a.scope == SCOPE_WARP && lin < 32) ||
                        (a.scope == SCOPE_THREAD && lin == 0);
    if (!caller) return;
    switch (a.ops) {
#define TEST_OPS_X(ID)                                                                   \
    case OPS_##ID:                                                                       \
        Ops_##ID::call(a.fn, a.scope, reinterpret_cast<Ops_##ID::T *>(dest),             \
                       reinterpret_cast<const Ops_##ID::T *>(source), a.nelems, target); \
        break;
        TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X
    }
    if (is_nbi(a.fn)) nvshmem_quiet();
}

// Clears what a case may write, fills what it reads, and lines the PEs up.
static void prepare(size_t region, size_t src_bytes, unsigned salt) {
    TEST_CUDA(cudaMemset2D(g_buf.recv, kSlot, kUntouched, region, g_npes));
    TEST_CUDA(cudaMemset2D(g_buf.sym_gdst, kSlot, kUntouched, region, g_npes));
    TEST_CUDA(cudaMemset2D(g_buf.priv_gdst, kSlot, kUntouched, region, g_npes));
    for (char *b : {g_buf.pub, g_buf.sym_src, g_buf.priv_src})
        fill_kernel<<<264, 512>>>(b, src_bytes, g_me, salt);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
}

// Checks every slot of `base` after a case.
static void verify_slots(Group &g, const char *what, const char *base, size_t dst_off,
                        size_t bytes, size_t src_off, unsigned salt, bool put) {
    std::vector<SlotCheck> init(g_npes, SlotCheck{0, ~0ull});
    TEST_CUDA(cudaMemcpy(g_buf.checks, init.data(), g_npes * sizeof(SlotCheck),
                         cudaMemcpyHostToDevice));
    size_t end = dst_off + bytes + kGuard;
    unsigned blocks = static_cast<unsigned>(std::min<size_t>((end + 255) / 256, 1024));
    verify_kernel<<<dim3(blocks, g_npes), 256>>>(base, kSlot, dst_off, bytes, src_off, salt,
                                                  g_buf.checks);
    TEST_CUDA(cudaGetLastError());
    std::vector<SlotCheck> res(g_npes);
    TEST_CUDA(cudaMemcpy(res.data(), g_buf.checks, g_npes * sizeof(SlotCheck),
                         cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < g_npes; pe++) {
        const SlotCheck &r = res[pe];
        long long rel = static_cast<long long>(r.first) - static_cast<long long>(dst_off);
        check(g, r.bad == 0,
              "%s, PE %d %s PE %d: %llu of %zu bytes wrong, first at byte %lld of the transfer",
              what, put ? pe : g_me, put ? "->" : "<-", put ? g_me : pe, r.bad,
              bytes + dst_off + kGuard, rel);
    }
}

// One case: `nelems` elements of Ops::T between dst/src offsets, with the given function
// and scope, every PE with every PE.
template <typename Ops>
static void rma_case(Group &g, int fn, int scope, size_t nelems, size_t dst_off, size_t src_off,
                     bool heap_local, dim3 block) {
    using T = typename Ops::T;
    const size_t bytes = nelems * sizeof(T);
    const unsigned salt = ++g_salt;
    prepare(dst_off + bytes + kGuard, src_off + bytes, salt);
    RmaArgs a{g_buf.recv,
              g_buf.pub,
              heap_local ? g_buf.sym_src : g_buf.priv_src,
              heap_local ? g_buf.sym_gdst : g_buf.priv_gdst,
              kSlot,
              dst_off,
              src_off,
              nelems,
              OpsIdOf<Ops>::value,
              fn,
              scope,
              g_me,
              g_npes};
    rma_kernel<<<g_npes, block>>>(a);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    char what[256];
    snprintf(what, sizeof what, "%s %s %s, %zu x %zu B, dst+%zu src+%zu, local side %s, block %ux%ux%u",
             Ops::name, kFnName[fn], kScopeName[scope], nelems, sizeof(T), dst_off, src_off,
             heap_local ? "in the heap" : "private", block.x, block.y, block.z);
    const char *base = is_put(fn) ? g_buf.recv : a.gdst;
    verify_slots(g, what, base, dst_off, bytes, src_off, salt, is_put(fn));
}

static dim3 block_of(int scope, int variant) {
    if (scope == SCOPE_THREAD) return dim3(32);
    if (scope == SCOPE_WARP) return dim3(64);
    return variant % 2 == 0 ? dim3(256) : dim3(16, 4, 2); // 1-D, and 3-D (NVSHMEM allows any)
}

template <typename Ops>
static void typed_cases(int scope) {
    static const char *const kGroup[] = {"nvshmem_<T>_put/get[_nbi], 25 types",
                                         "nvshmemx_<T>_put/get[_nbi]_warp, 25 types",
                                         "nvshmemx_<T>_put/get[_nbi]_block, 25 types"};
    Group &g = group(kGroup[scope]);
    const size_t e = sizeof(typename Ops::T);
    for (int fn = 0; fn < 4; fn++) {
        rma_case<Ops>(g, fn, scope, 1, 0, 0, fn % 2 == 0, block_of(scope, 0));
        rma_case<Ops>(g, fn, scope, 1000, e, 3 * e, fn % 2 == 1, block_of(scope, 1));
    }
}

template <typename Ops>
static void sized_cases() {
    Group &g = group("nvshmem(x)_put/get<8..128>[_nbi][_warp/_block]");
    const size_t e = sizeof(typename Ops::T);
    for (int scope = 0; scope < 3; scope++)
        for (int fn = 0; fn < 4; fn++) {
            rma_case<Ops>(g, fn, scope, 3, e, 0, fn % 2 == 0, block_of(scope, 0));
            rma_case<Ops>(g, fn, scope, 517, 2 * e, 5 * e, fn % 2 == 1, block_of(scope, 1));
        }
}

struct MemCase {
    size_t bytes, dst_off, src_off;
};

static void mem_cases(int scope) {
    static const char *const kGroup[] = {"nvshmem_putmem/getmem[_nbi], 1 B - 64 MiB",
                                         "nvshmemx_putmem/getmem[_nbi]_warp, 1 B - 64 MiB",
                                         "nvshmemx_putmem/getmem[_nbi]_block, 1 B - 64 MiB"};
    // Sizes around the 16-byte body, every skew of source and destination (16, 8, 4, 2, 1
    // byte words), heads and tails, and large transfers; and the inline paths of
    // niin/impl/copy_impl.h at their edges: one thread's whole 8- and 16-byte words up to
    // 256 bytes (groups of four and a partial group), a warp's or block's one 8-byte word per
    // thread, one 16-byte word per thread (a warp's 512 B, a block's 16 KiB) and the warp's
    // grouped loop just past it.
    static const MemCase kCases[] = {
        {1, 0, 0},          {1, 3, 5},           {2, 1, 1},           {15, 0, 0},
        {16, 0, 0},         {17, 0, 0},          {31, 7, 3},          {255, 1, 0},
        {8, 0, 0},          {24, 8, 8},          {40, 0, 0},          {80, 0, 0},
        {248, 8, 0},        {256, 0, 0},         {512, 0, 0},         {528, 0, 0},
        {1552, 0, 0},       {16384, 0, 0},       {16400, 0, 0},
        {4096, 0, 0},       {4096, 8, 0},        {4096, 4, 0},        {4096, 2, 0},
        {4096, 1, 0},       {65537, 13, 6},      {(1 << 20) + 3, 5, 9}, {16 << 20, 0, 0},
        {(16 << 20) + 1, 1, 2}, {64 << 20, 0, 0}, {(64 << 20) - 8, 3, 1},
    };
    Group &g = group(kGroup[scope]);
    int variant = 0;
    for (const MemCase &c : kCases)
        for (int fn = 0; fn < 4; fn++) {
            // One thread moves 64 MiB slowly (latency-bound): the blocking forms only.
            if (scope == SCOPE_THREAD && c.bytes > (16u << 20) && (is_nbi(fn) || c.dst_off != 0))
                continue;
            rma_case<Ops_mem>(g, fn, scope, c.bytes, c.dst_off, c.src_off, variant % 3 == 1,
                              block_of(scope, variant));
            variant++;
        }
}

// ---- scalar put and get -------------------------------------------------------------------

static constexpr int kScalars = 33;

template <typename T>
static T make_value(int v) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        return __float2bfloat16_rn(static_cast<float>(v));
    else if constexpr (std::is_same<T, half>::value)
        return __float2half_rn(static_cast<float>(v));
    else
        return static_cast<T>(v);
}

// Values PE pe puts in case `salt`: small integers, exact in every type.
template <typename T>
static std::vector<T> scalar_values(int pe, unsigned salt) {
    std::vector<T> v(kScalars);
    for (int i = 0; i < kScalars; i++)
        v[i] = make_value<T>(static_cast<int>((pe * 13 + i * 7 + salt * 3) % 120 + 1));
    return v;
}

template <typename Ops>
__global__ void p_kernel(char *recv, const typename Ops::T *vals, int me, int npes) {
    using T = typename Ops::T;
    const int target = (me + static_cast<int>(blockIdx.x)) % npes;
    T *dest = reinterpret_cast<T *>(recv) + me * kScalars;
    for (int i = 0; i < kScalars; i++) Ops::p(dest + i, vals[i], target);
}

template <typename Ops>
__global__ void g_kernel(const char *recv, typename Ops::T *out, int me, int npes) {
    using T = typename Ops::T;
    const int target = (me + static_cast<int>(blockIdx.x)) % npes;
    const T *source = reinterpret_cast<const T *>(recv) + me * kScalars;
    for (int i = 0; i < kScalars; i++) out[target * kScalars + i] = Ops::g(source + i, target);
}

// p: PE me writes its values into block me of every PE's buffer; g: PE me reads block me
// back from every PE (so it expects its own values from each).
// Built against NVSHMEM 3.4.5 (-DTEST_NVSHMEM): its libnvshmem_device.a has no remote
// scalar transfer for signed char, half and __nv_bfloat16 (nvlink: undefined
// nvshmemi_transfer_rma_p<signed char>, ..._g<__half>, ...), so nvshmem_{schar,int8,half,
// bfloat16}_p/_g do not link there; those four are checked against niin-rs only.
template <typename T>
static constexpr bool scalar_links() {
#ifdef TEST_NVSHMEM
    return !std::is_same<T, signed char>::value && !std::is_same<T, half>::value &&
           !std::is_same<T, __nv_bfloat16>::value;
#else
    return true;
#endif
}

template <typename Ops>
static void scalar_case_body(Group &g) {
    using T = typename Ops::T;
    const unsigned salt = ++g_salt;
    const size_t bytes = g_npes * kScalars * sizeof(T);
    TEST_CUDA(cudaMemset(g_buf.recv, kUntouched, bytes));
    std::vector<T> mine = scalar_values<T>(g_me, salt);
    T *vals = reinterpret_cast<T *>(g_buf.priv_src);
    T *out = reinterpret_cast<T *>(g_buf.priv_gdst);
    TEST_CUDA(cudaMemcpy(vals, mine.data(), kScalars * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemset(out, kUntouched, bytes));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    p_kernel<Ops><<<g_npes, 1>>>(g_buf.recv, vals, g_me, g_npes);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    g_kernel<Ops><<<g_npes, 1>>>(g_buf.recv, out, g_me, g_npes);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    std::vector<T> got(g_npes * kScalars), read(g_npes * kScalars);
    TEST_CUDA(cudaMemcpy(got.data(), g_buf.recv, bytes, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(read.data(), out, bytes, cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < g_npes; pe++) {
        std::vector<T> want = scalar_values<T>(pe, salt);
        int bad_p = 0, bad_g = 0;
        for (int i = 0; i < kScalars; i++) {
            bad_p += memcmp(&got[pe * kScalars + i], &want[i], sizeof(T)) != 0;
            bad_g += memcmp(&read[pe * kScalars + i], &mine[i], sizeof(T)) != 0;
        }
        check(g, bad_p == 0, "nvshmem_%s_p PE %d -> PE %d: %d of %d values wrong", Ops::name, pe,
              g_me, bad_p, kScalars);
        check(g, bad_g == 0, "nvshmem_%s_g PE %d <- PE %d: %d of %d values wrong", Ops::name,
              g_me, pe, bad_g, kScalars);
    }
    // The next case clears recv: nobody may still be reading it.
    nvshmem_barrier_all();
}

template <typename Ops>
static void scalar_case() {
    using T = typename Ops::T;
    Group &g = group("nvshmem_<T>_p / nvshmem_<T>_g, 25 types");
    if constexpr (!scalar_links<T>()) {
        if (g_me == 0)
            printf("SKIP|%s|nvshmem_%s_p/_g: not in NVSHMEM 3.4.5's device library\n",
                   g.name.c_str(), Ops::name);
        return;
    } else {
        scalar_case_body<Ops>(g);
    }
}

// ---- queries and nvshmem_ptr -------------------------------------------------------------

struct QueryOut {
    int my_pe, n_pes;
    int team_my_pe[3], team_n_pes[3], to_world[3];
    int major, minor, vmajor, vminor, vpatch;
    char name[NVSHMEM_MAX_NAME_LEN];
};

__global__ void query_kernel(QueryOut *q) {
    const nvshmem_team_t teams[3] = {NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE};
    q->my_pe = nvshmem_my_pe();
    q->n_pes = nvshmem_n_pes();
    for (int i = 0; i < 3; i++) {
        q->team_my_pe[i] = nvshmem_team_my_pe(teams[i]);
        q->team_n_pes[i] = nvshmem_team_n_pes(teams[i]);
        q->to_world[i] = nvshmem_team_translate_pe(teams[i], q->team_my_pe[i], NVSHMEM_TEAM_WORLD);
    }
    nvshmem_info_get_version(&q->major, &q->minor);
    nvshmem_info_get_name(q->name);
    nvshmemx_vendor_get_version_info(&q->vmajor, &q->vminor, &q->vpatch);
}

static void query_checks() {
    Group &g = group("nvshmem_my_pe/n_pes, team queries, info (device)");
    QueryOut *d = reinterpret_cast<QueryOut *>(g_buf.priv_gdst);
    TEST_CUDA(cudaMemset(d, 0, sizeof(QueryOut)));
    query_kernel<<<1, 1>>>(d);
    TEST_CUDA(cudaGetLastError());
    QueryOut q;
    TEST_CUDA(cudaMemcpy(&q, d, sizeof q, cudaMemcpyDeviceToHost));
    check(g, q.my_pe == g_me && q.n_pes == g_npes, "device my_pe/n_pes %d/%d, host %d/%d", q.my_pe,
          q.n_pes, g_me, g_npes);
    const nvshmem_team_t teams[3] = {NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED, NVSHMEMX_TEAM_NODE};
    const char *const names[3] = {"WORLD", "SHARED", "NODE"};
    for (int i = 0; i < 3; i++) {
        int hp = nvshmem_team_my_pe(teams[i]), hn = nvshmem_team_n_pes(teams[i]);
        check(g, q.team_my_pe[i] == hp && q.team_n_pes[i] == hn,
              "team %s: device my_pe/n_pes %d/%d, host %d/%d", names[i], q.team_my_pe[i],
              q.team_n_pes[i], hp, hn);
        check(g, q.to_world[i] == g_me, "team %s: translate(my team PE -> WORLD) = %d, want %d",
              names[i], q.to_world[i], g_me);
    }
    int major = 0, minor = 0, vmaj = 0, vmin = 0, vpat = 0;
    char name[NVSHMEM_MAX_NAME_LEN] = {0};
    nvshmem_info_get_version(&major, &minor);
    nvshmem_info_get_name(name);
    nvshmemx_vendor_get_version_info(&vmaj, &vmin, &vpat);
    check(g, q.major == major && q.minor == minor, "device info version %d.%d, host %d.%d", q.major,
          q.minor, major, minor);
    check(g, q.vmajor == vmaj && q.vminor == vmin && q.vpatch == vpat,
          "device vendor version %d.%d.%d, host %d.%d.%d", q.vmajor, q.vminor, q.vpatch, vmaj, vmin,
          vpat);
    q.name[NVSHMEM_MAX_NAME_LEN - 1] = 0;
    check(g, strcmp(q.name, name) == 0, "device name '%s', host '%s'", q.name, name);
}

// Device nvshmem_ptr of a symmetric int array on every PE, of private memory, and a store
// through each peer pointer: word my_pe of every PE's array becomes 1000 * (my_pe + 1) + pe.
__global__ void ptr_kernel(int *sym, const int *priv, unsigned long long *ptrs, int me, int npes) {
    for (int pe = 0; pe < npes; pe++) {
        int *p = static_cast<int *>(nvshmem_ptr(sym, pe));
        ptrs[pe] = reinterpret_cast<unsigned long long>(p);
        if (p != nullptr) p[me] = 1000 * (me + 1) + pe;
    }
    ptrs[npes] = reinterpret_cast<unsigned long long>(nvshmem_ptr(priv, me));
    __threadfence_system();
}

static void ptr_checks() {
    Group &g = group("nvshmem_ptr (device and host)");
    int *sym = reinterpret_cast<int *>(g_buf.recv);
    TEST_CUDA(cudaMemset(sym, 0, g_npes * sizeof(int)));
    unsigned long long *dptrs = reinterpret_cast<unsigned long long *>(g_buf.priv_gdst);
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    ptr_kernel<<<1, 1>>>(sym, reinterpret_cast<const int *>(g_buf.priv_src), dptrs, g_me, g_npes);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    std::vector<unsigned long long> ptrs(g_npes + 1);
    TEST_CUDA(cudaMemcpy(ptrs.data(), dptrs, ptrs.size() * sizeof(ptrs[0]), cudaMemcpyDeviceToHost));
    std::vector<int> words(g_npes);
    TEST_CUDA(cudaMemcpy(words.data(), sym, g_npes * sizeof(int), cudaMemcpyDeviceToHost));
    // All PEs here share one node (and one GPU, or NVLink): every peer is load/store reachable.
    for (int pe = 0; pe < g_npes; pe++) {
        check(g, ptrs[pe] != 0, "device nvshmem_ptr(sym, %d) is NULL", pe);
        check(g, words[pe] == 1000 * (pe + 1) + g_me,
              "word %d = %d after PE %d stored %d through its device nvshmem_ptr", pe, words[pe], pe,
              1000 * (pe + 1) + g_me);
        // The host's peer address must reach the same bytes.
        void *hp = nvshmem_ptr(sym, pe);
        if (!check(g, hp != nullptr, "host nvshmem_ptr(sym, %d) is NULL", pe)) continue;
        std::vector<int> theirs(g_npes);
        TEST_CUDA(cudaMemcpy(theirs.data(), hp, g_npes * sizeof(int), cudaMemcpyDefault));
        int bad = 0;
        for (int q = 0; q < g_npes; q++) bad += theirs[q] != 1000 * (q + 1) + pe;
        check(g, bad == 0, "host nvshmem_ptr(sym, %d): %d of %d words differ from PE %d's array",
              pe, bad, g_npes, pe);
    }
    check(g, ptrs[g_npes] == 0, "device nvshmem_ptr(private memory, my_pe) = %#llx, want NULL",
          ptrs[g_npes]);
    check(g, nvshmem_ptr(g_buf.priv_src, g_me) == nullptr,
          "host nvshmem_ptr(private memory, my_pe) is not NULL");
    nvshmem_barrier_all();
}

// ---- fence and quiet: ordering seen by the target -----------------------------------------

static constexpr int kOrderRounds = 256, kOrderWords = 64;

enum OrderVariant {
    ORDER_FENCE_THREAD,
    ORDER_FENCE_WARP,
    ORDER_QUIET_THREAD,
    ORDER_QUIET_WARP,
    ORDER_QUIET_BLOCK,
    ORDER_VARIANTS
};
static const char *const kOrderName[] = {
    "nvshmem_int_put + nvshmem_fence + nvshmem_int_p",
    "nvshmemx_int_put_warp + nvshmem_fence + nvshmem_int_p",
    "nvshmem_int_put_nbi + nvshmem_quiet + nvshmem_int_p",
    "nvshmemx_putmem_nbi_warp + nvshmem_quiet + nvshmem_int_p",
    "nvshmemx_int_put_nbi_block + nvshmem_quiet + nvshmem_int_p",
};

struct OrderResult {
    int wrong, seen, timed_out;
};

// CTA 0 sends kOrderRounds rounds to the next PE: round i's words (value i * 100000 + k) into
// their own place, then flag = i. CTA 1 (one thread) watches this PE's flag and checks, for
// every round the flag has passed, that its words are there.
__global__ void order_kernel(int *data, int *flag, const int *src, int variant, int me, int npes,
                             OrderResult *out) {
    const int next = (me + 1) % npes;
    const unsigned lin = threadIdx.x;
    if (blockIdx.x == 0) {
        for (int i = 1; i <= kOrderRounds; i++) {
            int *d = data + i * kOrderWords;
            const int *s = src + i * kOrderWords;
            switch (variant) {
            case ORDER_FENCE_THREAD:
                if (lin == 0) {
                    nvshmem_int_put(d, s, kOrderWords, next);
                    nvshmem_fence();
                    nvshmem_int_p(flag, i, next);
                }
                break;
            case ORDER_FENCE_WARP:
                if (lin < 32) {
                    nvshmemx_int_put_warp(d, s, kOrderWords, next);
                    nvshmem_fence();
                    if (lin == 0) nvshmem_int_p(flag, i, next);
                }
                break;
            case ORDER_QUIET_THREAD:
                if (lin == 0) {
                    nvshmem_int_put_nbi(d, s, kOrderWords, next);
                    nvshmem_quiet();
                    nvshmem_int_p(flag, i, next);
                }
                break;
            case ORDER_QUIET_WARP:
                if (lin < 32) {
                    nvshmemx_putmem_nbi_warp(d, s, kOrderWords * sizeof(int), next);
                    nvshmem_quiet();
                    if (lin == 0) nvshmem_int_p(flag, i, next);
                }
                break;
            case ORDER_QUIET_BLOCK:
                nvshmemx_int_put_nbi_block(d, s, kOrderWords, next);
                nvshmem_quiet();
                __syncthreads();
                if (lin == 0) nvshmem_int_p(flag, i, next);
                break;
            }
        }
        return;
    }
    if (lin != 0) return;
    volatile int *f = flag;
    volatile int *w = data;
    int seen = 0, wrong = 0;
    const long long start = clock64();
    const long long limit = 40ll * 1000 * 1000 * 1000; // cycles: ~20 s at 2 GHz
    while (seen < kOrderRounds) {
        int now = *f;
        if (now > seen) {
            __threadfence();
            for (int i = seen + 1; i <= now; i++)
                for (int k = 0; k < kOrderWords; k++) wrong += w[i * kOrderWords + k] != i * 100000 + k;
            seen = now;
        } else if (clock64() - start > limit) {
            out->timed_out = 1;
            break;
        }
    }
    out->wrong = wrong;
    out->seen = seen;
}

static void order_checks() {
    Group &g = group("nvshmem_fence / nvshmem_quiet ordering (thread, warp, block)");
    const size_t words = (kOrderRounds + 1) * kOrderWords;
    int *data = reinterpret_cast<int *>(g_buf.recv);
    int *flag = reinterpret_cast<int *>(g_buf.pub);
    int *src = reinterpret_cast<int *>(g_buf.sym_src);
    std::vector<int> host_src(words);
    for (size_t i = 0; i < words; i++)
        host_src[i] = static_cast<int>(i / kOrderWords) * 100000 + static_cast<int>(i % kOrderWords);
    TEST_CUDA(cudaMemcpy(src, host_src.data(), words * sizeof(int), cudaMemcpyHostToDevice));
    OrderResult *res = reinterpret_cast<OrderResult *>(g_buf.priv_gdst);
    for (int v = 0; v < ORDER_VARIANTS; v++) {
        TEST_CUDA(cudaMemset(data, 0, words * sizeof(int)));
        TEST_CUDA(cudaMemset(flag, 0, sizeof(int)));
        TEST_CUDA(cudaMemset(res, 0, sizeof(OrderResult)));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        order_kernel<<<2, 128>>>(data, flag, src, v, g_me, g_npes, res);
        TEST_CUDA(cudaGetLastError());
        TEST_CUDA(cudaDeviceSynchronize());
        OrderResult r;
        TEST_CUDA(cudaMemcpy(&r, res, sizeof r, cudaMemcpyDeviceToHost));
        const int prev = (g_me + g_npes - 1) % g_npes;
        check(g, !r.timed_out && r.seen == kOrderRounds && r.wrong == 0,
              "%s, PE %d -> PE %d: %d of %d rounds seen%s, %d words missing when their flag was "
              "seen",
              kOrderName[v], prev, g_me, r.seen, kOrderRounds, r.timed_out ? " (timed out)" : "",
              r.wrong);
        nvshmem_barrier_all();
    }
}

// ---- barriers ------------------------------------------------------------------------------

// CTAs in a barrier at once: niin-rs gives each CTA its own NCCL barrier (niin/sync.h);
// NVSHMEM 3.4.5 allows one collective on a team at a time, so its build uses one CTA.
#ifdef TEST_NVSHMEM
static constexpr int kBarrierCtas = 1;
#else
static constexpr int kBarrierCtas = 4;
#endif
static constexpr int kBarrierRounds = 24;

enum BarrierVariant {
    BAR_ALL_THREAD,
    BAR_ALL_WARP,
    BAR_ALL_BLOCK,
    SYNC_ALL_THREAD,
    SYNC_ALL_WARP,
    SYNC_ALL_BLOCK,
    BAR_WORLD_THREAD,
    BAR_SHARED_WARP,
    BAR_NODE_BLOCK,
    TEAM_SYNC_WORLD_BLOCK,
    TEAM_SYNC_SHARED_THREAD,
    TEAM_SYNC_NODE_WARP,
    BAR_VARIANTS
};
static const char *const kBarrierName[] = {
    "nvshmem_barrier_all",
    "nvshmemx_barrier_all_warp",
    "nvshmemx_barrier_all_block",
    "nvshmem_quiet + nvshmem_sync_all",
    "nvshmem_quiet + nvshmemx_sync_all_warp",
    "nvshmem_quiet + nvshmemx_sync_all_block",
    "nvshmem_barrier(TEAM_WORLD)",
    "nvshmemx_barrier_warp(TEAM_SHARED)",
    "nvshmemx_barrier_block(TEAM_NODE)",
    "nvshmem_quiet + nvshmemx_team_sync_block(TEAM_WORLD)",
    "nvshmem_quiet + nvshmem_team_sync(TEAM_SHARED)",
    "nvshmem_quiet + nvshmemx_team_sync_warp(TEAM_NODE)",
};
// Variants whose team is the LSA team (TEAM_SHARED or TEAM_NODE).
static bool barrier_on_lsa_team(int v) {
    return v == BAR_SHARED_WARP || v == BAR_NODE_BLOCK || v == TEAM_SYNC_SHARED_THREAD ||
           v == TEAM_SYNC_NODE_WARP;
}

__device__ void barrier_variant(int v, unsigned lin) {
    switch (v) {
    case BAR_ALL_THREAD: if (lin == 0) nvshmem_barrier_all(); break;
    case BAR_ALL_WARP: if (lin < 32) nvshmemx_barrier_all_warp(); break;
    case BAR_ALL_BLOCK: nvshmemx_barrier_all_block(); break;
    case SYNC_ALL_THREAD:
        if (lin == 0) {
            nvshmem_quiet();
            nvshmem_sync_all();
        }
        break;
    case SYNC_ALL_WARP:
        if (lin < 32) {
            nvshmem_quiet();
            nvshmemx_sync_all_warp();
        }
        break;
    case SYNC_ALL_BLOCK:
        nvshmem_quiet();
        nvshmemx_sync_all_block();
        break;
    case BAR_WORLD_THREAD: if (lin == 0) nvshmem_barrier(NVSHMEM_TEAM_WORLD); break;
    case BAR_SHARED_WARP: if (lin < 32) nvshmemx_barrier_warp(NVSHMEM_TEAM_SHARED); break;
    case BAR_NODE_BLOCK: nvshmemx_barrier_block(NVSHMEMX_TEAM_NODE); break;
    case TEAM_SYNC_WORLD_BLOCK:
        nvshmem_quiet();
        nvshmemx_team_sync_block(NVSHMEM_TEAM_WORLD);
        break;
    case TEAM_SYNC_SHARED_THREAD:
        if (lin == 0) {
            nvshmem_quiet();
            nvshmem_team_sync(NVSHMEM_TEAM_SHARED);
        }
        break;
    case TEAM_SYNC_NODE_WARP:
        if (lin < 32) {
            nvshmem_quiet();
            nvshmemx_team_sync_warp(NVSHMEMX_TEAM_NODE);
        }
        break;
    }
}

// kBarrierCtas CTAs, each its own barrier instance (CTA b meets CTA b of every PE). Round r:
// thread 0 stores tag(r) into word [me][b] of buffer r % 2 on every PE, the barrier, then
// thread 0 checks word [s][b] for every PE s. Two buffers suffice: round r + 2 can start
// only after every PE has left round r + 1's barrier, hence finished checking round r.
__global__ void barrier_kernel(int *flags, int v, int me, int npes, unsigned long long *wrong) {
    const unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int b = static_cast<int>(blockIdx.x), ctas = static_cast<int>(gridDim.x);
    for (int r = 0; r < kBarrierRounds; r++) {
        int *buf = flags + (r & 1) * npes * ctas;
        const int tag = v * 1000 + r + 1;
        if (lin == 0)
            for (int pe = 0; pe < npes; pe++) nvshmem_int_p(&buf[me * ctas + b], tag, pe);
        __syncthreads();
        barrier_variant(v, lin);
        __syncthreads();
        if (lin == 0) {
            volatile int *w = buf;
            for (int s = 0; s < npes; s++)
                if (w[s * ctas + b] != tag) atomicAdd(wrong, 1ull);
        }
        __syncthreads();
    }
}

static void barrier_checks() {
    Group &g = group("barrier_all / sync_all / barrier / team_sync (thread, warp, block)");
    int *flags = reinterpret_cast<int *>(g_buf.recv);
    unsigned long long *wrong = reinterpret_cast<unsigned long long *>(g_buf.priv_gdst);
    const bool lsa_is_world = nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED) == g_npes &&
                              nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE) == g_npes;
    for (int v = 0; v < BAR_VARIANTS; v++) {
        // The store pattern writes every PE: with an LSA team smaller than the world it
        // would not be the team's to order.
        if (barrier_on_lsa_team(v) && !lsa_is_world) continue;
        TEST_CUDA(cudaMemset(flags, 0, 2 * g_npes * kBarrierCtas * sizeof(int)));
        TEST_CUDA(cudaMemset(wrong, 0, sizeof *wrong));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        dim3 block = v % 2 == 0 ? dim3(128) : dim3(32, 2, 2);
        barrier_kernel<<<kBarrierCtas, block>>>(flags, v, g_me, g_npes, wrong);
        TEST_CUDA(cudaGetLastError());
        TEST_CUDA(cudaDeviceSynchronize());
        unsigned long long w = 0;
        TEST_CUDA(cudaMemcpy(&w, wrong, sizeof w, cudaMemcpyDeviceToHost));
        check(g, w == 0,
              "%s, %d CTAs of %ux%ux%u: %llu of %d words not yet written after the barrier",
              kBarrierName[v], kBarrierCtas, block.x, block.y, block.z, w,
              kBarrierRounds * kBarrierCtas * g_npes);
        nvshmem_barrier_all();
    }
}

// ---- main --------------------------------------------------------------------------------

int main() {
    test_init();
    g_me = nvshmem_my_pe();
    g_npes = nvshmem_n_pes();

    g_buf.recv = static_cast<char *>(nvshmem_malloc(g_npes * kSlot));
    g_buf.pub = static_cast<char *>(nvshmem_malloc(kSlot));
    g_buf.sym_src = static_cast<char *>(nvshmem_malloc(kSlot));
    g_buf.sym_gdst = static_cast<char *>(nvshmem_malloc(g_npes * kSlot));
    if (!g_buf.recv || !g_buf.pub || !g_buf.sym_src || !g_buf.sym_gdst) {
        fprintf(stderr, "device_rma PE %d: nvshmem_malloc of %zu bytes failed (set "
                        "NVSHMEM_SYMMETRIC_SIZE to at least %zu)\n",
                g_me, (2 * g_npes + 2) * kSlot, (2 * g_npes + 3) * kSlot);
        return 2;
    }
    TEST_CUDA(cudaMalloc(&g_buf.priv_src, kSlot));
    TEST_CUDA(cudaMalloc(&g_buf.priv_gdst, g_npes * kSlot));
    TEST_CUDA(cudaMalloc(&g_buf.checks, g_npes * sizeof(SlotCheck)));

    query_checks();
    ptr_checks();
#define TEST_SCALAR(NAME, TYPE) scalar_case<Ops_##NAME>();
    TEST_RMA_TYPES(TEST_SCALAR)
#undef TEST_SCALAR
    for (int scope = 0; scope < 3; scope++) {
#define TEST_TYPED(NAME, TYPE) typed_cases<Ops_##NAME>(scope);
        TEST_RMA_TYPES(TEST_TYPED)
#undef TEST_TYPED
    }
#define TEST_SIZED(BITS, TYPE) sized_cases<Ops_bits##BITS>();
    TEST_RMA_SIZES(TEST_SIZED)
#undef TEST_SIZED
    for (int scope = 0; scope < 3; scope++) mem_cases(scope);
    order_checks();
    barrier_checks();

    long passed = 0, failed = 0;
    for (const Group &g : g_groups) {
        printf("RESULT|%s|%ld|%ld\n", g.name.c_str(), g.passed, g.failed);
        passed += g.passed;
        failed += g.failed;
    }
    printf("device_rma PE %d of %d: %ld passed, %ld failed\n", g_me, g_npes, passed, failed);
    fflush(stdout);

    nvshmem_barrier_all();
    cudaFree(g_buf.checks);
    cudaFree(g_buf.priv_gdst);
    cudaFree(g_buf.priv_src);
    nvshmem_free(g_buf.sym_gdst);
    nvshmem_free(g_buf.sym_src);
    nvshmem_free(g_buf.pub);
    nvshmem_free(g_buf.recv);
    nvshmem_finalize();
    return failed == 0 ? 0 : 1;
}
