/*
 * non_abi/nvshmemx_error.h -- NVSHMEM 3.4.5's error-reporting macros, at NVSHMEM's include
 * path, written for niin-rs (NVSHMEM implemented over NCCL).
 *
 * In NVSHMEM 3.4.5 every includer of nvshmem.h or nvshmemx.h gets this header (nvshmem.h
 * -> nvshmem_host.h -> host/nvshmemx_api.h -> non_abi/nvshmemx_error.h), and test
 * harnesses written for NVSHMEM use its macros. niin-rs includes it from niin/host_api.h
 * (its host/nvshmemx_api.h), so the same programs compile unchanged. It may also be
 * included on its own. Compiles as C11, C++ and CUDA C++.
 *
 * What it provides, with NVSHMEM's names, arguments and output (the printf-style message
 * `...` is printed after the prefix, then a newline; all on stderr except the warning):
 *
 *   enum nvshmemx_status                    NVSHMEMX_SUCCESS, NVSHMEMX_ERROR_* (niin/types.h)
 *   nvshmemxi_error_unlikely(x)             branch hint: x is rarely true
 *   NVSHMEMI_ERROR_PRINT(...)               "<file>:<function>:<line>: <message>"
 *   NVSHMEMI_ERROR_EXIT(...)                the same, then exit(-1)
 *   NVSHMEMI_WARN_PRINT(...)                "WARN: <message>" on stdout
 *   NVSHMEMI_ERROR_JMP(status, err, label, ...)
 *                                           "<file>:<line>: non-zero status: <err> <message>",
 *                                           status = err, goto label (unconditionally)
 *   NVSHMEMI_NULL_ERROR_JMP(var, status, err, label, ...)
 *                                           if var == NULL: "<file>:<line>: NULL value
 *                                           <message>", status = err, goto label
 *   NVSHMEMI_EQ_ERROR_JMP(status, expected, err, label, ...)
 *                                           if status == expected: "<file>:<line>: error
 *                                           status: <status> <message>", status = err, goto
 *   NVSHMEMI_NE_ERROR_JMP(status, expected, err, label, ...)
 *                                           if status != expected: "<file>:<line>: non-zero
 *                                           status: <status> <message>", status = err, goto
 *   NVSHMEMI_NZ_ERROR_JMP(status, err, label, ...)
 *                                           the same for status != 0
 *   NVSHMEMI_CHECK_ERROR_JMP(statement, status, err, label, ...)
 *                                           if statement is true: "<file>:<line>: <message>",
 *                                           status = err, goto label
 *   NVSHMEMI_NZ_EXIT(status, ...)           if status != 0: "<file>:<line>: non-zero status:
 *                                           <status>: <strerror(errno)>, exiting...
 *                                           <message>", exit(-1)
 *   NVSHMEMI_NZ_SYSCHECK_EXIT(sys_status, ...)
 *                                           the same with strerror(sys_status)
 *
 * `status` is printed with %d (an int, as in NVSHMEM). Under NVRTC (__CUDACC_RTC__), where
 * there is no stdio, the macros keep their control flow (assignments, goto) and print
 * nothing; exit becomes nothing too, as in NVSHMEM (which does it by defining fprintf and
 * exit away; niin-rs leaves those names alone).
 */
#ifndef NIIN_NON_ABI_NVSHMEMX_ERROR_H
#define NIIN_NON_ABI_NVSHMEMX_ERROR_H

#include "niin/types.h" /* enum nvshmemx_status */

#if !defined(__CUDACC_RTC__)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* The two effects of the macros, each one statement. */
#define NIIN_ERRH_PRINT(stream, ...) fprintf((stream), __VA_ARGS__)
#define NIIN_ERRH_EXIT() exit(-1)
#define NIIN_ERRH_ERRNO_TEXT() strerror(errno)
#define NIIN_ERRH_TEXT(code) strerror(code)
#else
#define NIIN_ERRH_PRINT(stream, ...) ((void)0)
#define NIIN_ERRH_EXIT() ((void)0)
#define NIIN_ERRH_ERRNO_TEXT() ""
#define NIIN_ERRH_TEXT(code) ""
#endif

/* True with the compiler told it rarely is (the value is normalized to 0 or 1 first). */
#if defined(__GNUC__) || defined(__clang__) || defined(__CUDACC__)
#define nvshmemxi_error_unlikely(x) __builtin_expect(!!(x), 0)
#else
#define nvshmemxi_error_unlikely(x) (!!(x))
#endif

/* The message: the caller's printf arguments, then the end of the line. */
#define NIIN_ERRH_MESSAGE(stream, ...)          \
    do {                                        \
        NIIN_ERRH_PRINT((stream), __VA_ARGS__); \
        NIIN_ERRH_PRINT((stream), "\n");        \
    } while (0)

#define NVSHMEMI_ERROR_PRINT(...)                                                   \
    do {                                                                            \
        NIIN_ERRH_PRINT(stderr, "%s:%s:%d: ", __FILE__, __func__, (int)__LINE__); \
        NIIN_ERRH_MESSAGE(stderr, __VA_ARGS__);                                     \
    } while (0)

#define NVSHMEMI_ERROR_EXIT(...)           \
    do {                                   \
        NVSHMEMI_ERROR_PRINT(__VA_ARGS__); \
        NIIN_ERRH_EXIT();                  \
    } while (0)

#define NVSHMEMI_WARN_PRINT(...)                  \
    do {                                          \
        NIIN_ERRH_PRINT(stdout, "WARN: ");        \
        NIIN_ERRH_MESSAGE(stdout, __VA_ARGS__); \
    } while (0)

/* Reports `shown` after `what`, sets status to err and jumps to label. */
#define NIIN_ERRH_FAIL_JMP(what, shown, status, err, label, ...)                            \
    do {                                                                                    \
        NIIN_ERRH_PRINT(stderr, "%s:%d: " what "%d ", __FILE__, (int)__LINE__, (int)(shown)); \
        NIIN_ERRH_MESSAGE(stderr, __VA_ARGS__);                                             \
        (status) = (err);                                                                   \
        goto label;                                                                         \
    } while (0)

#define NVSHMEMI_ERROR_JMP(status, err, label, ...) \
    NIIN_ERRH_FAIL_JMP("non-zero status: ", (err), status, err, label, __VA_ARGS__)

#define NVSHMEMI_NULL_ERROR_JMP(var, status, err, label, ...)                           \
    do {                                                                                \
        if (nvshmemxi_error_unlikely((var) == NULL)) {                                  \
            NIIN_ERRH_PRINT(stderr, "%s:%d: NULL value ", __FILE__, (int)__LINE__);     \
            NIIN_ERRH_MESSAGE(stderr, __VA_ARGS__);                                     \
            (status) = (err);                                                           \
            goto label;                                                                 \
        }                                                                               \
    } while (0)

#define NVSHMEMI_EQ_ERROR_JMP(status, expected, err, label, ...)                         \
    do {                                                                                 \
        if (nvshmemxi_error_unlikely((status) == (expected)))                            \
            NIIN_ERRH_FAIL_JMP("error status: ", (status), status, err, label, __VA_ARGS__); \
    } while (0)

#define NVSHMEMI_NE_ERROR_JMP(status, expected, err, label, ...)                         \
    do {                                                                                 \
        if (nvshmemxi_error_unlikely((status) != (expected)))                            \
            NIIN_ERRH_FAIL_JMP("non-zero status: ", (status), status, err, label,         \
                               __VA_ARGS__);                                             \
    } while (0)

#define NVSHMEMI_NZ_ERROR_JMP(status, err, label, ...) \
    NVSHMEMI_NE_ERROR_JMP(status, 0, err, label, __VA_ARGS__)

#define NVSHMEMI_CHECK_ERROR_JMP(statement, status, err, label, ...)              \
    do {                                                                          \
        if (nvshmemxi_error_unlikely(statement)) {                                \
            NIIN_ERRH_PRINT(stderr, "%s:%d: ", __FILE__, (int)__LINE__);          \
            NIIN_ERRH_MESSAGE(stderr, __VA_ARGS__);                               \
            (status) = (err);                                                     \
            goto label;                                                           \
        }                                                                         \
    } while (0)

/* Prints "<file>:<line>: non-zero status: <code>: <text>, exiting... <message>" and exits. */
#define NIIN_ERRH_EXIT_WITH(code, text, ...)                                                 \
    do {                                                                                     \
        NIIN_ERRH_PRINT(stderr, "%s:%d: non-zero status: %d: %s, exiting... ", __FILE__,     \
                        (int)__LINE__, (int)(code), (text));                                 \
        NIIN_ERRH_MESSAGE(stderr, __VA_ARGS__);                                              \
        NIIN_ERRH_EXIT();                                                                    \
    } while (0)

#define NVSHMEMI_NZ_EXIT(status, ...)                                               \
    do {                                                                            \
        if (nvshmemxi_error_unlikely((status) != 0))                                \
            NIIN_ERRH_EXIT_WITH((status), NIIN_ERRH_ERRNO_TEXT(), __VA_ARGS__);     \
    } while (0)

#define NVSHMEMI_NZ_SYSCHECK_EXIT(sys_status, ...)                                     \
    do {                                                                               \
        if (nvshmemxi_error_unlikely((sys_status) != 0))                               \
            NIIN_ERRH_EXIT_WITH((sys_status), NIIN_ERRH_TEXT(sys_status), __VA_ARGS__); \
    } while (0)

#endif /* NIIN_NON_ABI_NVSHMEMX_ERROR_H */
