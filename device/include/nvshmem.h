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
 *   niin/types.h     NVSHMEM's constants, handles, structures and initializers, and the
 *                    X-macro lists of the RMA, wait, AMO and reduction types
 *   niin/host_api.h  the functions of libnvshmem_host
 *
 * CUDA C++ only (__CUDACC__), the device API: kernels calling nvshmem_* through NCCL's
 * device API (nccl_device.h must be on the include path: -I<nccl>/include). As in
 * NVSHMEM, nvshmem.h declares the nvshmemx_* device functions too.
 *
 *   niin/not_implemented.h  the NIIN_ON_NOT_IMPLEMENTED policies
 *   niin/query.h            nvshmem_my_pe, nvshmem_n_pes, nvshmem_ptr, team queries
 *   niin/rma.h              put and get by one thread (typed, sized, mem, _nbi)
 *   niin/threadgroup.h      put and get by a warp or a block (nvshmemx_*_warp/_block)
 *   niin/sync.h             fence, quiet, barrier_all, sync_all, team barriers
 *   niin/signal.h           put-with-signal, signal_op, signal_fetch, signal_wait_until
 *   niin/wait.h             wait_until and test, their _all/_any/_some[_vector] forms
 *   niin/amo.h              atomic memory operations (nvshmem_<T>_atomic_*)
 *   niin/strided.h          strided put and get (iput, iget)
 *   niin/team.h             team queries and barriers of split teams on the device
 *   niin/coll.h             team collectives: reduce, reducescatter, broadcast, fcollect,
 *                           alltoall (thread, warp, block)
 *
 * Each public header keeps its bodies in niin/impl/ (NCCL's nccl_device/ layout).
 * Define NIIN_NO_DEVICE_API to leave the device API out of a CUDA translation unit whose
 * code only calls the host API (it then needs no NCCL headers, and registers no device
 * context).
 */
#ifndef NIIN_NVSHMEM_H
#define NIIN_NVSHMEM_H

#include "niin/config.h"
#include "niin/types.h"

#if !defined(__CUDACC_RTC__)
#include "niin/host_api.h"
#include "niin/launch.h"
#endif

#if defined(__CUDACC__) && !defined(NIIN_NO_DEVICE_API)
#include "niin/not_implemented.h"
#include "niin/query.h"
#include "niin/rma.h"
#include "niin/threadgroup.h"
#include "niin/sync.h"
#include "niin/signal.h"
#include "niin/wait.h"
#include "niin/amo.h"
#include "niin/strided.h"
#include "niin/team.h"
#include "niin/coll.h"
#endif

#endif /* NIIN_NVSHMEM_H */
