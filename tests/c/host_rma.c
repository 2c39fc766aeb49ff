/*
 * host_rma.c -- checks of NVSHMEM's host-initiated typed RMA and atomics, run as every PE
 * of a job (2 PEs or more):
 *
 *   - nvshmem_<T>_put/get[_nbi], _p, _g, _iput, _iget for the 23 RMA types plain C has
 *     (half and __nv_bfloat16 are CUDA C++ types: -DNIIN_TEST_FP16 adds them), around a ring
 *     (each PE writes its right neighbour, reads it back);
 *   - nvshmem_put<N>/get<N>[_nbi], iput<N>/iget<N> for N = 8 ... 128;
 *   - nvshmem_<T>_atomic_* for the 12 standard, 7 bitwise and 2 extended AMO types, every PE
 *     on PE 0's words, with exact totals (adds, increments), exactly one compare_swap winner,
 *     and swaps whose returned values and final value are the values written.
 *
 * Prints "PASS <check>" or "FAIL <check>: <why>" per check and "DONE failures=<n>"; exits 1
 * if a check failed. Plain C11/C++ using only the NVSHMEM API (the type lists are written
 * out here, independent of niin-rs's type table), so the same source builds against
 * NVSHMEM. Memory access as in niin_test.h (-DNIIN_TEST_CUDA for a GPU).
 *
 * CPU mock, 4 PEs:   NIIN_TRANSPORT=mock niinrun -n 4 ./host_rma
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>

#include "niin_test.h"

/* Elements per typed transfer. */
#define M 64

/* The element `i` of PE `pe`'s pattern: small enough for every type (char included). */
static int val(int pe, size_t i) { return (int)((pe * 31 + i * 7 + 3) % 100); }

/* The 23 RMA types of plain C: X(NAME, TYPE). */
#define PLAIN_TYPES(X)                                                                      \
    X(float, float) X(double, double) X(char, char) X(short, short) X(schar, signed char)   \
    X(int, int) X(long, long) X(longlong, long long) X(uchar, unsigned char)                \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                 \
    X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t) X(int32, int32_t)    \
    X(int64, int64_t) X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t)             \
    X(uint64, uint64_t) X(size, size_t) X(ptrdiff, ptrdiff_t)

/* Whether `n` elements at `got` equal PE `pe`'s pattern at elements `first`, `first + 1`, ... */
#define SAME_AS(TYPE, got, n, pe, first, ok)                                                \
    do {                                                                                    \
        size_t k_;                                                                          \
        ok = 1;                                                                             \
        for (k_ = 0; k_ < (n); k_++) ok &= (got)[k_] == (TYPE)val((pe), (first) + k_);      \
    } while (0)

/* One type's ring: `sym` holds 2 * M elements of TYPE, `loc` M. */
#define RMA_TEST(NAME, TYPE)                                                                \
    static void rma_##NAME(void *symv, void *locv, int me, int n) {                         \
        TYPE *sym = (TYPE *)symv, *loc = (TYPE *)locv;                                      \
        TYPE host[2 * M], got[2 * M];                                                       \
        int right = (me + 1) % n, left = (me + n - 1) % n, ok;                              \
        size_t i;                                                                           \
        for (i = 0; i < M; i++) host[i] = (TYPE)val(me, i);                                 \
        copy_in(sym, host, M * sizeof(TYPE));                                               \
        copy_in(loc, host, M * sizeof(TYPE));                                               \
        nvshmem_barrier_all();                                                              \
        /* get, get_nbi: the right neighbour's pattern */                                   \
        memset(got, 0, sizeof got);                                                         \
        copy_in(loc, got, M * sizeof(TYPE));                                                \
        nvshmem_##NAME##_get(loc, sym, M, right);                                           \
        copy_out(got, loc, M * sizeof(TYPE));                                               \
        SAME_AS(TYPE, got, M, right, 0, ok);                                                \
        CHECK("host_get_" #NAME, ok, "elements differ from PE %d's", right);                \
        memset(got, 0, sizeof got);                                                         \
        copy_in(loc, got, M * sizeof(TYPE));                                                \
        nvshmem_##NAME##_get_nbi(loc, sym, M, right);                                       \
        nvshmem_quiet();                                                                    \
        copy_out(got, loc, M * sizeof(TYPE));                                               \
        SAME_AS(TYPE, got, M, right, 0, ok);                                                \
        CHECK("host_get_nbi_" #NAME, ok, "elements differ from PE %d's", right);            \
        /* g: one element of the right neighbour */                                         \
        ok = nvshmem_##NAME##_g(sym + 5, right) == (TYPE)val(right, 5);                     \
        CHECK("host_g_" #NAME, ok, "not element 5 of PE %d", right);                        \
        /* put: this PE's pattern lands on the right neighbour, at M (the first M stay) */  \
        copy_in(loc, host, M * sizeof(TYPE));                                               \
        nvshmem_barrier_all();                                                              \
        nvshmem_##NAME##_put(sym + M, loc, M, right);                                       \
        nvshmem_barrier_all();                                                              \
        copy_out(got, sym, 2 * M * sizeof(TYPE));                                           \
        SAME_AS(TYPE, got + M, M, left, 0, ok);                                             \
        CHECK("host_put_" #NAME, ok, "elements differ from PE %d's", left);                 \
        SAME_AS(TYPE, got, M, me, 0, ok);                                                   \
        CHECK("host_put_bounds_" #NAME, ok, "the put wrote outside its elements");          \
        /* put_nbi + quiet, then p over element M */                                        \
        memset(got, 0, sizeof got);                                                         \
        copy_in(sym + M, got, M * sizeof(TYPE));                                            \
        nvshmem_barrier_all();                                                              \
        nvshmem_##NAME##_put_nbi(sym + M, loc, M, right);                                   \
        nvshmem_quiet();                                                                    \
        nvshmem_barrier_all();                                                              \
        nvshmem_##NAME##_p(sym + M, (TYPE)(me + 1), right);                                 \
        nvshmem_barrier_all();                                                              \
        copy_out(got, sym + M, M * sizeof(TYPE));                                           \
        SAME_AS(TYPE, got + 1, M - 1, left, 1, ok);                                         \
        CHECK("host_put_nbi_" #NAME, ok, "elements differ from PE %d's", left);             \
        CHECK("host_p_" #NAME, got[0] == (TYPE)(left + 1), "element M is not PE %d's p",    \
              left);                                                                        \
        /* iput: element k to 2k of the right neighbour (odd elements stay 0); iget reads  \
         * them back from there with source stride 2 */                                     \
        memset(got, 0, sizeof got);                                                         \
        copy_in(sym + M, got, M * sizeof(TYPE));                                            \
        nvshmem_barrier_all();                                                              \
        nvshmem_##NAME##_iput(sym + M, loc, 2, 1, M / 2, right);                            \
        nvshmem_barrier_all();                                                              \
        copy_out(got, sym + M, M * sizeof(TYPE));                                           \
        ok = 1;                                                                             \
        for (i = 0; i < M; i++)                                                             \
            ok &= got[i] == (i % 2 ? (TYPE)0 : (TYPE)val(left, i / 2));                     \
        CHECK("host_iput_" #NAME, ok, "strided elements differ from PE %d's", left);        \
        memset(got, 0, sizeof got);                                                         \
        copy_in(loc, got, M * sizeof(TYPE));                                                \
        nvshmem_##NAME##_iget(loc, sym + M, 1, 2, M / 2, right);                            \
        copy_out(got, loc, M * sizeof(TYPE));                                               \
        SAME_AS(TYPE, got, M / 2, me, 0, ok);                                               \
        for (i = M / 2; i < M; i++) ok &= got[i] == (TYPE)0;                                \
        CHECK("host_iget_" #NAME, ok, "strided elements differ from PE %d's", me);          \
        nvshmem_barrier_all();                                                              \
    }
PLAIN_TYPES(RMA_TEST)
#ifdef NIIN_TEST_FP16
/* half and bfloat16 compare by their bits (the patterns are exact in both). */
#define FP16_TYPES(X) X(half, half) X(bfloat16, __nv_bfloat16)
FP16_TYPES(RMA_TEST)
#endif

/* The sized forms: bytes, compared as bytes. `sym` holds 2 * M * 16 bytes, `loc` M * 16. */
#define SIZED_TEST(BITS)                                                                    \
    static void sized_##BITS(unsigned char *sym, unsigned char *loc, int me, int n) {       \
        enum { W = BITS / 8 };                                                              \
        unsigned char host[M * 16], got[2 * M * 16];                                        \
        int right = (me + 1) % n, left = (me + n - 1) % n, ok;                              \
        size_t i;                                                                           \
        for (i = 0; i < M * W; i++) host[i] = (unsigned char)(val(me, i) + BITS);           \
        copy_in(sym, host, M * W);                                                          \
        copy_in(loc, host, M * W);                                                          \
        nvshmem_barrier_all();                                                              \
        nvshmem_put##BITS(sym + M * W, loc, M, right);                                      \
        nvshmem_put##BITS##_nbi(sym + M * W, loc, M, right);                                \
        nvshmem_quiet();                                                                    \
        nvshmem_barrier_all();                                                              \
        copy_out(got, sym, 2 * M * W);                                                      \
        ok = 1;                                                                             \
        for (i = 0; i < M * W; i++)                                                         \
            ok &= got[i] == (unsigned char)(val(me, i) + BITS) &&                           \
                  got[M * W + i] == (unsigned char)(val(left, i) + BITS);                   \
        CHECK("host_put" #BITS, ok, "bytes differ from PE %d's", left);                     \
        memset(got, 0, sizeof got);                                                         \
        copy_in(loc, got, M * W);                                                           \
        nvshmem_get##BITS(loc, sym, M / 2, right);                                          \
        nvshmem_get##BITS##_nbi(loc + M / 2 * W, sym + M / 2 * W, M / 2, right);            \
        nvshmem_quiet();                                                                    \
        copy_out(got, loc, M * W);                                                          \
        ok = 1;                                                                             \
        for (i = 0; i < M * W; i++) ok &= got[i] == (unsigned char)(val(right, i) + BITS);  \
        CHECK("host_get" #BITS, ok, "bytes differ from PE %d's", right);                    \
        /* iput: element k to element 3k of the right neighbour's upper half; iget back */  \
        memset(got, 0, sizeof got);                                                         \
        copy_in(sym + M * W, got, M * W);                                                   \
        nvshmem_barrier_all();                                                              \
        nvshmem_iput##BITS(sym + M * W, loc, 3, 1, M / 3 + 1, right);                       \
        nvshmem_barrier_all();                                                              \
        copy_out(got, sym + M * W, M * W);                                                  \
        /* the left neighbour's loc held its right neighbour's pattern (the gets above):  \
         * this PE's */                                                                     \
        ok = 1;                                                                             \
        for (i = 0; i < M * W; i++) {                                                       \
            size_t e = i / W, b = i % W;                                                    \
            ok &= got[i] == (e % 3 ? 0 : (unsigned char)(val(me, (e / 3) * W + b) + BITS)); \
        }                                                                                   \
        CHECK("host_iput" #BITS, ok, "strided bytes differ");                               \
        memset(got, 0, sizeof got);                                                         \
        copy_in(loc, got, M * W);                                                           \
        nvshmem_iget##BITS(loc, sym + M * W, 1, 3, M / 3 + 1, right);                       \
        copy_out(got, loc, M * W);                                                          \
        ok = 1;                                                                             \
        for (i = 0; i < (M / 3 + 1) * W; i++)                                               \
            ok &= got[i] == (unsigned char)(val(right, i) + BITS);                          \
        CHECK("host_iget" #BITS, ok, "strided bytes differ");                               \
        nvshmem_barrier_all();                                                              \
    }
SIZED_TEST(8)
SIZED_TEST(16)
SIZED_TEST(32)
SIZED_TEST(64)
SIZED_TEST(128)

/* The AMO types: X(NAME, TYPE). */
#define AMO_STANDARD_TYPES(X)                                                               \
    X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int)                  \
    X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int32, int32_t)              \
    X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)               \
    X(ptrdiff, ptrdiff_t)
#define AMO_BITWISE_TYPES(X)                                                                \
    X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long)          \
    X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)
#define AMO_EXTENDED_TYPES(X) X(float, float) X(double, double)

/* Words of PE 0 the atomics work on (`sym` holds 16 of TYPE); every PE takes part. */
enum { W_SUM, W_CAS, W_WINNERS, W_SWAP, W_SWAPPED, W_OR, W_AND, W_XOR, W_FOR, W_FAND, W_FXOR };

/* Sets PE 0's words `first` .. `first + count - 1` to `value` with atomic_set, then
 * barrier. */
#define AMO_RESET(NAME, TYPE, sym, me, first, count, value)                                 \
    do {                                                                                    \
        int w_;                                                                             \
        if ((me) == 0)                                                                      \
            for (w_ = (first); w_ < (first) + (count); w_++)                                \
                nvshmem_##NAME##_atomic_set((sym) + w_, (TYPE)(value), 0);                  \
        nvshmem_barrier_all();                                                              \
    } while (0)

/* fetch, set, swap (every AMO type): the swapped-out values and the final value are
 * exactly the values written (0, then 1 .. n). */
#define AMO_MOVE_TEST(NAME, TYPE)                                                           \
    static void amo_move_##NAME(TYPE *sym, int me, int n) {                                 \
        TYPE old, final_value;                                                              \
        AMO_RESET(NAME, TYPE, sym, me, W_SWAP, 1, 0);                                       \
        old = nvshmem_##NAME##_atomic_swap(sym + W_SWAP, (TYPE)(me + 1), 0);                \
        /* PE 0 gathers the old values in its W_SWAPPED word, one PE at a time */           \
        if (me == 0) nvshmem_##NAME##_atomic_set(sym + W_SWAPPED, (TYPE)0, 0);              \
        nvshmem_barrier_all();                                                              \
        {                                                                                   \
            int p_;                                                                         \
            for (p_ = 0; p_ < n; p_++) {                                                    \
                if (p_ == me) {                                                             \
                    TYPE sum_ = nvshmem_##NAME##_atomic_fetch(sym + W_SWAPPED, 0);          \
                    nvshmem_##NAME##_atomic_set(sym + W_SWAPPED, (TYPE)(sum_ + old), 0);    \
                }                                                                           \
                nvshmem_barrier_all();                                                      \
            }                                                                               \
        }                                                                                   \
        final_value = nvshmem_##NAME##_atomic_fetch(sym + W_SWAP, 0);                       \
        CHECK("host_atomic_swap_" #NAME,                                                    \
              nvshmem_##NAME##_atomic_fetch(sym + W_SWAPPED, 0) + final_value ==            \
                  (TYPE)(n * (n + 1) / 2),                                                  \
              "swapped-out values and the final one do not add up to 1 + ... + %d", n);     \
        CHECK("host_atomic_fetch_" #NAME, final_value >= (TYPE)1 && final_value <= (TYPE)n, \
              "final value out of 1 .. %d", n);                                             \
        nvshmem_barrier_all();                                                              \
    }
AMO_STANDARD_TYPES(AMO_MOVE_TEST)
AMO_EXTENDED_TYPES(AMO_MOVE_TEST)

/* compare_swap, inc, fetch_inc, add, fetch_add (the standard types). */
#define AMO_STANDARD_TEST(NAME, TYPE)                                                       \
    static void amo_standard_##NAME(TYPE *sym, int me, int n) {                             \
        TYPE old, got;                                                                      \
        AMO_RESET(NAME, TYPE, sym, me, W_SUM, 3, 0);                                        \
        nvshmem_##NAME##_atomic_add(sym + W_SUM, (TYPE)(me + 1), 0);                        \
        nvshmem_##NAME##_atomic_inc(sym + W_SUM, 0);                                        \
        old = nvshmem_##NAME##_atomic_fetch_add(sym + W_SUM, (TYPE)2, 0);                   \
        got = nvshmem_##NAME##_atomic_fetch_inc(sym + W_SUM, 0);                            \
        CHECK("host_atomic_fetch_add_" #NAME, got >= old + (TYPE)2,                         \
              "fetch_inc saw less than fetch_add's value plus 2");                          \
        old = nvshmem_##NAME##_atomic_compare_swap(sym + W_CAS, (TYPE)0, (TYPE)(me + 1), 0); \
        if (old == (TYPE)0) nvshmem_##NAME##_atomic_inc(sym + W_WINNERS, 0);                \
        nvshmem_barrier_all();                                                              \
        got = nvshmem_##NAME##_atomic_fetch(sym + W_SUM, 0);                                \
        CHECK("host_atomic_add_" #NAME, got == (TYPE)(n * (n + 1) / 2 + 4 * n),             \
              "PE 0's sum is not 1 + ... + %d + 4 x %d", n, n);                             \
        CHECK("host_atomic_compare_swap_" #NAME,                                            \
              nvshmem_##NAME##_atomic_fetch(sym + W_WINNERS, 0) == (TYPE)1,                 \
              "not exactly one compare_swap won");                                          \
        got = nvshmem_##NAME##_atomic_fetch(sym + W_CAS, 0);                                \
        CHECK("host_atomic_compare_swap_value_" #NAME, got >= (TYPE)1 && got <= (TYPE)n,    \
              "the word is not a winner's value");                                          \
        nvshmem_barrier_all();                                                              \
    }
AMO_STANDARD_TYPES(AMO_STANDARD_TEST)

/* and, or, xor and their fetch forms (the bitwise types): each PE its own bit. */
#define AMO_BITWISE_TEST(NAME, TYPE)                                                        \
    static void amo_bitwise_##NAME(TYPE *sym, int me, int n) {                              \
        TYPE bit = (TYPE)((TYPE)1 << me), all = (TYPE)(((TYPE)1 << n) - 1), got;            \
        AMO_RESET(NAME, TYPE, sym, me, W_OR, 6, 0);                                         \
        if (me == 0) {                                                                      \
            nvshmem_##NAME##_atomic_set(sym + W_AND, all, 0);                               \
            nvshmem_##NAME##_atomic_set(sym + W_FAND, all, 0);                              \
        }                                                                                   \
        nvshmem_barrier_all();                                                              \
        nvshmem_##NAME##_atomic_or(sym + W_OR, bit, 0);                                     \
        nvshmem_##NAME##_atomic_and(sym + W_AND, (TYPE)~bit, 0);                            \
        nvshmem_##NAME##_atomic_xor(sym + W_XOR, bit, 0);                                   \
        got = nvshmem_##NAME##_atomic_fetch_or(sym + W_FOR, bit, 0);                        \
        CHECK("host_atomic_fetch_or_old_" #NAME, (got & bit) == 0, "own bit already set");  \
        got = nvshmem_##NAME##_atomic_fetch_and(sym + W_FAND, (TYPE)~bit, 0);               \
        CHECK("host_atomic_fetch_and_old_" #NAME, (got & bit) == bit, "own bit cleared");   \
        got = nvshmem_##NAME##_atomic_fetch_xor(sym + W_FXOR, bit, 0);                      \
        CHECK("host_atomic_fetch_xor_old_" #NAME, (got & bit) == 0, "own bit already set"); \
        nvshmem_barrier_all();                                                              \
        CHECK("host_atomic_or_" #NAME,                                                      \
              nvshmem_##NAME##_atomic_fetch(sym + W_OR, 0) == all &&                        \
                  nvshmem_##NAME##_atomic_fetch(sym + W_FOR, 0) == all,                     \
              "not every PE's bit is set");                                                 \
        CHECK("host_atomic_and_" #NAME,                                                     \
              nvshmem_##NAME##_atomic_fetch(sym + W_AND, 0) == (TYPE)0 &&                   \
                  nvshmem_##NAME##_atomic_fetch(sym + W_FAND, 0) == (TYPE)0,                \
              "a PE's bit is left");                                                        \
        CHECK("host_atomic_xor_" #NAME,                                                     \
              nvshmem_##NAME##_atomic_fetch(sym + W_XOR, 0) == all &&                       \
                  nvshmem_##NAME##_atomic_fetch(sym + W_FXOR, 0) == all,                    \
              "not every PE's bit flipped once");                                           \
        nvshmem_barrier_all();                                                              \
    }
AMO_BITWISE_TYPES(AMO_BITWISE_TEST)

int main(void) {
    int me, n;
    void *sym, *loc;
    select_device();
    nvshmem_init();
    me = nvshmem_my_pe();
    n = nvshmem_n_pes();
    if (n < 2) {
        printf("FAIL host_rma: needs 2 PEs or more, got %d\n", n);
        nvshmem_finalize();
        return 1;
    }
    sym = nvshmem_malloc(2 * M * 16);
    loc = local_alloc(M * 16);
    CHECK("host_rma_malloc", sym != NULL && loc != NULL, "no memory");
    if (sym == NULL || loc == NULL) return 1;
#define CALL_RMA(NAME, TYPE) rma_##NAME(sym, loc, me, n);
    PLAIN_TYPES(CALL_RMA)
#ifdef NIIN_TEST_FP16
    FP16_TYPES(CALL_RMA)
#endif
    sized_8((unsigned char *)sym, (unsigned char *)loc, me, n);
    sized_16((unsigned char *)sym, (unsigned char *)loc, me, n);
    sized_32((unsigned char *)sym, (unsigned char *)loc, me, n);
    sized_64((unsigned char *)sym, (unsigned char *)loc, me, n);
    sized_128((unsigned char *)sym, (unsigned char *)loc, me, n);
#define CALL_AMO_MOVE(NAME, TYPE) amo_move_##NAME((TYPE *)sym, me, n);
#define CALL_AMO_STANDARD(NAME, TYPE) amo_standard_##NAME((TYPE *)sym, me, n);
#define CALL_AMO_BITWISE(NAME, TYPE) amo_bitwise_##NAME((TYPE *)sym, me, n);
    AMO_STANDARD_TYPES(CALL_AMO_MOVE)
    AMO_EXTENDED_TYPES(CALL_AMO_MOVE)
    AMO_STANDARD_TYPES(CALL_AMO_STANDARD)
    AMO_BITWISE_TYPES(CALL_AMO_BITWISE)
    nvshmem_barrier_all();
    local_free(loc);
    nvshmem_free(sym);
    printf("DONE failures=%d\n", niin_test_failures);
    fflush(stdout);
    nvshmem_finalize();
    return niin_test_failures ? 1 : 0;
}
