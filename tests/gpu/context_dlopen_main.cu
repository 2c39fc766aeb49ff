// context_dlopen_main.cu -- a CUDA module loaded after nvshmem_init gets its context when
// it registers: this program inits, then dlopens libcontext_b.so (context_two_tus_b.cu
// built with -shared -Xcompiler -fPIC), whose static initializer registers it while the
// library is initialized, so its setup runs at once (on every PE at the same point: the
// devComm creation behind it is collective, here shared with this TU's).
//
//   nvcc -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC -I... tests/gpu/context_two_tus_b.cu
//        -L$NIIN_HOME/lib -lnvshmem_host -o libcontext_b.so
//   nvcc -std=c++17 -arch=sm_90 -I... tests/gpu/context_dlopen_main.cu -L$NIIN_HOME/lib
//        -lnvshmem_host -ldl -o context_dlopen
//   CONTEXT_DLOPEN_LIB=./libcontext_b.so niinrun -n 2 ./context_dlopen
#include <dlfcn.h>

#include "context_check_main.h"

CONTEXT_CHECK_TU(main)

int main() {
    Checker ck("context_dlopen");
    const char *path = getenv("CONTEXT_DLOPEN_LIB");
    if (path == nullptr) path = "./libcontext_b.so";
    nvshmem_init();
    ck.pe = nvshmem_my_pe();
    int *probe = static_cast<int *>(nvshmem_calloc(2 * 64, sizeof(int)));
    ContextReport mine, late;
    context_check_main(0, &mine);
    if (mine.has_ctx) context_check_main(heap_offset(mine, probe), &mine);
    check_report(ck, "main", mine, probe);

    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!ck.check(lib != nullptr, "dlopen", "%s: %s", path, dlerror())) return ck.finish();
    auto check_b = reinterpret_cast<int (*)(size_t, ContextReport *)>(dlsym(lib, "context_check_b"));
    auto barrier_b =
        reinterpret_cast<int (*)(size_t, unsigned, int)>(dlsym(lib, "context_barrier_b"));
    auto write_b = reinterpret_cast<int (*)(size_t)>(dlsym(lib, "context_lsa_write_b"));
    if (!ck.check(check_b && barrier_b && write_b, "dlsym", "entry points of %s missing", path))
        return ck.finish();
    check_b(0, &late);
    if (late.has_ctx) check_b(heap_offset(late, probe + 64), &late);
    check_report(ck, "dlopened B", late, probe + 64);
    if (late.has_ctx && mine.has_ctx) {
        ck.check(late.dev_comm_hash == mine.dev_comm_hash, "the late module shares the devComm",
                 "hashes %llx %llx", late.dev_comm_hash, mine.dev_comm_hash);
        write_b(heap_offset(late, probe + 64));
        nvshmem_barrier_all();
        check_lsa_writes(ck, "dlopened B", late, probe + 64);
        int *scratch = static_cast<int *>(nvshmem_calloc(barrier_scratch_words(32), sizeof(int)));
        check_barriers(ck, "device LSA barrier in the late module", barrier_b, late, scratch, 32, 10);
        nvshmem_free(scratch);
    }
    nvshmem_barrier_all();
    nvshmem_free(probe);
    nvshmem_finalize();
    check_b(0, &late);
    check_empty(ck, "dlopened B: after finalize: slot empty", late);
    context_check_main(0, &mine);
    check_empty(ck, "main: after finalize: slot empty", mine);
    dlclose(lib);
    return ck.finish();
}
