// context_check.h -- checks of the per-module device context (niin/context.h), shared by
// the GPU programs context_one_tu.cu, context_two_tus_*.cu and context_dlopen_main.cu.
//
// CONTEXT_CHECK_TU(tag) defines, in the translation unit (TU) that expands it, a kernel and
// a host function `context_check_<tag>` that reads *this TU's* context (each TU has its
// own slot) and reports what it found. The checks on the reports are in
// context_check_main.h (the mains only).
//
// Build with -DCONTEXT_TEST_NO_DEVICE_API to leave out the device-side nvshmem_my_pe() /
// nvshmem_n_pes() calls (before the device query API exists).

#ifndef NIIN_TESTS_CONTEXT_CHECK_H
#define NIIN_TESTS_CONTEXT_CHECK_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <niin/context.h>

#include "cuda_check.h"

// What one TU's kernel saw.
struct ContextReport {
    int has_ctx;                   // niin_ctx() != NULL
    unsigned long long ctx_addr;   // its address (each TU has its own context)
    int my_pe, n_pes;              // from the context
    int api_my_pe, api_n_pes;      // device nvshmem_my_pe() / nvshmem_n_pes() (-2: not built)
    unsigned long long heap_base, heap_size, window;
    int lsa_size, lsa_rank;
    int has_dev_comm;              // the context's has_dev_comm (0: a one-PE world without)
    int dc_rank, dc_n_ranks, dc_lsa_rank, dc_lsa_size; // the ncclDevComm's own view
    unsigned barrier_count;
    int gin_enabled;
    unsigned long long self_ptr;   // ncclGetPeerPointer(window, probe offset, my_pe)
    int self_alias;                // a store to the probe is seen through self_ptr
    int lsa_peer_ptrs;             // LSA peers whose peer pointer is non-NULL
    unsigned long long dev_comm_hash; // FNV-1a of the ncclDevComm bytes
    int nccl_headers;              // NCCL_VERSION_CODE this TU was compiled with
    unsigned dev_comm_size;        // sizeof(ncclDevComm) here
};


#ifdef CONTEXT_TEST_NO_DEVICE_API
#define CONTEXT_API_MY_PE() (-2)
#define CONTEXT_API_N_PES() (-2)
#else
#define CONTEXT_API_MY_PE() nvshmem_my_pe()
#define CONTEXT_API_N_PES() nvshmem_n_pes()
#endif

// Declarations of a TU's entry points (C names, so dlsym finds them).
#define CONTEXT_CHECK_DECLARE(tag)                                                         \
    extern "C" int context_check_##tag(size_t probe_offset, ContextReport *report);        \
    extern "C" int context_barrier_##tag(size_t scratch_offset, unsigned ctas, int rounds); \
    extern "C" int context_lsa_write_##tag(size_t probe_offset);

// Definitions, in the TU whose context they check.
#define CONTEXT_CHECK_TU(tag)                                                              \
    CONTEXT_CHECK_DECLARE(tag)                                                             \
    static __global__ void context_report_kernel_##tag(size_t probe_offset,                 \
                                                       ContextReport *out) {                \
        ContextReport r;                                                                   \
        memset(&r, 0, sizeof r);                                                           \
        r.nccl_headers = NCCL_VERSION_CODE;                                                \
        r.dev_comm_size = (unsigned)sizeof(ncclDevComm);                                   \
        const niin_device_context *c = niin_ctx();                                         \
        r.has_ctx = c != nullptr;                                                          \
        r.ctx_addr = (unsigned long long)c;                                                \
        if (c != nullptr) {                                                                \
            r.my_pe = c->my_pe;                                                            \
            r.n_pes = c->n_pes;                                                            \
            r.api_my_pe = CONTEXT_API_MY_PE();                                             \
            r.api_n_pes = CONTEXT_API_N_PES();                                             \
            r.heap_base = (unsigned long long)c->heap_base;                                \
            r.heap_size = c->heap_size;                                                    \
            r.window = (unsigned long long)c->window;                                      \
            r.lsa_size = c->lsa_size;                                                      \
            r.lsa_rank = c->lsa_rank;                                                      \
            r.has_dev_comm = c->has_dev_comm;                                              \
            r.dc_rank = c->dev_comm.rank;                                                  \
            r.dc_n_ranks = c->dev_comm.nRanks;                                             \
            r.dc_lsa_rank = c->dev_comm.lsaRank;                                           \
            r.dc_lsa_size = c->dev_comm.lsaSize;                                           \
            r.barrier_count = c->barrier_count;                                            \
            r.gin_enabled = c->gin_enabled;                                                \
            /* Without a devComm (a one-PE world on NCCL 2.28.3) NCCL refused symmetric    \
             * memory for the communicator: its window has no device mapping to ask. */    \
            r.self_ptr = c->has_dev_comm ? (unsigned long long)ncclGetPeerPointer(         \
                                               c->window, probe_offset, c->my_pe)          \
                                         : 0;                                              \
            /* NCCL may map this PE's own heap at another address: compare contents. The  \
             * probe's word 63 is the TU's own (the LSA-write test uses words < n_pes). */ \
            if (r.self_ptr != 0) {                                                         \
                volatile int *direct = (volatile int *)(c->heap_base + probe_offset);      \
                volatile int *via = (volatile int *)r.self_ptr;                            \
                int magic = 0x5e1f0000 + c->my_pe;                                         \
                direct[63] = magic;                                                        \
                __threadfence_system();                                                    \
                r.self_alias = via[63] == magic;                                           \
                direct[63] = 0;                                                            \
            }                                                                              \
            int first = c->my_pe - c->lsa_rank;                                            \
            for (int p = first; c->has_dev_comm && p < first + c->lsa_size; p++)           \
                r.lsa_peer_ptrs += ncclGetPeerPointer(c->window, probe_offset, p) != nullptr; \
            const unsigned char *b = (const unsigned char *)&c->dev_comm;                  \
            unsigned long long h = 1469598103934665603ull;                                 \
            for (size_t i = 0; i < sizeof(ncclDevComm); i++) h = (h ^ b[i]) * 1099511628211ull; \
            r.dev_comm_hash = h;                                                           \
        }                                                                                  \
        *out = r;                                                                          \
    }                                                                                      \
    /* Every CTA b passes an LSA barrier of this TU's devComm `rounds` times. Round r: thread \
     * 0 stores r + 1 into word [lsa_rank][b] of buffer r % 2 of the scratch on every LSA peer \
     * (peer pointers), the barrier, then it counts the words [q][b] not yet r + 1. Two     \
     * buffers suffice: round r + 2 starts after every peer left round r + 1's barrier. */  \
    static __global__ void context_barrier_kernel_##tag(size_t scratch_offset, int rounds,  \
                                                        unsigned *wrong) {                  \
        const niin_device_context *c = niin_ctx_checked();                                 \
        const int n = c->lsa_size, ctas = (int)gridDim.x, b = (int)blockIdx.x;             \
        for (int i = 0; i < rounds; i++) {                                                 \
            size_t buf = scratch_offset + sizeof(int) * (size_t)((i & 1) * n * ctas);      \
            if (threadIdx.x == 0)                                                          \
                for (int q = 0; q < n; q++) {                                              \
                    int *w = (int *)ncclGetPeerPointer(c->window, buf, c->my_pe - c->lsa_rank + q); \
                    w[c->lsa_rank * ctas + b] = i + 1;                                     \
                }                                                                          \
            ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), c->dev_comm, ncclTeamTagLsa(), \
                                                   blockIdx.x);                            \
            bar.sync(ncclCoopCta(), cuda::memory_order_seq_cst);                           \
            if (threadIdx.x == 0) {                                                        \
                volatile int *mine = (volatile int *)(c->heap_base + buf);                 \
                for (int q = 0; q < n; q++)                                                \
                    if (mine[q * ctas + b] != i + 1) atomicAdd(wrong, 1u);                 \
            }                                                                              \
            __syncthreads();                                                               \
        }                                                                                  \
    }                                                                                      \
    /* Writes my_pe + 1 into word my_pe of every LSA peer's probe, through peer pointers. */ \
    static __global__ void context_lsa_write_kernel_##tag(size_t probe_offset) {            \
        const niin_device_context *c = niin_ctx_checked();                                 \
        if (!c->has_dev_comm) return; /* no window mapping to write through */             \
        int first = c->my_pe - c->lsa_rank;                                                \
        for (int p = first; p < first + c->lsa_size; p++) {                                \
            int *peer = (int *)ncclGetPeerPointer(c->window, probe_offset, p);             \
            peer[c->my_pe] = c->my_pe + 1;                                                 \
        }                                                                                  \
        __threadfence_system();                                                            \
    }                                                                                      \
    int context_check_##tag(size_t probe_offset, ContextReport *report) {                  \
        ContextReport *d = nullptr;                                                        \
        TEST_CUDA(cudaMalloc(&d, sizeof *d));                                           \
        context_report_kernel_##tag<<<1, 1>>>(probe_offset, d);                            \
        TEST_CUDA(cudaGetLastError());                                                  \
        TEST_CUDA(cudaMemcpy(report, d, sizeof *d, cudaMemcpyDeviceToHost));            \
        TEST_CUDA(cudaFree(d));                                                         \
        return 0;                                                                          \
    }                                                                                      \
    /* Returns the words found stale after a barrier (0: the barriers held). The scratch \
     * needs 2 * lsa_size * ctas ints, zeroed. */                                          \
    int context_barrier_##tag(size_t scratch_offset, unsigned ctas, int rounds) {          \
        unsigned *d = nullptr, wrong = 0;                                                  \
        TEST_CUDA(cudaMalloc(&d, sizeof *d));                                           \
        TEST_CUDA(cudaMemset(d, 0, sizeof *d));                                         \
        context_barrier_kernel_##tag<<<ctas, 128>>>(scratch_offset, rounds, d);            \
        TEST_CUDA(cudaGetLastError());                                                  \
        TEST_CUDA(cudaDeviceSynchronize());                                             \
        TEST_CUDA(cudaMemcpy(&wrong, d, sizeof wrong, cudaMemcpyDeviceToHost));         \
        TEST_CUDA(cudaFree(d));                                                         \
        return (int)wrong;                                                                 \
    }                                                                                      \
    int context_lsa_write_##tag(size_t probe_offset) {                                     \
        context_lsa_write_kernel_##tag<<<1, 1>>>(probe_offset);                            \
        TEST_CUDA(cudaGetLastError());                                                  \
        TEST_CUDA(cudaDeviceSynchronize());                                             \
        return 0;                                                                          \
    }

#endif // NIIN_TESTS_CONTEXT_CHECK_H
