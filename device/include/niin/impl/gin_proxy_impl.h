/*
 * niin/impl/gin_proxy_impl.h -- the GIN proxy: how device operations reach PEs outside this
 * PE's LSA team without NCCL's GIN code in the application's kernels.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by
 * niin/impl/context_impl.h (after the context), used by niin/impl/gin_impl.h and
 * niin/impl/sync_impl.h.
 *
 * Why (issue 12, part 0; measured with -Xptxas -v, device/README.md "Register budget"):
 * in a whole-program build ptxas gives a kernel the registers of every function it can
 * reach, calls through a function pointer included (a function whose address is taken
 * counts as reachable). NCCL 2.31's GIN device code needs 76-120 registers, so any kernel
 * that could reach it -- every nvshmem_p, put, quiet or barrier -- needed more than the 64
 * a 1024-thread block allows, and failed to launch ("too many resources requested"). A
 * function's registers cannot be capped from a header (-maxrregcount is per TU, .maxnreg
 * per kernel). So the application's kernels never run GIN code: they post a request, and a
 * worker kernel of the same module, with its own register budget, runs it.
 *
 *   caller (any kernel)   gin_post: takes a ticket (atomicAdd on tail), waits for a free
 *                         slot, writes the request, publishes it (release store of seq), and
 *                         rings the doorbell (a store to host-mapped memory). A blocking
 *                         request then waits until `done` passes its ticket. ~25 registers.
 *   worker (this module)  niin_gin_worker<<<1, 32>>>: one thread (the warp under
 *                         NIIN_GIN_LOOPBACK, below) takes requests in ticket
 *                         order and runs them with ncclGin on this module's devComm (put,
 *                         get, putValue, put with VA signal, flush); after a blocking
 *                         request, a FLUSH, or when the queue runs dry it flushes and
 *                         publishes done = head. Cross-node barriers are GIN signals to the
 *                         rail peers, polled without blocking the queue. Exits after
 *                         kGinWorkerIdleNs without work (so cudaDeviceSynchronize in the
 *                         application returns) or when asked to stop.
 *   host proxy thread     libnvshmem_host (niin-ffi/src/gin_proxy.rs) calls each module's
 *                         gin_poll hook (below, context_impl.h): it launches the worker on
 *                         the module's private non-blocking stream when the doorbell rang
 *                         and no worker runs.
 *
 * Ordering: requests are run in ticket order on one GIN context, so NVSHMEM's ordering of
 * one thread's puts holds; nvshmem_fence and nvshmem_quiet post a FLUSH and wait for it.
 * Completion: NCCL's flush makes the sources reusable (NCCL: it does not promise remote
 * arrival); a signal (VA signal) arrives after its put's data.
 *
 * Limits (documented in device/README.md): the worker needs a free slot on some SM for one
 * 32-thread block; a kernel that fills every SM (registers, threads or shared memory) and
 * then waits for a network operation starves it (NVSHMEM's CPU proxy has no such limit; its
 * IBGDA has no proxy at all). Requests in flight at once: the queue's slots
 * (NIIN_GIN_QUEUE_SLOTS, default 1024); a caller waits for a free slot.
 *
 * NIIN_GIN_LOOPBACK=1 (a test mode, niin-ffi): LSA peers are routed through this proxy as if
 * they were remote, and the worker moves the bytes with loads and stores through NCCL's peer
 * pointers instead of GIN. That runs every part but the ncclGin calls on one GPU.
 */
#ifndef NIIN_IMPL_GIN_PROXY_IMPL_H
#define NIIN_IMPL_GIN_PROXY_IMPL_H

#if defined(__CUDACC__)

/* What a request asks the worker to do. */
enum niin_gin_op {
    NIIN_GIN_PUT = 1,        /* bytes from src_off (this PE's heap) to dest_off on pe */
    NIIN_GIN_GET = 2,        /* bytes from src_off on pe to dest_off (this PE's heap) */
    NIIN_GIN_PUT_VALUE = 3,  /* `width` bytes of `value` to dest_off on pe */
    NIIN_GIN_PUT_SIGNAL = 4, /* PUT (bytes may be 0), then sig_op of `value` at sig_off */
    NIIN_GIN_FLUSH = 5,      /* complete everything before it */
    NIIN_GIN_BARRIER = 6,    /* rail barrier `index`, epoch `value` */
    NIIN_GIN_GET_VALUE = 7   /* NIIN_GIN_LOOPBACK only: `width` bytes at src_off on pe into
                                the slot's `value` (nvshmem_<T>_g) */
};

/* Request flags. */
#define NIIN_GIN_BLOCKING 1u /* flush after it and publish done */
#define NIIN_GIN_ABS_SRC 2u  /* NIIN_GIN_LOOPBACK only: src_off is a device address (a put
                                from memory outside the heap) */
#define NIIN_GIN_ABS_DEST 4u /* NIIN_GIN_LOOPBACK only: dest_off is a device address (a get
                                into memory outside the heap) */

/* One slot of the queue: 64 bytes, one cache sector pair. */
struct niin_gin_request {
    unsigned long long seq; /* ticket + 1 once the request is written; 0 or older: empty */
    int op;                 /* niin_gin_op */
    int pe;                 /* target PE (world) */
    unsigned long long dest_off, src_off, bytes;
    unsigned long long sig_off, value;
    int sig_op;             /* NVSHMEM_SIGNAL_SET / _ADD; for PUT_VALUE the width in bytes */
    unsigned int flags;     /* NIIN_GIN_BLOCKING */
};

/* The host-mapped control words of a module's proxy. */
struct niin_gin_control {
    volatile unsigned int doorbell; /* producers store 1; the host clears it before a launch */
    volatile unsigned int stop;     /* the host stores 1 to make the worker exit */
};

/* A module's queue (device memory, one allocation with its slots and barrier arrays). */
struct niin_gin_queue {
    unsigned long long tail;  /* tickets taken (producers, atomicAdd) */
    unsigned long long head;  /* requests the worker has taken (worker, release) */
    unsigned long long done;  /* every ticket below is complete (worker, release) */
    unsigned int capacity;    /* slots, a power of two */
    unsigned int barrier_count;
    struct niin_gin_request *slots;
    unsigned long long *barrier_epoch;  /* per barrier index: epochs begun (the caller) */
    unsigned long long *barrier_done;   /* per barrier index: epochs complete (the worker) */
    unsigned long long *barrier_target; /* per barrier index: signal count awaited, 0 none */
    struct niin_gin_control *control;   /* device address of the host-mapped control */
    const long long *loopback_delta;    /* NIIN_GIN_LOOPBACK: the real LSA table */
    int loopback_first;                 /* its first PE */
};

/* Worker idle time before it exits. */
#define NIIN_GIN_WORKER_IDLE_NS 200000ull

namespace niin {
namespace detail {

__device__ __forceinline__ unsigned long long gin_ld_acquire(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void gin_st_release(unsigned long long *p, unsigned long long v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Posts `r` to this module's queue from one thread; returns its ticket. The caller's
 * earlier stores (a put's source) are made visible system-wide first: the NIC reads them. */
__device__ __noinline__ inline unsigned long long gin_post(const niin_device_context &c,
                                                    niin_gin_request r) {
    niin_gin_queue *q = c.gin_queue;
    __threadfence_system();
    const unsigned long long t = atomicAdd(&q->tail, 1ull);
    while (t - gin_ld_acquire(&q->head) >= q->capacity) {
        q->control->doorbell = 1u;
        __nanosleep(256);
    }
    niin_gin_request *s = &q->slots[t & (q->capacity - 1)];
    s->op = r.op;
    s->pe = r.pe;
    s->dest_off = r.dest_off;
    s->src_off = r.src_off;
    s->bytes = r.bytes;
    s->sig_off = r.sig_off;
    s->value = r.value;
    s->sig_op = r.sig_op;
    s->flags = r.flags;
    gin_st_release(&s->seq, t + 1);
    __threadfence_system();
    q->control->doorbell = 1u;
    return t;
}

/* Waits until request `ticket` of this module's queue is complete. */
__device__ __noinline__ inline void gin_wait_done(const niin_device_context &c, unsigned long long ticket) {
    niin_gin_queue *q = c.gin_queue;
    while (gin_ld_acquire(&q->done) <= ticket) __nanosleep(128);
}

/* Posts a request and, if it is blocking, waits for it. */
__device__ __forceinline__ void gin_submit(const niin_device_context &c, niin_gin_request r) {
    const unsigned long long t = gin_post(c, r);
    if (r.flags & NIIN_GIN_BLOCKING) gin_wait_done(c, t);
}

/* NIIN_GIN_LOOPBACK: a scalar get through the proxy; the worker leaves the value in the
 * request's slot, read once the request is done (a test mode: with NIIN_GIN_QUEUE_SLOTS
 * requests posted after it before this read, the slot could be reused). */
__device__ __noinline__ inline unsigned long long gin_get_value(const niin_device_context &c,
                                                               int pe, unsigned long long off,
                                                               int width) {
    niin_gin_request r = {};
    r.op = NIIN_GIN_GET_VALUE;
    r.pe = pe;
    r.src_off = off;
    r.sig_op = width;
    r.flags = NIIN_GIN_BLOCKING;
    const unsigned long long t = gin_post(c, r);
    gin_wait_done(c, t);
    niin_gin_queue *q = c.gin_queue;
    return *reinterpret_cast<volatile unsigned long long *>(&q->slots[t & (q->capacity - 1)].value);
}

/* The rail part of a barrier across LSA teams, by one thread of the calling CTA: a new
 * epoch of barrier `index`, posted, then awaited. */
__device__ __noinline__ inline void gin_rail_barrier(const niin_device_context &c, unsigned int index) {
    niin_gin_queue *q = c.gin_queue;
    const unsigned long long epoch = q->barrier_epoch[index] + 1;
    q->barrier_epoch[index] = epoch;
    niin_gin_request r = {};
    r.op = NIIN_GIN_BARRIER;
    r.value = epoch;
    r.dest_off = index;
    (void)gin_post(c, r);
    while (gin_ld_acquire(&q->barrier_done[index]) < epoch) __nanosleep(128);
}

} /* namespace detail */
} /* namespace niin */

#endif /* __CUDACC__ */
#endif /* NIIN_IMPL_GIN_PROXY_IMPL_H */
