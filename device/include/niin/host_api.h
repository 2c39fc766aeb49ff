/*
 * niin/host_api.h -- the host API of libnvshmem_host (niin-rs), with NVSHMEM 3.4.5's
 * signatures.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by nvshmem.h; compiles as
 * C11, C++ and CUDA C++. Only what the library implements is declared, with one exception:
 * nvshmemx_buffer_register_symmetric/_unregister_symmetric, which programs written for
 * NVSHMEM reference, are declared and exported, and fail at run time (see there).
 *
 * Differences in form from NVSHMEM's headers (same calls, same behaviour):
 *   - nvshmem_init, nvshmem_init_thread, nvshmem_finalize and nvshmemx_init_attr are
 *     static inline functions in NVSHMEM that call private entry points; here they are
 *     plain functions exported by libnvshmem_host.
 *   - nvshmemx_init_attr returns an error status where NVSHMEM's inline version exits;
 *     nvshmem_init still exits with status 1 when it fails, as NVSHMEM documents.
 *   - NVSHMEMX_INIT_WITH_MPI_COMM is implemented below, inline, when the application
 *     defines NIIN_HAS_MPI (the library never links MPI).
 *
 * Errors: a failing call writes one line "NIIN: <function>: <problem>" on stderr and
 * returns NVSHMEM's failure value: an NVSHMEMX_ERROR_* status (int-status functions), -1
 * (nvshmem_my_pe, nvshmem_team_n_pes, ...), NULL (pointer functions), or nothing (void).
 *
 * cudaStream_t comes from <cuda_runtime_api.h>, CUmodule and CUlibrary from <cuda.h>, when
 * the compiler finds them; otherwise (a C program on a machine without CUDA, for the CPU
 * mock transport) they are declared here as the same types. Define
 * NIIN_NO_CUDA_RUNTIME_HEADER to never include either. Host C++ that finds CUDA's headers
 * also gets half and __nv_bfloat16 (<cuda_fp16.h>, <cuda_bf16.h>) and their typed
 * _on_stream functions, as with NVSHMEM's headers; C has neither.
 */
#ifndef NIIN_HOST_API_H
#define NIIN_HOST_API_H

#include "niin/config.h"
#include "niin/types.h"

#if !defined(NIIN_NO_CUDA_RUNTIME_HEADER) && defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define NIIN_HAVE_CUDA_RUNTIME_API 1
#endif
#if __has_include(<cuda.h>)
#include <cuda.h>
#define NIIN_HAVE_CUDA_DRIVER_API 1
#endif
#endif
/* half and __nv_bfloat16, for the typed _on_stream declarations below: in CUDA C++, and in
 * host C++ that finds CUDA's headers (NVSHMEM's headers include both unconditionally; they
 * declare nothing in C, so C programs do without the two types). */
#if defined(__CUDACC__)
#define NIIN_HAVE_FP16_TYPES 1
#elif defined(__cplusplus) && defined(NIIN_HAVE_CUDA_RUNTIME_API) && defined(__has_include)
#if __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>)
#define NIIN_HAVE_FP16_TYPES 1
#endif
#endif
#if defined(NIIN_HAVE_FP16_TYPES)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#include "niin/host_device.h"
#if !defined(NIIN_HAVE_CUDA_RUNTIME_API)
/* The CUDA runtime's definition, repeated (an identical typedef is allowed in C11 and
 * C++, so including CUDA's header later is fine). */
typedef struct CUstream_st *cudaStream_t;
#endif
#if !defined(NIIN_HAVE_CUDA_DRIVER_API)
/* The driver API's handles, repeated from <cuda.h> in the same way. */
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;
#elif defined(CUDA_VERSION) && CUDA_VERSION < 12000
/* CUlibrary arrived in CUDA 12.0; NVSHMEM declares it so for older headers. */
typedef void *CUlibrary;
#endif

/* NVSHMEM's error and check macros (NVSHMEMI_ERROR_PRINT, NVSHMEMI_NZ_ERROR_JMP, ...),
 * which NVSHMEM's host/nvshmemx_api.h includes for every includer of nvshmem.h. */
#include "non_abi/nvshmemx_error.h"

NIIN_BEGIN_C_DECLS

/* ---- setup, exit, query ------------------------------------------------------------ */

/* Collective. Environment init: NIIN_TRANSPORT picks the transport, the launcher's
 * NIIN_PE/NIIN_NPES/NIIN_JOB_ID this PE's place (one PE without them). Nests: each call
 * needs a nvshmem_finalize. Exits with status 1 if it fails. */
void nvshmem_init(void);
/* As nvshmem_init, returning 0 or an NVSHMEMX_ERROR_* status; *provided is set to
 * NVSHMEM_THREAD_SERIALIZED. */
int nvshmem_init_thread(int requested, int *provided);
void nvshmem_query_thread(int *provided);
/* Collective; the call matching the first init ends the library. */
void nvshmem_finalize(void);
/* Ends this PE's process with `status` without waiting for the other PEs. */
NIIN_HOSTDEVICE void nvshmem_global_exit(int status);

/* NVSHMEM_STATUS_IS_INITIALIZED or NVSHMEM_STATUS_NOT_INITIALIZED. */
int nvshmemx_init_status(void);
/* flags 0: as nvshmem_init. NVSHMEMX_INIT_WITH_UNIQUEID: join the job that
 * attr->args.uid_args names. Returns 0 or an NVSHMEMX_ERROR_* status. */
int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t *attributes);
int nvshmemx_hostlib_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr);
void nvshmemx_hostlib_finalize(void);
/* One PE makes the ID; the application hands its 128 bytes to every PE. */
int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *uniqueid);
/* Stores rank, rank count and a pointer to the ID (not a copy) in *attr. */
int nvshmemx_set_attr_uniqueid_args(const int myrank, const int nranks,
                                    const nvshmemx_uniqueid_t *uniqueid,
                                    nvshmemx_init_attr_t *attr);

NIIN_HOSTDEVICE int nvshmem_my_pe(void);
NIIN_HOSTDEVICE int nvshmem_n_pes(void);
/* 1.3: the OpenSHMEM specification version. */
NIIN_HOSTDEVICE void nvshmem_info_get_version(int *major, int *minor);
/* Writes NVSHMEM_VENDOR_STRING; `name` holds NVSHMEM_MAX_NAME_LEN bytes. */
NIIN_HOSTDEVICE void nvshmem_info_get_name(char *name);
/* 3.4.5: the NVSHMEM release whose API niin-rs implements. */
NIIN_HOSTDEVICE void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch);

/* ---- symmetric heap (collective; NULL for size 0 and on error) --------------------- */

void *nvshmem_malloc(size_t size);
void *nvshmem_calloc(size_t count, size_t size);
void *nvshmem_align(size_t alignment, size_t size);
void nvshmem_free(void *ptr);
/* Load/store address of `ptr` on `pe`, or NULL when `pe` is not reachable that way. */
NIIN_HOSTDEVICE void *nvshmem_ptr(const void *ptr, int pe);

/* ---- host-initiated RMA (blocking; the _nbi forms complete at once too) ------------ */

/* putmem, getmem and their _nbi forms, the typed and sized put/get/p/g/iput/iget and the
 * atomics: niin/host_device.h, included at the top of this file. */
NIIN_HOSTDEVICE uint64_t nvshmem_signal_fetch(uint64_t *sig_addr);

/* ---- synchronization --------------------------------------------------------------- */

NIIN_HOSTDEVICE void nvshmem_quiet(void);
NIIN_HOSTDEVICE void nvshmem_fence(void);
NIIN_HOSTDEVICE int nvshmem_barrier(nvshmem_team_t team);
NIIN_HOSTDEVICE void nvshmem_barrier_all(void);
NIIN_HOSTDEVICE int nvshmem_team_sync(nvshmem_team_t team);
NIIN_HOSTDEVICE void nvshmem_sync_all(void);
#define nvshmem_sync nvshmem_team_sync

/* ---- teams ------------------------------------------------------------------------- */

NIIN_HOSTDEVICE int nvshmem_team_my_pe(nvshmem_team_t team);
NIIN_HOSTDEVICE int nvshmem_team_n_pes(nvshmem_team_t team);
NIIN_HOSTDEVICE int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
                                              nvshmem_team_t dest_team);
void nvshmem_team_get_config(nvshmem_team_t team, nvshmem_team_config_t *config);
int nvshmem_team_split_strided(nvshmem_team_t parent_team, int PE_start, int PE_stride,
                               int PE_size, const nvshmem_team_config_t *config,
                               long config_mask, nvshmem_team_t *new_team);
int nvshmem_team_split_2d(nvshmem_team_t parent_team, int xrange,
                          const nvshmem_team_config_t *xaxis_config, long xaxis_mask,
                          nvshmem_team_t *xaxis_team,
                          const nvshmem_team_config_t *yaxis_config, long yaxis_mask,
                          nvshmem_team_t *yaxis_team);
void nvshmem_team_destroy(nvshmem_team_t team);
/* Teams of any set of PEs, made by those PEs alone (NVSHMEM 3.4.5): not implemented, as
 * niin-rs's teams are strided. Both return NVSHMEMX_ERROR_NOT_SUPPORTED after a NIIN: line
 * that names the split functions to use; team_init sets *team to NVSHMEM_TEAM_INVALID. */
int nvshmemx_team_get_uniqueid(nvshmemx_team_uniqueid_t *uniqueid);
int nvshmemx_team_init(nvshmem_team_t *team, nvshmem_team_config_t *config, long config_mask,
                       int npes, int pe_idx_in_team);

/* ---- stream-ordered operations (enqueue and return) -------------------------------- */

void nvshmemx_barrier_all_on_stream(cudaStream_t stream);
void nvshmemx_sync_all_on_stream(cudaStream_t stream);
int nvshmemx_barrier_on_stream(nvshmem_team_t team, cudaStream_t stream);
int nvshmemx_team_sync_on_stream(nvshmem_team_t team, cudaStream_t stream);
void nvshmemx_quiet_on_stream(cudaStream_t cstrm);

void nvshmemx_putmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
                               cudaStream_t cstrm);
void nvshmemx_putmem_nbi_on_stream(void *dest, const void *source, size_t bytes, int pe,
                                   cudaStream_t cstrm);
void nvshmemx_getmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
                               cudaStream_t cstrm);
void nvshmemx_getmem_nbi_on_stream(void *dest, const void *source, size_t bytes, int pe,
                                   cudaStream_t cstrm);
void nvshmemx_putmem_signal_on_stream(void *dest, const void *source, size_t bytes,
                                      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                      cudaStream_t cstrm);
void nvshmemx_putmem_signal_nbi_on_stream(void *dest, const void *source, size_t bytes,
                                          uint64_t *sig_addr, uint64_t signal, int sig_op,
                                          int pe, cudaStream_t cstrm);
/* The typed forms (T of NIIN_FOR_EACH_RMA_TYPE; half and __nv_bfloat16 only where CUDA's
 * headers define them: C++ with CUDA's headers) and the sized ones (8 ... 128 bits): the
 * mem forms of nelems * sizeof(T) bytes. iput/iget: element i at dest + i *
 * dst from source + i * sst, strides in elements and at least 1. p takes the value at the
 * call; g is synchronous (the stream's earlier work first), as NVSHMEM's. */
#define NIIN_DECLARE_STREAM_RMA(PREFIX, SUFFIX, TYPE)                                         \
    void PREFIX##put##SUFFIX##_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe, \
                                         cudaStream_t cstrm);                                 \
    void PREFIX##put##SUFFIX##_nbi_on_stream(TYPE *dest, const TYPE *source, size_t nelems,    \
                                             int pe, cudaStream_t cstrm);                     \
    void PREFIX##get##SUFFIX##_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe, \
                                         cudaStream_t cstrm);                                 \
    void PREFIX##get##SUFFIX##_nbi_on_stream(TYPE *dest, const TYPE *source, size_t nelems,    \
                                             int pe, cudaStream_t cstrm);                     \
    void PREFIX##put##SUFFIX##_signal_on_stream(TYPE *dest, const TYPE *source, size_t nelems, \
                                                uint64_t *sig_addr, uint64_t signal,          \
                                                int sig_op, int pe, cudaStream_t cstrm);      \
    void PREFIX##put##SUFFIX##_signal_nbi_on_stream(TYPE *dest, const TYPE *source,            \
                                                    size_t nelems, uint64_t *sig_addr,        \
                                                    uint64_t signal, int sig_op, int pe,      \
                                                    cudaStream_t cstrm);
#define NIIN_DECLARE_TYPED_STREAM_RMA(NAME, TYPE)                                             \
    NIIN_DECLARE_STREAM_RMA(nvshmemx_##NAME##_, , TYPE)                                        \
    void nvshmemx_##NAME##_iput_on_stream(TYPE *dest, const TYPE *source, ptrdiff_t dst,       \
                                          ptrdiff_t sst, size_t nelems, int pe,                \
                                          cudaStream_t cstrm);                                 \
    void nvshmemx_##NAME##_iget_on_stream(TYPE *dest, const TYPE *source, ptrdiff_t dst,       \
                                          ptrdiff_t sst, size_t nelems, int pe,                \
                                          cudaStream_t cstrm);                                 \
    void nvshmemx_##NAME##_p_on_stream(TYPE *dest, const TYPE value, int pe, cudaStream_t cstrm); \
    TYPE nvshmemx_##NAME##_g_on_stream(const TYPE *src, int pe, cudaStream_t cstrm);
#define NIIN_DECLARE_SIZED_STREAM_RMA(BITS, TYPE)                                      \
    NIIN_DECLARE_STREAM_RMA(nvshmemx_, BITS, void)                                     \
    void nvshmemx_iput##BITS##_on_stream(void *dest, const void *source, ptrdiff_t dst, \
                                         ptrdiff_t sst, size_t nelems, int pe,          \
                                         cudaStream_t cstrm);                           \
    void nvshmemx_iget##BITS##_on_stream(void *dest, const void *source, ptrdiff_t dst, \
                                         ptrdiff_t sst, size_t nelems, int pe,          \
                                         cudaStream_t cstrm);
NIIN_FOR_EACH_RMA_TYPE_PLAIN(NIIN_DECLARE_TYPED_STREAM_RMA)
#if defined(NIIN_HAVE_FP16_TYPES)
NIIN_FOR_EACH_RMA_TYPE_FP16(NIIN_DECLARE_TYPED_STREAM_RMA)
#endif
NIIN_FOR_EACH_RMA_SIZE(NIIN_DECLARE_SIZED_STREAM_RMA)
/* Waits of the 14 wait types: the stream's later operations run once this PE's `ivar`
 * satisfies `ivar <cmp> cmp_value`. */
#define NIIN_DECLARE_WAIT_ON_STREAM(NAME, TYPE)                                        \
    void nvshmemx_##NAME##_wait_until_on_stream(TYPE *ivar, int cmp, TYPE cmp_value, \
                                                cudaStream_t cstream);
NIIN_FOR_EACH_WAIT_TYPE(NIIN_DECLARE_WAIT_ON_STREAM)
#undef NIIN_DECLARE_WAIT_ON_STREAM
/* ... for every word of `ivars` whose `status` entry is 0 (every word where `status` is
 * NULL), against `cmp_value` or `cmp_values[i]`. `status` and `cmp_values` are read where
 * they lie when the stream gets to the wait (device memory, or memory the device can read;
 * host memory on the mock), as NVSHMEM's are. */
#define NIIN_DECLARE_WAIT_ALL_ON_STREAM(NAME, TYPE)                                            \
    void nvshmemx_##NAME##_wait_until_all_on_stream(TYPE *ivars, size_t nelems,              \
                                                    const int *status, int cmp,              \
                                                    TYPE cmp_value, cudaStream_t cstream);   \
    void nvshmemx_##NAME##_wait_until_all_vector_on_stream(TYPE *ivars, size_t nelems,       \
                                                           const int *status, int cmp,       \
                                                           TYPE *cmp_values,                 \
                                                           cudaStream_t cstream);
NIIN_FOR_EACH_WAIT_TYPE(NIIN_DECLARE_WAIT_ALL_ON_STREAM)
#undef NIIN_DECLARE_WAIT_ALL_ON_STREAM
#undef NIIN_DECLARE_SIZED_STREAM_RMA
#undef NIIN_DECLARE_TYPED_STREAM_RMA
#undef NIIN_DECLARE_STREAM_RMA

void nvshmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                  cudaStream_t cstrm);
void nvshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                          cudaStream_t cstream);

/* ---- team collectives (NVSHMEM 3.4.5's host/nvshmem_coll_api.h, nvshmemx_coll_api.h) ---- */

/* Collective over `team`: every member calls with the same arguments; dest and source are
 * symmetric; PE_root is the team's. Return 0, or an NVSHMEMX_ERROR_* status. The blocking
 * forms return when dest is complete on this PE and source may be reused (devices too:
 * niin/coll.h has the device bodies and the semantics); the _on_stream forms are ordered on
 * `stream`. reduce/reducescatter: OP and, or, xor for the 14 bitwise reduce types, min, max,
 * sum, prod for the 24 reduce types (NIIN_FOR_EACH_REDUCTION); broadcast, fcollect, alltoall:
 * the 25 RMA types, and the byte forms (nelems counts bytes). half and __nv_bfloat16 only
 * where CUDA's headers define them, as above. */
#define NIIN_DECLARE_HOST_REDUCTION(NAME, TYPE, OP)                                            \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_##OP##_reduce(nvshmem_team_t team, TYPE *dest,         \
                                                       const TYPE *source, size_t nreduce);     \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_##OP##_reducescatter(                                  \
        nvshmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce);                   \
    int nvshmemx_##NAME##_##OP##_reduce_on_stream(nvshmem_team_t team, TYPE *dest,              \
                                                  const TYPE *source, size_t nreduce,           \
                                                  cudaStream_t stream);                         \
    int nvshmemx_##NAME##_##OP##_reducescatter_on_stream(nvshmem_team_t team, TYPE *dest,       \
                                                         const TYPE *source, size_t nreduce,    \
                                                         cudaStream_t stream);
#define NIIN_DECLARE_HOST_COLL_MOVE(NAME, TYPE)                                                \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_broadcast(nvshmem_team_t team, TYPE *dest,             \
                                                   const TYPE *source, size_t nelems,           \
                                                   int PE_root);                                \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_fcollect(nvshmem_team_t team, TYPE *dest,              \
                                                  const TYPE *source, size_t nelems);           \
    NIIN_HOSTDEVICE int nvshmem_##NAME##_alltoall(nvshmem_team_t team, TYPE *dest,              \
                                                  const TYPE *source, size_t nelems);           \
    int nvshmemx_##NAME##_broadcast_on_stream(nvshmem_team_t team, TYPE *dest,                  \
                                              const TYPE *source, size_t nelems, int PE_root,   \
                                              cudaStream_t stream);                             \
    int nvshmemx_##NAME##_fcollect_on_stream(nvshmem_team_t team, TYPE *dest,                   \
                                             const TYPE *source, size_t nelems,                 \
                                             cudaStream_t stream);                              \
    int nvshmemx_##NAME##_alltoall_on_stream(nvshmem_team_t team, TYPE *dest,                   \
                                             const TYPE *source, size_t nelems,                 \
                                             cudaStream_t stream);
NIIN_FOR_EACH_REDUCTION_PLAIN(NIIN_DECLARE_HOST_REDUCTION)
NIIN_FOR_EACH_RMA_TYPE_PLAIN(NIIN_DECLARE_HOST_COLL_MOVE)
#if defined(NIIN_HAVE_FP16_TYPES)
NIIN_FOR_EACH_REDUCTION_FP16(NIIN_DECLARE_HOST_REDUCTION)
NIIN_FOR_EACH_RMA_TYPE_FP16(NIIN_DECLARE_HOST_COLL_MOVE)
#endif
#undef NIIN_DECLARE_HOST_COLL_MOVE
#undef NIIN_DECLARE_HOST_REDUCTION

NIIN_HOSTDEVICE int nvshmem_broadcastmem(nvshmem_team_t team, void *dest, const void *source,
                                         size_t nelems, int PE_root);
NIIN_HOSTDEVICE int nvshmem_fcollectmem(nvshmem_team_t team, void *dest, const void *source,
                                        size_t nelems);
NIIN_HOSTDEVICE int nvshmem_alltoallmem(nvshmem_team_t team, void *dest, const void *source,
                                        size_t nelems);
int nvshmemx_broadcastmem_on_stream(nvshmem_team_t team, void *dest, const void *source,
                                    size_t nelems, int PE_root, cudaStream_t stream);
int nvshmemx_fcollectmem_on_stream(nvshmem_team_t team, void *dest, const void *source,
                                   size_t nelems, cudaStream_t stream);
int nvshmemx_alltoallmem_on_stream(nvshmem_team_t team, void *dest, const void *source,
                                   size_t nelems, cudaStream_t stream);

/* ---- driver-API modules (niin-ffi's cumodule module) -------------------------------- */

/* A CUDA module loaded with the driver API (cuModuleLoad of a cubin, fatbin or PTX built
 * with nvshmem.h) has no host code, so it cannot register its device context as the
 * translation units of the program do: these give it one. Not collective, except that the
 * first module whose NCCL headers no other module of the process shares creates a device
 * communicator for them (ncclDevCommCreate), which every PE must then do at the same point
 * (every PE loading the same module does). The module must be loaded in the primary
 * context of this PE's device, after nvshmem_init; init counts, each needs a finalize, and
 * the last finalize clears the module's context. Call it before unloading the module.
 * Returns 0, or NVSHMEMX_ERROR_INTERNAL after a NIIN: line (as NVSHMEM 3.4.5, whatever the
 * reason). A library (cuLibraryLoad*) is its module in the current context
 * (cuLibraryGetModule). */
int nvshmemx_cumodule_init(CUmodule module);
int nvshmemx_cumodule_finalize(CUmodule module);
int nvshmemx_culibrary_init(CUlibrary library);
int nvshmemx_culibrary_finalize(CUlibrary library);

/* ---- user buffers in the symmetric address space ---------------------------------- */

/* A CUDA VMM allocation (cuMemCreate) of this PE's device made symmetric (collective: the
 * same size on every PE; flags must be 0): the returned alias is an address of the
 * symmetric address space that every operation takes (NCCL transport, worlds of LSA peers;
 * the mock refuses). NULL, or NVSHMEMX_ERROR_INVALID_VALUE from unregister, after a NIIN:
 * line that says why (niin-ffi's symmetric_buffer.rs). */
void *nvshmemx_buffer_register_symmetric(void *buf_ptr, size_t size, int flags);
int nvshmemx_buffer_unregister_symmetric(void *mmap_ptr, size_t size);

/* A local buffer registered as the local side of RMA (not collective): 0, or
 * NVSHMEMX_ERROR_INVALID_VALUE for NULL, 0 bytes or an overlap with a registered buffer;
 * unregister takes the start of a registered buffer. niin-rs's transports take any local
 * memory as that side, so registration changes no transfer (niin-ffi's local_buffer.rs). */
int nvshmemx_buffer_register(void *addr, size_t length);
int nvshmemx_buffer_unregister(void *addr);
void nvshmemx_buffer_unregister_all(void);
/* The NVLink-multicast address of symmetric `ptr` for `team`: NULL (the host library maps
 * no multicast address; NULL is NVSHMEM's answer for a team without multicast). */
NIIN_HOSTDEVICE void *nvshmemx_mc_ptr(nvshmem_team_t team, const void *ptr);

/* ---- niin-rs extensions ------------------------------------------------------------ */

/* Waits until everything enqueued on `stream` has run: cudaStreamSynchronize for
 * programs without a CUDA runtime (the CPU mock transport). Returns 0, or an
 * NVSHMEMX_ERROR_* status naming the first failed operation of the stream. */
int niin_stream_synchronize(cudaStream_t stream);

NIIN_END_C_DECLS

/* Stores the MPI communicator for NVSHMEMX_INIT_WITH_MPI_COMM (NVSHMEM's helper). */
static inline int nvshmemx_set_attr_mpi_comm_args(void *mpi_comm,
                                                  nvshmemx_init_attr_t *nvshmem_attr) {
    if (nvshmem_attr == NULL) return NVSHMEMX_ERROR_INVALID_VALUE;
    nvshmem_attr->mpi_comm = mpi_comm;
    return NVSHMEMX_SUCCESS;
}

/* ---- NVSHMEMX_INIT_WITH_MPI_COMM, done in the application -------------------------- */
/*
 * With -DNIIN_HAS_MPI, nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr) runs this
 * inline code in the application, which links MPI (the library does not): rank 0 of
 * *attr->mpi_comm makes a unique ID, MPI_Bcast hands it (with rank 0's status) to every
 * rank, and each rank calls the unique-ID init with its rank and the communicator's
 * size. MPI must be initialized. Other flags go to the library unchanged. (Only calls
 * are redirected: &nvshmemx_init_attr is still the library's function.)
 */
#if defined(NIIN_HAS_MPI) && !defined(__CUDACC_RTC__)
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* What rank 0 broadcasts: its status, then the ID. */
typedef struct {
    int status;
    nvshmemx_uniqueid_t id;
} niin_mpi_uniqueid_msg_t;

static inline int niin_init_attr_with_mpi(unsigned int flags, nvshmemx_init_attr_t *attr) {
    int initialized = 0, rank = -1, size = 0;
    MPI_Comm comm;
    niin_mpi_uniqueid_msg_t msg;
    nvshmemx_uniqueid_t empty = NVSHMEMX_UNIQUEID_INITIALIZER;
    nvshmemx_init_attr_t uid_attr;

    if ((flags & NVSHMEMX_INIT_WITH_MPI_COMM) == 0) return nvshmemx_init_attr(flags, attr);
    if (attr == NULL || attr->mpi_comm == NULL) {
        fprintf(stderr,
                "NIIN: nvshmemx_init_attr: NVSHMEMX_INIT_WITH_MPI_COMM needs attr->mpi_comm "
                "to point to an MPI_Comm\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized) {
        fprintf(stderr,
                "NIIN: nvshmemx_init_attr: NVSHMEMX_INIT_WITH_MPI_COMM needs MPI_Init to "
                "have been called\n");
        return NVSHMEMX_ERROR_INVALID_VALUE;
    }
    comm = *(MPI_Comm *)attr->mpi_comm;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) {
        fprintf(stderr,
                "NIIN: nvshmemx_init_attr: MPI_Comm_rank/MPI_Comm_size failed on "
                "attr->mpi_comm\n");
        return NVSHMEMX_ERROR_INTERNAL;
    }
    memset(&msg, 0, sizeof msg);
    msg.id = empty;
    if (rank == 0) msg.status = nvshmemx_get_uniqueid(&msg.id);
    if (MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
        fprintf(stderr, "NIIN: nvshmemx_init_attr: MPI_Bcast of the unique ID failed\n");
        return NVSHMEMX_ERROR_INTERNAL;
    }
    if (msg.status != 0) {
        /* Rank 0's nvshmemx_get_uniqueid wrote its own NIIN: line. */
        if (rank != 0)
            fprintf(stderr,
                    "NIIN: nvshmemx_init_attr: rank 0 could not make a unique ID (status "
                    "%d)\n",
                    msg.status);
        return msg.status;
    }
    uid_attr = *attr;
    uid_attr.mpi_comm = NULL;
    nvshmemx_set_attr_uniqueid_args(rank, size, &msg.id, &uid_attr);
    return nvshmemx_init_attr((flags & ~(unsigned int)NVSHMEMX_INIT_WITH_MPI_COMM) |
                                  (unsigned int)NVSHMEMX_INIT_WITH_UNIQUEID,
                              &uid_attr);
}

#define nvshmemx_init_attr(flags, attr) niin_init_attr_with_mpi((flags), (attr))
#endif /* NIIN_HAS_MPI */

#endif /* NIIN_HOST_API_H */
