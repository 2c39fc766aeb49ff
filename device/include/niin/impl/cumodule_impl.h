/*
 * niin/impl/cumodule_impl.h -- the device context of a CUDA module loaded through the
 * driver API (nvshmemx_cumodule_init / nvshmemx_culibrary_init).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Included at the end of
 * niin/impl/context_impl.h; not for direct use. CUDA C++ compiled by nvcc (or clang),
 * not NVRTC: it reads the hook ABI (niin_host_info) of context_impl.h.
 *
 * The problem. A module built with `nvcc -cubin` (or -fatbin, -ptx) from a TU that
 * includes nvshmem.h, then loaded with cuModuleLoad, has no host code: the static
 * registration of context_impl.h never runs, and its kernels would find no context.
 *
 * The entry. Every TU with a device context also defines, in its own module,
 *
 *   __global__ void niin_cumodule_entry(unsigned int op, niin_cumodule_io *io)
 *
 * with internal linkage (an anonymous namespace) and __attribute__((used)) (so that a TU
 * that never launches it neither warns nor loses it). Internal linkage is what lets one
 * program have one per TU in every build: whole-program (one per module), -rdc and
 * nvlink'ed cubins (nvcc renames each TU's copy __nv_static_<TU>__..._niin_cumodule_entry...,
 * so no duplicate definition), and a single -cubin. The price is a name the host cannot
 * predict: libnvshmem_host enumerates the module's functions (cuModuleEnumerateFunctions,
 * cuFuncGetName; a CUDA 12.4 driver) and takes every function whose name contains
 * "niin_cumodule_entry" -- one per TU, each the way to that TU's own niin_ctx_value. An
 * extern "C" entry would have a fixed name, but -rdc refuses two of them ("multiple
 * definition"), and a weak one would reach only one TU's context of an -rdc cubin.
 *
 * The operations (one thread; `io` is mapped host memory the library owns):
 *   NIIN_CUMODULE_QUERY         the TU's header ABI: NIIN_MODULE_ABI_VERSION,
 *                               sizeof(niin_host_info), NCCL_VERSION_CODE, sizeof(ncclDevComm),
 *                               sizeof(ncclDevCommRequirements), sizeof(niin_device_context),
 *                               and whether the context is set up already (a module of the
 *                               program itself, whose host registration did it: the library
 *                               then leaves it alone)
 *   NIIN_CUMODULE_REQUIREMENTS  fills an ncclDevCommRequirements from this TU's headers and
 *                               io->host_info, as the create_dev_comm hook does: the library
 *                               calls ncclDevCommCreate with it when no module of the process
 *                               has these headers' devComm yet
 *   NIIN_CUMODULE_SETUP         builds the context from io->host_info and io->dev_comm (a
 *                               devComm of these headers' layout, created by a module of the
 *                               same header ABI), fills the LSA table at io->lsa_table, and
 *                               writes the context to io->context_out (the setup hook's work,
 *                               done on the device)
 * The context itself is in constant memory, which kernels cannot write: the library copies
 * what SETUP wrote into the TU's niin_ctx_value, and zeroes it at finalize. It finds the
 * variable with cuModuleGetGlobal by a name derived from the entry's: both are in one
 * anonymous namespace, so the two mangled names share everything before the last component
 * ("19niin_cumodule_entryE..." becomes "14niin_ctx_valueE"; -rdc's __nv_static_ prefix
 * included).
 * Each sets io->status (0 or NIIN_CUMODULE_E_*) and io->detail (the values that explain a
 * failure); niin-ffi/src/cumodule.rs turns them into a NIIN: line.
 *
 * Not served: worlds that need GIN (PEs outside the NVLink domain, or NIIN_GIN_LOOPBACK):
 * a module's GIN path needs a GIN queue and a host proxy that launches its worker, which
 * only registered TUs have (their gin_poll hook); SETUP refuses with NIIN_CUMODULE_E_GIN.
 *
 * The two builders below are __host__ __device__, so the registration hooks of
 * context_impl.h could build their requirements and context with the same code.
 */
#ifndef NIIN_IMPL_CUMODULE_IMPL_H
#define NIIN_IMPL_CUMODULE_IMPL_H

#if defined(__CUDACC__) && !defined(__CUDACC_RTC__) && !defined(NIIN_NO_DEVICE_CONTEXT)

#include <string.h>

/* Version of niin_cumodule_io (niin-ffi's cumodule.rs mirrors it; layouts checked on both
 * sides). */
#define NIIN_CUMODULE_IO_VERSION 2u

/* The operations of niin_cumodule_entry. */
#define NIIN_CUMODULE_QUERY 0u
#define NIIN_CUMODULE_REQUIREMENTS 1u
#define NIIN_CUMODULE_SETUP 2u

/* io->status: why an operation failed, with io->detail[] as noted. */
#define NIIN_CUMODULE_OK 0
#define NIIN_CUMODULE_E_IO 1          /* io version, size: not this header's */
#define NIIN_CUMODULE_E_OP 2          /* op: unknown */
#define NIIN_CUMODULE_E_RANKS 3       /* devComm rank, nRanks; my_pe, n_pes: differ */
#define NIIN_CUMODULE_E_LSA 4         /* devComm lsaRank, lsaSize; info's: differ */
#define NIIN_CUMODULE_E_NO_DEV_COMM 5 /* n_pes, lsa_size, lsa_rank, gin_wanted: no devComm
                                         where one is needed (only a one-PE world goes
                                         without) */
#define NIIN_CUMODULE_E_MAPPING 6     /* LSA index, PE: NCCL's mapping of that peer's heap is
                                         not one contiguous range */
#define NIIN_CUMODULE_E_GIN 7         /* gin_wanted, gin_loopback: not served (see above) */
#define NIIN_CUMODULE_E_TABLE 8       /* lsa_size: SETUP without an LSA table */
#define NIIN_CUMODULE_E_GIN_HEADERS 9 /* NCCL_VERSION_CODE: headers without GIN (< 2.28.7) */
#define NIIN_CUMODULE_E_OUTPUT 10     /* SETUP without io->context_out */

/* The bytes exchanged with libnvshmem_host (in its mapped host memory). */
typedef struct niin_cumodule_io {
    unsigned int version;            /* in: NIIN_CUMODULE_IO_VERSION */
    unsigned int size;               /* in: sizeof(niin_cumodule_io) */
    int status;                      /* out: NIIN_CUMODULE_OK or NIIN_CUMODULE_E_* */
    int detail[5];                   /* out: the values that explain a failure */
    /* QUERY, out */
    unsigned int module_abi_version; /* NIIN_MODULE_ABI_VERSION */
    unsigned int host_info_size;     /* sizeof(niin_host_info) */
    int nccl_version_code;           /* NCCL_VERSION_CODE */
    unsigned int dev_comm_size;      /* sizeof(ncclDevComm) */
    unsigned int dev_comm_reqs_size; /* sizeof(ncclDevCommRequirements_t) */
    unsigned int context_size;       /* sizeof(niin_device_context) */
    int already_set_up;              /* the context has n_pes > 0 */
    /* SETUP, in */
    int has_dev_comm;                /* dev_comm holds a devComm (0: a one-PE world whose NCCL
                                        refused one) */
    unsigned long long lsa_table;    /* device address of lsa_size + 1 long longs */
    unsigned long long context_out;  /* device address of context_size bytes: SETUP's output */
    unsigned char reserved[48];
    /* REQUIREMENTS and SETUP, in: the niin_host_info of the attached world */
    unsigned char host_info[512];
    /* REQUIREMENTS, out: an ncclDevCommRequirements of these headers, zero slack after */
    unsigned char reqs[1024];
    /* SETUP, in: the devComm */
    unsigned char dev_comm[4096];
} niin_cumodule_io;

NIIN_STATIC_ASSERT(sizeof(niin_cumodule_io) == 5760, "niin_cumodule_io is 5760 bytes");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, module_abi_version) == 32,
                   "niin_cumodule_io.module_abi_version at 32");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, lsa_table) == 64, "niin_cumodule_io.lsa_table at 64");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, context_out) == 72,
                   "niin_cumodule_io.context_out at 72");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, host_info) == 128, "niin_cumodule_io.host_info at 128");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, reqs) == 640, "niin_cumodule_io.reqs at 640");
NIIN_STATIC_ASSERT(offsetof(niin_cumodule_io, dev_comm) == 1664, "niin_cumodule_io.dev_comm at 1664");
NIIN_STATIC_ASSERT(sizeof(niin_host_info) <= 512, "niin_host_info fits niin_cumodule_io.host_info");
NIIN_STATIC_ASSERT(sizeof(ncclDevCommRequirements_t) <= 1024,
                   "ncclDevCommRequirements fits niin_cumodule_io.reqs");
NIIN_STATIC_ASSERT(sizeof(ncclDevComm) <= 4096, "ncclDevComm fits niin_cumodule_io.dev_comm");

/* Sets *status and up to four details; returns the status. */
static inline __host__ __device__ int niin_cumodule_fail(int *detail, int status, int a, int b,
                                                         int c, int d) {
    detail[0] = a;
    detail[1] = b;
    detail[2] = c;
    detail[3] = d;
    return status;
}

/* The ncclDevCommRequirements these headers want for `info`'s world (what the
 * create_dev_comm hook of context_impl.h passes to ncclDevCommCreate), into `out`, zeroed
 * bytes of `capacity` >= sizeof(ncclDevCommRequirements_t). Returns 0 or
 * NIIN_CUMODULE_E_GIN_HEADERS. */
static inline __host__ __device__ int niin_cumodule_fill_requirements(const niin_host_info *info,
                                                                      void *out, int *detail) {
    ncclDevCommRequirements_t *reqs = static_cast<ncclDevCommRequirements_t *>(out);
    (void)detail; /* set only for headers without GIN */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 2)
    const ncclDevCommRequirements_t defaults = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
    *reqs = defaults;
#endif
    reqs->lsaBarrierCount = (int)info->barrier_count;
    if (info->gin_wanted) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 7)
        reqs->barrierCount = (int)info->barrier_count;
        reqs->ginSignalCount = (int)info->gin_signal_count;
        reqs->ginCounterCount = (int)info->gin_counter_count;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 29, 7)
        reqs->ginConnectionType = NCCL_GIN_CONNECTION_FULL;
#else
        reqs->ginForceEnable = true;
#endif
#else
        return niin_cumodule_fail(detail, NIIN_CUMODULE_E_GIN_HEADERS, NCCL_VERSION_CODE, 0, 0, 0);
#endif
    }
    return NIIN_CUMODULE_OK;
}

/* The context of `info`'s world around `dev_comm` (NULL: a one-PE world whose NCCL refused
 * one), as the setup hook of context_impl.h builds it, without its LSA table and GIN queue.
 * Returns 0 or NIIN_CUMODULE_E_{RANKS,LSA,NO_DEV_COMM} with the values in detail. */
static inline __host__ __device__ int niin_cumodule_build_context(const niin_host_info *info,
                                                                  const ncclDevComm *dev_comm,
                                                                  niin_device_context *ctx,
                                                                  int *detail) {
    memset(static_cast<void *>(ctx), 0, sizeof *ctx);
    if (dev_comm != nullptr) {
        memcpy(static_cast<void *>(&ctx->dev_comm), dev_comm, sizeof(ncclDevComm));
        if (ctx->dev_comm.rank != info->my_pe || ctx->dev_comm.nRanks != info->n_pes)
            return niin_cumodule_fail(detail, NIIN_CUMODULE_E_RANKS, ctx->dev_comm.rank,
                                      ctx->dev_comm.nRanks, info->my_pe, info->n_pes);
        if (ctx->dev_comm.lsaRank != info->lsa_rank || ctx->dev_comm.lsaSize != info->lsa_size)
            return niin_cumodule_fail(detail, NIIN_CUMODULE_E_LSA, ctx->dev_comm.lsaRank,
                                      ctx->dev_comm.lsaSize, info->lsa_rank, info->lsa_size);
        ctx->has_dev_comm = 1;
    } else if (info->n_pes != 1 || info->lsa_size != 1 || info->lsa_rank != 0 ||
               info->gin_wanted) {
        return niin_cumodule_fail(detail, NIIN_CUMODULE_E_NO_DEV_COMM, info->n_pes,
                                  info->lsa_size, info->lsa_rank, info->gin_wanted);
    }
    niin_context_from_info(info, ctx);
    return NIIN_CUMODULE_OK;
}

namespace {

/* SETUP: the context and the LSA table, into io->context_out and io->lsa_table. */
__device__ int niin_cumodule_setup(niin_cumodule_io *io, const niin_host_info *info) {
    int *detail = io->detail;
    if (info->gin_wanted || info->gin_loopback)
        return niin_cumodule_fail(detail, NIIN_CUMODULE_E_GIN, info->gin_wanted,
                                  info->gin_loopback, 0, 0);
    niin_device_context ctx;
    const ncclDevComm *dev_comm =
        io->has_dev_comm ? reinterpret_cast<const ncclDevComm *>(io->dev_comm) : nullptr;
    int status = niin_cumodule_build_context(info, dev_comm, &ctx, detail);
    if (status != NIIN_CUMODULE_OK) return status;
    niin_device_context *out = reinterpret_cast<niin_device_context *>(io->context_out);
    if (out == nullptr) return niin_cumodule_fail(detail, NIIN_CUMODULE_E_OUTPUT, 0, 0, 0, 0);
    long long *table = reinterpret_cast<long long *>(io->lsa_table);
    if (table == nullptr)
        return niin_cumodule_fail(detail, NIIN_CUMODULE_E_TABLE, ctx.lsa_size, 0, 0, 0);
    const long long bad = niin_context_route(&ctx, table);
    if (bad != 0) {
        const int i = static_cast<int>(bad - 1);
        return niin_cumodule_fail(detail, NIIN_CUMODULE_E_MAPPING, i, ctx.my_pe - ctx.lsa_rank + i,
                                  0, 0);
    }
    *out = ctx;
    return NIIN_CUMODULE_OK;
}

/* The entry of this TU's module (see the top of this file). One thread runs it; the launch
 * bounds only hold it to the register budget every kernel of a TU keeps (64, checked by
 * scripts/compile-device-headers.sh): copying a context and a devComm would take 128
 * registers, and a few spills cost nothing in a kernel that runs once. */
__global__ void __launch_bounds__(1024) __attribute__((used))
niin_cumodule_entry(unsigned int op, niin_cumodule_io *io) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    if (io->version != NIIN_CUMODULE_IO_VERSION || io->size != sizeof(niin_cumodule_io)) {
        io->status = niin_cumodule_fail(io->detail, NIIN_CUMODULE_E_IO, (int)io->version,
                                        (int)io->size, 0, 0);
        return;
    }
    niin_host_info info;
    memcpy(static_cast<void *>(&info), io->host_info, sizeof info);
    int status = NIIN_CUMODULE_OK;
    switch (op) {
    case NIIN_CUMODULE_QUERY:
        io->module_abi_version = NIIN_MODULE_ABI_VERSION;
        io->host_info_size = (unsigned int)sizeof(niin_host_info);
        io->nccl_version_code = NCCL_VERSION_CODE;
        io->dev_comm_size = (unsigned int)sizeof(ncclDevComm);
        io->dev_comm_reqs_size = (unsigned int)sizeof(ncclDevCommRequirements_t);
        io->context_size = (unsigned int)sizeof(niin_device_context);
        io->already_set_up = niin_ctx_value.n_pes > 0;
        break;
    case NIIN_CUMODULE_REQUIREMENTS:
        memset(io->reqs, 0, sizeof io->reqs);
        status = niin_cumodule_fill_requirements(&info, io->reqs, io->detail);
        break;
    case NIIN_CUMODULE_SETUP:
        status = niin_cumodule_setup(io, &info);
        break;
    default:
        status = niin_cumodule_fail(io->detail, NIIN_CUMODULE_E_OP, (int)op, 0, 0, 0);
        break;
    }
    io->status = status;
}

} /* namespace */

#endif /* __CUDACC__ && !__CUDACC_RTC__ && !NIIN_NO_DEVICE_CONTEXT */

#endif /* NIIN_IMPL_CUMODULE_IMPL_H */
