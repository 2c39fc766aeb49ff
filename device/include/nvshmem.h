/*
 * nvshmem.h -- the NVSHMEM API of niin-rs (NVSHMEM implemented over NCCL).
 *
 * The drop-in replacement for NVSHMEM's master include: programs written for NVSHMEM
 * 3.4.5 include this and link libnvshmem_host (-I$NIIN_HOME/include -L$NIIN_HOME/lib
 * -lnvshmem_host). As in NVSHMEM, it declares the whole host API, nvshmemx_* extensions
 * included. Compiles as C11, C++ and CUDA C++; for NVRTC (device code only) the host
 * declarations are left out.
 *
 *   niin/config.h    compile-time policy (NIIN_ON_NOT_IMPLEMENTED), linkage helpers
 *   niin/types.h     NVSHMEM's constants, handles, structures and initializers
 *   niin/host_api.h  the functions of libnvshmem_host
 *
 * The device API (kernels calling nvshmem_* through NCCL) adds its headers here.
 */
#ifndef NIIN_NVSHMEM_H
#define NIIN_NVSHMEM_H

#include "niin/config.h"
#include "niin/types.h"

#if !defined(__CUDACC_RTC__)
#include "niin/host_api.h"
#endif

#endif /* NIIN_NVSHMEM_H */
