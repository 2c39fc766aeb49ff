/*
 * niin/amo.h -- device-initiated atomic memory operations (AMOs), for one thread.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h. NVSHMEM 3.4.5's
 * signatures (host/nvshmem_api.h), C linkage; __device__ only (libnvshmem_host has no host
 * AMOs). `dest` is symmetric; `pe` the PE whose copy of it is operated on.
 *
 *   T nvshmem_<T>_atomic_fetch(const T *dest, pe)              an atomic load
 *   void nvshmem_<T>_atomic_set(T *dest, value, pe)            an atomic store
 *   T nvshmem_<T>_atomic_swap(T *dest, value, pe)              store, return the old value
 *   T nvshmem_<T>_atomic_compare_swap(T *dest, cond, value, pe)
 *                                      store value if *dest == cond; return the old value
 *   void nvshmem_<T>_atomic_inc(T *dest, pe), T ..._fetch_inc  add 1
 *   void nvshmem_<T>_atomic_add(T *dest, value, pe), T ..._fetch_add
 *   void nvshmem_<T>_atomic_and / _or / _xor(T *dest, value, pe), T ..._fetch_and / ...
 *
 * Which T (niin/types.h, NVSHMEM's three AMO type lists):
 *   fetch, set, swap                       12 standard + 2 extended types (float, double)
 *   compare_swap, inc, fetch_inc, add, fetch_add     the 12 standard AMO types
 *   and, or, xor, fetch_and, fetch_or, fetch_xor     the 7 bitwise AMO types
 * 144 functions. NVSHMEM 3.4.5 declares no nvshmemx_ device AMO forms (no _nbi, _warp or
 * _block). Its device code has no bodies for {longlong, int64, ptrdiff} x {inc, fetch_inc,
 * add, fetch_add}, which it declares; niin-rs defines them like the others.
 *
 * How: to this PE and to LSA peers (niin/impl/common_impl.h's load/store address), one
 * system-scope atomic instruction of T's width (4 or 8 bytes) on T's bits: atom.sys
 * (atomicAdd/Exch/CAS/And/Or/Xor_system) for the read-modify-write operations, a relaxed
 * system-scope load for fetch and a relaxed system-scope store for set. Signed types add
 * with wrap-around (two's complement), compare_swap compares bits. The operations are
 * atomic with respect to each other, from any PE and any thread, and order nothing else
 * (relaxed, as in NVSHMEM): nvshmem_fence and nvshmem_quiet order and complete them.
 *
 * NOT_IMPLEMENTED policy (niin/not_implemented.h), for PEs outside the LSA team: NCCL GIN
 * has no remote atomic operations (NCCL 2.28-2.31), so none is done; fetching forms return
 * 0 under NIIN_NOOP and NIIN_WARN. A PE that is not a PE of the job, or a call before
 * nvshmem_init, is a usage error (printed, then a trap), as for put and get.
 */
#ifndef NIIN_AMO_H
#define NIIN_AMO_H

#include "niin/config.h"
#include "niin/types.h"

#if defined(__CUDACC__)

/* Declared in niin/host_device.h: every function of this file is a host function too. */
#include "niin/host_device.h"

#include "niin/impl/amo_impl.h"
#endif /* __CUDACC__ */

#endif /* NIIN_AMO_H */
