/*
 * niin/impl/clock_impl.h -- the GPU's nanosecond clock, for the device code that measures
 * time: the GIN worker's idle time (gin_worker_impl.h) and the device barriers'
 * NIIN_TIMEOUT (sync_impl.h).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 */
#ifndef NIIN_IMPL_CLOCK_IMPL_H
#define NIIN_IMPL_CLOCK_IMPL_H

#if defined(__CUDACC__)
namespace niin {
namespace detail {

/* The global timer in nanoseconds (the same on every SM of the GPU). */
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

} /* namespace detail */
} /* namespace niin */
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_CLOCK_IMPL_H */
