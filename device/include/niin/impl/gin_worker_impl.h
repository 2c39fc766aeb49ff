/*
 * niin/impl/gin_worker_impl.h -- the GIN worker of a module: the only device code of niin-rs
 * that calls NCCL's GIN API (ncclGin), run by its own kernel, so that its registers are not
 * the application's kernels' (niin/impl/gin_proxy_impl.h says why and how).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by
 * niin/impl/context_impl.h after the context (niin_ctx_value) is defined.
 *
 *   gin_worker_run(c)   the worker's loop (thread 0; the whole warp under
 *                       NIIN_GIN_LOOPBACK, whose copies it shares): requests in ticket order,
 *                       rail barriers polled, flush and `done` when the queue runs dry, exit
 *                       after NIIN_GIN_WORKER_IDLE_NS idle or on control->stop
 *   niin_gin_worker     the kernel: <<<1, 32>>>, every thread calls gin_worker_run
 *
 * Without GIN (headers older than 2.28.7 or NIIN_DEVICE_GIN=0) the worker still serves
 * NIIN_GIN_LOOPBACK; GIN requests cannot be posted then (gin_impl.h applies the
 * NOT_IMPLEMENTED policy before posting).
 */
#ifndef NIIN_IMPL_GIN_WORKER_IMPL_H
#define NIIN_IMPL_GIN_WORKER_IMPL_H

#if defined(__CUDACC__)
#include "niin/impl/clock_impl.h"
#include "niin/impl/gin_proxy_impl.h"

/* NCCL's VA signal (a 64-bit add at window + offset, ordered after the put it comes with):
 * ncclGin_StrongVASignalAdd from 2.30.7, ncclGin_VASignalAdd in 2.29.7-2.30.3, none before.
 * And the plain signal increment of the rail barrier (NCCL-managed signals): Strong from
 * 2.30.7, the older name before. */

namespace niin {
namespace detail {

#if NIIN_USE_GIN && NCCL_VERSION_CODE >= 23007
using gin_va_signal_add = ncclGin_StrongVASignalAdd;
using gin_signal_inc = ncclGin_StrongSignalInc;
#elif NIIN_USE_GIN && NCCL_VERSION_CODE >= 22907
using gin_va_signal_add = ncclGin_VASignalAdd;
using gin_signal_inc = ncclGin_SignalInc;
#elif NIIN_USE_GIN
using gin_signal_inc = ncclGin_SignalInc;
#endif

/* NIIN_GIN_LOOPBACK: the load/store address of heap offset `off` on `pe`. */
__device__ __forceinline__ char *gin_loopback_address(const niin_device_context &c,
                                                      const niin_gin_queue *q, int pe,
                                                      unsigned long long off) {
    return c.heap_base + off + q->loopback_delta[pe - q->loopback_first];
}

/* One request by load/store (NIIN_GIN_LOOPBACK), by the worker's whole warp: the 32 lanes
 * copy the bytes; lane 0 alone does the scalar accesses and the signal, after every lane's
 * system fence and a __syncwarp (so the data is visible before the signal). */
__device__ __forceinline__ void gin_loopback_run(const niin_device_context &c,
                                                 niin_gin_queue *q,
                                                 const niin_gin_request &r, unsigned int lane) {
    const int me = c.my_pe;
    switch (r.op) {
    case NIIN_GIN_PUT:
    case NIIN_GIN_PUT_SIGNAL:
    case NIIN_GIN_GET: {
        const char *src = (r.flags & NIIN_GIN_ABS_SRC)
                              ? reinterpret_cast<const char *>(r.src_off)
                              : gin_loopback_address(c, q, r.op == NIIN_GIN_GET ? r.pe : me,
                                                     r.src_off);
        char *dst = (r.flags & NIIN_GIN_ABS_DEST)
                        ? reinterpret_cast<char *>(r.dest_off)
                        : gin_loopback_address(c, q, r.op == NIIN_GIN_GET ? me : r.pe, r.dest_off);
        unsigned long long done = 0;
        if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0) {
            /* in 8-byte elements: each is single-copy atomic, which the LL lines of the
             * device collectives (coll_ll_impl.h) rely on, as on a network's writes (a
             * uint4 copy is four 4-byte elements to the memory model) */
            const unsigned long long vecs = r.bytes / 16;
            for (unsigned long long v = lane; v < vecs; v += 32)
                reinterpret_cast<ulonglong2 *>(dst)[v] = reinterpret_cast<const ulonglong2 *>(src)[v];
            done = vecs * 16;
        }
        for (unsigned long long i = done + lane; i < r.bytes; i += 32) dst[i] = src[i];
        __threadfence_system();
        __syncwarp();
        if (r.op == NIIN_GIN_PUT_SIGNAL && lane == 0) {
            unsigned long long *sig = reinterpret_cast<unsigned long long *>(
                gin_loopback_address(c, q, r.pe, r.sig_off));
            if (r.sig_op == NVSHMEM_SIGNAL_ADD)
                atomicAdd_system(sig, r.value);
            else
                atomicExch_system(sig, r.value);
        }
        break;
    }
    case NIIN_GIN_PUT_VALUE: {
        if (lane != 0) break;
        char *dst = gin_loopback_address(c, q, r.pe, r.dest_off);
        switch (r.sig_op) {
        case 1: *reinterpret_cast<volatile uint8_t *>(dst) = static_cast<uint8_t>(r.value); break;
        case 2: *reinterpret_cast<volatile uint16_t *>(dst) = static_cast<uint16_t>(r.value); break;
        case 4: *reinterpret_cast<volatile uint32_t *>(dst) = static_cast<uint32_t>(r.value); break;
        default: *reinterpret_cast<volatile uint64_t *>(dst) = r.value; break;
        }
        break;
    }
    case NIIN_GIN_GET_VALUE: {
        if (lane != 0) break;
        const char *src = gin_loopback_address(c, q, r.pe, r.src_off);
        unsigned long long v = 0;
        switch (r.sig_op) {
        case 1: v = *reinterpret_cast<const volatile uint8_t *>(src); break;
        case 2: v = *reinterpret_cast<const volatile uint16_t *>(src); break;
        case 4: v = *reinterpret_cast<const volatile uint32_t *>(src); break;
        default: v = *reinterpret_cast<const volatile uint64_t *>(src); break;
        }
        q->slots[(q->head - 1) & (q->capacity - 1)].value = v; /* the slot just taken */
        break;
    }
    default:
        break; /* FLUSH: the fence after every request; BARRIER: not routed here (LSA) */
    }
    __threadfence_system();
}

/* The worker's loop under NIIN_GIN_LOOPBACK, run by the whole warp: lane 0 takes each
 * request (acquire) and broadcasts that it did, every lane reads it and copies its share
 * (gin_loopback_run), lane 0 publishes head and done. A copy by one thread took seconds for
 * the 16-64 MiB cases of tests/gpu/device_rma.cu (150 s timeouts with 4 PEs). */
__device__ __forceinline__ void gin_loopback_loop(const niin_device_context &c) {
    niin_gin_queue *q = c.gin_queue;
    const unsigned int lane = threadIdx.x & 31u;
    unsigned long long head = q->head;
    unsigned long long idle_since = global_ns();
    bool unflushed = false;
    for (;;) {
        niin_gin_request *s = &q->slots[head & (q->capacity - 1)];
        const int mine = lane == 0 && gin_ld_acquire(&s->seq) == head + 1;
        if (__shfl_sync(0xffffffffu, mine, 0)) {
            __syncwarp(); /* lane 0's acquire orders the slot's contents for every lane */
            const niin_gin_request r = *s;
            head++;
            __syncwarp(); /* every lane has read the slot before it is given back */
            if (lane == 0) gin_st_release(&q->head, head);
            gin_loopback_run(c, q, r, lane);
            unflushed = true;
            if ((r.flags & NIIN_GIN_BLOCKING) || r.op == NIIN_GIN_FLUSH) {
                if (lane == 0) gin_st_release(&q->done, head);
                unflushed = false;
            }
            idle_since = global_ns();
            continue;
        }
        if (unflushed) {
            if (lane == 0) gin_st_release(&q->done, head);
            unflushed = false;
        }
        const int stop = lane == 0 && (q->control->stop != 0u ||
                                       global_ns() - idle_since > NIIN_GIN_WORKER_IDLE_NS);
        if (__shfl_sync(0xffffffffu, stop, 0)) break;
        __nanosleep(64);
    }
    __threadfence_system();
}

#if NIIN_USE_GIN
/* One request through NCCL GIN, on GIN context 0 of this module's devComm. */
__device__ __forceinline__ void gin_nccl_run(const niin_device_context &c, ncclGin &gin,
                                             const niin_gin_request &r) {
    const ncclTeam world = ncclTeamWorld(c.dev_comm);
    const ncclCoopThread coop;
    switch (r.op) {
    case NIIN_GIN_PUT:
        gin.put(world, r.pe, c.window, r.dest_off, c.window, r.src_off, r.bytes, ncclGin_None{},
                ncclGin_None{}, coop);
        break;
    case NIIN_GIN_GET:
#if NIIN_USE_GIN_GET
        gin.get(world, r.pe, c.window, r.src_off, c.window, r.dest_off, r.bytes, coop);
#endif
        break;
    case NIIN_GIN_PUT_VALUE:
        switch (r.sig_op) {
        case 1: gin.putValue(world, r.pe, c.window, r.dest_off, static_cast<uint8_t>(r.value)); break;
        case 2: gin.putValue(world, r.pe, c.window, r.dest_off, static_cast<uint16_t>(r.value)); break;
        case 4: gin.putValue(world, r.pe, c.window, r.dest_off, static_cast<uint32_t>(r.value)); break;
        default: gin.putValue(world, r.pe, c.window, r.dest_off, static_cast<uint64_t>(r.value)); break;
        }
        break;
    case NIIN_GIN_PUT_SIGNAL:
#if NIIN_USE_GIN_VA_SIGNAL
        if (r.sig_op == NVSHMEM_SIGNAL_ADD) {
            /* the data and the signal in one operation (a zero-byte put when there is none) */
            gin.put(world, r.pe, c.window, r.dest_off, c.window, r.src_off, r.bytes,
                    gin_va_signal_add{c.window, r.sig_off, r.value}, ncclGin_None{}, coop);
        } else {
            /* GIN has no remote SET: the data, flushed, then the value (NCCL-VERSIONS.md) */
            if (r.bytes > 0)
                gin.put(world, r.pe, c.window, r.dest_off, c.window, r.src_off, r.bytes,
                        ncclGin_None{}, ncclGin_None{}, coop);
            gin.flush(coop);
            gin.putValue(world, r.pe, c.window, r.sig_off, static_cast<uint64_t>(r.value));
        }
#endif
        break;
    case NIIN_GIN_BARRIER: {
        /* arrive: one signal increment (signal id = barrier index) to every rail peer */
        const ncclTeam rail = ncclTeamRail(c.dev_comm);
        for (int p = 0; p < rail.nRanks; p++)
            if (p != rail.rank)
                gin.signal(rail, p, gin_signal_inc{static_cast<ncclGinSignal_t>(r.dest_off)}, coop);
        break;
    }
    default:
        break; /* FLUSH: the flush below */
    }
}
#endif

/* The worker's loop, called by all 32 threads of the worker: under NIIN_GIN_LOOPBACK the
 * warp's loop above; otherwise thread 0 alone runs the requests through NCCL GIN. */
template <int = 0>
__device__ __noinline__ void gin_worker_run(const niin_device_context &c) {
    niin_gin_queue *q = c.gin_queue;
    if (q == nullptr) return;
    if (c.gin_loopback) {
        gin_loopback_loop(c);
        return;
    }
    if (threadIdx.x != 0) return;
#if NIIN_USE_GIN
    ncclGin gin(c.dev_comm, 0);
    const int rail_peers = ncclTeamRail(c.dev_comm).nRanks - 1;
#endif
    unsigned long long head = q->head;
    unsigned long long idle_since = global_ns();
    bool unflushed = false;
    unsigned int barriers_pending = 0;
    for (;;) {
        niin_gin_request *s = &q->slots[head & (q->capacity - 1)];
        if (gin_ld_acquire(&s->seq) == head + 1) {
            const niin_gin_request r = *s;
            head++;
            gin_st_release(&q->head, head);
#if NIIN_USE_GIN
            gin_nccl_run(c, gin, r);
            if (r.op == NIIN_GIN_BARRIER) {
                const unsigned int b = static_cast<unsigned int>(r.dest_off);
                if (rail_peers == 0) {
                    gin_st_release(&q->barrier_done[b], r.value); /* a rail of one */
                } else {
                    q->barrier_target[b] = r.value * static_cast<unsigned long long>(rail_peers);
                    barriers_pending++;
                }
            }
#endif
            unflushed = true;
            if ((r.flags & NIIN_GIN_BLOCKING) || r.op == NIIN_GIN_FLUSH) {
#if NIIN_USE_GIN
                gin.flush(ncclCoopThread());
#endif
                gin_st_release(&q->done, head);
                unflushed = false;
            }
            idle_since = global_ns();
            continue;
        }
        if (unflushed) {
#if NIIN_USE_GIN
            gin.flush(ncclCoopThread());
#endif
            gin_st_release(&q->done, head);
            unflushed = false;
        }
#if NIIN_USE_GIN
        if (barriers_pending > 0) {
            for (unsigned int b = 0; b < q->barrier_count; b++) {
                const unsigned long long target = q->barrier_target[b];
                if (target == 0) continue;
                if (gin.readSignal(static_cast<ncclGinSignal_t>(b)) >= target) {
                    q->barrier_target[b] = 0;
                    gin_st_release(&q->barrier_done[b], target / rail_peers);
                    barriers_pending--;
                }
            }
            idle_since = global_ns();
        }
#endif
        if (q->control->stop != 0u) break;
        if (barriers_pending == 0 && global_ns() - idle_since > NIIN_GIN_WORKER_IDLE_NS) break;
        __nanosleep(64);
    }
    __threadfence_system();
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */
#endif /* NIIN_IMPL_GIN_WORKER_IMPL_H */
