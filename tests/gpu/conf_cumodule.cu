// conf_cumodule.cu -- GPU conformance of nvshmemx_cumodule_init / _finalize and
// nvshmemx_culibrary_init / _finalize: kernels of a cubin loaded with the driver API
// (tests/gpu/cumodule_kernels.cu, built by scripts/gpu/build-device-tests.sh into cubin/ beside
// this program as cubin/<program>.cubin, one translation unit, and cubin/<program>.rdc.cubin,
// two TUs compiled with -rdc=true and nvlink'ed) reach NVSHMEM once the module is initialized.
//
// NVSHMEM API only (conf_harness.h): the same source builds against niin-rs and, with
// -rdc=true -DTEST_NVSHMEM, against NVSHMEM 3.4.5 (whose cubins are nvlink'ed with
// libnvshmem_device.a). This TU defines NIIN_NO_DEVICE_API: under niin-rs the program itself
// registers no device context, so the first module's init creates the device communicator
// from the module's own headers, and the second module (the same cubin loaded again) shares
// it. The driver API is reached through cudaGetDriverEntryPointByVersion (no -lcuda).
//
// Groups (a missing cubin is a SKIP line):
//   - cumodule, one TU: init; my_pe / n_pes / nvshmem_ptr from a kernel of the module; a ring
//     put + nvshmem_barrier_all; init counts (a second init and finalize leave it working); a
//     finalize too many returns NVSHMEMX_ERROR_INTERNAL (NVSHMEM's value);
//   - two modules: the same cubin loaded twice, each initialized; even PEs run the ring of
//     one, odd PEs of the other (their barriers meet);
//   - cumodule, two TUs (-rdc, nvlink): the kernels of both TUs;
//   - culibrary: cuLibraryLoadFromFile, nvshmemx_culibrary_init, the ring through
//     cuLibraryGetKernel / cuKernelGetFunction, nvshmemx_culibrary_finalize.
#define NIIN_NO_DEVICE_API 1

#include <cuda.h>

#include <string>

#include "conf_harness.h"

#define TEST_CU(x)                                                                       \
    do {                                                                                 \
        CUresult r_ = (x);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_); \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

// The driver functions used, through the runtime's entry-point query.
struct Driver {
    CUresult (*module_load)(CUmodule *, const char *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);
    CUresult (*library_load)(CUlibrary *, const char *, CUjit_option *, void **, unsigned,
                             CUlibraryOption *, void **, unsigned);
    CUresult (*library_unload)(CUlibrary);
    CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
    CUresult (*kernel_get_function)(CUfunction *, CUkernel);
};
static Driver g_cu;

template <class F> static void entry(F &f, const char *name) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    TEST_CUDA(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q));
    if (p == nullptr || q != cudaDriverEntryPointSuccess) {
        fprintf(stderr, "conf_cumodule: the driver has no %s\n", name);
        exit(2);
    }
    f = reinterpret_cast<F>(p);
}

static void load_driver() {
    entry(g_cu.module_load, "cuModuleLoad");
    entry(g_cu.module_unload, "cuModuleUnload");
    entry(g_cu.module_get_function, "cuModuleGetFunction");
    entry(g_cu.launch, "cuLaunchKernel");
    entry(g_cu.library_load, "cuLibraryLoadFromFile");
    entry(g_cu.library_unload, "cuLibraryUnload");
    entry(g_cu.library_get_kernel, "cuLibraryGetKernel");
    entry(g_cu.kernel_get_function, "cuKernelGetFunction");
}

// <this program's folder>/cubin/<its name><suffix>: where the build puts its cubins.
static std::string beside_me(const char *suffix) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return std::string();
    exe[n] = '\0';
    std::string path(exe);
    const size_t slash = path.rfind('/');
    return path.substr(0, slash + 1) + "cubin/" + path.substr(slash + 1) + suffix;
}

static bool exists(const std::string &path) {
    FILE *f = fopen(path.c_str(), "rb");
    const bool found = f != nullptr;
    if (found) fclose(f);
    return found;
}

static CUfunction function(CUmodule m, const char *name) {
    CUfunction f = nullptr;
    TEST_CU(g_cu.module_get_function(&f, m, name));
    return f;
}

// Runs f<<<1, 32>>>(args...) and waits; false (with the error in *why) if it failed.
static bool run(CUfunction f, void **args, std::string *why) {
    CUresult r = g_cu.launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr);
    cudaError_t e = r == CUDA_SUCCESS ? cudaDeviceSynchronize() : cudaSuccess;
    if (r != CUDA_SUCCESS) *why = "cuLaunchKernel returned " + std::to_string((int)r);
    if (e != cudaSuccess) *why = std::string("the kernel failed: ") + cudaGetErrorString(e);
    return r == CUDA_SUCCESS && e == cudaSuccess;
}

static int *g_sym = nullptr; // kSlots symmetric ints
static int *g_out = nullptr; // 4 device ints
constexpr int kSlots = 16;

static void read_out(int out[4]) {
    TEST_CUDA(cudaMemcpy(out, g_out, 4 * sizeof(int), cudaMemcpyDeviceToHost));
}

// cumodule_query<suffix> of `f`: my_pe, n_pes and nvshmem_ptr of the next PE.
static void check_query(ConfGroup &g, CUfunction f, const char *what) {
    TEST_CUDA(cudaMemset(g_out, 0xff, 4 * sizeof(int)));
    void *args[] = {&g_sym, &g_out};
    std::string why;
    if (!conf_check(g, run(f, args, &why), "%s: %s", what, why.c_str())) return;
    int out[4];
    read_out(out);
    conf_check(g, out[0] == g_conf_me && out[1] == g_conf_npes,
               "%s: my_pe %d, n_pes %d in the module; %d, %d on the host", what, out[0], out[1],
               g_conf_me, g_conf_npes);
    // One GPU for all PEs here: every PE is reachable by load/store (NVSHMEM and niin-rs).
    conf_check(g, out[2] == 1, "%s: nvshmem_ptr of the next PE is NULL", what);
}

// cumodule_ring<suffix> of `f` on word `slot`.
static void check_ring(ConfGroup &g, CUfunction f, int slot, int tag, const char *what) {
    TEST_CUDA(cudaMemset(g_sym + slot, 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    void *args[] = {&g_sym, &slot, &tag, &g_out};
    std::string why;
    if (!conf_check(g, run(f, args, &why), "%s: %s", what, why.c_str())) return;
    int out[4];
    read_out(out);
    const int prev = (g_conf_me + g_conf_npes - 1) % g_conf_npes;
    conf_check(g, out[0] == tag + prev, "%s: word %d holds %d, expected %d (from PE %d)", what,
               slot, out[0], tag + prev, prev);
}

static void one_tu(const std::string &path) {
    ConfGroup &g = conf_group("nvshmemx_cumodule_init: cubin of one TU");
    CUmodule m = nullptr;
    TEST_CU(g_cu.module_load(&m, path.c_str()));
    int status = nvshmemx_cumodule_init(m);
    if (!conf_check(g, status == 0, "nvshmemx_cumodule_init: status %d", status)) return;
    check_query(g, function(m, "cumodule_query"), "query");
    check_ring(g, function(m, "cumodule_ring"), 0, 100, "ring");
    status = nvshmemx_cumodule_init(m);
    conf_check(g, status == 0, "second nvshmemx_cumodule_init: status %d", status);
    status = nvshmemx_cumodule_finalize(m);
    conf_check(g, status == 0, "first nvshmemx_cumodule_finalize: status %d", status);
    check_ring(g, function(m, "cumodule_ring"), 1, 200, "ring after init x2, finalize x1");

    // Two modules: the same cubin loaded again; even PEs use one, odd PEs the other.
    ConfGroup &g2 = conf_group("nvshmemx_cumodule_init: two modules of the same cubin");
    CUmodule m2 = nullptr;
    TEST_CU(g_cu.module_load(&m2, path.c_str()));
    status = nvshmemx_cumodule_init(m2);
    if (conf_check(g2, status == 0, "nvshmemx_cumodule_init of the second: status %d", status)) {
        check_query(g2, function(m2, "cumodule_query"), "query, second module");
        check_ring(g2, function(g_conf_me % 2 == 0 ? m : m2, "cumodule_ring"), 2, 300,
                   "ring, even PEs module 1, odd PEs module 2");
        status = nvshmemx_cumodule_finalize(m2);
        conf_check(g2, status == 0, "nvshmemx_cumodule_finalize of the second: status %d",
                   status);
    }
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    TEST_CU(g_cu.module_unload(m2));

    status = nvshmemx_cumodule_finalize(m);
    conf_check(g, status == 0, "last nvshmemx_cumodule_finalize: status %d", status);
    status = nvshmemx_cumodule_finalize(m);
    conf_check(g, status == NVSHMEMX_ERROR_INTERNAL,
               "a finalize too many: status %d, expected %d (NVSHMEMX_ERROR_INTERNAL)", status,
               (int)NVSHMEMX_ERROR_INTERNAL);
    TEST_CU(g_cu.module_unload(m));
}

static void two_tus(const std::string &path) {
    ConfGroup &g = conf_group("nvshmemx_cumodule_init: cubin of two TUs (-rdc, nvlink)");
    CUmodule m = nullptr;
    TEST_CU(g_cu.module_load(&m, path.c_str()));
    int status = nvshmemx_cumodule_init(m);
    if (conf_check(g, status == 0, "nvshmemx_cumodule_init: status %d", status)) {
        check_query(g, function(m, "cumodule_query"), "query, TU a");
        check_query(g, function(m, "cumodule_query_b"), "query, TU b");
        check_ring(g, function(m, "cumodule_ring"), 3, 400, "ring, TU a");
        check_ring(g, function(m, "cumodule_ring_b"), 4, 500, "ring, TU b");
        status = nvshmemx_cumodule_finalize(m);
        conf_check(g, status == 0, "nvshmemx_cumodule_finalize: status %d", status);
    }
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    TEST_CU(g_cu.module_unload(m));
}

static void library(const std::string &path) {
    ConfGroup &g = conf_group("nvshmemx_culibrary_init: cubin as a CUlibrary");
    CUlibrary lib = nullptr;
    TEST_CU(g_cu.library_load(&lib, path.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    int status = nvshmemx_culibrary_init(lib);
    if (conf_check(g, status == 0, "nvshmemx_culibrary_init: status %d", status)) {
        CUkernel k = nullptr;
        CUfunction f = nullptr;
        TEST_CU(g_cu.library_get_kernel(&k, lib, "cumodule_ring"));
        TEST_CU(g_cu.kernel_get_function(&f, k));
        check_ring(g, f, 5, 600, "ring");
        status = nvshmemx_culibrary_finalize(lib);
        conf_check(g, status == 0, "nvshmemx_culibrary_finalize: status %d", status);
    }
    TEST_CUDA(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    TEST_CU(g_cu.library_unload(lib));
}

int main() {
    conf_begin("conf_cumodule");
    load_driver();
    g_sym = static_cast<int *>(nvshmem_malloc(kSlots * sizeof(int)));
    TEST_CUDA(cudaMalloc(&g_out, 4 * sizeof(int)));
    const std::string one = beside_me(".cubin"), two = beside_me(".rdc.cubin");
    if (exists(one)) {
        one_tu(one);
        library(one);
    } else {
        printf("SKIP|nvshmemx_cumodule_init|no %s (scripts/gpu/build-device-tests.sh builds it)\n",
               one.c_str());
    }
    if (exists(two))
        two_tus(two);
    else
        printf("SKIP|nvshmemx_cumodule_init: two TUs|no %s\n", two.c_str());
    nvshmem_barrier_all();
    TEST_CUDA(cudaFree(g_out));
    nvshmem_free(g_sym);
    return conf_end();
}
