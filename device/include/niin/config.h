/*
 * niin/config.h -- compile-time configuration of the niin-rs headers.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h; programs need
 * not include it themselves. Compiles as C11, C++ and CUDA C++.
 *
 * NIIN_ON_NOT_IMPLEMENTED picks what the device API does when a kernel calls an NVSHMEM
 * operation that niin-rs does not implement (on that path or at all). Define it before
 * including nvshmem.h, for example with -DNIIN_ON_NOT_IMPLEMENTED=NIIN_WARN:
 *
 *   NIIN_TRAP  (default)  print what is missing, then __trap(): the kernel stops
 *   NIIN_NOOP             do nothing; value-returning operations return 0
 *   NIIN_WARN             print what is missing, then do nothing (return 0)
 *
 * Host functions that niin-rs does not implement are not declared at all, so using one
 * fails at compile time rather than at run time.
 */
#ifndef NIIN_CONFIG_H
#define NIIN_CONFIG_H

/* The NIIN_ON_NOT_IMPLEMENTED policies. Non-zero, so an undefined name given as the
 * policy (which the preprocessor reads as 0) is caught below. */
#define NIIN_TRAP 1
#define NIIN_NOOP 2
#define NIIN_WARN 3

#ifndef NIIN_ON_NOT_IMPLEMENTED
#define NIIN_ON_NOT_IMPLEMENTED NIIN_TRAP
#endif

#if NIIN_ON_NOT_IMPLEMENTED != NIIN_TRAP && NIIN_ON_NOT_IMPLEMENTED != NIIN_NOOP && \
    NIIN_ON_NOT_IMPLEMENTED != NIIN_WARN
#error "NIIN_ON_NOT_IMPLEMENTED must be NIIN_TRAP, NIIN_NOOP or NIIN_WARN"
#endif

/* NIIN_DEVICE_GIN picks whether the device API compiles its GIN (network) path: 1
 * (default) or 0. With 0, a TU reaches this PE and its LSA (NVLink / PCIe) peers only;
 * transfers to other PEs, and world barriers across LSA teams, go to the
 * NIIN_ON_NOT_IMPLEMENTED policy. Single-node programs lose nothing and gain on two costs
 * of NCCL >= 2.31's GIN device code: registers (a kernel looping over nvshmemx_putmem_block
 * needs ~122 with it, ~56 without, so a 1024-thread launch fails with "too many resources
 * requested" unless the kernel has __launch_bounds__(1024)) and compile time (about 3x). */
#ifndef NIIN_DEVICE_GIN
#define NIIN_DEVICE_GIN 1
#endif
#if NIIN_DEVICE_GIN != 0 && NIIN_DEVICE_GIN != 1
#error "NIIN_DEVICE_GIN must be 0 or 1"
#endif

/* Functions NVSHMEM declares for host and device code alike (nvshmem_my_pe,
 * nvshmem_ptr, nvshmem_quiet, ...). In a device compilation pass they are
 * __host__ __device__, and the device headers define their device side; elsewhere
 * they are plain host functions of libnvshmem_host. */
#if defined(__CUDA_ARCH__)
#define NIIN_HOSTDEVICE __host__ __device__
#else
#define NIIN_HOSTDEVICE
#endif

/* C linkage for the declarations of the host library. */
#ifdef __cplusplus
#define NIIN_BEGIN_C_DECLS extern "C" {
#define NIIN_END_C_DECLS }
#else
#define NIIN_BEGIN_C_DECLS
#define NIIN_END_C_DECLS
#endif

/* Compile-time checks that work in C11 and C++11. */
#ifdef __cplusplus
#define NIIN_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define NIIN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#endif /* NIIN_CONFIG_H */
