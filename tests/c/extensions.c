/*
 * extensions.c -- what NVSHMEM programs and harnesses use besides the device API, on the
 * CPU mock (plain C11 that also compiles as C++):
 *
 *   - nvshmemx_cumodule_init/_finalize, nvshmemx_culibrary_init/_finalize: refused before
 *     init, for NULL, on the mock (no device contexts), and for a module never initialized,
 *     each with NVSHMEM's value NVSHMEMX_ERROR_INTERNAL and one NIIN: line;
 *   - nvshmemx_buffer_register_symmetric/_unregister_symmetric: refused on the mock, which
 *     has no CUDA memory to register (NULL, NVSHMEMX_ERROR_INVALID_VALUE), with one NIIN:
 *     line each, after the PEs agreed (tests/gpu/conf_register.cu runs them on a GPU);
 *   - NVSHMEM's error macros (non_abi/nvshmemx_error.h, which nvshmem.h brings): control
 *     flow and the lines they print.
 *
 *   extensions        every check; prints "EXPECT_NIIN_LINES <k>" and "EXPECT_MACRO_LINES
 *                     <m>": stderr must hold exactly k NIIN: lines and m lines of the
 *                     macros (each starting with this file's name); exit 1 if a check failed
 *   extensions exit   NVSHMEMI_NZ_EXIT with a non-zero status: the process exits with -1
 *                     (255) after its line
 *
 * With CUDA's headers on the include path (a compile-only test), it also takes the
 * addresses of nvshmemx_collective_launch[_query_gridsize] (niin/launch.h) and, in C++, of
 * the half typed _on_stream functions that host C++ now sees.
 */
#define _POSIX_C_SOURCE 200809L

#include "niin_test.h"

static int expected_lines = 0;
static int macro_lines = 0;

/* A call that must fail and write one NIIN: line. */
#define EXPECT_ERROR(name, cond, ...)   \
    do {                                \
        expected_lines++;               \
        CHECK(name, cond, __VA_ARGS__); \
    } while (0)

/* A handle that is not a loaded module (never dereferenced by the library on the mock). */
#define FAKE_MODULE ((CUmodule)(uintptr_t)0x1000)
#define FAKE_LIBRARY ((CUlibrary)(uintptr_t)0x2000)

#if defined(NIIN_HAVE_CUDA_RUNTIME_API)
/* niin/launch.h's functions, with NVSHMEM's prototypes (compile-only). */
typedef int (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef int (*query_fn)(const void *, dim3, void **, size_t, int *);
int launch_functions_exist(void);
int launch_functions_exist(void) {
    launch_fn launch = &nvshmemx_collective_launch;
    query_fn query = &nvshmemx_collective_launch_query_gridsize;
    return launch != NULL && query != NULL;
}
#endif
#if defined(__cplusplus) && defined(NIIN_HAVE_FP16_TYPES)
int half_functions_exist(void);
int half_functions_exist(void) {
    void (*put)(half *, const half *, size_t, int, cudaStream_t) = &nvshmemx_half_put_on_stream;
    __nv_bfloat16 (*g)(const __nv_bfloat16 *, int, cudaStream_t) = &nvshmemx_bfloat16_g_on_stream;
    return put != NULL && g != NULL;
}
#endif

static void modules_and_buffers_before_init(void) {
    char buf[64];
    int status = nvshmemx_cumodule_init(FAKE_MODULE);
    EXPECT_ERROR("cumodule_init_before_init", status == NVSHMEMX_ERROR_INTERNAL, "status %d",
                 status);
    EXPECT_ERROR("register_symmetric_before_init",
                 nvshmemx_buffer_register_symmetric(buf, sizeof buf, 0) == NULL, "not NULL");
}

static void modules_on_the_mock(void) {
    int status = nvshmemx_cumodule_init(NULL);
    EXPECT_ERROR("cumodule_init_null", status == NVSHMEMX_ERROR_INTERNAL, "status %d", status);
    status = nvshmemx_cumodule_init(FAKE_MODULE);
    EXPECT_ERROR("cumodule_init_on_the_mock", status == NVSHMEMX_ERROR_INTERNAL, "status %d",
                 status);
    status = nvshmemx_cumodule_finalize(FAKE_MODULE);
    EXPECT_ERROR("cumodule_finalize_never_initialized", status == NVSHMEMX_ERROR_INTERNAL,
                 "status %d", status);
    status = nvshmemx_culibrary_init(FAKE_LIBRARY);
    EXPECT_ERROR("culibrary_init_on_the_mock", status == NVSHMEMX_ERROR_INTERNAL, "status %d",
                 status);
    status = nvshmemx_culibrary_finalize(NULL);
    EXPECT_ERROR("culibrary_finalize_null", status == NVSHMEMX_ERROR_INTERNAL, "status %d",
                 status);
}

static void buffers_on_the_mock(void) {
    static char buf[4096];
    int status;
    EXPECT_ERROR("register_symmetric_refused",
                 nvshmemx_buffer_register_symmetric(buf, sizeof buf, 0) == NULL, "not NULL");
    EXPECT_ERROR("register_symmetric_flags",
                 nvshmemx_buffer_register_symmetric(buf, sizeof buf, 1) == NULL, "not NULL");
    EXPECT_ERROR("register_symmetric_size_0",
                 nvshmemx_buffer_register_symmetric(buf, 0, 0) == NULL, "not NULL");
    status = nvshmemx_buffer_unregister_symmetric(buf, sizeof buf);
    EXPECT_ERROR("unregister_symmetric", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    /* The heap still works after the refusals (every PE took part in their barriers). */
    CHECK("malloc_after_register", nvshmem_malloc(256) != NULL, "NULL");
}

/* Each macro once, the failing way: the status it sets and the label it reaches. */
static int jmp_unconditional(void) {
    int status = 0;
    NVSHMEMI_ERROR_JMP(status, NVSHMEMX_ERROR_INTERNAL, out, "jump %d", 1);
    status = -100; /* skipped */
out:
    return status;
}

static int jmp_null(const void *p) {
    int status = 0;
    NVSHMEMI_NULL_ERROR_JMP(p, status, NVSHMEMX_ERROR_OUT_OF_MEMORY, out, "pointer %s", "p");
    status = 42;
out:
    return status;
}

static int jmp_eq(int value) {
    int status = value;
    NVSHMEMI_EQ_ERROR_JMP(status, 3, NVSHMEMX_ERROR_NOT_SUPPORTED, out, "equal");
    status = 42;
out:
    return status;
}

static int jmp_ne(int value) {
    int status = value;
    NVSHMEMI_NE_ERROR_JMP(status, 0, NVSHMEMX_ERROR_SYMMETRY, out, "not %s", "zero");
    status = 42;
out:
    return status;
}

static int jmp_nz(int value) {
    int status = value;
    NVSHMEMI_NZ_ERROR_JMP(status, NVSHMEMX_ERROR_INVALID_VALUE, out, "nz");
    status = 42;
out:
    return status;
}

static int jmp_check(int cond) {
    int status = 0;
    NVSHMEMI_CHECK_ERROR_JMP(cond > 1, status, NVSHMEMX_ERROR_GPU_NOT_SELECTED, out, "check %d",
                             cond);
    status = 42;
out:
    return status;
}

static void error_macros(void) {
    int s;
    s = jmp_unconditional();
    macro_lines++;
    CHECK("macro_error_jmp", s == NVSHMEMX_ERROR_INTERNAL, "status %d", s);
    s = jmp_null(NULL);
    macro_lines++;
    CHECK("macro_null_jmp_taken", s == NVSHMEMX_ERROR_OUT_OF_MEMORY, "status %d", s);
    s = jmp_null(&s);
    CHECK("macro_null_jmp_not_taken", s == 42, "status %d", s);
    s = jmp_eq(3);
    macro_lines++;
    CHECK("macro_eq_jmp_taken", s == NVSHMEMX_ERROR_NOT_SUPPORTED, "status %d", s);
    s = jmp_eq(4);
    CHECK("macro_eq_jmp_not_taken", s == 42, "status %d", s);
    s = jmp_ne(5);
    macro_lines++;
    CHECK("macro_ne_jmp_taken", s == NVSHMEMX_ERROR_SYMMETRY, "status %d", s);
    s = jmp_ne(0);
    CHECK("macro_ne_jmp_not_taken", s == 42, "status %d", s);
    s = jmp_nz(-7);
    macro_lines++;
    CHECK("macro_nz_jmp_taken", s == NVSHMEMX_ERROR_INVALID_VALUE, "status %d", s);
    s = jmp_nz(0);
    CHECK("macro_nz_jmp_not_taken", s == 42, "status %d", s);
    s = jmp_check(2);
    macro_lines++;
    CHECK("macro_check_jmp_taken", s == NVSHMEMX_ERROR_GPU_NOT_SELECTED, "status %d", s);
    s = jmp_check(1);
    CHECK("macro_check_jmp_not_taken", s == 42, "status %d", s);
    NVSHMEMI_ERROR_PRINT("printed %s", "error");
    macro_lines++;
    NVSHMEMI_NZ_EXIT(0, "not taken");
    NVSHMEMI_NZ_SYSCHECK_EXIT(0, "not taken");
    NVSHMEMI_WARN_PRINT("a warning %d", 9);
    CHECK("macro_unlikely", nvshmemxi_error_unlikely(5) == 1 && nvshmemxi_error_unlikely(0) == 0,
          "values");
    fflush(stderr);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit") == 0) {
        errno = ENOENT;
        NVSHMEMI_NZ_EXIT(3, "exiting on purpose");
        return 0; /* not reached */
    }
    modules_and_buffers_before_init();
    nvshmem_init();
    modules_on_the_mock();
    buffers_on_the_mock();
    if (nvshmem_my_pe() == 0) error_macros();
    nvshmem_barrier_all();
    printf("EXPECT_NIIN_LINES %d\n", expected_lines);
    printf("EXPECT_MACRO_LINES %d\n", macro_lines);
    printf("DONE failures=%d\n", niin_test_failures);
    fflush(stdout);
    nvshmem_finalize();
    return niin_test_failures == 0 ? 0 : 1;
}
