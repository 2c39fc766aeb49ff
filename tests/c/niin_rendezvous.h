/*
 * niin_rendezvous.h -- tiny file-based exchange between the PEs of a niinrun job, for
 * the C test programs: one PE publishes bytes under a name in $NIIN_RENDEZVOUS_DIR (the
 * job's private directory), the others wait for them. Used to hand out the unique ID
 * (the application's "own bootstrap mechanism") and by the single-node stand-in for
 * MPI in fake_mpi/mpi.h.
 *
 * Plain C11/C++ with POSIX; the including file defines _POSIX_C_SOURCE first.
 */
#ifndef NIIN_RENDEZVOUS_H
#define NIIN_RENDEZVOUS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Writes the path of `name` into `buf`; -1 when $NIIN_RENDEZVOUS_DIR is not set. */
static inline int niin_rv_path(char *buf, size_t size, const char *name, const char *suffix) {
    const char *dir = getenv("NIIN_RENDEZVOUS_DIR");
    if (dir == NULL || dir[0] == '\0') return -1;
    snprintf(buf, size, "%s/%s%s", dir, name, suffix);
    return 0;
}

/* Publishes `size` bytes under `name` (written aside, then renamed: readers never see a
 * partial file). Returns 0 or -1. */
static inline int niin_rv_publish(const char *name, const void *data, size_t size) {
    char tmp[4096], path[4096];
    FILE *f;
    if (niin_rv_path(tmp, sizeof tmp, name, ".tmp") != 0) return -1;
    if (niin_rv_path(path, sizeof path, name, "") != 0) return -1;
    f = fopen(tmp, "wb");
    if (f == NULL) return -1;
    if (fwrite(data, 1, size, f) != size) {
        fclose(f);
        return -1;
    }
    if (fclose(f) != 0) return -1;
    return rename(tmp, path) == 0 ? 0 : -1;
}

/* Waits up to `timeout_s` seconds for `name`, then reads `size` bytes of it. Returns 0
 * or -1. */
static inline int niin_rv_fetch(const char *name, void *data, size_t size, int timeout_s) {
    char path[4096];
    long waited_ms = 0;
    if (niin_rv_path(path, sizeof path, name, "") != 0) return -1;
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            size_t got = fread(data, 1, size, f);
            fclose(f);
            return got == size ? 0 : -1;
        }
        if (waited_ms >= (long)timeout_s * 1000) return -1;
        {
            struct timespec ts;
            ts.tv_sec = 0;
            ts.tv_nsec = 2 * 1000 * 1000;
            nanosleep(&ts, NULL);
        }
        waited_ms += 2;
    }
}

/* This PE's rank and the number of PEs as the launcher says: niinrun's NIIN_PE and
 * NIIN_NPES, else Open MPI's or PMI's variables; -1 when none is set. */
static inline int niin_env_int(const char *a, const char *b, const char *c) {
    const char *names[3];
    int i;
    names[0] = a;
    names[1] = b;
    names[2] = c;
    for (i = 0; i < 3; i++) {
        const char *v = names[i] ? getenv(names[i]) : NULL;
        if (v != NULL && v[0] != '\0') return atoi(v);
    }
    return -1;
}
#define niin_launcher_rank() niin_env_int("NIIN_PE", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
#define niin_launcher_size() niin_env_int("NIIN_NPES", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")

#endif /* NIIN_RENDEZVOUS_H */
