/*
 * niin/not_implemented.h -- what a kernel gets when it calls an NVSHMEM operation that
 * niin-rs does not implement, on that path or at all.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by the device headers; the
 * policy is chosen at compile time with NIIN_ON_NOT_IMPLEMENTED (niin/config.h), defined
 * before including nvshmem.h:
 *
 *   NIIN_TRAP  (default)  one thread of the calling group prints
 *                           NIIN: <function>: not implemented: <why> (block B, thread T)
 *                         and executes __trap(): the kernel stops, and the host sees
 *                         cudaErrorLaunchFailure (or the driver's equivalent) at its next
 *                         synchronization
 *   NIIN_NOOP             nothing is printed or done; a value-returning operation returns 0
 *   NIIN_WARN             the line above is printed (once per call, by one thread of the
 *                         calling group), then nothing is done; value-returning: 0
 *
 * Misuse that no policy can paper over (the device API used before nvshmem_init filled
 * this module's context) always prints and traps: see niin::detail::usage_error.
 */
#ifndef NIIN_NOT_IMPLEMENTED_H
#define NIIN_NOT_IMPLEMENTED_H

#include "niin/config.h"

#if defined(__CUDACC__)
#if !defined(__CUDACC_RTC__)
#include <stdio.h>
#endif

namespace niin {
namespace detail {

#if NIIN_ON_NOT_IMPLEMENTED == NIIN_TRAP
#define NIIN_POLICY_NAME "NIIN_TRAP"
#elif NIIN_ON_NOT_IMPLEMENTED == NIIN_WARN
#define NIIN_POLICY_NAME "NIIN_WARN"
#else
#define NIIN_POLICY_NAME "NIIN_NOOP"
#endif

/* The one line of the NIIN_TRAP and NIIN_WARN policies. */
__device__ __noinline__ inline void print_not_implemented(const char *fn, const char *why) {
    printf("NIIN: %s: not implemented: %s (block %u, thread %u; NIIN_ON_NOT_IMPLEMENTED=%s)\n",
           fn, why, blockIdx.x, threadIdx.x, NIIN_POLICY_NAME);
}

/* Applies the policy for `fn` called by a group of cooperating threads (a scope of
 * niin/impl/common_impl.h, or any type with thread_rank()). Only the group's first
 * thread prints and traps: the trap ends the whole grid, and the others must not trap
 * before the line is written. */
template <typename Coop>
__device__ __forceinline__ void not_implemented(Coop coop, const char *fn, const char *why) {
#if NIIN_ON_NOT_IMPLEMENTED == NIIN_NOOP
    (void)coop;
    (void)fn;
    (void)why;
#else
    if (coop.thread_rank() == 0) {
        print_not_implemented(fn, why);
#if NIIN_ON_NOT_IMPLEMENTED == NIIN_TRAP
        __trap();
#endif
    }
#endif
}

/* The same for a single thread. */
__device__ __forceinline__ void not_implemented(const char *fn, const char *why) {
#if NIIN_ON_NOT_IMPLEMENTED == NIIN_NOOP
    (void)fn;
    (void)why;
#else
    print_not_implemented(fn, why);
#if NIIN_ON_NOT_IMPLEMENTED == NIIN_TRAP
    __trap();
#endif
#endif
}

/* For value-returning operations: applies the policy, then returns T's zero. */
template <typename T>
__device__ __forceinline__ T not_implemented_value(const char *fn, const char *why) {
    not_implemented(fn, why);
    return T();
}

/* Misuse that would otherwise read garbage: printed and trapped under every policy. */
__device__ __noinline__ inline void usage_error(const char *fn, const char *why) {
    printf("NIIN: %s: %s (block %u, thread %u)\n", fn, why, blockIdx.x, threadIdx.x);
    __trap();
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_NOT_IMPLEMENTED_H */
