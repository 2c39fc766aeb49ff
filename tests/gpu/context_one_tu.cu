// context_one_tu.cu -- the device context of a program of one translation unit.
//
// Build whole-program and with -rdc=true (scripts/gpu/build-device-tests.sh; run by scripts/gpu/device-tests.sh):
//   nvcc -std=c++17 -arch=sm_90 [-rdc=true] -I$NIIN_HOME/include -isystem $NCCL/include
//        tests/gpu/context_one_tu.cu -L$NIIN_HOME/lib -lnvshmem_host -o context_one_tu
// Run under niinrun with 1, 2 or 4 PEs (NIIN_TRANSPORT=nccl).
//
// Checks: the slot is NULL before init (one-GPU machines), filled after nvshmem_init with
// this PE's numbers, heap, window and LSA team; stores through the window's peer pointers
// land; a device LSA barrier of the context's devComm passes with 32 CTAs x 10 rounds and
// with barrier_count CTAs; the slot is NULL after nvshmem_finalize; with one PE, a second
// init fills it again and its finalize empties it.

#include "context_check_main.h"

CONTEXT_CHECK_TU(one)

int main() {
    Checker ck("context_one_tu");
    ContextReport r;
    bool one_gpu = device_count() == 1;
    if (one_gpu) {
        context_check_one(0, &r);
        check_empty(ck, "before init: slot empty", r);
    }

    nvshmem_init();
    ck.pe = nvshmem_my_pe();
    int *probe = static_cast<int *>(nvshmem_calloc(64, sizeof(int)));
    ck.check(probe != nullptr, "nvshmem_calloc", "NULL");
    context_check_one(0, &r);
    if (r.has_ctx) {
        context_check_one(heap_offset(r, probe), &r);
        printf("context_one_tu PE %d: NCCL headers %d, sizeof(ncclDevComm) %u, LSA rank %d of %d, "
               "barriers %u, GIN %d, context at %#llx, self peer pointer %#llx (a store at the "
               "heap address seen through it at once: %s)\n",
               ck.pe, r.nccl_headers, r.dev_comm_size, r.lsa_rank, r.lsa_size, r.barrier_count,
               r.gin_enabled, r.ctx_addr, r.self_ptr, r.self_alias ? "yes" : "no");
    }
    check_report(ck, "one", r, probe);
    if (r.has_ctx) {
        context_lsa_write_one(heap_offset(r, probe));
        nvshmem_barrier_all();
        check_lsa_writes(ck, "one", r, probe);
        unsigned most = r.barrier_count > 32 ? r.barrier_count : 32;
        int *scratch = static_cast<int *>(nvshmem_calloc(barrier_scratch_words(most), sizeof(int)));
        check_barriers(ck, "device LSA barriers", context_barrier_one, r, scratch, 32, 10);
        check_barriers(ck, "device LSA barriers, barrier_count CTAs", context_barrier_one, r,
                       scratch, r.barrier_count, 2);
        nvshmem_free(scratch);
    }
    nvshmem_barrier_all();
    nvshmem_free(probe);
    int n_pes = nvshmem_n_pes();
    nvshmem_finalize();
    context_check_one(0, &r);
    check_empty(ck, "after finalize: slot empty", r);

    if (n_pes == 1 && getenv("CONTEXT_TEST_NO_REINIT") == nullptr) {
        nvshmem_init();
        int *p2 = static_cast<int *>(nvshmem_calloc(64, sizeof(int)));
        context_check_one(0, &r);
        if (r.has_ctx) context_check_one(heap_offset(r, p2), &r);
        check_report(ck, "one (second init)", r, p2);
        if (r.has_ctx) {
            int *scratch = static_cast<int *>(nvshmem_calloc(barrier_scratch_words(32), sizeof(int)));
            check_barriers(ck, "device LSA barriers (second init)", context_barrier_one, r,
                           scratch, 32, 10);
            nvshmem_free(scratch);
        }
        nvshmem_free(p2);
        nvshmem_finalize();
        context_check_one(0, &r);
        check_empty(ck, "after the second finalize: slot empty", r);
    }
    return ck.finish();
}
