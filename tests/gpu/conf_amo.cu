// conf_amo.cu -- GPU conformance of the device atomic memory operations (niin/amo.h): every
// AMO of NVSHMEM 3.4.5 for every type it has, to every PE (itself included), with exact
// expected values, and under contention from every thread of every PE.
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5. Groups:
//   - per operation (one thread per target PE and case, one word each): fetch / set / swap
//     (14 types), compare_swap (hit and miss) / inc / fetch_inc / add / fetch_add (12 types),
//     and / or / xor and their fetch forms (7 types). The final word on the target and the
//     returned value are compared bit for bit with the host's model, once with small values
//     and once with full-width ones (sign and high bits, carries out of bit 31, wrap-around,
//     float bit patterns such as NaNs and -0).
//   - contention, 132 CTAs x 1024 threads on every PE, one kernel per type:
//       one counter of PE 0: add, fetch_add, inc, fetch_inc from every thread (exact total;
//         every fetched value between the initial and the final one);
//       fetch_add(1) / fetch_inc on a second counter: the values fetched by all threads of all
//         PEs are exactly init .. init + threads - 1 (a permutation);
//       a counter of its own per thread (on PE (me + thread) % n_pes): a 16-step sequence of
//         every operation of the type, each return checked exactly, the final value by its PE;
//       compare_swap race: every thread tries init -> its own id; exactly one wins, every
//         loser fetched the winner's id, the word holds it;
//       and / or / xor with per-thread bit patterns (half the threads the fetch forms): the
//         exact final value of each word; fetched values between the initial and final ones;
//       swap chain: every thread swaps in its own id; the fetched values and the final word
//         are the initial value and every id, each exactly once.
//   - ordering: a put, nvshmem_fence or nvshmem_quiet, then an AMO as the flag (set, inc,
//     fetch_add), to the next PE; its CTA polls the flag with atomic_fetch and checks the data.
//
// NVSHMEM 3.4.5 and this test (see the SKIP line):
//   - nvshmem_{longlong,int64,ptrdiff}_atomic_{inc,fetch_inc,add,fetch_add} are declared by
//     its host/nvshmem_api.h but have no device definition (device/nvshmem_defines.h: "not
//     implemented ... because of lack of CUDA support"): a kernel calling them does not link.
//     The NVSHMEM build leaves them out (fewer checks in those groups); niin-rs has them.
//   - three bugs of its device/nvshmem_defines.h fail checks there (seen on an H200 with 1, 2
//     and 4 PEs; every other check passed):
//       nvshmem_ulong_atomic_fetch_add (so also add, inc, fetch_inc) is a 32-bit atomicAdd on
//         the unsigned long, and nvshmem_long_atomic_swap (so also set) a 32-bit atomicExch:
//         the full-width groups fail them (carries out of bit 31 and high halves are lost);
//         small values and the contention groups stay within 32 bits for them;
//       nvshmem_double_atomic_swap returns the old bits converted to double as an integer
//         ((double)(unsigned long long)bits): every double swap return fails, in the fetch /
//         set / swap groups and in the double own-counter and swap-chain checks.
// Symmetric heap: about (n_pes + 2) * 1.1 MB. A run: about 5 kernels per type and 3 for the
// ordering, each between two nvshmem_barrier_all.

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "conf_harness.h"

// ---- the API surface under test -----------------------------------------------------------

// NVSHMEM 3.4.5's AMO types, written out here rather than taken from niin's header, so that
// the test checks every name exists. KIND: EXT (fetch, set, swap), STD (also compare_swap,
// inc, fetch_inc, add, fetch_add), BIT (also and, or, xor and their fetch forms). NV: A if
// NVSHMEM 3.4.5 defines every function of the type on the device, L if it lacks inc,
// fetch_inc, add and fetch_add.
#define TEST_AMO_TYPES(X)                    \
    X(float, float, EXT, A)                  \
    X(double, double, EXT, A)                \
    X(int, int, STD, A)                      \
    X(long, long, STD, A)                    \
    X(longlong, long long, STD, L)           \
    X(uint, unsigned int, BIT, A)            \
    X(ulong, unsigned long, BIT, A)          \
    X(ulonglong, unsigned long long, BIT, A) \
    X(int32, int32_t, BIT, A)                \
    X(int64, int64_t, BIT, L)                \
    X(uint32, uint32_t, BIT, A)              \
    X(uint64, uint64_t, BIT, A)              \
    X(size, size_t, STD, A)                  \
    X(ptrdiff, ptrdiff_t, STD, L)

enum Op {
    OP_FETCH,
    OP_SET,
    OP_SWAP,
    OP_CSWAP,
    OP_INC,
    OP_FINC,
    OP_ADD,
    OP_FADD,
    OP_AND,
    OP_FAND,
    OP_OR,
    OP_FOR,
    OP_XOR,
    OP_FXOR,
    OP_COUNT
};
static const char *const kOpName[OP_COUNT] = {
    "atomic_fetch", "atomic_set",       "atomic_swap", "atomic_compare_swap",
    "atomic_inc",   "atomic_fetch_inc", "atomic_add",  "atomic_fetch_add",
    "atomic_and",   "atomic_fetch_and", "atomic_or",   "atomic_fetch_or",
    "atomic_xor",   "atomic_fetch_xor"};

enum Kind { KIND_EXT, KIND_STD, KIND_BIT };

__host__ __device__ constexpr bool is_arith(int op) { return op >= OP_INC && op <= OP_FADD; }
__host__ __device__ constexpr bool is_fetching(int op) {
    return op != OP_SET && op != OP_INC && op != OP_ADD && op != OP_AND && op != OP_OR &&
           op != OP_XOR;
}
__host__ __device__ constexpr bool in_kind(int op, int kind) {
    return op <= OP_SWAP || (kind >= KIND_STD && op <= OP_FADD) || kind == KIND_BIT;
}

#ifdef TEST_NVSHMEM
#define TEST_HAS_L false
#define TEST_ARITH_L(NAME)
#else
#define TEST_HAS_L true
#define TEST_ARITH_L(NAME) TEST_ARITH_CALLS(NAME)
#endif
#define TEST_HAS_A true
#define TEST_ARITH_A(NAME) TEST_ARITH_CALLS(NAME)

#define TEST_MOVE_CALLS(NAME)                                                            \
    case OP_FETCH: return nvshmem_##NAME##_atomic_fetch(d, pe);                          \
    case OP_SET: nvshmem_##NAME##_atomic_set(d, v, pe); return T();                      \
    case OP_SWAP: return nvshmem_##NAME##_atomic_swap(d, v, pe);
#define TEST_ARITH_CALLS(NAME)                                                           \
    case OP_INC: nvshmem_##NAME##_atomic_inc(d, pe); return T();                         \
    case OP_FINC: return nvshmem_##NAME##_atomic_fetch_inc(d, pe);                       \
    case OP_ADD: nvshmem_##NAME##_atomic_add(d, v, pe); return T();                      \
    case OP_FADD: return nvshmem_##NAME##_atomic_fetch_add(d, v, pe);
#define TEST_BIT_CALLS(NAME)                                                             \
    case OP_AND: nvshmem_##NAME##_atomic_and(d, v, pe); return T();                      \
    case OP_FAND: return nvshmem_##NAME##_atomic_fetch_and(d, v, pe);                    \
    case OP_OR: nvshmem_##NAME##_atomic_or(d, v, pe); return T();                        \
    case OP_FOR: return nvshmem_##NAME##_atomic_fetch_or(d, v, pe);                      \
    case OP_XOR: nvshmem_##NAME##_atomic_xor(d, v, pe); return T();                      \
    case OP_FXOR: return nvshmem_##NAME##_atomic_fetch_xor(d, v, pe);
#define TEST_CALLS_EXT(NAME, NV) TEST_MOVE_CALLS(NAME)
#define TEST_CALLS_STD(NAME, NV)                                                         \
    TEST_MOVE_CALLS(NAME)                                                                \
    case OP_CSWAP: return nvshmem_##NAME##_atomic_compare_swap(d, c, v, pe);             \
        TEST_ARITH_##NV(NAME)
#define TEST_CALLS_BIT(NAME, NV) TEST_CALLS_STD(NAME, NV) TEST_BIT_CALLS(NAME)

// Amo_<NAME>: T, the name, the kind, and call(op, dest, value, cond, pe) -> the returned
// value (T() for the non-fetching operations).
#define TEST_AMO_STRUCT(NAME, TYPE, KIND, NV)                                            \
    struct Amo_##NAME {                                                                  \
        using T = TYPE;                                                                  \
        static constexpr const char *name = #NAME;                                       \
        static constexpr int kind = KIND_##KIND;                                         \
        static constexpr bool nvshmem_has_arith = TEST_HAS_##NV;                         \
        __device__ static T call(int op, T *d, T v, T c, int pe) {                       \
            (void)v;                                                                     \
            (void)c;                                                                     \
            switch (op) {                                                                \
                TEST_CALLS_##KIND(NAME, NV)                                              \
            default: break;                                                              \
            }                                                                            \
            return T();                                                                  \
        }                                                                                \
    };
TEST_AMO_TYPES(TEST_AMO_STRUCT)
#undef TEST_AMO_STRUCT

// Whether this build calls `op` for the type (NVSHMEM's build leaves out what it lacks).
template <typename A>
__host__ __device__ constexpr bool has(int op) {
    return in_kind(op, A::kind) && (A::nvshmem_has_arith || !is_arith(op));
}

// ---- values: bit patterns of T's width, in a uint64_t -------------------------------------

template <typename T>
__host__ __device__ constexpr uint64_t width_mask() {
    return sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1;
}

template <typename T>
__host__ __device__ inline uint64_t to_bits(T v) {
    uint64_t u = 0;
    memcpy(&u, &v, sizeof(T));
    return u;
}

template <typename T>
__host__ __device__ inline T from_bits(uint64_t u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

__host__ __device__ inline uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
__host__ __device__ inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) {
    return mix64(mix64(mix64(a) ^ b) ^ c);
}

// A value of T from hash `h`: small (an integer below 10^6, or a float k + 0.25 with
// k < 10^5) or full-width (any bit pattern of T's width, NaNs included for floats).
template <typename T>
__host__ __device__ inline uint64_t value_bits(uint64_t h, bool wide) {
    if (wide) return h & width_mask<T>();
    if constexpr (std::is_floating_point<T>::value)
        return to_bits(static_cast<T>(static_cast<double>(h % 100000) + 0.25));
    else
        return h % 1000000;
}

// The model of one operation on word `s` (bits): what it returns and what it leaves.
struct Step {
    uint64_t ret, next;
};
__host__ __device__ inline Step apply(int op, uint64_t s, uint64_t v, uint64_t c, uint64_t mask) {
    switch (op) {
    case OP_FETCH: return {s, s};
    case OP_SET: return {0, v};
    case OP_SWAP: return {s, v};
    case OP_CSWAP: return {s, s == c ? v : s};
    case OP_INC:
    case OP_FINC: return {s, (s + 1) & mask};
    case OP_ADD:
    case OP_FADD: return {s, (s + v) & mask};
    case OP_AND:
    case OP_FAND: return {s, s & v};
    case OP_OR:
    case OP_FOR: return {s, s | v};
    default: return {s, s ^ v};
    }
}

// ---- buffers --------------------------------------------------------------------------------

static constexpr int kCtas = 132;
static constexpr int kThreads = 1024;
static constexpr int kLocalThreads = kCtas * kThreads; // per PE

struct Stats {
    unsigned long long sum_bad;      // one-counter fetches outside [initial, final)
    unsigned long long distinct_bad; // own-counter returns that differ from the model
    unsigned long long bitwise_bad;  // fetch_and / fetch_or values outside their bounds
    unsigned long long cswap_winners, cswap_winner_id, cswap_losers;
    unsigned long long cswap_loser_min, cswap_loser_max; // bits fetched by the losers
};

struct Buffers {
    char *words;         // symmetric: per-operation test, n_pes x kCases words of 8 bytes
    char *shared;        // symmetric: the contended words (used on PE 0), 8 bytes apart
    char *distinct;      // symmetric: n_pes x kLocalThreads own counters, 8 bytes apart
    uint64_t *perm;      // symmetric: kLocalThreads fetched indices (permutation)
    uint64_t *chain;     // symmetric: kLocalThreads fetched indices (swap chain)
    Stats *all_stats;    // symmetric: n_pes Stats, every PE's
    uint64_t *args;      // local: per-operation test, value and cond per (target, case)
    uint64_t *ret;       // local: per-operation test, returned bits per (target, case)
    Stats *stats;        // local
    uint64_t *gathered;  // local: n_pes x kLocalThreads indices
};
static Buffers g_buf;

// ---- per operation: one thread per (target PE, case) ----------------------------------------

enum Case {
    C_FETCH,
    C_SET,
    C_SWAP,
    C_CSWAP_HIT,
    C_CSWAP_MISS,
    C_INC,
    C_FINC,
    C_ADD,
    C_FADD,
    C_AND,
    C_FAND,
    C_OR,
    C_FOR,
    C_XOR,
    C_FXOR,
    C_COUNT
};
__host__ __device__ constexpr int case_op(int k) {
    return k <= C_CSWAP_HIT ? k : k - 1; // the two compare_swap cases share OP_CSWAP
}

// Word `k` of source `src` on target `tgt`: initial value, operand, cond.
template <typename A>
static void case_values(int src, int tgt, int k, bool wide, uint64_t &init, uint64_t &value,
                        uint64_t &cond) {
    using T = typename A::T;
    const uint64_t salt = wide ? 77 : 11;
    init = value_bits<T>(hash3(src, tgt * 64 + k, salt), wide);
    value = value_bits<T>(hash3(src, tgt * 64 + k, salt + 1), wide);
    const int op = case_op(k);
    if (wide && is_arith(op) && !std::is_floating_point<T>::value)
        init |= 0xFFFFFF00ull & width_mask<T>(); // carry out of bit 31 (64-bit) / wrap (32-bit)
    if (wide && (op == OP_INC || op == OP_FINC)) init |= 0xFFFFFFFFull; // +1 carries / wraps
    cond = k == C_CSWAP_HIT ? init : init ^ 1;
}

template <typename A>
__global__ void each_op_kernel(typename A::T *words, const uint64_t *args, uint64_t *ret, int me,
                               int npes) {
    using T = typename A::T;
    const int t = (me + static_cast<int>(blockIdx.x)) % npes;
    const int k = static_cast<int>(threadIdx.x);
    if (k >= C_COUNT || !has<A>(case_op(k))) return;
    const uint64_t *a = args + (static_cast<size_t>(t) * C_COUNT + k) * 2;
    T r = A::call(case_op(k), words + static_cast<size_t>(me) * C_COUNT + k, from_bits<T>(a[0]),
                  from_bits<T>(a[1]), t);
    ret[static_cast<size_t>(t) * C_COUNT + k] = to_bits(r);
}

static const char *op_group(int op, bool wide) {
    static const char *const names[3][2] = {
        {"fetch / set / swap, 14 types, every PE, small values",
         "fetch / set / swap, 14 types, every PE, full-width values"},
        {"compare_swap / inc / fetch_inc / add / fetch_add, 12 types, every PE, small values",
         "compare_swap / inc / fetch_inc / add / fetch_add, 12 types, every PE, full-width values"},
        {"and / or / xor and fetch forms, 7 types, every PE, small values",
         "and / or / xor and fetch forms, 7 types, every PE, full-width values"}};
    const int g = op <= OP_SWAP ? 0 : op <= OP_FADD ? 1 : 2;
    return names[g][wide ? 1 : 0];
}

template <typename A>
static void each_op_cases(bool wide) {
    using T = typename A::T;
    const int me = g_conf_me, npes = g_conf_npes;
    const uint64_t mask = width_mask<T>();
    std::vector<T> init(static_cast<size_t>(npes) * C_COUNT);
    std::vector<uint64_t> args(static_cast<size_t>(npes) * C_COUNT * 2);
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < C_COUNT; k++) {
            uint64_t a, v, c;
            case_values<A>(p, me, k, wide, a, v, c); // what source p works on here
            init[p * C_COUNT + k] = from_bits<T>(a);
            case_values<A>(me, p, k, wide, a, v, c); // what this PE does on target p
            args[(p * C_COUNT + k) * 2] = v;
            args[(p * C_COUNT + k) * 2 + 1] = c;
        }
    T *words = reinterpret_cast<T *>(g_buf.words);
    TEST_CUDA(cudaMemcpy(words, init.data(), init.size() * sizeof(T), cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(g_buf.args, args.data(), args.size() * sizeof(uint64_t),
                         cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemset(g_buf.ret, 0, static_cast<size_t>(npes) * C_COUNT * sizeof(uint64_t)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    CONF_LAUNCH(conf_group(op_group(OP_FETCH, wide)), each_op_kernel<A>, npes, 32, words,
                g_buf.args, g_buf.ret, me, npes);
    nvshmem_barrier_all();

    std::vector<T> final_words(init.size());
    std::vector<uint64_t> ret(static_cast<size_t>(npes) * C_COUNT);
    TEST_CUDA(cudaMemcpy(final_words.data(), words, final_words.size() * sizeof(T),
                         cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(ret.data(), g_buf.ret, ret.size() * sizeof(uint64_t),
                         cudaMemcpyDeviceToHost));
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < C_COUNT; k++) {
            const int op = case_op(k);
            if (!has<A>(op)) continue;
            ConfGroup &g = conf_group(op_group(op, wide));
            uint64_t a, v, c;
            // The word source p worked on here: its final value.
            case_values<A>(p, me, k, wide, a, v, c);
            const uint64_t want = apply(op, a, v, c, mask).next;
            const uint64_t got = to_bits(final_words[p * C_COUNT + k]);
            conf_check(g, got == want,
                       "nvshmem_%s_%s%s by PE %d on PE %d: the word holds 0x%llx, expected 0x%llx "
                       "(initial 0x%llx, value 0x%llx, cond 0x%llx)",
                       A::name, kOpName[op], k == C_CSWAP_MISS ? " (cond not equal)" : "", p, me,
                       (unsigned long long)got, (unsigned long long)want, (unsigned long long)a,
                       (unsigned long long)v, (unsigned long long)c);
            // What this PE got back from target p.
            if (!is_fetching(op)) continue;
            case_values<A>(me, p, k, wide, a, v, c);
            const uint64_t want_ret = apply(op, a, v, c, mask).ret;
            const uint64_t got_ret = ret[p * C_COUNT + k];
            conf_check(g, got_ret == want_ret,
                       "nvshmem_%s_%s%s by PE %d on PE %d returned 0x%llx, expected 0x%llx",
                       A::name, kOpName[op], k == C_CSWAP_MISS ? " (cond not equal)" : "", me, p,
                       (unsigned long long)got_ret, (unsigned long long)want_ret);
        }
    nvshmem_barrier_all();
}

// ---- contention: every thread of every PE --------------------------------------------------

// The contended words on PE 0, 8 bytes apart.
enum SharedWord { W_SUM, W_PERM, W_CSWAP, W_CHAIN, W_AND, W_OR, W_XOR, W_COUNT };

struct ContArgs {
    char *shared, *distinct;
    uint64_t *perm, *chain;
    Stats *stats;
    uint64_t init[W_COUNT];
    uint64_t final_sum, final_and, final_or; // expected (for the fetched-value bounds)
    int me, npes;
};

// The initial values of the contended words.
template <typename T>
static uint64_t shared_init(int w) {
    switch (w) {
    case W_SUM: return 1000;
    case W_PERM: return 77;
    case W_CSWAP: return 5;
    case W_CHAIN: return 0; // the chain's initial value is T's zero
    case W_AND: return 0xF7DEB5AD6B5BEFFFull & width_mask<T>();
    case W_OR: return 0x0102040810204080ull & width_mask<T>();
    default: return 0x5A5A5A5AC3C3C3C3ull & width_mask<T>();
    }
}

// What thread g (all PEs' threads numbered me * kLocalThreads + local index) adds.
__host__ __device__ inline uint64_t add_x(uint64_t g) { return g % 7 + 1; }
__host__ __device__ inline uint64_t add_y(uint64_t g) { return g % 5 + 1; }
// Its compare_swap id, and its value in the swap chain (index g + 1; the chain's initial
// value is index 0 ... stored as value 0).
template <typename T>
__host__ __device__ inline uint64_t cswap_id(uint64_t g) {
    return 5 + 1 + g;
}
template <typename T>
__host__ __device__ inline uint64_t chain_value(uint64_t g) {
    return to_bits(static_cast<T>(g + 1));
}
// Its and / or / xor patterns: AND clears one bit of 0x0F0F.. (a third of the threads; the
// others and with all ones), OR sets one bit of 0x3C3C.., XOR flips a hash.
template <typename T>
__host__ __device__ inline uint64_t and_mask(uint64_t g) {
    const uint64_t bit = 1ull << (mix64(g) % (8 * sizeof(T)));
    return (g % 3 == 0 ? ~(bit & 0x0F0F0F0F0F0F0F0Full) : ~0ull) & width_mask<T>();
}
template <typename T>
__host__ __device__ inline uint64_t or_mask(uint64_t g) {
    return (1ull << (mix64(g + 12345) % (8 * sizeof(T)))) & 0x3C3C3C3C3C3C3C3Cull;
}
template <typename T>
__host__ __device__ inline uint64_t xor_mask(uint64_t g) {
    return mix64(g * 3 + 1) & width_mask<T>();
}

// The own-counter sequence: step j on model value s, for thread g. Covers every operation
// (each applied only where the type has it): returns the op and sets value and cond.
static constexpr int kSteps = 16;
__host__ __device__ constexpr int seq_op(int j) {
    return j == 0 || j == 15 ? OP_FETCH
           : j == 1          ? OP_FADD
           : j == 2          ? OP_INC
           : j == 3          ? OP_FINC
           : j == 4          ? OP_ADD
           : j <= 6          ? OP_CSWAP
           : j == 7          ? OP_SWAP
           : j == 8          ? OP_SET
           : j == 9          ? OP_FXOR
           : j == 10         ? OP_AND
           : j == 11         ? OP_FOR
           : j == 12         ? OP_XOR
           : j == 13         ? OP_FAND
                             : OP_OR;
}
template <typename T>
__host__ __device__ inline int seq_step(int j, uint64_t s, uint64_t g, uint64_t &v, uint64_t &c) {
    const int op = seq_op(j);
    const bool bitwise = op >= OP_AND;
    v = value_bits<T>(hash3(g, j, 3), bitwise); // full width for the bitwise steps only
    c = j == 5 ? s : s ^ 1;                     // step 5 hits, step 6 misses
    return op;
}
template <typename A>
__host__ __device__ inline uint64_t seq_initial(uint64_t g) {
    return value_bits<typename A::T>(hash3(g, 99, 5), false);
}
// The model's final value of thread g's own counter.
template <typename A>
static uint64_t seq_final(uint64_t g) {
    using T = typename A::T;
    uint64_t s = seq_initial<A>(g);
    for (int j = 0; j < kSteps; j++) {
        uint64_t v, c;
        const int op = seq_step<T>(j, s, g, v, c);
        if (has<A>(op)) s = apply(op, s, v, c, width_mask<T>()).next;
    }
    return s;
}

// Index of a chain value (0: the initial value).
template <typename T>
__host__ __device__ inline uint64_t chain_index(uint64_t bits) {
    return static_cast<uint64_t>(from_bits<T>(bits));
}

template <typename A>
__global__ void contention_kernel(ContArgs a) {
    using T = typename A::T;
    const uint64_t mask = width_mask<T>();
    const int lid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const uint64_t g = static_cast<uint64_t>(a.me) * kLocalThreads + lid;
    T *word[W_COUNT];
    for (int w = 0; w < W_COUNT; w++) word[w] = reinterpret_cast<T *>(a.shared + 8 * w);
    Stats *st = a.stats;

    // One counter of PE 0: add, fetch_add, inc, fetch_inc.
    if constexpr (has<A>(OP_FADD)) {
        T *s = word[W_SUM];
        A::call(OP_ADD, s, from_bits<T>(add_x(g)), T(), 0);
        const uint64_t r1 = to_bits(A::call(OP_FADD, s, from_bits<T>(add_y(g)), T(), 0));
        A::call(OP_INC, s, T(), T(), 0);
        const uint64_t r2 = to_bits(A::call(OP_FINC, s, T(), T(), 0));
        const bool bad1 = r1 < a.init[W_SUM] || r1 >= a.final_sum;
        const bool bad2 = r2 < a.init[W_SUM] || r2 >= a.final_sum;
        if (bad1 || bad2) atomicAdd(&st->sum_bad, 1ull);
        // A second counter: +1 from every thread, half fetch_inc, half fetch_add(1).
        const uint64_t r = to_bits(g & 1 ? A::call(OP_FINC, word[W_PERM], T(), T(), 0)
                                         : A::call(OP_FADD, word[W_PERM], from_bits<T>(1), T(), 0));
        a.perm[lid] = (r - a.init[W_PERM]) & mask;
    }

    // compare_swap race on PE 0.
    if constexpr (has<A>(OP_CSWAP)) {
        const uint64_t r = to_bits(A::call(OP_CSWAP, word[W_CSWAP], from_bits<T>(cswap_id<T>(g)),
                                           from_bits<T>(a.init[W_CSWAP]), 0));
        if (r == a.init[W_CSWAP]) {
            atomicAdd(&st->cswap_winners, 1ull);
            st->cswap_winner_id = cswap_id<T>(g);
        } else {
            atomicAdd(&st->cswap_losers, 1ull);
            atomicMin(&st->cswap_loser_min, static_cast<unsigned long long>(r));
            atomicMax(&st->cswap_loser_max, static_cast<unsigned long long>(r));
        }
    }

    // Swap chain on PE 0.
    a.chain[lid] = chain_index<T>(
        to_bits(A::call(OP_SWAP, word[W_CHAIN], from_bits<T>(chain_value<T>(g)), T(), 0)));

    // and / or / xor on PE 0: odd threads use the fetch forms.
    if constexpr (has<A>(OP_FAND)) {
        const bool fetch = g & 1;
        const uint64_t ra =
            to_bits(A::call(fetch ? OP_FAND : OP_AND, word[W_AND], from_bits<T>(and_mask<T>(g)),
                            T(), 0));
        const uint64_t ro = to_bits(
            A::call(fetch ? OP_FOR : OP_OR, word[W_OR], from_bits<T>(or_mask<T>(g)), T(), 0));
        A::call(fetch ? OP_FXOR : OP_XOR, word[W_XOR], from_bits<T>(xor_mask<T>(g)), T(), 0);
        // A fetched AND value lies between the final and the initial word (as bit sets), an
        // OR value between the initial and the final one.
        if (fetch && ((ra & ~a.init[W_AND]) != 0 || (a.final_and & ~ra) != 0 ||
                      (a.init[W_OR] & ~ro) != 0 || (ro & ~a.final_or) != 0))
            atomicAdd(&st->bitwise_bad, 1ull);
    }

    // A counter of its own, on PE (me + lid) % npes: every operation, each return exact.
    {
        const int t = (a.me + lid) % a.npes;
        T *d = reinterpret_cast<T *>(a.distinct + 8 * g);
        uint64_t s = seq_initial<A>(g);
        int bad = 0;
        for (int j = 0; j < kSteps; j++) {
            uint64_t v, c;
            const int op = seq_step<T>(j, s, g, v, c);
            if (!has<A>(op)) continue;
            const uint64_t r = to_bits(A::call(op, d, from_bits<T>(v), from_bits<T>(c), t));
            const Step e = apply(op, s, v, c, mask);
            if (is_fetching(op) && r != e.ret) bad++;
            s = e.next;
        }
        if (bad) atomicAdd(&st->distinct_bad, static_cast<unsigned long long>(bad));
    }
}

// Every PE's Stats into every PE's all_stats[me].
__global__ void share_stats_kernel(Stats *all, const Stats *mine, int me, int npes) {
    for (int pe = 0; pe < npes; pe++) nvshmem_putmem(all + me, mine, sizeof(Stats), pe);
    nvshmem_quiet();
}

// Every PE's `src` (kLocalThreads indices) into local `dst`: CTA b of PE s's part.
__global__ void gather_kernel(uint64_t *dst, const uint64_t *src, int npes) {
    const size_t chunk = (kLocalThreads + gridDim.x - 1) / gridDim.x;
    const size_t begin = blockIdx.x * chunk;
    if (begin >= static_cast<size_t>(kLocalThreads)) return;
    const size_t n = begin + chunk <= kLocalThreads ? chunk : kLocalThreads - begin;
    for (int pe = 0; pe < npes; pe++)
        nvshmemx_getmem_block(dst + static_cast<size_t>(pe) * kLocalThreads + begin, src + begin,
                              n * sizeof(uint64_t), pe);
}

// All PEs' indices of `src` gathered here (host copy).
static std::vector<uint64_t> gather_indices(const uint64_t *src) {
    const int npes = g_conf_npes;
    gather_kernel<<<kCtas, 256>>>(g_buf.gathered, src, npes);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    std::vector<uint64_t> all(static_cast<size_t>(npes) * kLocalThreads);
    TEST_CUDA(cudaMemcpy(all.data(), g_buf.gathered, all.size() * sizeof(uint64_t),
                         cudaMemcpyDeviceToHost));
    return all;
}

// How many of `values` are out of [0, n) or repeated, and how many of [0, n) are missing.
static void count_permutation(const std::vector<uint64_t> &values, uint64_t n, long &bad,
                              long &missing) {
    std::vector<unsigned char> seen(n, 0);
    bad = 0;
    for (uint64_t v : values) {
        if (v >= n || seen[v]) bad++;
        else seen[v] = 1;
    }
    missing = 0;
    for (uint64_t i = 0; i < n; i++) missing += !seen[i];
}

static const char *const kGroupSum =
    "contention: add / fetch_add / inc / fetch_inc on one counter of PE 0 (exact total)";
static const char *const kGroupPerm =
    "contention: fetch_add(1) / fetch_inc values of all threads are a permutation";
static const char *const kGroupOwn =
    "contention: every op on a counter of its own, every thread of every PE";
static const char *const kGroupCswap = "contention: compare_swap race, exactly one winner";
static const char *const kGroupBits =
    "contention: and / or / xor with per-thread bit patterns (exact final)";
static const char *const kGroupChain =
    "contention: swap chain (fetched values + final = every value once)";

template <typename A>
static void contention_cases() {
    using T = typename A::T;
    const int me = g_conf_me, npes = g_conf_npes;
    const uint64_t mask = width_mask<T>();
    const uint64_t total = static_cast<uint64_t>(npes) * kLocalThreads;

    ContArgs a;
    a.shared = g_buf.shared;
    a.distinct = g_buf.distinct;
    a.perm = g_buf.perm;
    a.chain = g_buf.chain;
    a.stats = g_buf.stats;
    a.me = me;
    a.npes = npes;
    for (int w = 0; w < W_COUNT; w++) a.init[w] = shared_init<T>(w);
    uint64_t sum = a.init[W_SUM], fand = a.init[W_AND], ffor = a.init[W_OR],
             fxor = a.init[W_XOR];
    for (uint64_t g = 0; g < total; g++) {
        sum += add_x(g) + add_y(g) + 2;
        fand &= and_mask<T>(g);
        ffor |= or_mask<T>(g);
        fxor ^= xor_mask<T>(g);
    }
    a.final_sum = sum & mask;
    a.final_and = fand;
    a.final_or = ffor;

    // Initial values: the contended words (PE 0's are used), and the own counters of every
    // source PE's threads here.
    std::vector<uint64_t> shared(W_COUNT);
    for (int w = 0; w < W_COUNT; w++) shared[w] = a.init[w];
    TEST_CUDA(cudaMemcpy(g_buf.shared, shared.data(), W_COUNT * 8, cudaMemcpyHostToDevice));
    std::vector<uint64_t> own(total, 0);
    for (uint64_t g = 0; g < total; g++)
        if (static_cast<int>((g / kLocalThreads + g % kLocalThreads) % npes) == me)
            own[g] = seq_initial<A>(g);
    TEST_CUDA(cudaMemcpy(g_buf.distinct, own.data(), total * 8, cudaMemcpyHostToDevice));
    Stats zero = {};
    zero.cswap_loser_min = ~0ull;
    TEST_CUDA(cudaMemcpy(g_buf.stats, &zero, sizeof zero, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemset(g_buf.perm, 0xFF, kLocalThreads * sizeof(uint64_t)));
    TEST_CUDA(cudaMemset(g_buf.chain, 0xFF, kLocalThreads * sizeof(uint64_t)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    CONF_LAUNCH(conf_group(kGroupOwn), contention_kernel<A>, kCtas, kThreads, a);
    nvshmem_barrier_all();
    share_stats_kernel<<<1, 1>>>(g_buf.all_stats, g_buf.stats, me, npes);
    TEST_CUDA(cudaGetLastError());
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    std::vector<Stats> st(npes);
    TEST_CUDA(cudaMemcpy(st.data(), g_buf.all_stats, npes * sizeof(Stats), cudaMemcpyDeviceToHost));
    const Stats &mine = st[me];

    // Every PE: its threads' own-counter returns, and the final values of the counters here.
    {
        ConfGroup &g = conf_group(kGroupOwn);
        conf_check(g, mine.distinct_bad == 0,
                   "%s: %llu returns of this PE's threads on their own counters differ from the "
                   "model",
                   A::name, mine.distinct_bad);
        TEST_CUDA(cudaMemcpy(own.data(), g_buf.distinct, total * 8, cudaMemcpyDeviceToHost));
        long wrong = 0;
        uint64_t first = 0;
        for (uint64_t t = 0; t < total; t++) {
            if (static_cast<int>((t / kLocalThreads + t % kLocalThreads) % npes) != me) continue;
            if ((own[t] & mask) != seq_final<A>(t) && wrong++ == 0) first = t;
        }
        conf_check(g, wrong == 0,
                   "%s: %ld own counters here hold a wrong final value (first: thread %llu of PE "
                   "%llu: 0x%llx, expected 0x%llx)",
                   A::name, wrong, (unsigned long long)(first % kLocalThreads),
                   (unsigned long long)(first / kLocalThreads),
                   (unsigned long long)(own[first] & mask),
                   (unsigned long long)seq_final<A>(first));
    }
    if (has<A>(OP_FADD)) {
        conf_check(conf_group(kGroupSum), mine.sum_bad == 0,
                   "%s: %llu values fetched by this PE's threads outside [initial, final)", A::name,
                   mine.sum_bad);
    }
    if (has<A>(OP_FAND)) {
        conf_check(conf_group(kGroupBits), mine.bitwise_bad == 0,
                   "%s: %llu fetch_and / fetch_or values of this PE's threads outside their "
                   "bounds",
                   A::name, mine.bitwise_bad);
    }

    // PE 0: the contended words, and the checks that need every PE's threads.
    if (me == 0) {
        TEST_CUDA(cudaMemcpy(shared.data(), g_buf.shared, W_COUNT * 8, cudaMemcpyDeviceToHost));
        for (auto &w : shared) w &= mask;
        if (has<A>(OP_FADD)) {
            conf_check(conf_group(kGroupSum), shared[W_SUM] == a.final_sum,
                       "%s: the counter holds %llu after %llu threads, expected %llu", A::name,
                       (unsigned long long)shared[W_SUM], (unsigned long long)total,
                       (unsigned long long)a.final_sum);
            ConfGroup &g = conf_group(kGroupPerm);
            conf_check(g, shared[W_PERM] == ((a.init[W_PERM] + total) & mask),
                       "%s: the counter holds %llu, expected %llu", A::name,
                       (unsigned long long)shared[W_PERM],
                       (unsigned long long)(a.init[W_PERM] + total));
            long bad, missing;
            count_permutation(gather_indices(g_buf.perm), total, bad, missing);
            conf_check(g, bad == 0 && missing == 0,
                       "%s: of %llu fetched values, %ld repeated or out of range, %ld of "
                       "init .. init + %llu never fetched",
                       A::name, (unsigned long long)total, bad, missing,
                       (unsigned long long)total - 1);
        }
        if (has<A>(OP_CSWAP)) {
            unsigned long long winners = 0, winner = 0, losers = 0;
            long wrong_losers = 0;
            for (const Stats &s : st) {
                winners += s.cswap_winners;
                losers += s.cswap_losers;
                if (s.cswap_winners) winner = s.cswap_winner_id;
                if (s.cswap_losers && (s.cswap_loser_min != shared[W_CSWAP] ||
                                       s.cswap_loser_max != shared[W_CSWAP]))
                    wrong_losers++;
            }
            conf_check(conf_group(kGroupCswap),
                       winners == 1 && winners + losers == total && shared[W_CSWAP] == winner &&
                           wrong_losers == 0,
                       "%s: %llu winners of %llu threads; the word holds %llu, the winner's id "
                       "%llu; %ld PEs' losers fetched another value",
                       A::name, winners, (unsigned long long)total,
                       (unsigned long long)shared[W_CSWAP], winner, wrong_losers);
        }
        if (has<A>(OP_FAND)) {
            conf_check(conf_group(kGroupBits),
                       shared[W_AND] == a.final_and && shared[W_OR] == a.final_or &&
                           shared[W_XOR] == fxor,
                       "%s: and 0x%llx (expected 0x%llx), or 0x%llx (0x%llx), xor 0x%llx (0x%llx)",
                       A::name, (unsigned long long)shared[W_AND],
                       (unsigned long long)a.final_and, (unsigned long long)shared[W_OR],
                       (unsigned long long)a.final_or, (unsigned long long)shared[W_XOR],
                       (unsigned long long)fxor);
        }
        {
            std::vector<uint64_t> chain = gather_indices(g_buf.chain);
            chain.push_back(chain_index<T>(shared[W_CHAIN]));
            long bad, missing;
            count_permutation(chain, total + 1, bad, missing);
            conf_check(conf_group(kGroupChain), bad == 0 && missing == 0,
                       "%s: of %llu fetched values and the final one, %ld repeated or out of "
                       "range, %ld of the %llu values never seen",
                       A::name, (unsigned long long)total, bad, missing,
                       (unsigned long long)total + 1);
        }
    }
    nvshmem_barrier_all();
}

// ---- ordering: AMOs as flags after fence / quiet ---------------------------------------------

// CTA 0 sends kOrderRounds rounds to the next PE: round i's words (value i * 100000 + k), then
// nvshmem_fence or nvshmem_quiet, then the flag by an AMO (set to i, inc, or fetch_add 1: the
// flag counts rounds in every variant). CTA 1 (one thread) polls this PE's flag with
// nvshmem_uint64_atomic_fetch and checks, for every round the flag has passed, its words.
static constexpr int kOrderRounds = 64, kOrderWords = 256;
enum OrderVariant { ORDER_FENCE_SET, ORDER_FENCE_INC, ORDER_QUIET_FETCH_ADD, ORDER_VARIANTS };
static const char *const kOrderName[ORDER_VARIANTS] = {
    "nvshmem_int_put + nvshmem_fence + nvshmem_uint64_atomic_set",
    "nvshmem_int_put_nbi + nvshmem_fence + nvshmem_uint64_atomic_inc",
    "nvshmem_int_put_nbi + nvshmem_quiet + nvshmem_ulonglong_atomic_fetch_add"};
static const char *const kGroupOrder =
    "ordering: put, fence or quiet, then an AMO flag polled with atomic_fetch";

struct OrderResult {
    int wrong, seen, timed_out;
};

__global__ void order_kernel(int *data, uint64_t *flag, const int *src, int variant, int me,
                             int npes, OrderResult *out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x != 0) return;
        const int next = (me + 1) % npes;
        for (int i = 1; i <= kOrderRounds; i++) {
            int *d = data + i * kOrderWords;
            const int *s = src + i * kOrderWords;
            switch (variant) {
            case ORDER_FENCE_SET:
                nvshmem_int_put(d, s, kOrderWords, next);
                nvshmem_fence();
                nvshmem_uint64_atomic_set(flag, static_cast<uint64_t>(i), next);
                break;
            case ORDER_FENCE_INC:
                nvshmem_int_put_nbi(d, s, kOrderWords, next);
                nvshmem_fence();
                nvshmem_uint64_atomic_inc(flag, next);
                break;
            default:
                nvshmem_int_put_nbi(d, s, kOrderWords, next);
                nvshmem_quiet();
                (void)nvshmem_ulonglong_atomic_fetch_add(
                    reinterpret_cast<unsigned long long *>(flag), 1ull, next);
                break;
            }
        }
        return;
    }
    if (threadIdx.x != 0) return;
    const volatile int *w = data;
    int seen = 0, wrong = 0;
    const long long start = clock64();
    const long long limit = 20ll * 1000 * 1000 * 1000; // cycles: ~10 s at 2 GHz
    while (seen < kOrderRounds) {
        const int now = static_cast<int>(nvshmem_uint64_atomic_fetch(flag, me));
        if (now > seen) {
            __threadfence();
            for (int i = seen + 1; i <= now; i++)
                for (int k = 0; k < kOrderWords; k++)
                    wrong += w[i * kOrderWords + k] != i * 100000 + k;
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
    ConfGroup &g = conf_group(kGroupOrder);
    const size_t words = static_cast<size_t>(kOrderRounds + 1) * kOrderWords;
    int *data = static_cast<int *>(nvshmem_malloc(words * sizeof(int)));
    int *src = static_cast<int *>(nvshmem_malloc(words * sizeof(int)));
    uint64_t *flag = static_cast<uint64_t *>(nvshmem_malloc(sizeof(uint64_t)));
    OrderResult *res = nullptr;
    TEST_CUDA(cudaMalloc(&res, sizeof(OrderResult)));
    std::vector<int> host_src(words);
    for (size_t i = 0; i < words; i++)
        host_src[i] =
            static_cast<int>(i / kOrderWords) * 100000 + static_cast<int>(i % kOrderWords);
    TEST_CUDA(cudaMemcpy(src, host_src.data(), words * sizeof(int), cudaMemcpyHostToDevice));
    for (int v = 0; v < ORDER_VARIANTS; v++) {
        TEST_CUDA(cudaMemset(data, 0, words * sizeof(int)));
        TEST_CUDA(cudaMemset(flag, 0, sizeof(uint64_t)));
        TEST_CUDA(cudaMemset(res, 0, sizeof(OrderResult)));
        TEST_CUDA(cudaDeviceSynchronize());
        nvshmem_barrier_all();
        CONF_LAUNCH(g, order_kernel, 2, 32, data, flag, src, v, g_conf_me, g_conf_npes, res);
        OrderResult r;
        TEST_CUDA(cudaMemcpy(&r, res, sizeof r, cudaMemcpyDeviceToHost));
        const int prev = (g_conf_me + g_conf_npes - 1) % g_conf_npes;
        conf_check(g, !r.timed_out && r.seen == kOrderRounds && r.wrong == 0,
                   "%s, PE %d -> PE %d: %d of %d rounds seen%s, %d words missing when their flag "
                   "was seen",
                   kOrderName[v], prev, g_conf_me, r.seen, kOrderRounds,
                   r.timed_out ? " (timed out)" : "", r.wrong);
        nvshmem_barrier_all();
    }
    cudaFree(res);
    nvshmem_free(flag);
    nvshmem_free(src);
    nvshmem_free(data);
}

// ---- main ----------------------------------------------------------------------------------

int main() {
    conf_begin("conf_amo");
    const int npes = g_conf_npes;
#ifdef TEST_NVSHMEM
    printf("SKIP|nvshmem_{longlong,int64,ptrdiff}_atomic_{inc,fetch_inc,add,fetch_add}|NVSHMEM "
           "3.4.5 declares them but has no device definition (a kernel calling them does not "
           "link)\n");
#endif
    const size_t own_bytes = static_cast<size_t>(npes) * kLocalThreads * 8;
    g_buf.words = static_cast<char *>(nvshmem_malloc(static_cast<size_t>(npes) * C_COUNT * 8));
    g_buf.shared = static_cast<char *>(nvshmem_malloc(W_COUNT * 8));
    g_buf.distinct = static_cast<char *>(nvshmem_malloc(own_bytes));
    g_buf.perm = static_cast<uint64_t *>(nvshmem_malloc(kLocalThreads * sizeof(uint64_t)));
    g_buf.chain = static_cast<uint64_t *>(nvshmem_malloc(kLocalThreads * sizeof(uint64_t)));
    g_buf.all_stats = static_cast<Stats *>(nvshmem_malloc(npes * sizeof(Stats)));
    if (!g_buf.words || !g_buf.shared || !g_buf.distinct || !g_buf.perm || !g_buf.chain ||
        !g_buf.all_stats) {
        fprintf(stderr, "conf_amo PE %d: nvshmem_malloc failed\n", g_conf_me);
        return 2;
    }
    TEST_CUDA(cudaMalloc(&g_buf.args, static_cast<size_t>(npes) * C_COUNT * 2 * sizeof(uint64_t)));
    TEST_CUDA(cudaMalloc(&g_buf.ret, static_cast<size_t>(npes) * C_COUNT * sizeof(uint64_t)));
    TEST_CUDA(cudaMalloc(&g_buf.stats, sizeof(Stats)));
    TEST_CUDA(cudaMalloc(&g_buf.gathered, own_bytes));

    for (int wide = 0; wide < 2; wide++) {
#define TEST_EACH_OP(NAME, TYPE, KIND, NV) each_op_cases<Amo_##NAME>(wide != 0);
        TEST_AMO_TYPES(TEST_EACH_OP)
#undef TEST_EACH_OP
    }
#define TEST_CONTENTION(NAME, TYPE, KIND, NV) contention_cases<Amo_##NAME>();
    TEST_AMO_TYPES(TEST_CONTENTION)
#undef TEST_CONTENTION
    order_checks();

    cudaFree(g_buf.gathered);
    cudaFree(g_buf.stats);
    cudaFree(g_buf.ret);
    cudaFree(g_buf.args);
    nvshmem_free(g_buf.all_stats);
    nvshmem_free(g_buf.chain);
    nvshmem_free(g_buf.perm);
    nvshmem_free(g_buf.distinct);
    nvshmem_free(g_buf.shared);
    nvshmem_free(g_buf.words);
    return conf_end();
}
