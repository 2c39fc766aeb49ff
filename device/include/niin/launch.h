/*
 * niin/launch.h -- NVSHMEM's collective launch: nvshmemx_collective_launch and
 * nvshmemx_collective_launch_query_gridsize, with NVSHMEM 3.4.5's signatures, checks and
 * return values.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h (not under NVRTC);
 * defines the two functions when the CUDA runtime's header is there (niin/host_api.h sets
 * NIIN_HAVE_CUDA_RUNTIME_API): CUDA C++, and C or C++ compiled with CUDA's include folder.
 *
 * They take the runtime API's kernel handle (the address of a __global__ function, as
 * cudaLaunchKernel does), so they are inline code of this header, compiled into the
 * application and calling the CUDA runtime the application links (NVSHMEM has them in the
 * host part of libnvshmem_device.a). As in NVSHMEM they have C++ linkage (in C: static
 * functions); a program that only includes the header and never calls them does not need
 * the CUDA runtime.
 *
 *   nvshmemx_collective_launch_query_gridsize(func, blockDims, args, sharedMem, &gridsize)
 *       *gridsize = how many CTAs of blockDims (and sharedMem dynamic shared bytes) can be
 *       resident on the current device at once: cudaOccupancyMaxActiveBlocksPerMultiprocessor
 *       x the device's SM count (0 when not even one fits). Returns 0, or
 *       NVSHMEMX_ERROR_INTERNAL when the occupancy query fails (a bad `func`, a block too
 *       large).
 *   nvshmemx_collective_launch(func, gridDims, blockDims, args, sharedMem, stream)
 *       launches `func` so that all its CTAs are resident at once, which kernels that
 *       synchronize between CTAs (nvshmem_barrier_all on the device, a grid-wide wait) need:
 *       cudaLaunchCooperativeKernel (cudaLaunchKernel on a device without cooperative
 *       launch) on `stream`. gridDims all 0: the largest such grid, (gridsize, 1, 1). A grid
 *       larger than the resident limit, or with some but not all of its dimensions 0, or a
 *       block that does not fit at all, is not launched: NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED.
 *       A failed launch: NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED; a failed occupancy query:
 *       NVSHMEMX_ERROR_INTERNAL. The check is this PE's: it does not talk to other PEs
 *       (NVSHMEM's does not either).
 *
 * Both need an initialized library (nvshmemx_init_status()): called before nvshmem_init
 * they return NVSHMEMX_ERROR_INVALID_VALUE (NVSHMEM prints an error and exits the process).
 * Every failure writes one line "NIIN: <function>: <what>" on stderr, naming the values.
 *
 * Differences in form from NVSHMEM: NVSHMEM launches on a stream of its own (highest
 * priority) ordered after `stream` by events, then orders `stream` after the kernel; here
 * the kernel is launched on `stream` itself, which orders it the same way.
 */
#ifndef NIIN_LAUNCH_H
#define NIIN_LAUNCH_H

#include "niin/config.h"
#include "niin/types.h"
#include "niin/host_api.h"

#if defined(NIIN_HAVE_CUDA_RUNTIME_API) && !defined(__CUDACC_RTC__)
#include <cuda_runtime_api.h>
#include <stdio.h>

#ifdef __cplusplus
#define NIIN_LAUNCH_FN inline
#else
#define NIIN_LAUNCH_FN static inline
#endif

/* What the two functions share: the device's resident-CTA limit for `func` launched with
 * blockDims and sharedMem. Returns 0, or the NVSHMEMX_ERROR_* status after a NIIN: line
 * under the name `who`. */
NIIN_LAUNCH_FN int niin_launch_limit(const char *who, const void *func, dim3 blockDims,
                                     size_t sharedMem, int *per_sm, int *sm_count) {
    int device = -1;
    unsigned long long threads =
        (unsigned long long)blockDims.x * blockDims.y * blockDims.z;
    cudaError_t e;
    if (nvshmemx_init_status() != NVSHMEM_STATUS_IS_INITIALIZED) {
        fprintf(stderr, "NIIN: %s: called before nvshmem_init (or after nvshmem_finalize)\n",
                who);
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess) {
        fprintf(stderr, "NIIN: %s: cannot read the current device's SM count: %s (%s)\n", who,
                cudaGetErrorString(e), cudaGetErrorName(e));
        return NVSHMEMX_ERROR_INTERNAL;
    }
    if (threads > 0x7fffffffULL) threads = 0x7fffffffULL; /* the runtime refuses it below */
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, func, (int)threads, sharedMem);
    if (e != cudaSuccess) {
        fprintf(stderr,
                "NIIN: %s: cudaOccupancyMaxActiveBlocksPerMultiprocessor(func %p, %llu threads "
                "(%ux%ux%u), %zu bytes of dynamic shared memory) failed on device %d: %s (%s)\n",
                who, func, threads, blockDims.x, blockDims.y, blockDims.z, sharedMem, device,
                cudaGetErrorString(e), cudaGetErrorName(e));
        return NVSHMEMX_ERROR_INTERNAL;
    }
    return NVSHMEMX_SUCCESS;
}

NIIN_LAUNCH_FN int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims,
                                                             void **args, size_t sharedMem,
                                                             int *gridsize) {
    int per_sm = 0, sm_count = 0, status;
    (void)args; /* as in NVSHMEM: the occupancy does not depend on the arguments */
    if (gridsize == NULL) {
        fprintf(stderr, "NIIN: nvshmemx_collective_launch_query_gridsize: gridsize is NULL\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    status = niin_launch_limit("nvshmemx_collective_launch_query_gridsize", func, blockDims,
                               sharedMem, &per_sm, &sm_count);
    if (status != NVSHMEMX_SUCCESS) return status;
    *gridsize = per_sm * sm_count;
    return NVSHMEMX_SUCCESS;
}

NIIN_LAUNCH_FN int nvshmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims,
                                              void **args, size_t sharedMem,
                                              cudaStream_t stream) {
    static const char who[] = "nvshmemx_collective_launch";
    int per_sm = 0, sm_count = 0, cooperative = 0, device = -1, status;
    unsigned long long ctas = (unsigned long long)gridDims.x * gridDims.y * gridDims.z;
    unsigned long long limit;
    cudaError_t e;
    status = niin_launch_limit(who, func, blockDims, sharedMem, &per_sm, &sm_count);
    if (status != NVSHMEMX_SUCCESS) return status;
    limit = (unsigned long long)per_sm * (unsigned long long)sm_count;
    if (ctas == 0 && (gridDims.x != 0 || gridDims.y != 0 || gridDims.z != 0)) {
        fprintf(stderr,
                "NIIN: %s: grid %ux%ux%u: either every dimension is 0 (the largest resident "
                "grid) or none is\n",
                who, gridDims.x, gridDims.y, gridDims.z);
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    if (limit == 0) {
        fprintf(stderr,
                "NIIN: %s: not one CTA of %ux%ux%u threads with %zu bytes of dynamic shared "
                "memory fits on an SM of this device\n",
                who, blockDims.x, blockDims.y, blockDims.z, sharedMem);
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    if (ctas == 0) {
        gridDims.x = (unsigned int)limit;
        gridDims.y = 1;
        gridDims.z = 1;
    } else if (ctas > limit) {
        fprintf(stderr,
                "NIIN: %s: grid %ux%ux%u (%llu CTAs) exceeds the %llu CTAs of %ux%ux%u threads "
                "(%zu bytes of dynamic shared memory) that can be resident at once on this "
                "device (%d per SM x %d SMs; nvshmemx_collective_launch_query_gridsize says "
                "so)\n",
                who, gridDims.x, gridDims.y, gridDims.z, ctas, limit, blockDims.x, blockDims.y,
                blockDims.z, sharedMem, per_sm, sm_count);
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device);
    if (e == cudaSuccess)
        e = cooperative ? cudaLaunchCooperativeKernel(func, gridDims, blockDims, args, sharedMem,
                                                      stream)
                        : cudaLaunchKernel(func, gridDims, blockDims, args, sharedMem, stream);
    if (e != cudaSuccess) {
        fprintf(stderr, "NIIN: %s: %s of grid %ux%ux%u, block %ux%ux%u failed: %s (%s)\n", who,
                cooperative ? "cudaLaunchCooperativeKernel" : "cudaLaunchKernel", gridDims.x,
                gridDims.y, gridDims.z, blockDims.x, blockDims.y, blockDims.z,
                cudaGetErrorString(e), cudaGetErrorName(e));
        return NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED;
    }
    return NVSHMEMX_SUCCESS;
}

#undef NIIN_LAUNCH_FN
#endif /* NIIN_HAVE_CUDA_RUNTIME_API */

#endif /* NIIN_LAUNCH_H */
