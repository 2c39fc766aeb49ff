// context_two_tus_main.cu -- the device context in a program of three translation units:
// this one and context_two_tus_{a,b}.cu, each with its own slot.
//
// Build whole-program and with -rdc=true (scripts/gpu/build-device-tests.sh; run by scripts/gpu/device-tests.sh):
//   nvcc -std=c++17 -arch=sm_90 [-rdc=true] -I$NIIN_HOME/include -isystem $NCCL/include
//        tests/gpu/context_two_tus_{a,b,main}.cu -L$NIIN_HOME/lib -lnvshmem_host
// Run under niinrun with 1, 2 or 4 PEs (NIIN_TRANSPORT=nccl).
//
// Checks, for every TU: empty before init (one-GPU machines), filled after init (as in
// context_one_tu.cu); the three contexts are distinct allocations holding the same
// ncclDevComm (one devComm per header ABI, shared by the TUs compiled with the same NCCL
// headers); stores through each TU's peer pointers land; device LSA barriers pass in each
// TU, and across TUs (even PEs in A's kernel, odd PEs in B's: the same NCCL barrier because
// the devComm is shared); every slot is empty after nvshmem_finalize.
#include "context_check_main.h"

CONTEXT_CHECK_DECLARE(a)
CONTEXT_CHECK_DECLARE(b)
CONTEXT_CHECK_TU(main)

typedef int (*check_fn)(size_t, ContextReport *);
typedef int (*barrier_fn)(size_t, unsigned, int);
typedef int (*write_fn)(size_t);

struct Tu {
    const char *name;
    check_fn check;
    barrier_fn barrier;
    write_fn write;
};

int main() {
    Checker ck("context_two_tus");
    const Tu tus[3] = {{"A", context_check_a, context_barrier_a, context_lsa_write_a},
                       {"B", context_check_b, context_barrier_b, context_lsa_write_b},
                       {"main", context_check_main, context_barrier_main, context_lsa_write_main}};
    ContextReport r[3];
    if (device_count() == 1)
        for (int i = 0; i < 3; i++) {
            tus[i].check(0, &r[i]);
            char what[64];
            snprintf(what, sizeof what, "%s: before init: slot empty", tus[i].name);
            check_empty(ck, what, r[i]);
        }

    nvshmem_init();
    ck.pe = nvshmem_my_pe();
    int my_pe = nvshmem_my_pe(), n_pes = nvshmem_n_pes();
    int *probe = static_cast<int *>(nvshmem_calloc(3 * 64, sizeof(int)));
    bool all = true;
    for (int i = 0; i < 3; i++) {
        tus[i].check(0, &r[i]);
        if (r[i].has_ctx) tus[i].check(heap_offset(r[i], probe + 64 * i), &r[i]);
        check_report(ck, tus[i].name, r[i], probe + 64 * i);
        all = all && r[i].has_ctx;
    }
    if (all) {
        ck.check(r[0].ctx_addr != r[1].ctx_addr && r[1].ctx_addr != r[2].ctx_addr &&
                     r[0].ctx_addr != r[2].ctx_addr,
                 "one context per TU", "A %#llx, B %#llx, main %#llx", r[0].ctx_addr,
                 r[1].ctx_addr, r[2].ctx_addr);
        ck.check(r[0].dev_comm_hash == r[1].dev_comm_hash &&
                     r[1].dev_comm_hash == r[2].dev_comm_hash,
                 "one devComm for the TUs of one NCCL header version", "hashes %llx %llx %llx",
                 r[0].dev_comm_hash, r[1].dev_comm_hash, r[2].dev_comm_hash);
        for (int i = 0; i < 3; i++) tus[i].write(heap_offset(r[i], probe + 64 * i));
        nvshmem_barrier_all();
        for (int i = 0; i < 3; i++) check_lsa_writes(ck, tus[i].name, r[i], probe + 64 * i);
        int *scratch = static_cast<int *>(nvshmem_calloc(barrier_scratch_words(32), sizeof(int)));
        for (int i = 0; i < 3; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s: device LSA barriers", tus[i].name);
            check_barriers(ck, what, tus[i].barrier, r[i], scratch, 32, 10);
        }
        // Across TUs: PE p runs TU (p % 2)'s barrier kernel.
        check_barriers(ck, "device LSA barrier across TUs", tus[my_pe % 2].barrier, r[my_pe % 2],
                       scratch, 32, 10);
        nvshmem_free(scratch);
    }
    nvshmem_barrier_all();
    nvshmem_free(probe);
    nvshmem_finalize();
    for (int i = 0; i < 3; i++) {
        tus[i].check(0, &r[i]);
        char what[64];
        snprintf(what, sizeof what, "%s: after finalize: slot empty", tus[i].name);
        check_empty(ck, what, r[i]);
    }
    (void)n_pes;
    return ck.finish();
}
