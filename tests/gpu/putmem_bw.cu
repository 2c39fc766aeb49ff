// Host-initiated put bandwidth: nvshmemx_putmem_on_stream from PE 0 to PE 1.
//
// One source, built twice: against niin-rs (NIIN_HOME) and against NVSHMEM 3.4.5, and run
// side by side by scripts/gpu/run-host-tests.sh. Uses the NVSHMEM host API only.
//
// Init: with -DUSE_MPI_UID the program bootstraps through MPI and NVSHMEM's unique-id
// path (what NVSHMEM 3.4.5 needs on the GPU machine); otherwise nvshmem_init() (niin-rs
// under niinrun).
//
// Output: one line per size, "putmem_on_stream <bytes> B: <GB/s> GB/s (<us> us/op)",
// measured by PE 0 with CUDA events around `iters` puts and a final quiet.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include "cuda_check.h"
#ifdef USE_MPI_UID
#include <mpi.h>
#endif


static void init(int *argc, char ***argv) {
#ifdef USE_MPI_UID
    MPI_Init(argc, argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ndev = 0;
    TEST_CUDA(cudaGetDeviceCount(&ndev));
    TEST_CUDA(cudaSetDevice(rank % ndev));
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "nvshmemx_init_attr failed\n");
        exit(2);
    }
#else
    (void)argc;
    (void)argv;
    nvshmem_init();
#endif
}

static void fini() {
    nvshmem_finalize();
#ifdef USE_MPI_UID
    MPI_Finalize();
#endif
}

int main(int argc, char **argv) {
    init(&argc, &argv);
    int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    char name[NVSHMEM_MAX_NAME_LEN];
    nvshmem_info_get_name(name);
    if (npes < 2) {
        if (me == 0) fprintf(stderr, "putmem_bw needs 2 PEs, has %d\n", npes);
        fini();
        return 2;
    }
    const size_t max_bytes = 256u << 20;
    char *dst = (char *)nvshmem_malloc(max_bytes);
    if (dst == nullptr) {
        fprintf(stderr, "FAIL putmem_bw: nvshmem_malloc(%zu) returned NULL (set NVSHMEM_SYMMETRIC_SIZE)\n", max_bytes);
        fini();
        return 1;
    }
    char *src = nullptr;
    TEST_CUDA(cudaMalloc(&src, max_bytes));
    TEST_CUDA(cudaMemset(src, 0x5a, max_bytes));
    cudaStream_t s;
    TEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t t0, t1;
    TEST_CUDA(cudaEventCreate(&t0));
    TEST_CUDA(cudaEventCreate(&t1));
    if (me == 0) printf("library: %s, %d PEs\n", name, npes);
    const size_t sizes[] = {4096, 1u << 20, 16u << 20, 64u << 20, 256u << 20};
    for (size_t bytes : sizes) {
        int iters = bytes <= (1u << 20) ? 200 : (bytes <= (64u << 20) ? 50 : 20);
        nvshmem_barrier_all();
        if (me == 0) {
            for (int i = 0; i < 5; i++) nvshmemx_putmem_on_stream(dst, src, bytes, 1, s);  // warm-up
            nvshmemx_quiet_on_stream(s);
            TEST_CUDA(cudaStreamSynchronize(s));
            TEST_CUDA(cudaEventRecord(t0, s));
            for (int i = 0; i < iters; i++) nvshmemx_putmem_on_stream(dst, src, bytes, 1, s);
            nvshmemx_quiet_on_stream(s);
            TEST_CUDA(cudaEventRecord(t1, s));
            TEST_CUDA(cudaEventSynchronize(t1));
            float ms = 0;
            TEST_CUDA(cudaEventElapsedTime(&ms, t0, t1));
            double gbs = (double)bytes * iters / (ms * 1e-3) / 1e9;
            printf("putmem_on_stream %zu B: %.1f GB/s (%.2f us/op)\n", bytes, gbs, ms * 1e3 / iters);
            fflush(stdout);
        }
        nvshmem_barrier_all();
    }
    // The data really arrived: PE 1 checks the last bytes it received.
    if (me == 1) {
        unsigned char probe[16];
        TEST_CUDA(cudaMemcpy(probe, dst + max_bytes - 16, 16, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 16; i++) {
            if (probe[i] != 0x5a) {
                fprintf(stderr, "FAIL putmem_bw data: byte %d is %#x\n", i, probe[i]);
                return 1;
            }
        }
        printf("putmem_bw data check: ok\n");
    }
    nvshmem_barrier_all();
    nvshmem_free(dst);
    TEST_CUDA(cudaFree(src));
    fini();
    return 0;
}
