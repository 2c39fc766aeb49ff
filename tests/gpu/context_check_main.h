// context_check_main.h -- the checks the context test mains make on ContextReports
// (context_check.h). One main per program; every PE prints its failures and a last line
// "<program> PE <n>: <N> passed, <M> failed", and exits 1 if anything failed.

#ifndef NIIN_TESTS_CONTEXT_CHECK_MAIN_H
#define NIIN_TESTS_CONTEXT_CHECK_MAIN_H

#include <cstdarg>
#include <cstring>
#include <vector>

#include "context_check.h"

struct Checker {
    const char *program;
    int pe = -1;
    int passed = 0, failed = 0, not_run = 0;

    explicit Checker(const char *p) : program(p) {}

    __attribute__((format(printf, 4, 5))) bool check(bool ok, const char *name, const char *fmt,
                                                     ...) {
        if (ok) {
            passed++;
            return true;
        }
        failed++;
        char detail[512];
        va_list args;
        va_start(args, fmt);
        vsnprintf(detail, sizeof detail, fmt, args);
        va_end(args);
        printf("%s PE %d: FAIL %s: %s\n", program, pe, name, detail);
        fflush(stdout);
        return false;
    }

    // A check that cannot be made here: printed, counted apart (neither passed nor failed).
    void skip(const char *name, const char *why) {
        not_run++;
        printf("%s PE %d: NOT RUN %s: %s\n", program, pe, name, why);
        fflush(stdout);
    }

    int finish() {
        if (not_run > 0)
            printf("%s PE %d: %d passed, %d failed, %d not run\n", program, pe, passed, failed,
                   not_run);
        else
            printf("%s PE %d: %d passed, %d failed\n", program, pe, passed, failed);
        fflush(stdout);
        return failed == 0 ? 0 : 1;
    }
};

// The barrier count the library was asked for (NIIN_BARRIER_CTAS, default 264).
static inline unsigned expected_barrier_count() {
    const char *v = getenv("NIIN_BARRIER_CTAS");
    return v != nullptr ? (unsigned)strtoul(v, nullptr, 10) : 264u;
}

// Everything a set-up context must satisfy. `probe` is a symmetric allocation.
static inline void check_report(Checker &ck, const char *tu, const ContextReport &r, const void *probe) {
    char name[128];
#define CK(cond, what, ...)                                                                \
    (snprintf(name, sizeof name, "%s: %s", tu, what), ck.check((cond), name, __VA_ARGS__))
    if (!CK(r.has_ctx, "context set up", "niin_ctx() is NULL after nvshmem_init")) return;
    int my_pe = nvshmem_my_pe(), n_pes = nvshmem_n_pes();
    CK(r.my_pe == my_pe && r.n_pes == n_pes, "my_pe/n_pes", "context %d of %d, host %d of %d",
       r.my_pe, r.n_pes, my_pe, n_pes);
    if (r.api_my_pe != -2)
        CK(r.api_my_pe == my_pe && r.api_n_pes == n_pes, "device nvshmem_my_pe/n_pes",
           "device %d of %d, host %d of %d", r.api_my_pe, r.api_n_pes, my_pe, n_pes);
    if (r.has_dev_comm) {
        CK(r.dc_rank == my_pe && r.dc_n_ranks == n_pes, "devComm rank", "devComm rank %d of %d",
           r.dc_rank, r.dc_n_ranks);
        CK(r.dc_lsa_rank == r.lsa_rank && r.dc_lsa_size == r.lsa_size, "LSA team",
           "context LSA rank %d of %d, devComm %d of %d", r.lsa_rank, r.lsa_size, r.dc_lsa_rank,
           r.dc_lsa_size);
    } else {
        // Only a one-PE world may go without (niin-ffi/src/modules.rs).
        CK(n_pes == 1 && r.lsa_size == 1, "no devComm only with one PE",
           "has_dev_comm 0 in a world of %d PEs (LSA team %d)", n_pes, r.lsa_size);
        snprintf(name, sizeof name, "%s: devComm rank and LSA team", tu);
        ck.skip(name, "no devComm (NCCL refused one for this one-PE world)");
    }
    CK(r.lsa_size >= 1 && r.lsa_size <= n_pes && r.lsa_rank >= 0 && r.lsa_rank < r.lsa_size,
       "LSA team in range", "rank %d of %d in a world of %d", r.lsa_rank, r.lsa_size, n_pes);
    unsigned long long p = (unsigned long long)probe;
    CK(r.heap_base != 0 && p >= r.heap_base && p < r.heap_base + r.heap_size, "heap",
       "probe %#llx outside heap [%#llx, +%llu)", p, r.heap_base, r.heap_size);
    CK(r.window != 0, "window", "NULL window");
    if (!r.has_dev_comm) {
        snprintf(name, sizeof name, "%s: peer pointers (self and LSA team)", tu);
        ck.skip(name, "no devComm: NCCL refused symmetric memory for this one-PE communicator, "
                      "and its window is not usable from the device (ncclGetPeerPointer faulted "
                      "there); the device API reaches self by address");
    } else {
        // NCCL maps this PE's own heap at an address of its own (not the heap's): the check is
        // that it exists; check_lsa_writes checks that stores through it land in the heap.
        // (Whether a load through it sees a store just made through the heap address, in the
        // same thread, is only reported: with several ranks on one GPU it did not, run 1.)
        CK(r.self_ptr != 0, "peer pointer to self", "ncclGetPeerPointer(window, off, my_pe) is NULL "
           "(probe %#llx)", p);
        CK(r.lsa_peer_ptrs == r.lsa_size, "peer pointers of the LSA team", "%d of %d non-NULL",
           r.lsa_peer_ptrs, r.lsa_size);
    }
    CK(r.barrier_count == expected_barrier_count(), "barrier count", "%u, expected %u",
       r.barrier_count, expected_barrier_count());
    CK(r.gin_enabled == (r.lsa_size != n_pes), "GIN flag", "gin_enabled %d with LSA team %d of %d",
       r.gin_enabled, r.lsa_size, n_pes);
#undef CK
}

// After the LSA-write kernel on every PE and a barrier: word q of `probe` is q + 1 for
// every LSA peer q.
static inline void check_lsa_writes(Checker &ck, const char *tu, const ContextReport &r,
                             const int *probe) {
    if (!r.has_dev_comm) {
        char skipped[128];
        snprintf(skipped, sizeof skipped, "%s: stores through peer pointers", tu);
        ck.skip(skipped, "no devComm, no usable window (see above)");
        return;
    }
    std::vector<int> words(nvshmem_n_pes());
    TEST_CUDA(cudaMemcpy(words.data(), probe, words.size() * sizeof(int),
                            cudaMemcpyDeviceToHost));
    int first = r.my_pe - r.lsa_rank, bad = 0, bad_q = -1;
    for (int q = first; q < first + r.lsa_size; q++)
        if (words[q] != q + 1) bad++, bad_q = q;
    char name[128];
    snprintf(name, sizeof name, "%s: stores through peer pointers", tu);
    ck.check(bad == 0, name, "%d words wrong, e.g. word %d = %d", bad, bad_q,
             bad_q >= 0 ? words[bad_q] : 0);
}

static inline void check_empty(Checker &ck, const char *what, const ContextReport &r) {
    ck.check(!r.has_ctx, what, "niin_ctx() = %#llx, expected NULL", r.ctx_addr);
}

// Runs a TU's barrier test and checks it; `scratch` is a symmetric, zeroed int array of at
// least 2 * n_pes * ctas words (barrier_scratch_words).
static inline void check_barriers(Checker &ck, const char *what,
                                  int (*barrier)(size_t, unsigned, int), const ContextReport &r,
                                  int *scratch, unsigned ctas, int rounds) {
    if (!r.has_dev_comm) {
        ck.skip(what, "no devComm (NCCL refused one for this one-PE world), so no NCCL barrier "
                      "to test");
        return;
    }
    TEST_CUDA(cudaMemset(scratch, 0, 2 * sizeof(int) * r.lsa_size * ctas));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    int wrong = barrier((size_t)((unsigned long long)scratch - r.heap_base), ctas, rounds);
    ck.check(wrong == 0, what, "%u CTAs x %d rounds: %d words stale after the barrier", ctas,
             rounds, wrong);
    nvshmem_barrier_all();
}

// Words of scratch check_barriers needs for up to `ctas` CTAs.
static inline size_t barrier_scratch_words(unsigned ctas) {
    return 2 * (size_t)nvshmem_n_pes() * ctas;
}

static inline int device_count() {
    int n = 0;
    TEST_CUDA(cudaGetDeviceCount(&n));
    return n;
}

// Offset of `p` in the heap whose base `r` reports.
static inline size_t heap_offset(const ContextReport &r, const void *p) {
    return (size_t)((unsigned long long)p - r.heap_base);
}

#endif // NIIN_TESTS_CONTEXT_CHECK_MAIN_H
