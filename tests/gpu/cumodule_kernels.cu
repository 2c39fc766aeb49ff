// cumodule_kernels.cu -- the kernels of conf_cumodule.cu: compiled without host code
// (nvcc -cubin, or -rdc=true -cubin and nvlink'ed: scripts/gpu/build-device-tests.sh), loaded
// with the driver API and given their device context by nvshmemx_cumodule_init or
// nvshmemx_culibrary_init. NVSHMEM API only (the NVSHMEM build links libnvshmem_device.a into
// the cubin with nvlink).
//
// CUMODULE_TU=1 names the kernels with the suffix _b: the second translation unit of a cubin
// nvlink'ed from two (each TU has its own device context in niin-rs).
#include <nvshmem.h>
#include <nvshmemx.h>

#if defined(CUMODULE_TU) && CUMODULE_TU == 1
#define CUMODULE_NAME(name) name##_b
#else
#define CUMODULE_NAME(name) name
#endif

// out[0] = my PE, out[1] = PE count, out[2] = 1 if nvshmem_ptr reaches the next PE's `sym`.
extern "C" __global__ void CUMODULE_NAME(cumodule_query)(const int *sym, int *out) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    out[0] = me;
    out[1] = npes;
    out[2] = npes > 0 && nvshmem_ptr(sym, (me + 1) % npes) != nullptr;
}

// The ring: this PE puts tag + my PE into word `slot` of the next PE's `sym`, then the
// barrier of all PEs; out[0] = this PE's own word `slot` (tag + the previous PE's number).
extern "C" __global__ void CUMODULE_NAME(cumodule_ring)(int *sym, int slot, int tag, int *out) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const int me = nvshmem_my_pe(), npes = nvshmem_n_pes();
    nvshmem_int_p(sym + slot, tag + me, (me + 1) % npes);
    nvshmem_barrier_all();
    out[0] = reinterpret_cast<volatile int *>(sym)[slot];
}
