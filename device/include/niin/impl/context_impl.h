/*
 * niin/impl/context_impl.h -- how every CUDA translation unit gets its device context.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included by niin/context.h (after the
 * definition of struct niin_device_context); not for direct use.
 *
 * Per translation unit (TU) -- everything below has internal linkage, so each TU that
 * includes nvshmem.h has its own copy, in whole-program builds and with -rdc alike:
 *
 *   niin_ctx_value        __constant__ niin_device_context (anonymous namespace): this TU's
 *                         context, held by value in constant memory (a device function reads
 *                         its fields at fixed addresses through the constant cache, which
 *                         fences do not empty); n_pes == 0 until set
 *   the three hooks       host code compiled here, against this TU's NCCL headers:
 *     create_dev_comm     fills ncclDevCommRequirements from these headers
 *                         (NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER from 2.29.2 on, zeroes
 *                         before), lsaBarrierCount = barrier_count, lsaMultimem when the
 *                         library asks (lsa_multimem: NVLS) and, when the world has
 *                         non-LSA PEs, GIN (ginConnectionType FULL from 2.29.7, ginForceEnable
 *                         before) with barrierCount, ginSignalCount, ginCounterCount; then
 *                         calls ncclDevCommCreate through the pointer the host library hands
 *                         over (the NCCL it loaded: one per process; the application need
 *                         not link libnccl) into storage the host library owns
 *     setup               builds the niin_device_context around that devComm in a one-thread
 *                         kernel of this TU's own module (into device memory), then copies it
 *                         into niin_ctx_value (cudaMemcpyToSymbolAsync), on a private
 *                         non-blocking stream, synchronized; the kernel also fills the LSA
 *                         table (lsa_delta: per LSA peer, the distance from the heap to
 *                         NCCL's peer pointer; cudaMalloc'ed here) from ncclGetPeerPointer,
 *                         and the routing cache from it; in a one-PE world whose NCCL refuses a devComm
 *                         (NCCL 2.28.3 does: "Communicator does not support symmetric
 *                         memory!") the library passes none, and the context goes without
 *                         (has_dev_comm = 0: no PE but self to reach, barriers of one PE)
 *     teardown            zeroes niin_ctx_value the same way, frees the LSA table
 *   the registration      a static object whose constructor calls niin_register_module with
 *                         this TU's hooks, NCCL_VERSION_CODE, sizeof(ncclDevComm) and
 *                         sizeof(ncclDevCommRequirements); its destructor unregisters
 *
 * libnvshmem_host checks each registration against the NCCL it loaded (refusing, with a
 * NIIN: line naming both versions, what cannot work), creates one devComm per distinct
 * header ABI with the first TU of that ABI, calls every TU's setup at the end of
 * nvshmem_init (or at registration, for a TU loaded after init) and its teardown at
 * nvshmem_finalize, then destroys the devComms. niin-ffi/src/modules.rs is that side.
 *
 * Order of construction: in every object nvcc writes, the CUDA runtime's registration of
 * the TU's fatbinary (__sti____cudaRegisterAll) comes before the TU's C++ static
 * initializers in .init_array (checked for nvcc 13.0, -O0/-O3, whole-program and -rdc), so
 * a TU set up from its own registration (loaded after init) can launch its kernel.
 *
 * The hooks make the device's primary context current (cudaSetDevice of the
 * communicator's device) before any CUDA call.
 *
 * Define NIIN_NO_DEVICE_CONTEXT before including nvshmem.h in a TU whose kernels never
 * call the device API: it then registers nothing (and niin_ctx() stays NULL).
 */
#ifndef NIIN_IMPL_CONTEXT_IMPL_H
#define NIIN_IMPL_CONTEXT_IMPL_H

#include "niin/config.h"

#if defined(__CUDACC__)

/* ---- the context ---------------------------------------------------------------------- */

/* This TU's context: all zero (n_pes == 0) before setup and after teardown. In constant
 * memory, which the system fence of nvshmem_quiet leaves cached (common_impl.h,
 * cached_route): kernels cannot write it, so the setup hook builds the context on the device
 * (niin_module_write_context, into device memory) and copies it here with
 * cudaMemcpyToSymbolAsync; a module loaded through the driver API gets the same copy from the
 * host library, which finds the variable by its name (cumodule_impl.h). It is in the
 * anonymous namespace of cumodule_impl.h's entry, so that its mangled name is the entry's
 * with the last component replaced. */
namespace {
__constant__ niin_device_context niin_ctx_value;
}

/* Fills ctx's LSA routing cache (lsa_cache_*) from the LSA table the context routes by
 * (`table`: lsa_size entries, NULL at teardown): its first NIIN_LSA_SLOTS entries. */
static inline __device__ void niin_fill_lsa_cache(niin_device_context *ctx, const long long *table) {
    for (int i = 0; i < NIIN_LSA_SLOTS; i++) ctx->lsa_cache_delta[i] = 0;
    ctx->lsa_cache_first = ctx->my_pe - ctx->lsa_rank;
    ctx->lsa_cache_count = 0;
    if (ctx->n_pes <= 0 || table == nullptr) return;
    const int count = ctx->lsa_size < NIIN_LSA_SLOTS ? ctx->lsa_size : NIIN_LSA_SLOTS;
    for (int i = 0; i < count; i++) ctx->lsa_cache_delta[i] = table[i];
    ctx->lsa_cache_count = static_cast<unsigned int>(count);
}

/* Stops the kernel (__trap(): the host sees cudaErrorLaunchFailure at its next
 * synchronization) after setting the watchdog's second word (c->abort_word[1]): should the
 * CUDA driver never report the stop to the process, the watchdog ends it rather than leave
 * its synchronization waiting for ever (niin-transport/src/lsa/watchdog.rs). */
static inline __device__ __noinline__ void niin_stop_kernel(const niin_device_context *c) {
    if (c->abort_word != nullptr) {
        c->abort_word[1] = 1u;
        __threadfence_system();
    }
    __trap();
}

/* Why a kernel found no context; stops it. */
static inline __device__ __noinline__ void niin_ctx_missing() {
    printf("NIIN: device code of this CUDA module has no niin-rs device context: called before "
           "nvshmem_init or after nvshmem_finalize, in a CUDA context other than the device's "
           "primary one, or the module was refused at init (see its NIIN: line)\n");
    __trap();
}

#if !defined(__CUDACC_RTC__)

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- the hook ABI between a TU and libnvshmem_host ------------------------------------- */
/*
 * Plain C types only: libnvshmem_host (niin-ffi/src/modules.rs, NiinHostInfo and
 * NiinModuleHooks) mirrors both structs; the layouts are checked on both sides. A change
 * of either struct changes NIIN_MODULE_ABI_VERSION. ncclResult_t values travel as int.
 */
#define NIIN_MODULE_ABI_VERSION 8u

/* What the host library hands a TU's hooks. */
typedef struct niin_host_info {
    unsigned int abi_version;       /* NIIN_MODULE_ABI_VERSION of the library */
    unsigned int struct_size;       /* sizeof(niin_host_info) of the library */
    void *nccl_comm;                /* ncclComm_t of the world */
    void *window;                   /* ncclWindow_t of the symmetric heap */
    void *heap_base;                /* device address of this PE's heap */
    size_t heap_size;               /* bytes of the heap */
    int my_pe, n_pes;
    int lsa_size, lsa_rank;         /* this PE's LSA team, as the host library routes */
    int gin_wanted;                 /* non-zero: the world has PEs outside the LSA team */
    unsigned int barrier_count;     /* lsaBarrierCount (and barrierCount with GIN) */
    unsigned int gin_signal_count;  /* ginSignalCount with GIN */
    unsigned int gin_counter_count; /* ginCounterCount with GIN */
    int nccl_version_code;          /* ncclGetVersion of the loaded NCCL */
    int cuda_device;                /* the communicator's CUDA device */
    /* The loaded NCCL's functions (ncclComm_t, requirements, devComm as void pointers). */
    int (*dev_comm_create)(void *comm, const void *reqs, void *dev_comm);
    int (*dev_comm_destroy)(void *comm, const void *dev_comm); /* the library destroys */
    const char *(*get_error_string)(int result);
    const char *(*get_last_error)(void *comm); /* may be NULL */
    /* ABI 2 */
    int put_signal_mode;            /* NIIN_PUT_SIGNAL_MODE: 0 fused, 1 split */
    int team_slots;                 /* entries of team_table */
    void *team_table;               /* device address of the PE's team table (niin_device_team[]) */
    int gin_loopback;               /* NIIN_GIN_LOOPBACK: LSA peers through the GIN proxy */
    unsigned int gin_queue_slots;   /* NIIN_GIN_QUEUE_SLOTS: the GIN queue's slots (power of 2) */
    /* ABI 3 */
    unsigned long long team_sync_offset; /* heap offset of the device team-barrier words
                                            (niin-api World::team_sync_offset) */
    /* ABI 4 */
    unsigned int registered_slots;  /* entries of registered_table */
    void *registered_table;         /* device address of the registered-buffer table
                                       (niin_device_registered[]) */
    /* ABI 5 */
    unsigned long long coll_ll_offset; /* heap offset of the collectives' LL slots
                                          (niin-api World::coll_ll_offset) */
    unsigned int coll_ll_slots;     /* team handles with an LL slot (0: none) */
    unsigned int coll_ll_ring_bytes; /* bytes of each slot's ring, after its header */
    /* ABI 6 */
    int lsa_multimem;               /* non-zero: ask for the LSA team's multimem handle
                                       (ncclDevCommRequirements.lsaMultimem: NVLS, used by
                                       niin/impl/coll_multimem_impl.h) */
    unsigned int reserved6;         /* zero */
    /* ABI 7 */
    unsigned long long world_sync_offset; /* heap offset of the device barrier words of
                                             NVSHMEM_TEAM_WORLD and the LSA team:
                                             barrier_count slots of 16 bytes
                                             (niin/impl/sync_impl.h) */
    volatile unsigned int *abort_word; /* device address of two mapped host words of
                                          libnvshmem_host's watchdog: [0] a dead PE + 1 (0:
                                          none died), [1] set by device code before it
                                          stops a kernel (ABI 8; niin_stop_kernel);
                                          NULL: no watchdog */
    unsigned long long timeout_ns;  /* NIIN_TIMEOUT in ns: a device barrier gives up after
                                       it (0: waits for ever) */
} niin_host_info;

/* What a TU registers. Each function returns 0, or non-zero after writing why into err
 * (errlen bytes, NUL-terminated). */
typedef struct niin_module_hooks {
    unsigned int abi_version;        /* NIIN_MODULE_ABI_VERSION */
    unsigned int struct_size;        /* sizeof(niin_module_hooks) */
    int nccl_version_code;           /* NCCL_VERSION_CODE of the TU's nccl.h */
    unsigned int dev_comm_size;      /* sizeof(ncclDevComm) */
    unsigned int dev_comm_reqs_size; /* sizeof(ncclDevCommRequirements), 0 if not known */
    unsigned int context_size;       /* sizeof(niin_device_context) */
    const char *module_name;         /* the TU's source file, for messages */
    /* ncclDevCommCreate into dev_comm (capacity bytes, zeroed by the library). */
    int (*create_dev_comm)(const niin_host_info *info, void *dev_comm, size_t capacity, char *err,
                           size_t errlen);
    /* Builds this TU's context around dev_comm (created by create_dev_comm of a TU with the
     * same header ABI) and fills the slot. dev_comm is NULL only in a one-PE world whose
     * NCCL refused to create one: the context then has has_dev_comm = 0. */
    int (*setup)(const niin_host_info *info, const void *dev_comm, char *err, size_t errlen);
    /* Clears the slot: zeroes the context (the library destroys the devComm after). */
    int (*teardown)(const niin_host_info *info, char *err, size_t errlen);
    /* ABI 2. The GIN proxy (niin/impl/gin_proxy_impl.h), called by the library's proxy
     * thread: launches this TU's GIN worker when its doorbell rang and none runs. Returns 1
     * while a worker runs, 0 when none does (or the TU has no GIN queue), -1 after writing
     * why into err. stop != 0: makes a running worker exit and waits for it (returns 0). */
    int (*gin_poll)(const niin_host_info *info, int stop, char *err, size_t errlen);
} niin_module_hooks;

NIIN_BEGIN_C_DECLS
/* libnvshmem_host: registers a TU (sets it up at once if the library is initialized).
 * Returns 0 or an NVSHMEMX_ERROR_* status after a NIIN: line. */
int niin_register_module(const niin_module_hooks *hooks);
/* libnvshmem_host: forgets a TU, without calling its hooks. */
void niin_unregister_module(const niin_module_hooks *hooks);
NIIN_END_C_DECLS

#if defined(__LP64__)
NIIN_STATIC_ASSERT(sizeof(niin_host_info) == 208, "niin_host_info is 208 bytes (LP64)");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, world_sync_offset) == 184,
                   "niin_host_info.world_sync_offset at 184");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, abort_word) == 192, "niin_host_info.abort_word at 192");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, timeout_ns) == 200, "niin_host_info.timeout_ns at 200");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, lsa_multimem) == 176,
                   "niin_host_info.lsa_multimem at 176");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, coll_ll_offset) == 160,
                   "niin_host_info.coll_ll_offset at 160");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, coll_ll_slots) == 168,
                   "niin_host_info.coll_ll_slots at 168");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, coll_ll_ring_bytes) == 172,
                   "niin_host_info.coll_ll_ring_bytes at 172");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, registered_slots) == 144,
                   "niin_host_info.registered_slots at 144");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, registered_table) == 152,
                   "niin_host_info.registered_table at 152");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, team_sync_offset) == 136,
                   "niin_host_info.team_sync_offset at 136");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, put_signal_mode) == 112,
                   "niin_host_info.put_signal_mode at 112");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, team_table) == 120, "niin_host_info.team_table at 120");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, gin_queue_slots) == 132,
                   "niin_host_info.gin_queue_slots at 132");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, heap_size) == 32, "niin_host_info.heap_size at 32");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, barrier_count) == 60,
                   "niin_host_info.barrier_count at 60");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, nccl_version_code) == 72,
                   "niin_host_info.nccl_version_code at 72");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, dev_comm_create) == 80,
                   "niin_host_info.dev_comm_create at 80");
NIIN_STATIC_ASSERT(offsetof(niin_host_info, get_last_error) == 104,
                   "niin_host_info.get_last_error at 104");
NIIN_STATIC_ASSERT(sizeof(niin_module_hooks) == 64, "niin_module_hooks is 64 bytes (LP64)");
NIIN_STATIC_ASSERT(offsetof(niin_module_hooks, gin_poll) == 56, "niin_module_hooks.gin_poll at 56");
NIIN_STATIC_ASSERT(offsetof(niin_module_hooks, module_name) == 24,
                   "niin_module_hooks.module_name at 24");
NIIN_STATIC_ASSERT(offsetof(niin_module_hooks, create_dev_comm) == 32,
                   "niin_module_hooks.create_dev_comm at 32");
NIIN_STATIC_ASSERT(offsetof(niin_module_hooks, teardown) == 48,
                   "niin_module_hooks.teardown at 48");
#endif

/* The context fields that come from `info` alone, for both setups of a context (this TU's
 * setup hook below, and a driver-API module's entry, niin/impl/cumodule_impl.h); the
 * devComm and its checks, the LSA table and the GIN queue are the callers'. */
static inline __host__ __device__ void niin_context_from_info(const niin_host_info *info,
                                                              niin_device_context *ctx) {
    ctx->my_pe = info->my_pe;
    ctx->n_pes = info->n_pes;
    ctx->heap_base = static_cast<char *>(info->heap_base);
    ctx->heap_size = info->heap_size;
    ctx->window = static_cast<ncclWindow_t>(info->window);
    ctx->lsa_size = info->lsa_size;
    ctx->lsa_rank = info->lsa_rank;
    ctx->barrier_count = info->barrier_count;
    ctx->gin_enabled = info->gin_wanted != 0;
    ctx->gin_signal_count = info->gin_wanted ? info->gin_signal_count : 0;
    ctx->gin_counter_count = info->gin_wanted ? info->gin_counter_count : 0;
    ctx->put_signal_mode = info->put_signal_mode;
    ctx->team_slots = info->team_slots;
    ctx->teams = static_cast<const niin_device_team *>(info->team_table);
    ctx->barrier_lsa_size = info->lsa_size;
    ctx->team_lsa_rank = info->lsa_rank;
    ctx->team_sync_off = static_cast<size_t>(info->team_sync_offset);
    ctx->registered_slots = static_cast<int>(info->registered_slots);
    ctx->registered = static_cast<const niin_device_registered *>(info->registered_table);
    ctx->coll_ll_off = static_cast<size_t>(info->coll_ll_offset);
    ctx->coll_ll_slots = info->coll_ll_ring_bytes != 0 ? info->coll_ll_slots : 0u;
    ctx->coll_ll_ring = info->coll_ll_ring_bytes;
    ctx->gin_loopback = info->gin_loopback != 0;
    if (ctx->gin_loopback) ctx->gin_enabled = 1;
    ctx->world_sync_off = static_cast<size_t>(info->world_sync_offset);
    ctx->abort_word = info->abort_word;
    ctx->timeout_ns = info->timeout_ns;
}

/* Fills `table` (lsa_size entries) with, for each LSA peer of `ctx`, the distance from the
 * heap to NCCL's mapping of that peer's heap (ncclGetPeerPointer(window, 0, peer) -
 * heap_base; 0 for self, which is reached by address). Returns 0, or i + 1 for the first
 * peer i whose mapping is not one range over the heap (checked at offsets 0 and
 * heap_size - 1): the device API addresses peers as heap offset + distance. One thread. */
static inline __device__ long long niin_lsa_table_fill(const niin_device_context *ctx,
                                                       long long *table) {
    const int first = ctx->my_pe - ctx->lsa_rank;
    const size_t last = ctx->heap_size > 0 ? ctx->heap_size - 1 : 0;
    long long bad = 0;
    for (int i = 0; i < ctx->lsa_size; i++) {
        if (i == ctx->lsa_rank) {
            table[i] = 0;
            continue;
        }
        char *p0 = static_cast<char *>(ncclGetPeerPointer(ctx->window, 0, first + i));
        char *pl = static_cast<char *>(ncclGetPeerPointer(ctx->window, last, first + i));
        if ((p0 == nullptr || pl != p0 + last) && bad == 0) bad = i + 1;
        table[i] = static_cast<long long>(p0 - ctx->heap_base);
    }
    return bad;
}

/* Routes `ctx` by `table` (lsa_size + 1 entries): fills it (niin_lsa_table_fill, whose result
 * also goes into its last entry), points ctx->lsa_delta at it and fills the routing cache
 * from it. Returns that result: 0, or i + 1 for a peer i the device cannot address. For
 * both setups: the setup hook's kernel (niin_module_write_context) and a driver-API
 * module's entry (cumodule_impl.h). One thread. */
static inline __device__ long long niin_context_route(niin_device_context *ctx, long long *table) {
    const long long bad = niin_lsa_table_fill(ctx, table);
    table[ctx->lsa_size] = bad;
    ctx->lsa_delta = table;
    niin_fill_lsa_cache(ctx, table);
    return bad;
}

#if !defined(NIIN_NO_DEVICE_CONTEXT)

#include "niin/impl/gin_worker_impl.h"

/* ---- this TU's hooks ------------------------------------------------------------------- */

namespace {

/* Whether this TU's context is set up, its LSA table, and under NIIN_GIN_LOOPBACK the
 * routing table of self alone (device memory) (host side). */
bool niin_module_is_set_up = false;
long long *niin_module_lsa_table = nullptr;
long long *niin_module_self_table = nullptr;

/* Frees the tables. */
void niin_module_free_tables() {
    if (niin_module_lsa_table != nullptr) cudaFree(niin_module_lsa_table);
    if (niin_module_self_table != nullptr) cudaFree(niin_module_self_table);
    niin_module_lsa_table = nullptr;
    niin_module_self_table = nullptr;
}

/* This TU's GIN proxy (niin/impl/gin_proxy_impl.h), host side: the queue (device memory),
 * the host-mapped control words, the worker's stream and an event recorded after each
 * launch; NULL without a queue. */
niin_gin_queue *niin_gin_queue_dev = nullptr;
niin_gin_control *niin_gin_control_host = nullptr;
cudaStream_t niin_gin_stream = nullptr;
cudaEvent_t niin_gin_event = nullptr;
bool niin_gin_running = false;

/* The GIN worker kernel of this TU's module (<<<1, 32>>>): thread 0 runs the loop, the
 * whole warp under NIIN_GIN_LOOPBACK (gin_worker_impl.h). */
__global__ void niin_gin_worker() { niin::detail::gin_worker_run(niin_ctx_value); }

/* Builds the context `value` in this TU's own module, with its LSA table, into `out`
 * (device memory; the host then copies it into niin_ctx_value). `table` (lsa_size + 1
 * entries; NULL only at teardown) gets, for each LSA peer, the distance from the heap to
 * NCCL's mapping of that peer's heap (ncclGetPeerPointer(window, 0, peer) - heap_base; 0
 * for self, which is reached by address), and in its last entry 0, or i + 1 if peer i's
 * mapping is not contiguous over the heap (checked at offsets 0 and heap_size - 1). */
__global__ void niin_module_write_context(niin_device_context value, long long *table,
                                          niin_device_context *out) {
    if (table != nullptr)
        (void)niin_context_route(&value, table); /* the host reads the result from the table */
    else
        niin_fill_lsa_cache(&value, nullptr);
    *out = value;
}

__attribute__((format(printf, 3, 4))) int niin_module_fail(char *err, size_t errlen,
                                                           const char *format, ...) {
    if (err != nullptr && errlen > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(err, errlen, format, args);
        va_end(args);
    }
    return 1;
}

int niin_module_cuda_failed(cudaError_t e, const char *what, char *err, size_t errlen) {
    return niin_module_fail(err, errlen, "%s failed: %s (%s)", what, cudaGetErrorString(e),
                            cudaGetErrorName(e));
}

/* Makes the communicator's device (its primary context) current for the runtime. */
int niin_module_use_device(const niin_host_info *info, char *err, size_t errlen) {
    int current = -1;
    cudaError_t e = cudaGetDevice(&current);
    if (e != cudaSuccess) return niin_module_cuda_failed(e, "cudaGetDevice", err, errlen);
    if (current == info->cuda_device) return 0;
    e = cudaSetDevice(info->cuda_device);
    if (e != cudaSuccess) return niin_module_cuda_failed(e, "cudaSetDevice", err, errlen);
    return 0;
}

/* Runs niin_module_write_context(*value, table) on a private non-blocking stream, copies
 * what it built into niin_ctx_value, and waits. */
int niin_module_write(const niin_device_context *value, long long *table, char *err,
                      size_t errlen) {
    niin_device_context *built = nullptr;
    cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&built), sizeof *built);
    if (e != cudaSuccess) return niin_module_cuda_failed(e, "cudaMalloc of the context", err, errlen);
    cudaStream_t stream = nullptr;
    e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cudaFree(built);
        return niin_module_cuda_failed(e, "cudaStreamCreateWithFlags", err, errlen);
    }
    niin_device_context copy = *value;
    void *args[] = {&copy, &table, &built};
    const char *what = "launching the kernel that builds the context";
    e = cudaLaunchKernel(niin_module_write_context, dim3(1), dim3(1), args, 0, stream);
    if (e == cudaSuccess) {
        what = "copying the context into constant memory (cudaMemcpyToSymbolAsync)";
        e = cudaMemcpyToSymbolAsync(niin_ctx_value, built, sizeof *built, 0,
                                    cudaMemcpyDeviceToDevice, stream);
    }
    if (e == cudaSuccess) {
        what = "building the context";
        e = cudaStreamSynchronize(stream);
    }
    cudaStreamDestroy(stream);
    cudaFree(built);
    if (e != cudaSuccess) return niin_module_cuda_failed(e, what, err, errlen);
    return 0;
}

/* Zeroes this TU's context (its kernels then find none). */
int niin_module_clear(char *err, size_t errlen) {
    niin_device_context none;
    memset(static_cast<void *>(&none), 0, sizeof none);
    return niin_module_write(&none, nullptr, err, errlen);
}

/* Frees this TU's GIN proxy (the worker must have exited). */
void niin_gin_free() {
    if (niin_gin_queue_dev != nullptr) cudaFree(niin_gin_queue_dev);
    if (niin_gin_control_host != nullptr) cudaFreeHost(niin_gin_control_host);
    if (niin_gin_event != nullptr) cudaEventDestroy(niin_gin_event);
    if (niin_gin_stream != nullptr) cudaStreamDestroy(niin_gin_stream);
    niin_gin_queue_dev = nullptr;
    niin_gin_control_host = nullptr;
    niin_gin_event = nullptr;
    niin_gin_stream = nullptr;
    niin_gin_running = false;
}

/* Makes this TU's GIN proxy: a queue of info->gin_queue_slots slots with barrier arrays for
 * ctx->barrier_count indices, its control words, stream and event. `loopback_table` is the
 * LSA table the worker uses under NIIN_GIN_LOOPBACK. */
int niin_gin_alloc(const niin_host_info *info, const niin_device_context *ctx,
                   const long long *loopback_table, char *err, size_t errlen) {
    const unsigned int slots = info->gin_queue_slots;
    if (slots == 0 || (slots & (slots - 1)) != 0)
        return niin_module_fail(err, errlen, "GIN queue slots %u is not a power of two", slots);
    const unsigned int barriers = ctx->barrier_count > 0 ? ctx->barrier_count : 1;
    const size_t bytes = sizeof(niin_gin_queue) + sizeof(niin_gin_request) * slots +
                         3 * sizeof(unsigned long long) * barriers;
    cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&niin_gin_queue_dev), bytes);
    if (e != cudaSuccess) return niin_module_cuda_failed(e, "cudaMalloc of the GIN queue", err, errlen);
    e = cudaMemset(niin_gin_queue_dev, 0, bytes);
    if (e == cudaSuccess)
        e = cudaHostAlloc(reinterpret_cast<void **>(&niin_gin_control_host), sizeof(niin_gin_control),
                          cudaHostAllocMapped);
    niin_gin_control *control_dev = nullptr;
    if (e == cudaSuccess) {
        niin_gin_control_host->doorbell = 0u;
        niin_gin_control_host->stop = 0u;
        e = cudaHostGetDevicePointer(reinterpret_cast<void **>(&control_dev), niin_gin_control_host, 0);
    }
    /* Load the worker kernel now, and make room for its stack. The proxy launches it while
     * an application kernel spins on its answer, so its launch must not wait for running
     * kernels. Two things would make it wait: under CUDA's lazy loading (the default since
     * CUDA 12.2) a kernel is loaded at its first launch, and loading may synchronize the
     * context; and a kernel that needs a larger per-thread stack than the context holds
     * grows it at launch, which also waits. Asking for the attributes loads the kernel
     * (NCCL queries its own kernels at init, ncclInitKernelsForDevice); the limit is raised
     * here, before any kernel of the application spins. */
    cudaFuncAttributes worker_attributes;
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&worker_attributes, niin_gin_worker);
    size_t stack_limit = 0;
    if (e == cudaSuccess) e = cudaDeviceGetLimit(&stack_limit, cudaLimitStackSize);
    if (e == cudaSuccess && worker_attributes.localSizeBytes > stack_limit)
        e = cudaDeviceSetLimit(cudaLimitStackSize, worker_attributes.localSizeBytes);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&niin_gin_stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&niin_gin_event, cudaEventDisableTiming);
    if (e == cudaSuccess) {
        char *base = reinterpret_cast<char *>(niin_gin_queue_dev);
        niin_gin_queue header;
        memset(static_cast<void *>(&header), 0, sizeof header);
        header.capacity = slots;
        header.barrier_count = barriers;
        header.slots = reinterpret_cast<niin_gin_request *>(base + sizeof(niin_gin_queue));
        unsigned long long *arrays =
            reinterpret_cast<unsigned long long *>(base + sizeof(niin_gin_queue) +
                                                   sizeof(niin_gin_request) * slots);
        header.barrier_epoch = arrays;
        header.barrier_done = arrays + barriers;
        header.barrier_target = arrays + 2 * barriers;
        header.control = control_dev;
        header.loopback_delta = loopback_table;
        header.loopback_first = info->my_pe - info->lsa_rank;
        e = cudaMemcpy(niin_gin_queue_dev, &header, sizeof header, cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess) {
        niin_gin_free();
        return niin_module_cuda_failed(e, "setting up the GIN queue", err, errlen);
    }
    return 0;
}

/* The gin_poll hook (niin_module_hooks). */
int niin_module_gin_poll(const niin_host_info *info, int stop, char *err, size_t errlen) {
    if (niin_gin_queue_dev == nullptr) return 0;
    if (info == nullptr) {
        niin_module_fail(err, errlen, "gin_poll called without info");
        return -1;
    }
    if (niin_module_use_device(info, err, errlen) != 0) return -1;
    if (niin_gin_running) {
        cudaError_t q = cudaEventQuery(niin_gin_event);
        if (q == cudaSuccess) {
            niin_gin_running = false;
        } else if (q != cudaErrorNotReady) {
            niin_module_cuda_failed(q, "the GIN worker", err, errlen);
            return -1;
        }
    }
    if (stop) {
        niin_gin_control_host->stop = 1u;
        cudaError_t e = cudaStreamSynchronize(niin_gin_stream);
        niin_gin_running = false;
        if (e != cudaSuccess) {
            niin_module_cuda_failed(e, "stopping the GIN worker", err, errlen);
            return -1;
        }
        return 0;
    }
    if (!niin_gin_running && niin_gin_control_host->doorbell != 0u) {
        niin_gin_control_host->doorbell = 0u;
        /* the doorbell is cleared before the launch: a request posted from here on rings it
         * again, and one posted before is in the queue the new worker reads */
        niin_gin_worker<<<1, 32, 0, niin_gin_stream>>>();
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaEventRecord(niin_gin_event, niin_gin_stream);
        if (e != cudaSuccess) {
            niin_module_cuda_failed(e, "launching the GIN worker", err, errlen);
            return -1;
        }
        niin_gin_running = true;
    }
    return niin_gin_running ? 1 : 0;
}

int niin_module_create_dev_comm(const niin_host_info *info, void *dev_comm, size_t capacity,
                                char *err, size_t errlen) {
    typedef ncclResult_t (*create_fn)(ncclComm_t, const ncclDevCommRequirements_t *,
                                      ncclDevComm_t *);
    typedef const char *(*error_string_fn)(ncclResult_t);
    typedef const char *(*last_error_fn)(ncclComm_t);
    if (info == nullptr || dev_comm == nullptr)
        return niin_module_fail(err, errlen, "create_dev_comm called without info or storage");
    if (sizeof(ncclDevComm) > capacity)
        return niin_module_fail(err, errlen, "sizeof(ncclDevComm) = %zu exceeds the %zu bytes given",
                                sizeof(ncclDevComm), capacity);
    if (info->dev_comm_create == nullptr)
        return niin_module_fail(err, errlen, "the loaded NCCL has no ncclDevCommCreate");
    int rc = niin_module_use_device(info, err, errlen);
    if (rc != 0) return rc;

    /* Zeroed slack after the struct: NCCL 2.29 reads its own sizeof of requirements, which
     * is larger for older headers; what it reads there is then zero, its defaults. */
    union {
        ncclDevCommRequirements_t reqs;
        unsigned char bytes[1024];
    } u;
    memset(&u, 0, sizeof u);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 2)
    const ncclDevCommRequirements_t defaults = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    u.reqs = defaults;
#endif
    u.reqs.lsaBarrierCount = (int)info->barrier_count;
    u.reqs.lsaMultimem = info->lsa_multimem != 0;
    if (info->gin_wanted) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 7)
        u.reqs.barrierCount = (int)info->barrier_count;
        u.reqs.ginSignalCount = (int)info->gin_signal_count;
        u.reqs.ginCounterCount = (int)info->gin_counter_count;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 7)
        u.reqs.ginConnectionType = NCCL_GIN_CONNECTION_FULL;
#else
        u.reqs.ginForceEnable = true;
#endif
#else
        return niin_module_fail(err, errlen,
                                "this world needs GIN, which NCCL %d.%d.%d's device API does not "
                                "have (it arrives in 2.28.7)",
                                NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#endif
    }
    ncclComm_t comm = static_cast<ncclComm_t>(info->nccl_comm);
    create_fn create = reinterpret_cast<create_fn>(info->dev_comm_create);
    ncclResult_t r = create(comm, &u.reqs, static_cast<ncclDevComm_t *>(dev_comm));
    if (r == ncclSuccess) return 0;
    const char *name = info->get_error_string != nullptr
                           ? reinterpret_cast<error_string_fn>(info->get_error_string)(r)
                           : nullptr;
    const char *last = info->get_last_error != nullptr
                           ? reinterpret_cast<last_error_fn>(info->get_last_error)(comm)
                           : nullptr;
    return niin_module_fail(err, errlen,
                            "ncclDevCommCreate (NCCL %d.%d.%d headers, library %d, lsaBarrierCount "
                            "%u, GIN %s, lsaMultimem %s%s) failed: %s (%d)%s%s",
                            NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, info->nccl_version_code,
                            info->barrier_count, info->gin_wanted ? "on" : "off",
                            info->lsa_multimem ? "on" : "off",
                            info->lsa_multimem ? ": NVSHMEM_DISABLE_NVLS=1 turns it off" : "",
                            name != nullptr ? name : "?", (int)r,
                            last != nullptr && last[0] != '\0' ? ": " : "",
                            last != nullptr ? last : "");
}

int niin_module_setup(const niin_host_info *info, const void *dev_comm, char *err,
                      size_t errlen) {
    if (info == nullptr)
        return niin_module_fail(err, errlen, "setup called without info");
    if (dev_comm == nullptr && info->n_pes != 1)
        return niin_module_fail(err, errlen,
                                "setup called without a devComm in a world of %d PEs (only a "
                                "one-PE world may go without)",
                                info->n_pes);
    if (niin_module_is_set_up)
        return niin_module_fail(err, errlen, "set up twice without a teardown");
    int rc = niin_module_use_device(info, err, errlen);
    if (rc != 0) return rc;

    niin_device_context ctx;
    memset(static_cast<void *>(&ctx), 0, sizeof ctx);
    if (dev_comm != nullptr) {
        memcpy(static_cast<void *>(&ctx.dev_comm), dev_comm, sizeof(ncclDevComm));
        if (ctx.dev_comm.rank != info->my_pe || ctx.dev_comm.nRanks != info->n_pes)
            return niin_module_fail(err, errlen,
                                    "the devComm is rank %d of %d, but this is PE %d of %d",
                                    ctx.dev_comm.rank, ctx.dev_comm.nRanks, info->my_pe,
                                    info->n_pes);
        if (ctx.dev_comm.lsaRank != info->lsa_rank || ctx.dev_comm.lsaSize != info->lsa_size)
            return niin_module_fail(err, errlen,
                                    "NCCL puts this PE at rank %d of an LSA team of %d, the host "
                                    "library at rank %d of %d",
                                    ctx.dev_comm.lsaRank, ctx.dev_comm.lsaSize, info->lsa_rank,
                                    info->lsa_size);
        ctx.has_dev_comm = 1;
    } else if (info->lsa_size != 1 || info->lsa_rank != 0 || info->gin_wanted) {
        return niin_module_fail(err, errlen,
                                "a one-PE world with LSA rank %d of %d and GIN %s", info->lsa_rank,
                                info->lsa_size, info->gin_wanted ? "on" : "off");
    }
    niin_context_from_info(info, &ctx);

    long long *table = nullptr;
    const size_t table_bytes = sizeof(long long) * (static_cast<size_t>(ctx.lsa_size) + 1);
    cudaError_t e = cudaMalloc(reinterpret_cast<void **>(&table), table_bytes);
    if (e != cudaSuccess)
        return niin_module_cuda_failed(e, "cudaMalloc of the LSA table", err, errlen);
    niin_module_lsa_table = table;
    rc = niin_module_write(&ctx, table, err, errlen);
    long long bad = 0;
    if (rc == 0) {
        e = cudaMemcpy(&bad, table + ctx.lsa_size, sizeof bad, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) rc = niin_module_cuda_failed(e, "reading the LSA table", err, errlen);
    }
    if (rc == 0 && bad != 0)
        rc = niin_module_fail(err, errlen,
                              "NCCL's mapping of LSA peer %lld's heap (PE %lld) is not one "
                              "contiguous range: the device API addresses peers as heap offset "
                              "+ a per-peer distance",
                              bad - 1, static_cast<long long>(ctx.my_pe - ctx.lsa_rank) + bad - 1);
    if (rc == 0 && (info->gin_wanted || ctx.gin_loopback)) {
        /* The GIN proxy, then the context again with its queue; under NIIN_GIN_LOOPBACK the
         * routing table is self only (every peer goes through the proxy), and the worker
         * keeps the real one. */
        rc = niin_gin_alloc(info, &ctx, table, err, errlen);
        if (rc == 0) {
            ctx.gin_queue = niin_gin_queue_dev;
            long long *routing = table;
            if (ctx.gin_loopback) {
                ctx.lsa_size = 1;
                ctx.lsa_rank = 0;
                e = cudaMalloc(reinterpret_cast<void **>(&niin_module_self_table),
                               2 * sizeof(long long));
                if (e != cudaSuccess)
                    rc = niin_module_cuda_failed(e, "cudaMalloc of the self table", err, errlen);
                routing = niin_module_self_table;
            }
            if (rc == 0) rc = niin_module_write(&ctx, routing, err, errlen);
        }
    }
    if (rc != 0) {
        char ignored[8];
        (void)niin_module_clear(ignored, sizeof ignored);
        niin_gin_free();
        niin_module_free_tables();
        return rc;
    }
    niin_module_is_set_up = true;
    return 0;
}

int niin_module_teardown(const niin_host_info *info, char *err, size_t errlen) {
    if (!niin_module_is_set_up) return 0;
    if (info == nullptr) return niin_module_fail(err, errlen, "teardown called without info");
    int rc = niin_module_use_device(info, err, errlen);
    if (rc != 0) return rc;
    if (niin_gin_queue_dev != nullptr) {
        char ignored[8];
        (void)niin_module_gin_poll(info, 1, ignored, sizeof ignored);
        niin_gin_free();
    }
    rc = niin_module_clear(err, errlen);
    niin_module_free_tables();
    niin_module_is_set_up = false;
    return rc;
}

const niin_module_hooks niin_module_hooks_of_this_tu = {
    NIIN_MODULE_ABI_VERSION,
    (unsigned int)sizeof(niin_module_hooks),
    NCCL_VERSION_CODE,
    (unsigned int)sizeof(ncclDevComm),
    (unsigned int)sizeof(ncclDevCommRequirements_t),
    (unsigned int)sizeof(niin_device_context),
#if defined(__BASE_FILE__)
    __BASE_FILE__,
#else
    __FILE__,
#endif
    &niin_module_create_dev_comm,
    &niin_module_setup,
    &niin_module_teardown,
    &niin_module_gin_poll,
};

/* Registers this TU when the program (or the library holding it) is loaded. */
struct niin_module_registration {
    niin_module_registration() { (void)niin_register_module(&niin_module_hooks_of_this_tu); }
    ~niin_module_registration() { niin_unregister_module(&niin_module_hooks_of_this_tu); }
};
niin_module_registration niin_module_registration_of_this_tu;

} /* namespace */

#endif /* !NIIN_NO_DEVICE_CONTEXT */
#endif /* !__CUDACC_RTC__ */
#endif /* __CUDACC__ */

#include "niin/impl/cumodule_impl.h"

#endif /* NIIN_IMPL_CONTEXT_IMPL_H */
