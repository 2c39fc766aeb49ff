/*
 * host_api.c -- checks of NVSHMEM's host API, run as every PE of a job.
 *
 *   host_api [env|uid|mpi]
 *
 *   env  (default) nvshmem_init: the library reads the launcher's environment
 *   uid  unique-ID bootstrap: PE 0 calls nvshmemx_get_uniqueid and hands the ID to the
 *        others through $NIIN_RENDEZVOUS_DIR (niinrun's job directory), then every PE
 *        calls nvshmemx_set_attr_uniqueid_args and nvshmemx_init_attr
 *   mpi  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM) on MPI_COMM_WORLD; needs
 *        -DNIIN_HAS_MPI and an <mpi.h> (real MPI, or tests/c/fake_mpi under niinrun)
 *
 * Prints "PASS <check>" or "FAIL <check>: <why>" per check and "DONE failures=<n>";
 * exits 1 if a check failed. Plain C11/C++ using only the NVSHMEM API (plus
 * niin_stream_synchronize without -DNIIN_TEST_CUDA; see niin_test.h).
 *
 * CPU mock, 4 PEs:   NIIN_TRANSPORT=mock niinrun -n 4 ./host_api
 * GPU (niin-rs):     nvcc -x cu -DNIIN_TEST_CUDA -I$NIIN_HOME/include -Itests/c
 *                         tests/c/host_api.c -L$NIIN_HOME/lib -lnvshmem_host
 */
#define _POSIX_C_SOURCE 200809L
#include "niin_test.h"

#ifdef NIIN_HAS_MPI
#include <mpi.h>
#endif

#define N 4096

static unsigned char pattern(int pe, size_t i) { return (unsigned char)(pe * 37 + i * 11 + 5); }

/* Initializes the library as `mode` says; returns 0 on success. */
static int init(const char *mode, int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (strcmp(mode, "env") == 0) {
        nvshmem_init();
        return 0;
    }
    if (strcmp(mode, "uid") == 0) {
        nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
        nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
        int rank = niin_launcher_rank(), nranks = niin_launcher_size();
        int status;
        if (rank < 0 || nranks < 1) {
            CHECK("uid_launcher", 0, "no rank/size in the environment (NIIN_PE, NIIN_NPES)");
            return 1;
        }
        if (rank == 0) {
            status = nvshmemx_get_uniqueid(&id);
            CHECK("get_uniqueid", status == 0, "status %d", status);
            if (status != 0 || niin_rv_publish("nvshmem-uid", &id, sizeof id) != 0) return 1;
        } else if (niin_rv_fetch("nvshmem-uid", &id, sizeof id, 60) != 0) {
            CHECK("uid_fetch", 0, "no unique ID from PE 0 in $NIIN_RENDEZVOUS_DIR");
            return 1;
        }
        status = nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
        CHECK("set_attr_uniqueid_args", status == 0, "status %d", status);
        status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
        CHECK("init_attr_uniqueid", status == 0, "status %d", status);
        return status;
    }
    if (strcmp(mode, "mpi") == 0) {
#ifdef NIIN_HAS_MPI
        nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
        MPI_Comm comm = MPI_COMM_WORLD;
        int status;
        MPI_Init(argc, argv);
        attr.mpi_comm = &comm;
        status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr);
        CHECK("init_attr_mpi_comm", status == 0, "status %d", status);
        return status;
#else
        CHECK("mpi_mode", 0, "built without -DNIIN_HAS_MPI");
        return 1;
#endif
    }
    CHECK("mode", 0, "unknown mode %s (env, uid or mpi)", mode);
    return 1;
}

static void query_checks(int me, int n) {
    char name[NVSHMEM_MAX_NAME_LEN];
    int major = -1, minor = -1, patch = -1;
    int shared_n = nvshmem_team_n_pes(NVSHMEM_TEAM_SHARED);
    int node_n = nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE);
    int launcher_n = niin_launcher_size();

    CHECK("init_status", nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED, "status %d",
          nvshmemx_init_status());
    CHECK("my_pe_n_pes", n >= 1 && me >= 0 && me < n, "my_pe %d, n_pes %d", me, n);
    CHECK("n_pes_is_the_launchers", launcher_n < 0 || n == launcher_n, "n_pes %d, launcher %d",
          n, launcher_n);
    CHECK("team_world", nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD) == me &&
                            nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD) == n,
          "team_my_pe %d, team_n_pes %d", nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD),
          nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD));
    CHECK("team_shared", shared_n >= 1 && shared_n <= n &&
                             nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED) >= 0 &&
                             nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED) < shared_n,
          "team_n_pes %d, team_my_pe %d", shared_n, nvshmem_team_my_pe(NVSHMEM_TEAM_SHARED));
    CHECK("team_node", node_n >= 1 && node_n <= n &&
                           nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) >= 0 &&
                           nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) < node_n,
          "team_n_pes %d", node_n);
    CHECK("team_same_mype_node", nvshmem_team_n_pes(NVSHMEMX_TEAM_SAME_MYPE_NODE) >= 1,
          "team_n_pes %d", nvshmem_team_n_pes(NVSHMEMX_TEAM_SAME_MYPE_NODE));
    CHECK("team_invalid", nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID) == -1 &&
                              nvshmem_team_n_pes(NVSHMEM_TEAM_INVALID) == -1,
          "team_my_pe %d, team_n_pes %d", nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID),
          nvshmem_team_n_pes(NVSHMEM_TEAM_INVALID));

    memset(name, 'x', sizeof name);
    nvshmem_info_get_name(name);
    CHECK("info_get_name", memchr(name, 0, sizeof name) != NULL && name[0] != '\0' &&
                               strcmp(name, NVSHMEM_VENDOR_STRING) == 0,
          "name \"%.*s\", NVSHMEM_VENDOR_STRING \"%s\"", (int)sizeof name, name,
          NVSHMEM_VENDOR_STRING);
    nvshmem_info_get_version(&major, &minor);
    CHECK("info_get_version", major == NVSHMEM_MAJOR_VERSION && minor == NVSHMEM_MINOR_VERSION,
          "%d.%d", major, minor);
    nvshmemx_vendor_get_version_info(&major, &minor, &patch);
    CHECK("vendor_get_version_info",
          major == NVSHMEM_VENDOR_MAJOR_VERSION && minor == NVSHMEM_VENDOR_MINOR_VERSION &&
              patch == NVSHMEM_VENDOR_PATCH_VERSION,
          "%d.%d.%d", major, minor, patch);
}

/* Counts bytes of `got` that differ from pattern(pe, .). */
static size_t mismatches(const unsigned char *got, size_t n, int pe) {
    size_t i, bad = 0;
    for (i = 0; i < n; i++) bad += got[i] != pattern(pe, i);
    return bad;
}

static void rma_checks(int me, int n) {
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    cudaStream_t stream = 0;
    unsigned char *buf = (unsigned char *)nvshmem_malloc(N);
    unsigned char *buf2 = (unsigned char *)nvshmem_malloc(N);
    uint64_t *sig = (uint64_t *)nvshmem_calloc(2, sizeof(uint64_t));
    void *aligned = nvshmem_align(4096, 100);
    unsigned char *src = (unsigned char *)local_alloc(N);
    unsigned char *dst = (unsigned char *)local_alloc(N);
    unsigned char *dst2 = (unsigned char *)local_alloc(N);
    unsigned char *host = (unsigned char *)malloc(N);
    unsigned char *host2 = (unsigned char *)malloc(N);
    uint64_t sigs[2] = {99, 99};
    unsigned long long word = 0;
    size_t i, bad, bad2;
    int status;

    CHECK("malloc", buf != NULL && buf2 != NULL, "buf %p, buf2 %p", (void *)buf, (void *)buf2);
    CHECK("calloc", sig != NULL, "NULL");
    CHECK("align", aligned != NULL && (uintptr_t)aligned % 4096 == 0, "%p", aligned);
    CHECK("malloc_zero_is_null", nvshmem_malloc(0) == NULL, "not NULL");
    if (buf == NULL || buf2 == NULL || sig == NULL || src == NULL || host == NULL) return;
    copy_out(sigs, sig, sizeof sigs);
    CHECK("calloc_zeroed", sigs[0] == 0 && sigs[1] == 0, "%llu %llu",
          (unsigned long long)sigs[0], (unsigned long long)sigs[1]);
    CHECK("ptr_self", nvshmem_ptr(buf, me) == (void *)buf, "%p for %p", nvshmem_ptr(buf, me),
          (void *)buf);

    /* A ring on the default stream: put to the next PE, barrier, read back. */
    for (i = 0; i < N; i++) host[i] = pattern(me, i);
    copy_in(src, host, N);
    nvshmemx_putmem_on_stream(buf, src, N, next, stream);
    nvshmemx_barrier_all_on_stream(stream);
    nvshmemx_getmem_on_stream(dst, buf, N, me, stream);
    nvshmemx_getmem_on_stream(dst2, buf, N, next, stream);
    nvshmemx_quiet_on_stream(stream);
    status = stream_sync(stream);
    CHECK("stream_sync", status == 0, "status %d", status);
    copy_out(host, dst, N);
    copy_out(host2, dst2, N);
    bad = mismatches(host, N, prev);
    bad2 = mismatches(host2, N, me);
    CHECK("putmem_on_stream_ring", bad == 0, "%zu of %d bytes from PE %d differ", bad, N, prev);
    CHECK("getmem_on_stream_remote", bad2 == 0, "%zu of %d bytes read from PE %d differ", bad2,
          N, next);

    /* Put with signal (ADD), waited for on the stream. */
    nvshmemx_putmem_signal_on_stream(buf2, src, N, &sig[0], 1, NVSHMEM_SIGNAL_ADD, next, stream);
    nvshmemx_signal_wait_until_on_stream(&sig[0], NVSHMEM_CMP_GE, 1, stream);
    nvshmemx_getmem_on_stream(dst, buf2, N, me, stream);
    /* And with SET: 8 bytes and the value 42. */
    nvshmemx_putmem_signal_on_stream(buf2, src, 8, &sig[1], 42, NVSHMEM_SIGNAL_SET, next, stream);
    nvshmemx_signal_wait_until_on_stream(&sig[1], NVSHMEM_CMP_EQ, 42, stream);
    status = stream_sync(stream);
    CHECK("stream_sync_signals", status == 0, "status %d", status);
    copy_out(host, dst, N);
    copy_out(sigs, sig, sizeof sigs);
    bad = mismatches(host, N, prev);
    CHECK("putmem_signal_on_stream_data", bad == 0, "%zu of %d bytes from PE %d differ", bad, N,
          prev);
    CHECK("putmem_signal_on_stream_add", sigs[0] == 1, "signal %llu",
          (unsigned long long)sigs[0]);
    CHECK("putmem_signal_on_stream_set", sigs[1] == 42, "signal %llu",
          (unsigned long long)sigs[1]);

    /* Host-initiated blocking put and get. Every PE is done with buf (its stream ran). */
    nvshmem_barrier_all();
    word = 1000 + (unsigned long long)me;
    copy_in(src, &word, sizeof word);
    nvshmem_putmem(buf, src, sizeof word, next);
    nvshmem_quiet();
    nvshmem_barrier_all();
    nvshmem_getmem(dst, buf, sizeof word, me);
    copy_out(&word, dst, sizeof word);
    CHECK("putmem_getmem_host", word == 1000 + (unsigned long long)prev, "got %llu, want %d",
          word, 1000 + prev);
    nvshmem_fence();
    nvshmem_sync_all();

    /* The even PEs as a team. */
    {
        nvshmem_team_t even = NVSHMEM_TEAM_INVALID;
        int size = (n + 1) / 2;
        status = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, size, NULL, 0, &even);
        CHECK("team_split_strided", status == 0, "status %d", status);
        if (me % 2 == 0) {
            CHECK("team_split_member", nvshmem_team_my_pe(even) == me / 2 &&
                                           nvshmem_team_n_pes(even) == size &&
                                           nvshmem_team_translate_pe(even, 0, NVSHMEM_TEAM_WORLD) == 0,
                  "team %d: my_pe %d, n_pes %d", (int)even, nvshmem_team_my_pe(even),
                  nvshmem_team_n_pes(even));
            status = nvshmem_barrier(even);
            CHECK("team_barrier", status == 0, "status %d", status);
            nvshmem_team_destroy(even);
        } else {
            CHECK("team_split_non_member", even == NVSHMEM_TEAM_INVALID, "team %d", (int)even);
        }
    }

    /* Typed and sized stream-ordered put/get, every name of the type list (half and
     * bfloat16 where the compiler has them) and every size: 3 elements to the next PE
     * (blocking put, then _nbi put of the next 3), a barrier on the stream, both read back
     * from this PE (blocking get, _nbi get), compared with what the previous PE sent. */
    for (i = 0; i < N; i++) host[i] = pattern(me, i);
    copy_in(src, host, N);
    {
    int signal_checks = 0;
#define TYPED_STREAM_CHECK(PUT, PUT_NBI, GET, GET_NBI, TYPE, SIZE, NAME)                        \
    do {                                                                                     \
        size_t size = (SIZE), elems = 3, bytes = 2 * elems * size;                           \
        nvshmem_barrier_all();                                                               \
        PUT((TYPE *)buf, (const TYPE *)src, elems, next, stream);                            \
        PUT_NBI((TYPE *)(buf + elems * size), (const TYPE *)(src + elems * size), elems, next, \
                stream);                                                                     \
        nvshmemx_barrier_all_on_stream(stream);                                              \
        GET((TYPE *)dst, (const TYPE *)buf, elems, me, stream);                              \
        GET_NBI((TYPE *)(dst + elems * size), (const TYPE *)(buf + elems * size), elems, me,  \
                stream);                                                                     \
        status = stream_sync(stream);                                                        \
        copy_out(host, dst, bytes);                                                          \
        bad = mismatches(host, bytes, prev);                                                 \
        CHECK("on_stream_" NAME, status == 0 && bad == 0,                                    \
              "status %d, %zu of %zu bytes from PE %d differ", status, bad, bytes, prev);    \
    } while (0)
    /* Put with signal: 3 elements with SET mark, 3 more (_nbi) with ADD 1, a wait on the
     * stream for mark + 1 in this PE's word (the previous PE's two signals), then a read. */
#define SIGNAL_CHECK(PUTSIG, PUTSIG_NBI, TYPE, SIZE, NAME)                                     \
    do {                                                                                     \
        size_t size = (SIZE), elems = 3, bytes = 2 * elems * size;                           \
        uint64_t mark = 1000 + 10 * (uint64_t)(++signal_checks);                             \
        nvshmem_barrier_all();                                                               \
        PUTSIG((TYPE *)buf2, (const TYPE *)src, elems, &sig[0], mark, NVSHMEM_SIGNAL_SET,    \
               next, stream);                                                                \
        PUTSIG_NBI((TYPE *)(buf2 + elems * size), (const TYPE *)(src + elems * size), elems,  \
                   &sig[0], 1, NVSHMEM_SIGNAL_ADD, next, stream);                            \
        nvshmemx_signal_wait_until_on_stream(&sig[0], NVSHMEM_CMP_EQ, mark + 1, stream);     \
        nvshmemx_getmem_on_stream(dst, buf2, bytes, me, stream);                             \
        status = stream_sync(stream);                                                        \
        copy_out(host, dst, bytes);                                                          \
        bad = mismatches(host, bytes, prev);                                                 \
        CHECK("put_signal_on_stream_" NAME, status == 0 && bad == 0,                         \
              "status %d, %zu of %zu bytes from PE %d differ", status, bad, bytes, prev);    \
    } while (0)
#define TYPED_CHECK(NAME, TYPE)                                                              \
    TYPED_STREAM_CHECK(nvshmemx_##NAME##_put_on_stream, nvshmemx_##NAME##_put_nbi_on_stream,   \
                       nvshmemx_##NAME##_get_on_stream, nvshmemx_##NAME##_get_nbi_on_stream,   \
                       TYPE, sizeof(TYPE), #NAME);                                          \
    SIGNAL_CHECK(nvshmemx_##NAME##_put_signal_on_stream,                                     \
                 nvshmemx_##NAME##_put_signal_nbi_on_stream, TYPE, sizeof(TYPE), #NAME);
#define SIZED_CHECK(BITS, TYPE)                                                              \
    TYPED_STREAM_CHECK(nvshmemx_put##BITS##_on_stream, nvshmemx_put##BITS##_nbi_on_stream,     \
                       nvshmemx_get##BITS##_on_stream, nvshmemx_get##BITS##_nbi_on_stream,     \
                       void, (BITS) / 8, "put/get" #BITS);                                  \
    SIGNAL_CHECK(nvshmemx_put##BITS##_signal_on_stream, nvshmemx_put##BITS##_signal_nbi_on_stream, \
                 void, (BITS) / 8, "put" #BITS);
    NIIN_FOR_EACH_RMA_TYPE_PLAIN(TYPED_CHECK)
#if defined(__CUDACC__)
    NIIN_FOR_EACH_RMA_TYPE_FP16(TYPED_CHECK)
#endif
    NIIN_FOR_EACH_RMA_SIZE(SIZED_CHECK)
    /* Scalar p/g on the stream (the plain C types): PE me stores me + 1 into the next PE,
     * a barrier on the stream, then g reads this PE's word (synchronous) and the next PE's. */
#define PG_CHECK(NAME, TYPE)                                                                 \
    do {                                                                                     \
        TYPE got, there;                                                                     \
        nvshmem_barrier_all();                                                               \
        nvshmemx_##NAME##_p_on_stream((TYPE *)buf, (TYPE)(me + 1), next, stream);            \
        nvshmemx_barrier_all_on_stream(stream);                                              \
        got = nvshmemx_##NAME##_g_on_stream((const TYPE *)buf, me, stream);                  \
        there = nvshmemx_##NAME##_g_on_stream((const TYPE *)buf, next, stream);              \
        CHECK("p_g_on_stream_" #NAME, (long long)got == prev + 1 && (long long)there == me + 1, \
              "read %lld here (want %d), %lld on PE %d (want %d)", (long long)got, prev + 1,   \
              (long long)there, next, me + 1);                                               \
    } while (0);
    NIIN_FOR_EACH_RMA_TYPE_PLAIN(PG_CHECK)
#undef PG_CHECK
    /* Strided put and get on the stream, every type: this PE's buf holds 7 elements of
     * fill; the previous PE puts its src elements 0, 2, 4 (sst 2) to elements 0, 3, 6
     * (dst 3); after a barrier on the stream this PE reads its 7 elements back (strides
     * 1/1) and elements 0, 3, 6 again into dst2 at stride 2 (sst 3; dst2 prefilled), and
     * checks every byte: the put elements where they belong, the fill everywhere else. */
#define STRIDED_BODY(IPUT, IGET, TYPE, SIZE, LABEL)                                          \
    do {                                                                                     \
        size_t size = (SIZE), k, b;                                                          \
        memset(host2, 0xEE, 7 * size);                                                       \
        nvshmem_barrier_all();                                                               \
        copy_in(buf, host2, 7 * size);                                                       \
        copy_in(dst2, host2, 7 * size);                                                      \
        nvshmem_barrier_all();                                                               \
        IPUT((TYPE *)buf, (const TYPE *)src, 3, 2, 3, next, stream);                         \
        nvshmemx_barrier_all_on_stream(stream);                                              \
        IGET((TYPE *)dst, (const TYPE *)buf, 1, 1, 7, me, stream);                           \
        IGET((TYPE *)dst2, (const TYPE *)buf, 2, 3, 3, me, stream);                          \
        status = stream_sync(stream);                                                        \
        copy_out(host, dst, 7 * size);                                                       \
        copy_out(host2, dst2, 7 * size);                                                     \
        bad = bad2 = 0;                                                                      \
        for (k = 0; k < 7; k++)                                                              \
            for (b = 0; b < size; b++) {                                                     \
                unsigned char sent = pattern(prev, (k / 3) * 2 * size + b);                  \
                unsigned char sent2 = pattern(prev, k * size + b);                           \
                bad += host[k * size + b] != (k % 3 == 0 ? sent : 0xEE);                     \
                bad2 += host2[k * size + b] != (k % 2 == 0 && k < 5 ? sent2 : 0xEE);         \
            }                                                                                \
        CHECK(LABEL, status == 0 && bad == 0 && bad2 == 0,                                   \
              "status %d, %zu + %zu of %zu bytes wrong (from PE %d)", status, bad, bad2,     \
              7 * size, prev);                                                               \
    } while (0);
#define STRIDED_CHECK(NAME, TYPE)                                                            \
    STRIDED_BODY(nvshmemx_##NAME##_iput_on_stream, nvshmemx_##NAME##_iget_on_stream, TYPE,   \
                 sizeof(TYPE), "iput_iget_on_stream_" #NAME)
#define STRIDED_SIZED_CHECK(BITS, TYPE)                                                      \
    STRIDED_BODY(nvshmemx_iput##BITS##_on_stream, nvshmemx_iget##BITS##_on_stream, void,     \
                 (BITS) / 8, "iput_iget_on_stream_" #BITS)
    NIIN_FOR_EACH_RMA_TYPE_PLAIN(STRIDED_CHECK)
#if defined(__CUDACC__)
    NIIN_FOR_EACH_RMA_TYPE_FP16(STRIDED_CHECK)
#endif
    NIIN_FOR_EACH_RMA_SIZE(STRIDED_SIZED_CHECK)
#undef STRIDED_SIZED_CHECK
#undef STRIDED_CHECK
#undef STRIDED_BODY
    /* Waits on the stream, the 14 wait types: the previous PE stores mark into this PE's
     * word with p; this PE's stream waits for it (EQ), then reads a word the previous PE
     * put before its p. */
#define WAIT_CHECK(NAME, TYPE)                                                               \
    do {                                                                                     \
        TYPE mark = (TYPE)(100 + ++signal_checks);                                           \
        nvshmem_barrier_all();                                                               \
        nvshmemx_putmem_on_stream(buf2, src, 8, next, stream);                               \
        nvshmemx_quiet_on_stream(stream);                                                    \
        nvshmemx_##NAME##_p_on_stream((TYPE *)buf, mark, next, stream);                      \
        nvshmemx_##NAME##_wait_until_on_stream((TYPE *)buf, NVSHMEM_CMP_EQ, mark, stream);   \
        nvshmemx_getmem_on_stream(dst, buf2, 8, me, stream);                                 \
        status = stream_sync(stream);                                                        \
        copy_out(host, dst, 8);                                                              \
        bad = mismatches(host, 8, prev);                                                     \
        CHECK("wait_until_on_stream_" #NAME, status == 0 && bad == 0,                        \
              "status %d, %zu of 8 bytes from PE %d differ", status, bad, prev);             \
    } while (0);
    NIIN_FOR_EACH_WAIT_TYPE(WAIT_CHECK)
#undef WAIT_CHECK
    /* wait_until_all and its vector form on the stream, the 14 wait types: this PE's stream
     * stores mark into words 0 and 2 of its own buf; word 1 stays 0 and is excluded by
     * status (read on the device when the stream gets there), so both waits complete. */
#define WAIT_ALL_CHECK(NAME, TYPE)                                                           \
    do {                                                                                     \
        TYPE mark = (TYPE)(60 + ++signal_checks), zeros[3] = {0, 0, 0}, want[3];             \
        int st[3] = {0, 1, 0};                                                               \
        want[0] = mark;                                                                      \
        want[1] = (TYPE)99;                                                                  \
        want[2] = mark;                                                                      \
        nvshmem_barrier_all();                                                               \
        copy_in(buf, zeros, sizeof zeros);                                                   \
        copy_in(dst, st, sizeof st);                                                         \
        copy_in(dst2, want, sizeof want);                                                    \
        nvshmemx_##NAME##_p_on_stream((TYPE *)buf, mark, me, stream);                        \
        nvshmemx_##NAME##_p_on_stream((TYPE *)buf + 2, mark, me, stream);                    \
        nvshmemx_##NAME##_wait_until_all_on_stream((TYPE *)buf, 3, (const int *)dst,         \
                                                   NVSHMEM_CMP_EQ, mark, stream);            \
        nvshmemx_##NAME##_wait_until_all_vector_on_stream((TYPE *)buf, 3, (const int *)dst,  \
                                                          NVSHMEM_CMP_EQ, (TYPE *)dst2,      \
                                                          stream);                           \
        nvshmemx_##NAME##_wait_until_all_on_stream((TYPE *)buf, 3, NULL, NVSHMEM_CMP_GE,     \
                                                   (TYPE)0, stream);                         \
        status = stream_sync(stream);                                                        \
        CHECK("wait_until_all_on_stream_" #NAME, status == 0, "status %d", status);          \
    } while (0);
    NIIN_FOR_EACH_WAIT_TYPE(WAIT_ALL_CHECK)
#undef WAIT_ALL_CHECK
#undef SIZED_CHECK
#undef TYPED_CHECK
#undef SIGNAL_CHECK
#undef TYPED_STREAM_CHECK
    }
    nvshmem_barrier_all();

    nvshmem_free(aligned);
    nvshmem_free(sig);
    nvshmem_free(buf2);
    nvshmem_free(buf);
    local_free(src);
    local_free(dst);
    local_free(dst2);
    free(host);
    free(host2);
}

/* The host collectives through the C ABI, over NVSHMEM_TEAM_WORLD and the team of even PEs:
 * int sum reduce (in place too), uint64 xor reducescatter, double broadcast from the last
 * PE, fcollectmem, alltoall of shorts; the _on_stream forms on the CPU mock (a GPU world
 * refuses them for now, see README "Limits"). Inputs are small, so sums are exact. Wrong
 * use is wrong_use.c's. */
static void coll_checks(int me, int n) {
    enum { LEN = 100, PER = 5 };
    int *ia = (int *)nvshmem_malloc(LEN * sizeof(int));
    int *ib = (int *)nvshmem_malloc(LEN * sizeof(int));
    uint64_t *ua = (uint64_t *)nvshmem_malloc((size_t)PER * n * sizeof(uint64_t));
    uint64_t *ub = (uint64_t *)nvshmem_malloc(PER * sizeof(uint64_t));
    short *sa = (short *)nvshmem_malloc((size_t)PER * n * sizeof(short));
    short *sb = (short *)nvshmem_malloc((size_t)PER * n * sizeof(short));
    int host[LEN], got[LEN];
    uint64_t uh[PER * 64], ug[PER];
    short sh[PER * 64], sg[PER * 64];
    int i, j, k, bad, rc, stream_form;
    if (!ia || !ib || !ua || !ub || !sa || !sb || n > 64) {
        CHECK("collectives: allocations", 0, "n %d", n);
        return;
    }
    for (stream_form = 0; stream_form < 2; stream_form++) {
#ifdef NIIN_TEST_CUDA
        if (stream_form) break;
#endif
        for (i = 0; i < LEN; i++) host[i] = me * 3 + i;
        copy_in(ia, host, sizeof host);
        rc = stream_form ? nvshmemx_int_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, ib, ia, LEN, 0)
                         : nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, ib, ia, LEN);
        if (stream_form) stream_sync(0);
        copy_out(got, ib, sizeof got);
        for (bad = 0, i = 0; i < LEN; i++) bad += got[i] != 3 * n * (n - 1) / 2 + n * i;
        CHECK(stream_form ? "int_sum_reduce_on_stream" : "int_sum_reduce", rc == 0 && bad == 0,
              "rc %d, %d of %d wrong", rc, bad, LEN);
        /* In place. */
        rc = nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, ia, ia, LEN);
        copy_out(got, ia, sizeof got);
        for (bad = 0, i = 0; i < LEN; i++) bad += got[i] != 3 * n * (n - 1) / 2 + n * i;
        CHECK("int_sum_reduce in place", rc == 0 && bad == 0, "rc %d, %d wrong", rc, bad);

        for (i = 0; i < PER * n; i++) uh[i] = (uint64_t)(me + 1) << (i % 48);
        copy_in(ua, uh, PER * n * sizeof(uint64_t));
        rc = stream_form
                 ? nvshmemx_uint64_xor_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, ub, ua, PER, 0)
                 : nvshmem_uint64_xor_reducescatter(NVSHMEM_TEAM_WORLD, ub, ua, PER);
        if (stream_form) stream_sync(0);
        copy_out(ug, ub, sizeof ug);
        for (bad = 0, i = 0; i < PER; i++) {
            uint64_t want = 0;
            for (k = 0; k < n; k++) want ^= (uint64_t)(k + 1) << ((me * PER + i) % 48);
            bad += ug[i] != want;
        }
        CHECK(stream_form ? "uint64_xor_reducescatter_on_stream" : "uint64_xor_reducescatter",
              rc == 0 && bad == 0, "rc %d, %d wrong", rc, bad);

        for (i = 0; i < PER * n; i++) sh[i] = (short)(me * 100 + i);
        copy_in(sa, sh, PER * n * sizeof(short));
        rc = stream_form ? nvshmemx_short_alltoall_on_stream(NVSHMEM_TEAM_WORLD, sb, sa, PER, 0)
                         : nvshmem_short_alltoall(NVSHMEM_TEAM_WORLD, sb, sa, PER);
        if (stream_form) stream_sync(0);
        copy_out(sg, sb, PER * n * sizeof(short));
        for (bad = 0, j = 0; j < n; j++)
            for (i = 0; i < PER; i++) bad += sg[j * PER + i] != (short)(j * 100 + me * PER + i);
        CHECK(stream_form ? "short_alltoall_on_stream" : "short_alltoall", rc == 0 && bad == 0,
              "rc %d, %d wrong", rc, bad);

        rc = stream_form ? nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, sb, sa, 2, 0)
                         : nvshmem_fcollectmem(NVSHMEM_TEAM_WORLD, sb, sa, 2);
        if (stream_form) stream_sync(0);
        copy_out(sg, sb, (size_t)2 * n);
        for (bad = 0, j = 0; j < n; j++) {
            short first = (short)(j * 100);
            bad += memcmp((const char *)sg + 2 * j, &first, 2) != 0;
        }
        CHECK(stream_form ? "fcollectmem_on_stream" : "fcollectmem", rc == 0 && bad == 0,
              "rc %d, %d wrong", rc, bad);
    }
    /* The even PEs' team: a broadcast of doubles from its last PE. */
    {
        nvshmem_team_t evens = NVSHMEM_TEAM_INVALID;
        double dv[PER], dg[PER];
        double *da = (double *)ua, *db = (double *)ub;
        int tn = (n + 1) / 2;
        rc = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, tn, NULL, 0, &evens);
        CHECK("split evens for collectives", rc == 0, "rc %d", rc);
        if (me % 2 == 0 && evens != NVSHMEM_TEAM_INVALID) {
            for (i = 0; i < PER; i++) dv[i] = me + i * 0.5;
            copy_in(da, dv, sizeof dv);
            rc = nvshmem_double_broadcast(evens, db, da, PER, tn - 1);
            copy_out(dg, db, sizeof dg);
            for (bad = 0, i = 0; i < PER; i++) bad += dg[i] != 2.0 * (tn - 1) + i * 0.5;
            CHECK("double_broadcast on the evens", rc == 0 && bad == 0, "rc %d, %d wrong", rc, bad);
            nvshmem_team_destroy(evens);
        }
    }
    nvshmem_barrier_all();
    nvshmem_free(sb);
    nvshmem_free(sa);
    nvshmem_free(ub);
    nvshmem_free(ua);
    nvshmem_free(ib);
    nvshmem_free(ia);
}

/* Barriers back to back, each ordering a put. In round r every PE puts r + 1 into word
 * r % 2 of the next PE, then a barrier over all PEs, then reads its own word r % 2. That
 * word is next written in round r + 2, after the barrier of round r + 1, which waits for
 * this PE's read: each read must see exactly r + 1 (a barrier that lets a PE through
 * early reads r - 1). First on the stream (the reads land in a device buffer, checked
 * after one synchronize), then blocking (barrier and sync alternating), then the two
 * kinds interleaved with a stream synchronize between them. */
static void barrier_rounds(int me, int n) {
    enum { ROUNDS = 200 };
    int next = (me + 1) % n;
    cudaStream_t stream = 0;
    int *words = (int *)nvshmem_calloc(2, sizeof(int));
    int *seen = (int *)local_alloc(ROUNDS * sizeof(int));
    int host[ROUNDS];
    int r, bad = 0, first = -1, status;

    CHECK("barrier_rounds_alloc", words != NULL && seen != NULL, "words %p, seen %p",
          (void *)words, (void *)seen);
    if (words == NULL || seen == NULL) return;
    for (r = 0; r < ROUNDS; r++) {
        nvshmemx_int_p_on_stream(&words[r % 2], r + 1, next, stream);
        nvshmemx_barrier_all_on_stream(stream);
        nvshmemx_getmem_on_stream(&seen[r], &words[r % 2], sizeof(int), me, stream);
    }
    status = stream_sync(stream);
    CHECK("barrier_rounds_stream_sync", status == 0, "status %d", status);
    copy_out(host, seen, sizeof host);
    for (r = 0; r < ROUNDS; r++) {
        if (host[r] != r + 1) {
            bad++;
            if (first < 0) first = r;
        }
    }
    CHECK("barrier_rounds_on_stream", bad == 0, "%d of %d rounds wrong, first round %d saw %d",
          bad, ROUNDS, first, first < 0 ? 0 : host[first]);

    nvshmem_barrier_all();
    bad = 0;
    first = -1;
    for (r = 0; r < ROUNDS; r++) {
        int got;
        nvshmem_int_p(&words[r % 2], r + 1, next);
        if (r % 2 == 0)
            nvshmem_barrier_all();
        else
            nvshmem_sync_all();
        got = nvshmem_int_g(&words[r % 2], me);
        if (got != r + 1) {
            bad++;
            if (first < 0) first = r;
        }
    }
    CHECK("barrier_rounds_blocking", bad == 0, "%d of %d rounds wrong, first round %d", bad,
          ROUNDS, first);

    bad = 0;
    first = -1;
    for (r = 0; r < ROUNDS; r++) {
        int got;
        if (r % 2 == 0) {
            nvshmemx_int_p_on_stream(&words[r % 2], r + 1, next, stream);
            nvshmemx_barrier_all_on_stream(stream);
            nvshmemx_getmem_on_stream(&seen[r], &words[r % 2], sizeof(int), me, stream);
            status = stream_sync(stream);
            copy_out(&got, &seen[r], sizeof got);
        } else {
            nvshmem_int_p(&words[r % 2], r + 1, next);
            nvshmem_barrier_all();
            got = nvshmem_int_g(&words[r % 2], me);
        }
        if (status != 0 || got != r + 1) {
            bad++;
            if (first < 0) first = r;
        }
    }
    CHECK("barrier_rounds_mixed", bad == 0, "%d of %d rounds wrong, first round %d", bad,
          ROUNDS, first);
    nvshmem_barrier_all();
    local_free(seen);
    nvshmem_free(words);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "env";
    int me, n;

    select_device();
    if (init(mode, &argc, &argv) != 0) {
        printf("DONE failures=%d (init failed)\n", niin_test_failures + 1);
        return 1;
    }
    me = nvshmem_my_pe();
    n = nvshmem_n_pes();
    query_checks(me, n);
    if (n >= 1 && me >= 0) rma_checks(me, n);
    if (n >= 1 && me >= 0) barrier_rounds(me, n);
    if (n >= 1 && me >= 0) coll_checks(me, n);
    nvshmem_finalize();
    CHECK("finalized", nvshmemx_init_status() != NVSHMEM_STATUS_IS_INITIALIZED, "status %d",
          nvshmemx_init_status());
#ifdef NIIN_HAS_MPI
    if (strcmp(mode, "mpi") == 0) MPI_Finalize();
#endif
    printf("DONE failures=%d\n", niin_test_failures);
    return niin_test_failures == 0 ? 0 : 1;
}
