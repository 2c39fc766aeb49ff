// conf_harness.h -- what the per-family GPU conformance programs (tests/gpu/conf_*.cu) share:
// start-up (test_init.h), result groups and their report, so that
// scripts/gpu/device-tests.sh can build each one against niin-rs (NCCL 2.28.3 and 2.31.2
// headers) and NVSHMEM 3.4.5 and put every run in one table.
//
// NVSHMEM API only (the same source builds against both libraries). A program:
//   int main() { conf_begin("conf_signal"); ...checks...; return conf_end(); }
// Output, per PE: "FAIL|<group>|PE <me>: <what>" (the first 8 per group), then
// "RESULT|<group>|<passed>|<failed>" per group and "<program> PE <me> of <n>: <P> passed,
// <F> failed"; conf_end() returns the exit status (1 if anything failed). A group that a
// library cannot run (NVSHMEM refuses it) prints "SKIP|<group>|<why>" and counts nothing.
// Every kernel of these programs is written without __launch_bounds__: the 1024-thread
// launches check that the device API fits a block of 1024 threads (64 registers a thread).
#ifndef NIIN_TESTS_GPU_CONF_HARNESS_H
#define NIIN_TESTS_GPU_CONF_HARNESS_H

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "test_init.h"

struct ConfGroup {
    std::string name;
    long passed = 0, failed = 0;
};

static std::vector<ConfGroup> g_conf_groups;
static const char *g_conf_program = "conf";
static int g_conf_me = -1, g_conf_npes = 0;

// The group called `name` (created on first use; reported in that order).
static inline ConfGroup &conf_group(const char *name) {
    for (auto &g : g_conf_groups)
        if (g.name == name) return g;
    g_conf_groups.push_back(ConfGroup{name});
    return g_conf_groups.back();
}

// Counts one check of `g`; a failure prints its detail (the first 8 of a group).
__attribute__((format(printf, 3, 4))) static inline bool conf_check(ConfGroup &g, bool ok,
                                                                     const char *fmt, ...) {
    if (ok) {
        g.passed++;
        return true;
    }
    if (g.failed++ < 8) {
        char detail[512];
        va_list args;
        va_start(args, fmt);
        vsnprintf(detail, sizeof detail, fmt, args);
        va_end(args);
        printf("FAIL|%s|PE %d: %s\n", g.name.c_str(), g_conf_me, detail);
        fflush(stdout);
    }
    return false;
}

// Launches and synchronizes: a failed launch or kernel is a failed check of `g`.
#define CONF_LAUNCH(g, kernel, grid, block, ...)                                              \
    do {                                                                                      \
        kernel<<<(grid), (block)>>>(__VA_ARGS__);                                             \
        cudaError_t conf_e = cudaGetLastError();                                              \
        if (conf_e == cudaSuccess) conf_e = cudaDeviceSynchronize();                          \
        conf_check((g), conf_e == cudaSuccess, "%s<<<%d, %d>>>: %s", #kernel, (int)(grid),    \
                   (int)(block), cudaGetErrorString(conf_e));                                 \
        if (conf_e != cudaSuccess) {                                                          \
            fprintf(stderr, "%s: CUDA error, stopping\n", g_conf_program);                    \
            exit(3);                                                                          \
        }                                                                                     \
    } while (0)

static inline void conf_begin(const char *program) {
    g_conf_program = program;
    // line by line, also into a file: a run cut short by a timeout still shows how far it got
    setvbuf(stdout, nullptr, _IOLBF, 0);
    test_init();
    g_conf_me = nvshmem_my_pe();
    g_conf_npes = nvshmem_n_pes();
}

static inline int conf_end() {
    long passed = 0, failed = 0;
    for (const ConfGroup &g : g_conf_groups) {
        printf("RESULT|%s|%ld|%ld\n", g.name.c_str(), g.passed, g.failed);
        passed += g.passed;
        failed += g.failed;
    }
    printf("%s PE %d of %d: %ld passed, %ld failed\n", g_conf_program, g_conf_me, g_conf_npes,
           passed, failed);
    fflush(stdout);
    nvshmem_barrier_all();
    nvshmem_finalize();
    return failed == 0 ? 0 : 1;
}

#endif // NIIN_TESTS_GPU_CONF_HARNESS_H
