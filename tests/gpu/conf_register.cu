// conf_register.cu -- GPU conformance of user buffers made symmetric:
// nvshmemx_buffer_register_symmetric and nvshmemx_buffer_unregister_symmetric.
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5. Every PE makes a CUDA VMM buffer as
// NVSHMEM's own example does (cuMemCreate with a POSIX file-descriptor handle, cuMemMap,
// cuMemSetAccess; driver functions through cudaGetDriverEntryPointByVersion, so nothing
// links libcuda), registers it, and uses the returned alias. Each check reads the result
// through the application's own pointer `buf` (not the alias): the alias and the buffer
// must be the same memory. Groups:
//   - register: the alias is non-NULL, the same distance from an nvshmem_malloc'd object on
//     every PE (symmetric), and nvshmem_ptr(alias, pe) is non-NULL for every PE (all share
//     the GPU) while nvshmem_ptr(buf, me) is NULL (buf itself is not symmetric).
//   - host rma: nvshmem_putmem and nvshmemx_putmem_on_stream into the next PE's alias,
//     nvshmem_getmem from the previous PE's alias.
//   - device rma: 1024-thread blocks (no launch bounds): nvshmemx_putmem_block,
//     nvshmem_int64_p and nvshmemx_getmem_warp on aliases of other PEs.
//   - device signal: nvshmem_putmem_signal into the next PE's alias with the signal word in
//     the alias too; the next PE's nvshmem_signal_wait_until returns, then the data is there.
//   - device atomics: every thread of 2 x 1024 on every PE adds 1 (nvshmem_ulonglong_atomic_add)
//     to a counter in PE 0.s
//     alias: the exact total.
//   - device ptr: nvshmem_ptr on the device equals the host's answer for every PE.
//   - reregister: unregister returns 0; a second buffer registers and takes puts.
//   - errors (niin-rs only; NVSHMEM's answers differ and some abort): a cudaMalloc buffer
//     and size 0 give NULL on every PE, and unregistering twice is an error; a later
//     registration still works.
#include <cuda.h>

#include "conf_harness.h"

namespace {

// The driver functions the test calls, from the runtime's entry-point query.
struct Driver {
    decltype(&cuMemCreate) create = nullptr;
    decltype(&cuMemAddressReserve) reserve = nullptr;
    decltype(&cuMemMap) map = nullptr;
    decltype(&cuMemSetAccess) set_access = nullptr;
    decltype(&cuMemUnmap) unmap = nullptr;
    decltype(&cuMemAddressFree) address_free = nullptr;
    decltype(&cuMemRelease) release = nullptr;
    decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
};

template <typename F>
void entry(const char *name, F *fn) {
    cudaDriverEntryPointQueryResult q;
    void *p = nullptr;
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || p == nullptr) {
        fprintf(stderr, "conf_register: no driver entry point %s\n", name);
        exit(2);
    }
    *fn = reinterpret_cast<F>(p);
}

Driver driver() {
    Driver d;
    entry("cuMemCreate", &d.create);
    entry("cuMemAddressReserve", &d.reserve);
    entry("cuMemMap", &d.map);
    entry("cuMemSetAccess", &d.set_access);
    entry("cuMemUnmap", &d.unmap);
    entry("cuMemAddressFree", &d.address_free);
    entry("cuMemRelease", &d.release);
    entry("cuMemGetAllocationGranularity", &d.granularity);
    return d;
}

#define DRV(call)                                                                            \
    do {                                                                                     \
        CUresult drv_r = (call);                                                             \
        if (drv_r != CUDA_SUCCESS) {                                                         \
            fprintf(stderr, "conf_register: %s failed: %d\n", #call, (int)drv_r);            \
            exit(2);                                                                         \
        }                                                                                    \
    } while (0)

// A VMM buffer of `size` bytes on `dev`, as NVSHMEM's examples/user-buffer.cu makes one.
struct VmmBuffer {
    char *ptr = nullptr;
    size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
};

CUmemAllocationProp vmm_prop(int dev) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

VmmBuffer vmm_alloc(const Driver &d, int dev, size_t size) {
    VmmBuffer b;
    b.size = size;
    CUmemAllocationProp prop = vmm_prop(dev);
    DRV(d.create(&b.handle, size, &prop, 0));
    CUdeviceptr at = 0;
    DRV(d.reserve(&at, size, 0, 0, 0));
    DRV(d.map(at, size, 0, b.handle, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV(d.set_access(at, size, &access, 1));
    b.ptr = reinterpret_cast<char *>(at);
    return b;
}

void vmm_free(const Driver &d, VmmBuffer &b) {
    DRV(d.unmap(reinterpret_cast<CUdeviceptr>(b.ptr), b.size));
    DRV(d.address_free(reinterpret_cast<CUdeviceptr>(b.ptr), b.size));
    DRV(d.release(b.handle));
    b = VmmBuffer{};
}

// The pattern PE `pe` writes at word `i`.
__host__ __device__ long long pattern(int pe, long long i) { return (pe + 1) * 1000003LL + i * 7; }

// Layout of each registered buffer (in long longs).
constexpr long long kHostWords = 4096;   // [0, 4096): host putmem from the previous PE
constexpr long long kStreamWords = 4096; // then: putmem_on_stream from the previous PE
constexpr long long kBlockWords = 65536; // then: putmem_block from the previous PE
constexpr long long kPWords = 1024;      // then: int64_p from the previous PE
constexpr long long kSigWords = 8192;    // then: putmem_signal payload, then the signal word
constexpr long long kHostAt = 0;
constexpr long long kStreamAt = kHostAt + kHostWords;
constexpr long long kBlockAt = kStreamAt + kStreamWords;
constexpr long long kPAt = kBlockAt + kBlockWords;
constexpr long long kSigDataAt = kPAt + kPWords;
constexpr long long kSigWordAt = kSigDataAt + kSigWords;
constexpr long long kCounterAt = kSigWordAt + 8;
constexpr long long kUsedWords = kCounterAt + 8;

__global__ void fill_kernel(long long *dst, int pe, long long first, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        dst[i] = pattern(pe, first + i);
}

// One 1024-thread block: putmem_block of `n` words to `to`'s alias, and int64_p of kPWords.
__global__ void put_kernel(long long *alias, const long long *src, long long n, int to) {
    nvshmemx_putmem_block(alias + kBlockAt, src, n * sizeof(long long), to);
    for (long long i = threadIdx.x; i < kPWords; i += blockDim.x)
        nvshmem_int64_p(reinterpret_cast<int64_t *>(alias + kPAt + i), pattern(nvshmem_my_pe(), kPAt + i), to);
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
}

// Each warp of one 1024-thread block gets a slice of `from`'s host-put words into `out`.
__global__ void get_kernel(long long *out, long long *alias, int from) {
    const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const long long per = kHostWords / warps;
    nvshmemx_getmem_warp(out + warp * per, alias + kHostAt + warp * per, per * sizeof(long long),
                         from);
}

// Thread block 0: putmem_signal (block scope) to `to`; every PE then waits for its own word.
__global__ void signal_kernel(long long *alias, const long long *src, int to, unsigned long long *seen) {
    nvshmemx_putmem_signal_block(alias + kSigDataAt, src, kSigWords * sizeof(long long),
                                 reinterpret_cast<uint64_t *>(alias + kSigWordAt), 7,
                                 NVSHMEM_SIGNAL_SET, to);
    if (threadIdx.x == 0) {
        *seen = nvshmem_signal_wait_until(reinterpret_cast<uint64_t *>(alias + kSigWordAt),
                                          NVSHMEM_CMP_EQ, 7);
    }
}

// Every thread adds 1 to PE 0's counter.
__global__ void atomic_kernel(long long *alias) {
    nvshmem_ulonglong_atomic_add(reinterpret_cast<unsigned long long *>(alias + kCounterAt), 1ULL, 0);
}

__global__ void ptr_kernel(long long *alias, void **out, int npes) {
    if (threadIdx.x < npes) out[threadIdx.x] = nvshmem_ptr(alias, threadIdx.x);
}

std::vector<long long> read_back(const long long *p, long long n) {
    std::vector<long long> v(n);
    TEST_CUDA(cudaMemcpy(v.data(), p, n * sizeof(long long), cudaMemcpyDeviceToHost));
    return v;
}

// Counts the words of `got` that differ from pattern(pe, first + i).
long long mismatches(const std::vector<long long> &got, int pe, long long first) {
    long long bad = 0;
    for (size_t i = 0; i < got.size(); i++) bad += got[i] != pattern(pe, first + (long long)i);
    return bad;
}

} // namespace

int main() {
    conf_begin("conf_register");
    const int me = g_conf_me, npes = g_conf_npes;
    const int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    int dev = 0;
    TEST_CUDA(cudaGetDevice(&dev));
    const Driver d = driver();
    size_t gran = 0;
    CUmemAllocationProp prop = vmm_prop(dev);
    DRV(d.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const size_t need = kUsedWords * sizeof(long long);
    const size_t size = (need + gran - 1) / gran * gran;

    // ---- register ------------------------------------------------------------------------
    ConfGroup &reg = conf_group("register");
    VmmBuffer buf = vmm_alloc(d, dev, size);
    TEST_CUDA(cudaMemset(buf.ptr, 0, size));
    TEST_CUDA(cudaDeviceSynchronize());
    auto *alias = static_cast<long long *>(nvshmemx_buffer_register_symmetric(buf.ptr, size, 0));
    conf_check(reg, alias != nullptr, "nvshmemx_buffer_register_symmetric(%p, %zu, 0) = NULL",
               buf.ptr, size);
    if (alias == nullptr) return conf_end();
    // Symmetric: the same distance from a heap object on every PE.
    auto *anchor = static_cast<long long *>(nvshmem_malloc(64));
    auto *dist = static_cast<long long *>(nvshmem_malloc(sizeof(long long) * 64));
    const long long mine = reinterpret_cast<char *>(alias) - reinterpret_cast<char *>(anchor);
    std::vector<long long> all(npes);
    for (int pe = 0; pe < npes; pe++) nvshmem_putmem(dist + me, &mine, sizeof mine, pe);
    nvshmem_barrier_all();
    TEST_CUDA(cudaMemcpy(all.data(), dist, npes * sizeof(long long), cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < npes; pe++)
        conf_check(reg, all[pe] == mine, "alias - anchor is %lld on PE %d, %lld here", all[pe], pe,
                   mine);
    for (int pe = 0; pe < npes; pe++)
        conf_check(reg, nvshmem_ptr(alias, pe) != nullptr, "nvshmem_ptr(alias, %d) = NULL", pe);
    conf_check(reg, nvshmem_ptr(buf.ptr, me) == nullptr,
               "nvshmem_ptr(buf, me) = %p: the application's own address is not symmetric",
               nvshmem_ptr(buf.ptr, me));

    // ---- host rma ------------------------------------------------------------------------
    ConfGroup &host = conf_group("host rma");
    long long *src = nullptr;
    TEST_CUDA(cudaMalloc(&src, kBlockWords * sizeof(long long)));
    fill_kernel<<<64, 256>>>(src, me, kHostAt, kHostWords);
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_putmem(alias + kHostAt, src, kHostWords * sizeof(long long), next);
    fill_kernel<<<64, 256>>>(src, me, kStreamAt, kStreamWords);
    TEST_CUDA(cudaDeviceSynchronize());
    cudaStream_t stream;
    TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    nvshmemx_putmem_on_stream(alias + kStreamAt, src, kStreamWords * sizeof(long long), next, stream);
    TEST_CUDA(cudaStreamSynchronize(stream));
    nvshmem_barrier_all();
    const long long *mybuf = reinterpret_cast<const long long *>(buf.ptr);
    long long bad = mismatches(read_back(mybuf + kHostAt, kHostWords), prev, kHostAt);
    conf_check(host, bad == 0, "nvshmem_putmem from PE %d: %lld of %lld words wrong", prev, bad,
               kHostWords);
    bad = mismatches(read_back(mybuf + kStreamAt, kStreamWords), prev, kStreamAt);
    conf_check(host, bad == 0, "nvshmemx_putmem_on_stream from PE %d: %lld of %lld words wrong",
               prev, bad, kStreamWords);
    std::vector<long long> got(kHostWords);
    nvshmem_getmem(got.data(), alias + kHostAt, kHostWords * sizeof(long long), next);
    // The next PE's host words came from this PE.
    bad = mismatches(got, me, kHostAt);
    conf_check(host, bad == 0, "nvshmem_getmem from PE %d: %lld of %lld words wrong", next, bad,
               kHostWords);

    // ---- device rma ----------------------------------------------------------------------
    ConfGroup &dev_rma = conf_group("device rma");
    fill_kernel<<<64, 256>>>(src, me, kBlockAt, kBlockWords);
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    CONF_LAUNCH(dev_rma, put_kernel, 1, 1024, alias, src, kBlockWords, next);
    nvshmem_barrier_all();
    bad = mismatches(read_back(mybuf + kBlockAt, kBlockWords), prev, kBlockAt);
    conf_check(dev_rma, bad == 0, "nvshmemx_putmem_block from PE %d: %lld of %lld words wrong",
               prev, bad, kBlockWords);
    bad = mismatches(read_back(mybuf + kPAt, kPWords), prev, kPAt);
    conf_check(dev_rma, bad == 0, "nvshmem_int64_p from PE %d: %lld of %lld words wrong", prev,
               bad, kPWords);
    long long *out = nullptr;
    TEST_CUDA(cudaMalloc(&out, kHostWords * sizeof(long long)));
    CONF_LAUNCH(dev_rma, get_kernel, 1, 1024, out, alias, next);
    bad = mismatches(read_back(out, kHostWords), me, kHostAt);
    conf_check(dev_rma, bad == 0, "nvshmemx_getmem_warp from PE %d: %lld of %lld words wrong",
               next, bad, kHostWords);

    // ---- device signal -------------------------------------------------------------------
    ConfGroup &sig = conf_group("device signal");
    fill_kernel<<<64, 256>>>(src, me, kSigDataAt, kSigWords);
    unsigned long long *seen = nullptr;
    TEST_CUDA(cudaMalloc(&seen, sizeof *seen));
    TEST_CUDA(cudaMemset(seen, 0, sizeof *seen));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    // Every PE's kernel waits for the previous PE's signal: the kernels run together (one
    // GPU; a 1-block kernel per PE fits beside the others).
    CONF_LAUNCH(sig, signal_kernel, 1, 1024, alias, src, next, seen);
    unsigned long long seen_h = 0;
    TEST_CUDA(cudaMemcpy(&seen_h, seen, sizeof seen_h, cudaMemcpyDeviceToHost));
    conf_check(sig, seen_h == 7, "nvshmem_signal_wait_until on the alias returned %llu, not 7",
               seen_h);
    bad = mismatches(read_back(mybuf + kSigDataAt, kSigWords), prev, kSigDataAt);
    conf_check(sig, bad == 0, "nvshmemx_putmem_signal_block from PE %d: %lld of %lld words wrong",
               prev, bad, kSigWords);

    // ---- device atomics ------------------------------------------------------------------
    ConfGroup &amo = conf_group("device atomics");
    nvshmem_barrier_all();
    CONF_LAUNCH(amo, atomic_kernel, 2, 1024, alias);
    nvshmem_barrier_all();
    if (me == 0) {
        long long total = read_back(mybuf + kCounterAt, 1)[0];
        conf_check(amo, total == 2048LL * npes,
                   "nvshmem_ulonglong_atomic_add from %d PEs x 2048 threads: total %lld, not %lld",
                   npes, total, 2048LL * npes);
    }

    // ---- device ptr ----------------------------------------------------------------------
    ConfGroup &dptr = conf_group("device ptr");
    void **ptrs = nullptr;
    TEST_CUDA(cudaMalloc(&ptrs, npes * sizeof(void *)));
    CONF_LAUNCH(dptr, ptr_kernel, 1, 1024, alias, ptrs, npes);
    std::vector<void *> dev_ptrs(npes);
    TEST_CUDA(cudaMemcpy(dev_ptrs.data(), ptrs, npes * sizeof(void *), cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < npes; pe++)
        conf_check(dptr, dev_ptrs[pe] != nullptr && dev_ptrs[pe] == nvshmem_ptr(alias, pe),
                   "device nvshmem_ptr(alias, %d) = %p, host %p", pe, dev_ptrs[pe],
                   nvshmem_ptr(alias, pe));

    // ---- reregister ----------------------------------------------------------------------
    ConfGroup &rereg = conf_group("reregister");
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    int status = nvshmemx_buffer_unregister_symmetric(alias, size);
    conf_check(rereg, status == 0, "nvshmemx_buffer_unregister_symmetric = %d", status);
    VmmBuffer second = vmm_alloc(d, dev, 2 * size);
    TEST_CUDA(cudaMemset(second.ptr, 0, second.size));
    TEST_CUDA(cudaDeviceSynchronize());
    auto *alias2 =
        static_cast<long long *>(nvshmemx_buffer_register_symmetric(second.ptr, second.size, 0));
    conf_check(rereg, alias2 != nullptr, "a second registration (%zu bytes) = NULL", second.size);
    if (alias2 != nullptr) {
        fill_kernel<<<64, 256>>>(src, me, 0, kHostWords);
        TEST_CUDA(cudaDeviceSynchronize());
        // The far end of the second buffer: past the first buffer's size.
        long long *at = alias2 + (second.size / sizeof(long long)) - kHostWords;
        nvshmem_putmem(at, src, kHostWords * sizeof(long long), next);
        nvshmem_barrier_all();
        const long long *mine2 =
            reinterpret_cast<const long long *>(second.ptr) + (second.size / sizeof(long long)) - kHostWords;
        bad = mismatches(read_back(mine2, kHostWords), prev, 0);
        conf_check(rereg, bad == 0, "nvshmem_putmem into the second buffer: %lld words wrong", bad);
        nvshmem_barrier_all();
        status = nvshmemx_buffer_unregister_symmetric(alias2, second.size);
        conf_check(rereg, status == 0, "unregistering the second buffer = %d", status);
    }

    // ---- errors (niin-rs) ----------------------------------------------------------------
#ifdef TEST_NVSHMEM
    printf("SKIP|errors|niin-rs's own argument checks (NVSHMEM 3.4.5 aborts on some)\n");
#else
    ConfGroup &err = conf_group("errors");
    void *plain = nullptr;
    TEST_CUDA(cudaMalloc(&plain, size));
    conf_check(err, nvshmemx_buffer_register_symmetric(plain, size, 0) == nullptr,
               "a cudaMalloc buffer registered");
    conf_check(err, nvshmemx_buffer_register_symmetric(buf.ptr, 0, 0) == nullptr,
               "size 0 registered");
    status = nvshmemx_buffer_unregister_symmetric(alias, size);
    conf_check(err, status != 0, "unregistering twice returned 0");
    // A PE-local mistake fails every PE: PE 0 passes a cudaMalloc buffer, the others good ones.
    void *mixed = nvshmemx_buffer_register_symmetric(me == 0 ? plain : buf.ptr, size, 0);
    conf_check(err, mixed == nullptr, "one PE's bad buffer still registered on PE %d", me);
    // And the world still registers afterwards.
    void *again = nvshmemx_buffer_register_symmetric(buf.ptr, size, 0);
    conf_check(err, again != nullptr, "registration after the refusals = NULL");
    if (again != nullptr) {
        status = nvshmemx_buffer_unregister_symmetric(again, size);
        conf_check(err, status == 0, "unregistering after the refusals = %d", status);
    }
    TEST_CUDA(cudaFree(plain));
#endif

    nvshmem_barrier_all();
    vmm_free(d, second);
    vmm_free(d, buf);
    TEST_CUDA(cudaFree(src));
    TEST_CUDA(cudaFree(out));
    TEST_CUDA(cudaFree(seen));
    TEST_CUDA(cudaFree(ptrs));
    TEST_CUDA(cudaStreamDestroy(stream));
    nvshmem_free(dist);
    nvshmem_free(anchor);
    return conf_end();
}
