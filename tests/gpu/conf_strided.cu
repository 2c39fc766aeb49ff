// conf_strided.cu -- GPU conformance of device strided RMA (niin/strided.h): every iput and
// iget of NVSHMEM 3.4.5 -- nvshmem_<T>_iput/iget for the 25 RMA types, nvshmem_iput/iget<N>
// for N = 8 ... 128, and their nvshmemx _warp and _block forms -- with strides 1, 2, 3, mixed,
// negative and zero, to every PE, itself included, checked byte for byte.
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5 (which checks the test's expectations:
// there, iput/iget reach P2P peers only, which on one GPU every PE is).
//
// One launch per function (180): a kernel of n_pes x kCases CTAs of 1024 threads (the kernel
// has no __launch_bounds__: the launch checks that the device API fits a 1024-thread block),
// where CTA (b, c) runs case c against PE (my_pe + b) % n_pes -- by its thread 0 (thread
// scope), its first warp, or the whole block. An iput goes from a local source (private
// cudaMalloc memory or the symmetric heap, alternating by case and function) to slot
// (my_pe, c) of the target's symmetric receive buffer, then nvshmem_quiet; an iget goes from
// slot c of the target's symmetric source to slot (target, c) of a local buffer (private or
// symmetric, alternating likewise). Each slot is then checked on the GPU after a barrier: every byte of every
// element must be the source's byte (PE p's pattern for the slot of PE p, its own per case
// and function), every other byte of the slot's checked span -- the gaps between elements
// and kGuard bytes before and after -- untouched (0xEE).
//
// Strides (elements): a case is (dst, sst, nelems); element i at dest + i * dst from
// source + i * sst. A negative stride starts the operand at the high end of its span (the
// element pointer passed is the first element, highest address). sst = 0 reads one source
// element nelems times. dst = 0 is not run: which of a group's stores lands is unspecified
// (in NVSHMEM too). The cases of a stride below 1 count in their own group.
//
// Symmetric heap: about (2 n_pes + 2) x kCases x 256 KiB (12 MiB for 4 PEs).

#include <cstdint>
#include <cstdlib>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conf_harness.h"

// ---- the API surface under test -----------------------------------------------------------

// NVSHMEM 3.4.5's RMA types and sizes: TEST_RMA_TYPES, TEST_RMA_SIZES.
#include "test_types.h"

enum Fn { FN_IPUT = 0, FN_IGET = 1 };
enum Scope { SCOPE_THREAD = 0, SCOPE_WARP = 1, SCOPE_BLOCK = 2 };
static const char *const kFnName[] = {"iput", "iget"};
static const char *const kScopeName[] = {"thread", "warp", "block"};

// One struct per family: T (the element), name, and call(fn, scope, ...) dispatching to its
// 6 functions (iput/iget x thread/warp/block).
#define TEST_TYPED_OPS(NAME, TYPE)                                                          \
    struct Ops_##NAME {                                                                     \
        using T = TYPE;                                                                     \
        static constexpr const char *name = "nvshmem(x)_" #NAME "_iput/iget";               \
        __device__ static void call(int fn, int scope, T *d, const T *s, ptrdiff_t dst,     \
                                    ptrdiff_t sst, size_t n, int pe) {                      \
            switch (scope * 2 + fn) {                                                       \
            case 0: nvshmem_##NAME##_iput(d, s, dst, sst, n, pe); break;                    \
            case 1: nvshmem_##NAME##_iget(d, s, dst, sst, n, pe); break;                    \
            case 2: nvshmemx_##NAME##_iput_warp(d, s, dst, sst, n, pe); break;              \
            case 3: nvshmemx_##NAME##_iget_warp(d, s, dst, sst, n, pe); break;              \
            case 4: nvshmemx_##NAME##_iput_block(d, s, dst, sst, n, pe); break;             \
            case 5: nvshmemx_##NAME##_iget_block(d, s, dst, sst, n, pe); break;             \
            }                                                                               \
        }                                                                                   \
    };
TEST_RMA_TYPES(TEST_TYPED_OPS)
#undef TEST_TYPED_OPS

#define TEST_SIZED_OPS(BITS, TYPE)                                                          \
    struct Ops_bits##BITS {                                                                 \
        using T = TYPE;                                                                     \
        static constexpr const char *name = "nvshmem(x)_iput/iget" #BITS;                   \
        __device__ static void call(int fn, int scope, T *d, const T *s, ptrdiff_t dst,     \
                                    ptrdiff_t sst, size_t n, int pe) {                      \
            switch (scope * 2 + fn) {                                                       \
            case 0: nvshmem_iput##BITS(d, s, dst, sst, n, pe); break;                       \
            case 1: nvshmem_iget##BITS(d, s, dst, sst, n, pe); break;                       \
            case 2: nvshmemx_iput##BITS##_warp(d, s, dst, sst, n, pe); break;               \
            case 3: nvshmemx_iget##BITS##_warp(d, s, dst, sst, n, pe); break;               \
            case 4: nvshmemx_iput##BITS##_block(d, s, dst, sst, n, pe); break;              \
            case 5: nvshmemx_iget##BITS##_block(d, s, dst, sst, n, pe); break;              \
            }                                                                               \
        }                                                                                   \
    };
TEST_RMA_SIZES(TEST_SIZED_OPS)
#undef TEST_SIZED_OPS

// Every family, numbered: the one strided_kernel dispatches on the number (one kernel, so a
// whole-program build compiles the device API's out-of-line bodies once).
#define TEST_EACH_OPS(X)             \
    TEST_RMA_TYPES(TEST_OPS_OF_TYPE) \
    TEST_RMA_SIZES(TEST_OPS_OF_SIZE)
#define TEST_OPS_OF_TYPE(NAME, TYPE) TEST_OPS_X(NAME)
#define TEST_OPS_OF_SIZE(BITS, TYPE) TEST_OPS_X(bits##BITS)

enum OpsId {
#define TEST_OPS_X(ID) OPS_##ID,
    TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X
};
template <typename Ops>
struct OpsIdOf;
#define TEST_OPS_X(ID)                         \
    template <>                                \
    struct OpsIdOf<Ops_##ID> {                 \
        static constexpr int value = OPS_##ID; \
    };
TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X

// ---- the cases and their layout ------------------------------------------------------------

struct Case {
    long long dst, sst; // strides in elements; dst != 0
    long long nelems;
};

// Contiguous, equal strides, mixed strides, sizes below and above a block's 1024 threads and
// 4 x 1024 (the unrolled rounds of a block), then strides below 1.
static constexpr Case kCases[] = {
    {1, 1, 1},      {1, 1, 5000},  {2, 2, 37},    {3, 3, 4500}, {1, 3, 1000}, {3, 1, 1029},
    {2, 3, 4099},   {3, 2, 77},    {-2, 1, 300},  {1, -3, 301}, {2, 0, 100},  {-1, -1, 4097},
};
static constexpr int kCases_n = static_cast<int>(sizeof kCases / sizeof kCases[0]);
static constexpr size_t kGuard = 64;          // checked untouched bytes before and after a span
static constexpr size_t kSlot = 256u << 10;   // 2 * kGuard + the widest span (5000 x 3 x 16 B)

static bool below_one(const Case &c) { return c.dst < 1 || c.sst < 1; }

// Where element 0 of an operand with `stride` lies in its slot: kGuard in, or at the high end
// of the span for a negative stride.
__host__ __device__ inline size_t origin(long long stride, long long nelems, size_t elem) {
    const long long reach = stride < 0 ? (nelems - 1) * -stride : 0;
    return kGuard + static_cast<size_t>(reach) * elem;
}

// Bytes of a slot the check covers: guard, the span, guard.
__host__ __device__ inline size_t checked_bytes(long long stride, long long nelems, size_t elem) {
    const long long s = stride < 0 ? -stride : stride;
    return 2 * kGuard + static_cast<size_t>((nelems - 1) * s + 1) * elem;
}

struct Cases {
    Case c[kCases_n];
};

// Whether case ci of the function numbered `variant` has its local side (an iput's source,
// an iget's destination) in the symmetric heap rather than in private memory.
__host__ __device__ inline bool heap_local(int ci, int variant) { return ((ci + variant) & 1) != 0; }

// The byte at position i of PE pe's source in case `salt` (a hash: a byte moved to the wrong
// place, or taken from the wrong PE or case, shows).
__host__ __device__ inline unsigned char pattern(int pe, unsigned salt, size_t i) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u;
    x ^= static_cast<uint32_t>(pe + 1) * 0x9E3779B9u ^ salt * 0x85EBCA6Bu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return static_cast<unsigned char>(x ^ (x >> 24));
}

static constexpr unsigned char kUntouched = 0xEE;

// ---- kernels --------------------------------------------------------------------------------

struct StridedArgs {
    char *recv, *pub, *src_heap, *src_priv, *gdst_heap, *gdst_priv;
    int ops, fn, scope, me, npes, variant;
    Cases cases;
};

// CTA (b, c): case c with PE (me + b) % npes. No __launch_bounds__ (conf_harness.h).
__global__ void strided_kernel(StridedArgs a) {
    const int target = (a.me + static_cast<int>(blockIdx.x)) % a.npes;
    const int ci = static_cast<int>(blockIdx.y);
    const Case k = a.cases.c[ci];
    const unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const bool caller = a.scope == SCOPE_BLOCK || (a.scope == SCOPE_WARP && lin < 32) ||
                        (a.scope == SCOPE_THREAD && lin == 0);
    if (!caller) return;
    const bool heap = heap_local(ci, a.variant);
    char *dslot;
    const char *sslot;
    if (a.fn == FN_IPUT) {
        dslot = a.recv + (static_cast<size_t>(a.me) * kCases_n + ci) * kSlot;
        sslot = (heap ? a.src_heap : a.src_priv) + ci * kSlot;
    } else {
        dslot = (heap ? a.gdst_heap : a.gdst_priv) +
                (static_cast<size_t>(target) * kCases_n + ci) * kSlot;
        sslot = a.pub + ci * kSlot;
    }
    switch (a.ops) {
#define TEST_OPS_X(ID)                                                                          \
    case OPS_##ID: {                                                                            \
        using T = Ops_##ID::T;                                                                  \
        T *d = reinterpret_cast<T *>(dslot + origin(k.dst, k.nelems, sizeof(T)));               \
        const T *s = reinterpret_cast<const T *>(sslot + origin(k.sst, k.nelems, sizeof(T)));   \
        Ops_##ID::call(a.fn, a.scope, d, s, static_cast<ptrdiff_t>(k.dst),                      \
                       static_cast<ptrdiff_t>(k.sst), static_cast<size_t>(k.nelems), target);   \
        break;                                                                                  \
    }
        TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X
    }
    if (a.fn == FN_IPUT) nvshmem_quiet();
}

__global__ void fill_kernel(char *buf, int pe, unsigned salt0) {
    char *slot = buf + blockIdx.y * kSlot;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < kSlot;
         i += (size_t)gridDim.x * blockDim.x)
        slot[i] = static_cast<char>(pattern(pe, salt0 + blockIdx.y, i));
}

struct SlotCheck {
    unsigned long long bad;   // bytes that differ
    unsigned long long first; // position of the first (~0 when none)
};

// The byte that position x of a destination slot must hold after case k (elements of `elem`
// bytes) from PE pe's source in case `salt`: the source's byte, or kUntouched off the
// elements.
__device__ inline unsigned char expected(const Case &k, size_t elem, size_t x, int pe,
                                         unsigned salt) {
    const long long o = static_cast<long long>(origin(k.dst, k.nelems, elem));
    const long long e = static_cast<long long>(elem);
    const long long step = k.dst * e;
    const long long pos = static_cast<long long>(x);
    long long i, w; // element and byte in it
    if (step > 0) {
        if (pos < o) return kUntouched;
        i = (pos - o) / step;
        w = (pos - o) % step;
    } else {
        const long long t = o - pos; // element i starts at o - i * |step|
        i = t <= 0 ? 0 : (t - step - 1) / -step;
        w = pos - o - i * step;
    }
    if (i >= k.nelems || w >= e) return kUntouched;
    const long long from = static_cast<long long>(origin(k.sst, k.nelems, elem)) + i * k.sst * e + w;
    return pattern(pe, salt, static_cast<size_t>(from));
}

// Slot (p, c) = blockIdx.z * kCases_n + blockIdx.y, in `heap` or `priv` as heap_local
// says: PE p's bytes of case c.
__global__ void verify_kernel(const char *heap, const char *priv, int variant, Cases cases,
                              size_t elem, unsigned salt0, SlotCheck *out) {
    const int p = static_cast<int>(blockIdx.z), ci = static_cast<int>(blockIdx.y);
    const Case k = cases.c[ci];
    const size_t slot_index = static_cast<size_t>(p) * kCases_n + ci;
    const char *base = heap_local(ci, variant) ? heap : priv;
    const unsigned char *s = reinterpret_cast<const unsigned char *>(base + slot_index * kSlot);
    const size_t end = checked_bytes(k.dst, k.nelems, elem);
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < end;
         x += (size_t)gridDim.x * blockDim.x) {
        if (s[x] != expected(k, elem, x, p, salt0 + ci)) {
            atomicAdd(&out[slot_index].bad, 1ull);
            atomicMin(&out[slot_index].first, static_cast<unsigned long long>(x));
        }
    }
}

// ---- the run ---------------------------------------------------------------------------------

struct Buffers {
    char *recv;      // symmetric, n_pes x kCases slots: iputs land in (source PE, case)
    char *pub;       // symmetric, kCases slots: what igets read
    char *sym_src;   // symmetric, kCases slots: an iput's local source in the heap
    char *sym_gdst;  // symmetric, n_pes x kCases slots: an iget's destination in the heap
    char *priv_src;  // cudaMalloc, kCases slots
    char *priv_gdst; // cudaMalloc, n_pes x kCases slots
    SlotCheck *checks;
};
static Buffers g_buf;
static unsigned g_salt = 1; // per case and function

// One function (ops, fn, scope): every case with every PE, then the checks.
template <typename Ops>
static void strided_function(int fn, int scope, int variant) {
    using T = typename Ops::T;
    const int npes = g_conf_npes, me = g_conf_me;
    const unsigned salt0 = g_salt;
    g_salt += kCases_n;
    const size_t dslots = static_cast<size_t>(npes) * kCases_n * kSlot;
    if (fn == FN_IPUT) {
        TEST_CUDA(cudaMemset(g_buf.recv, kUntouched, dslots));
        fill_kernel<<<dim3(64, kCases_n), 256>>>(g_buf.sym_src, me, salt0);
        fill_kernel<<<dim3(64, kCases_n), 256>>>(g_buf.priv_src, me, salt0);
    } else {
        TEST_CUDA(cudaMemset(g_buf.sym_gdst, kUntouched, dslots));
        TEST_CUDA(cudaMemset(g_buf.priv_gdst, kUntouched, dslots));
        fill_kernel<<<dim3(64, kCases_n), 256>>>(g_buf.pub, me, salt0);
    }
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    Cases cases;
    for (int i = 0; i < kCases_n; i++) cases.c[i] = kCases[i];
    StridedArgs a{g_buf.recv,      g_buf.pub, g_buf.sym_src, g_buf.priv_src, g_buf.sym_gdst,
                  g_buf.priv_gdst, OpsIdOf<Ops>::value, fn,  scope,          me,
                  npes,            variant,   cases};
    // CONF_LAUNCH's message takes a 1-D grid; the same, for this 2-D one.
    ConfGroup &launch = conf_group("strided kernel launches (1024-thread blocks)");
    strided_kernel<<<dim3(npes, kCases_n), 1024>>>(a);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    conf_check(launch, e == cudaSuccess, "strided_kernel<<<(%d, %d), 1024>>> (%s %s %s): %s", npes,
               kCases_n, Ops::name, kFnName[fn], kScopeName[scope], cudaGetErrorString(e));
    if (e != cudaSuccess) {
        fprintf(stderr, "conf_strided: CUDA error, stopping\n");
        exit(3);
    }
    nvshmem_barrier_all();

    std::vector<SlotCheck> init(static_cast<size_t>(npes) * kCases_n, SlotCheck{0, ~0ull});
    TEST_CUDA(cudaMemcpy(g_buf.checks, init.data(), init.size() * sizeof(SlotCheck),
                         cudaMemcpyHostToDevice));
    if (fn == FN_IPUT)
        verify_kernel<<<dim3(64, kCases_n, npes), 256>>>(g_buf.recv, g_buf.recv, variant, cases,
                                                         sizeof(T), salt0, g_buf.checks);
    else
        verify_kernel<<<dim3(64, kCases_n, npes), 256>>>(g_buf.sym_gdst, g_buf.priv_gdst, variant,
                                                         cases, sizeof(T), salt0, g_buf.checks);
    TEST_CUDA(cudaGetLastError());
    std::vector<SlotCheck> res(init.size());
    TEST_CUDA(cudaMemcpy(res.data(), g_buf.checks, res.size() * sizeof(SlotCheck),
                         cudaMemcpyDeviceToHost));

    static const char *const kGroup[] = {"nvshmem_<T>_iput/iget and <N> sizes, thread",
                                         "nvshmemx_<T>_iput/iget_warp and <N> sizes",
                                         "nvshmemx_<T>_iput/iget_block and <N> sizes"};
    for (int ci = 0; ci < kCases_n; ci++) {
        const Case &k = kCases[ci];
        ConfGroup &g = below_one(k) ? conf_group("iput/iget with negative and zero strides, all scopes")
                                    : conf_group(kGroup[scope]);
        for (int p = 0; p < npes; p++) {
            const SlotCheck &r = res[static_cast<size_t>(p) * kCases_n + ci];
            conf_check(g, r.bad == 0,
                       "%s %s %s, %lld x %zu B, dst %lld sst %lld, local side %s, PE %d %s PE %d: "
                       "%llu of %zu bytes wrong, first at byte %lld of the slot",
                       Ops::name, kFnName[fn], kScopeName[scope], k.nelems, sizeof(T), k.dst,
                       k.sst, heap_local(ci, variant) ? "in the heap" : "private",
                       fn == FN_IPUT ? p : me, fn == FN_IPUT ? "->" : "<-", fn == FN_IPUT ? me : p,
                       r.bad, checked_bytes(k.dst, k.nelems, sizeof(T)),
                       r.bad ? static_cast<long long>(r.first) : -1ll);
        }
    }
    // The next function clears these buffers: nobody may still be reading them.
    nvshmem_barrier_all();
}

template <typename Ops>
static void all_functions(int &variant) {
    for (int scope = 0; scope < 3; scope++)
        for (int fn = 0; fn < 2; fn++) strided_function<Ops>(fn, scope, variant++);
}

int main() {
    conf_begin("conf_strided");
    const size_t one = static_cast<size_t>(kCases_n) * kSlot;
    const size_t per_pe = static_cast<size_t>(g_conf_npes) * one;
    g_buf.recv = static_cast<char *>(nvshmem_malloc(per_pe));
    g_buf.pub = static_cast<char *>(nvshmem_malloc(one));
    g_buf.sym_src = static_cast<char *>(nvshmem_malloc(one));
    g_buf.sym_gdst = static_cast<char *>(nvshmem_malloc(per_pe));
    if (!g_buf.recv || !g_buf.pub || !g_buf.sym_src || !g_buf.sym_gdst) {
        fprintf(stderr, "conf_strided PE %d: nvshmem_malloc of %zu bytes failed\n", g_conf_me,
                2 * per_pe + 2 * one);
        return 2;
    }
    TEST_CUDA(cudaMalloc(&g_buf.priv_src, one));
    TEST_CUDA(cudaMalloc(&g_buf.priv_gdst, per_pe));
    TEST_CUDA(cudaMalloc(&g_buf.checks, static_cast<size_t>(g_conf_npes) * kCases_n *
                                            sizeof(SlotCheck)));
    int variant = 0;
#define TEST_OPS_X(ID) all_functions<Ops_##ID>(variant);
    TEST_EACH_OPS(TEST_OPS_X)
#undef TEST_OPS_X
    TEST_CUDA(cudaFree(g_buf.checks));
    TEST_CUDA(cudaFree(g_buf.priv_gdst));
    TEST_CUDA(cudaFree(g_buf.priv_src));
    nvshmem_free(g_buf.sym_gdst);
    nvshmem_free(g_buf.sym_src);
    nvshmem_free(g_buf.pub);
    nvshmem_free(g_buf.recv);
    return conf_end();
}
