/* segv-trace.c -- a diagnostic LD_PRELOAD for the GPU machine, which has no gdb: when the
 * process takes SIGSEGV, SIGBUS or SIGABRT, print which PE and which thread (its id and the
 * name its creator gave it, e.g. NCCL's proxy threads), the faulting address, and a raw
 * backtrace (library + offset, enough to tell libnccl, libcuda, libnvshmem_host and libc
 * apart), then re-raise the signal with its default action so the exit status is unchanged.
 * SIGUSR1 (sent from outside to a process that seems hung) prints every thread's id, name
 * and backtrace instead (each thread is sent SIGUSR2 in turn and prints its own), and the
 * process goes on.
 *
 * Built by scripts/gpu/prepare-reliability.sh into .gpu/bin/segv-trace.so (gcc -shared
 * -fPIC, warnings as errors).
 * Used by `reliability-tests.sh exit` (session 25 found with it that survivors of a stopped
 * device barrier die in NCCL's proxy thread at exit: PERFORMANCE.md, section 10). Not part of the library.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void say(const char *s) {
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void on_fault(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    char name[17] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    const char *pe = getenv("NIIN_PE");
    char line[256];
    snprintf(line, sizeof line,
             "SEGV-TRACE: PE %s pid %d caught signal %d (%s) at address %p in thread %ld "
             "named '%s'; backtrace:\n",
             pe ? pe : "?", (int)getpid(), sig, strsignal(sig), info ? info->si_addr : NULL,
             (long)syscall(SYS_gettid), name);
    say(line);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    say("SEGV-TRACE: end\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

/* SIGUSR2: the receiving thread prints its id, name and backtrace. */
static void on_dump_thread(int sig) {
    (void)sig;
    char name[17] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    const char *pe = getenv("NIIN_PE");
    char line[160];
    snprintf(line, sizeof line, "THREAD-DUMP: PE %s thread %ld named '%s':\n", pe ? pe : "?",
             (long)syscall(SYS_gettid), name);
    say(line);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

/* SIGUSR1: every thread of the process, one after the other, prints its backtrace. Not
 * async-signal-safe (opendir, nanosleep between threads so the output does not interleave);
 * a diagnostic of a process that is stuck anyway. */
static void on_dump_all(int sig) {
    (void)sig;
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return;
    struct dirent *e;
    while ((e = readdir(tasks)) != NULL) {
        if (e->d_name[0] == '.') continue;
        syscall(SYS_tgkill, getpid(), atoi(e->d_name), SIGUSR2);
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    closedir(tasks);
    say("THREAD-DUMP: end\n");
}

__attribute__((constructor)) static void install(void) {
    /* backtrace() loads libgcc_s on its first call; make that call here, not in the handler. */
    void *warm[2];
    backtrace(warm, 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    struct sigaction dump;
    memset(&dump, 0, sizeof dump);
    dump.sa_handler = on_dump_all;
    dump.sa_flags = SA_RESTART;
    sigemptyset(&dump.sa_mask);
    sigaction(SIGUSR1, &dump, NULL);
    dump.sa_handler = on_dump_thread;
    sigaction(SIGUSR2, &dump, NULL);
}
