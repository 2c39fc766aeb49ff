/*
 * wrong_use.c -- wrong uses of the host API give errors, not crashes (niin-rs behaviour;
 * NVSHMEM itself exits on several of these). Run as every PE of a job:
 *
 *   wrong_use          every check; exit 1 if one failed
 *   wrong_use exit     then PE 0 calls nvshmem_global_exit(7) while the others wait in
 *                      a barrier: the job ends with status 7
 *
 * Each call that must fail is counted, and the program prints "EXPECT_NIIN_LINES <k>":
 * the library must have written exactly k lines, each "NIIN: <function>: ...", on
 * stderr (the test that runs it counts them). Plain C11/C++ on the CPU mock.
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "niin_test.h"

static int expected_lines = 0;

/* A call that must fail and write one NIIN: line. */
#define EXPECT_ERROR(name, cond, ...) \
    do {                              \
        expected_lines++;             \
        CHECK(name, cond, __VA_ARGS__); \
    } while (0)

static void before_init(void) {
    char name[NVSHMEM_MAX_NAME_LEN];
    int major = 0, minor = 0, status, local = 7;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_uniqueid_t empty = NVSHMEMX_UNIQUEID_INITIALIZER;

    CHECK("status_before_init", nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED,
          "status %d", nvshmemx_init_status());
    EXPECT_ERROR("my_pe_before_init", nvshmem_my_pe() == -1, "not -1");
    EXPECT_ERROR("n_pes_before_init", nvshmem_n_pes() == -1, "not -1");
    EXPECT_ERROR("team_my_pe_before_init", nvshmem_team_my_pe(NVSHMEM_TEAM_WORLD) == -1,
                 "not -1");
    EXPECT_ERROR("malloc_before_init", nvshmem_malloc(64) == NULL, "not NULL");
    nvshmem_free(&local);
    EXPECT_ERROR("free_before_init", 1, "-");
    EXPECT_ERROR("ptr_before_init", nvshmem_ptr(&local, 0) == NULL, "not NULL");
    nvshmem_barrier_all();
    EXPECT_ERROR("barrier_all_before_init", 1, "-");
    nvshmem_quiet();
    EXPECT_ERROR("quiet_before_init", 1, "-");
    nvshmemx_putmem_on_stream(&local, &local, sizeof local, 0, 0);
    EXPECT_ERROR("putmem_on_stream_before_init", 1, "-");
    status = nvshmem_barrier(NVSHMEM_TEAM_WORLD);
    EXPECT_ERROR("barrier_before_init", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    nvshmem_finalize();
    EXPECT_ERROR("finalize_before_init", 1, "-");
    status = niin_stream_synchronize(0);
    EXPECT_ERROR("stream_synchronize_before_init", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);

    /* Constants answer before init, without a line. */
    nvshmem_info_get_name(name);
    CHECK("info_get_name_before_init", strcmp(name, NVSHMEM_VENDOR_STRING) == 0, "%s", name);
    nvshmem_info_get_version(&major, &minor);
    CHECK("info_get_version_before_init", major == 1 && minor == 3, "%d.%d", major, minor);

    /* Init that cannot work. */
    status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr);
    EXPECT_ERROR("init_attr_mpi_without_niin_has_mpi", status == NVSHMEMX_ERROR_NOT_SUPPORTED,
                 "status %d", status);
    status = nvshmemx_init_attr(1u << 20, NULL);
    EXPECT_ERROR("init_attr_unknown_flag", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, NULL);
    EXPECT_ERROR("init_attr_uniqueid_null_attr", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);
    nvshmemx_set_attr_uniqueid_args(0, 1, &empty, &attr);
    status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    EXPECT_ERROR("init_attr_empty_uniqueid", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);
    nvshmemx_set_attr_uniqueid_args(3, 2, &empty, &attr);
    status = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    EXPECT_ERROR("init_attr_uniqueid_bad_rank", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);
    status = nvshmemx_get_uniqueid(NULL);
    EXPECT_ERROR("get_uniqueid_null", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    status = nvshmemx_set_attr_uniqueid_args(0, 1, &empty, NULL);
    EXPECT_ERROR("set_attr_uniqueid_args_null", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);
    CHECK("still_not_initialized", nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED,
          "status %d", nvshmemx_init_status());
}

static void while_initialized(void) {
    int me = nvshmem_my_pe(), n = nvshmem_n_pes(), next = (me + 1) % n;
    int local = 7, provided = -1, status;
    nvshmem_team_t team = 12345;
    unsigned char *buf = (unsigned char *)nvshmem_malloc(256);
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    unsigned char src[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    CHECK("alloc", buf != NULL && sig != NULL, "NULL");
    if (buf == NULL || sig == NULL) return;
    EXPECT_ERROR("ptr_not_symmetric", nvshmem_ptr(&local, me) == NULL, "not NULL");
    EXPECT_ERROR("ptr_pe_too_big", nvshmem_ptr(buf, n) == NULL, "not NULL");
    EXPECT_ERROR("ptr_pe_negative", nvshmem_ptr(buf, -1) == NULL, "not NULL");
    EXPECT_ERROR("team_my_pe_not_a_team", nvshmem_team_my_pe(12345) == -1, "not -1");
    CHECK("team_my_pe_invalid_team_is_quiet", nvshmem_team_my_pe(NVSHMEM_TEAM_INVALID) == -1,
          "not -1");
    nvshmemx_putmem_on_stream(buf, src, sizeof src, n, 0);
    EXPECT_ERROR("putmem_on_stream_bad_pe", 1, "-");
    nvshmemx_putmem_signal_on_stream(buf, src, sizeof src, sig, 1, 99, next, 0);
    EXPECT_ERROR("putmem_signal_on_stream_bad_op", 1, "-");
    nvshmemx_putmem_on_stream(&local, src, sizeof local, me, 0);
    EXPECT_ERROR("putmem_on_stream_dest_not_symmetric", 1, "-");
    nvshmem_getmem(NULL, buf, 8, me);
    EXPECT_ERROR("getmem_null_dest", 1, "-");
    nvshmemx_uchar_iput_on_stream(buf, src, 0, 1, 4, next, 0);
    EXPECT_ERROR("iput_on_stream_zero_stride", 1, "-");
    nvshmemx_uchar_iget_on_stream(src, buf, 1, -2, 4, me, 0);
    EXPECT_ERROR("iget_on_stream_negative_stride", 1, "-");
    nvshmemx_uchar_iput_on_stream(buf, src, (ptrdiff_t)1 << 40, 1, 2, next, 0);
    EXPECT_ERROR("iput_on_stream_past_the_heap_end", 1, "-");
    nvshmemx_int_iget_on_stream((int *)src, (const int *)(buf + 1), 1, 1, 1, me, 0);
    EXPECT_ERROR("iget_on_stream_misaligned_source", 1, "-");
    status = niin_stream_synchronize(0);
    CHECK("stream_still_usable", status == 0, "status %d", status);

    /* Host strided transfers and atomics with bad arguments. */
    nvshmem_uchar_iput(buf, src, 1, 0, 4, next);
    EXPECT_ERROR("iput_zero_stride", 1, "-");
    nvshmem_iget128(src, buf, 1, -1, 1, me);
    EXPECT_ERROR("iget128_negative_stride", 1, "-");
    EXPECT_ERROR("atomic_fetch_add_misaligned",
                 nvshmem_int_atomic_fetch_add((int *)(buf + 2), 1, me) == 0, "not 0");
    EXPECT_ERROR("atomic_swap_bad_pe", nvshmem_uint64_atomic_swap((uint64_t *)buf, 1, n) == 0,
                 "not 0");
    EXPECT_ERROR("g_not_symmetric", nvshmem_int_g(&local, me) == 0, "not 0");

    /* Teams of any PEs: refused loudly, the team handle invalid. */
    {
        nvshmemx_team_uniqueid_t uid = 7;
        nvshmem_team_t any = NVSHMEM_TEAM_WORLD;
        nvshmem_team_config_t tc = NVSHMEM_TEAM_CONFIG_INITIALIZER;
        status = nvshmemx_team_get_uniqueid(&uid);
        EXPECT_ERROR("team_get_uniqueid_not_implemented",
                     status == NVSHMEMX_ERROR_NOT_SUPPORTED && uid == 7, "status %d", status);
        status = nvshmemx_team_init(&any, &tc, 0, n, me);
        EXPECT_ERROR("team_init_not_implemented",
                     status == NVSHMEMX_ERROR_NOT_SUPPORTED && any == NVSHMEM_TEAM_INVALID,
                     "status %d, team %d", status, (int)any);
    }

    /* Local buffer registration: NVSHMEM's rules and values. */
    status = nvshmemx_buffer_register(src, sizeof src);
    CHECK("buffer_register", status == 0, "status %d", status);
    status = nvshmemx_buffer_register(src + 4, 8);
    EXPECT_ERROR("buffer_register_overlap", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    status = nvshmemx_buffer_register(NULL, 8);
    EXPECT_ERROR("buffer_register_null", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    status = nvshmemx_buffer_unregister(src + 1);
    EXPECT_ERROR("buffer_unregister_not_a_start", status == NVSHMEMX_ERROR_INVALID_VALUE,
                 "status %d", status);
    status = nvshmemx_buffer_unregister(src);
    CHECK("buffer_unregister", status == 0, "status %d", status);
    status = nvshmemx_buffer_unregister(src);
    EXPECT_ERROR("buffer_unregister_twice", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);
    status = nvshmemx_buffer_register(src, sizeof src);
    nvshmemx_buffer_unregister_all();
    status |= nvshmemx_buffer_register(src, sizeof src);
    CHECK("buffer_unregister_all", status == 0, "status %d", status);
    nvshmemx_buffer_unregister_all();
    CHECK("mc_ptr_is_null_without_nvls", nvshmemx_mc_ptr(NVSHMEM_TEAM_WORLD, buf) == NULL,
          "not NULL");
    EXPECT_ERROR("mc_ptr_not_symmetric", nvshmemx_mc_ptr(NVSHMEM_TEAM_WORLD, &local) == NULL,
                 "not NULL");

    /* Collectives with bad arguments, made by every PE alike: refused before any PE waits. */
    status = nvshmem_int_sum_reduce(NVSHMEM_TEAM_INVALID, (int *)buf, (const int *)buf, 4);
    EXPECT_ERROR("reduce_on_team_invalid", status != 0, "status %d", status);
    status = nvshmem_broadcastmem(NVSHMEM_TEAM_WORLD, buf, buf + 128, 8, n);
    EXPECT_ERROR("broadcast_root_outside_the_team", status != 0, "status %d", status);
    status = nvshmem_fcollectmem(NVSHMEM_TEAM_WORLD, buf, buf, 256);
    EXPECT_ERROR("fcollect_dest_too_small", status != 0, "status %d", status);
    status = nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, buf, buf, 200, 0);
    EXPECT_ERROR("alltoall_on_stream_source_too_small", status != 0, "status %d", status);
    status = nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, (int *)buf, (const int *)buf, 4);
    CHECK("collectives_still_work", status == 0, "status %d", status);

    /* Collective misuse, made by every PE alike. */
    EXPECT_ERROR("malloc_too_big", nvshmem_malloc((size_t)1 << 50) == NULL, "not NULL");
    EXPECT_ERROR("calloc_overflow", nvshmem_calloc((size_t)-1, 16) == NULL, "not NULL");
    nvshmem_free(&local);
    EXPECT_ERROR("free_not_symmetric", 1, "-");
    nvshmem_free(buf + 1);
    EXPECT_ERROR("free_interior_pointer", 1, "-");
    status = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &team);
    EXPECT_ERROR("split_too_big", status != 0 && team == NVSHMEM_TEAM_INVALID,
                 "status %d, team %d", status, (int)team);
    status = nvshmem_init_thread(99, &provided);
    EXPECT_ERROR("init_thread_bad_level", status == NVSHMEMX_ERROR_INVALID_VALUE, "status %d",
                 status);

    /* The heap still works after all that. */
    nvshmem_free(sig);
    nvshmem_free(buf);
    buf = (unsigned char *)nvshmem_malloc(256);
    CHECK("malloc_after_errors", buf != NULL, "NULL");
    nvshmem_free(buf);
    nvshmem_barrier_all();
}

int main(int argc, char **argv) {
    int exit_mode = argc > 1 && strcmp(argv[1], "exit") == 0;

    before_init();

    nvshmem_init();
    nvshmem_init(); /* nested: counted */
    CHECK("initialized", nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED, "status %d",
          nvshmemx_init_status());
    while_initialized();
    nvshmem_finalize(); /* matches the second init */
    CHECK("nested_finalize_keeps_it", nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED &&
                                          nvshmem_n_pes() >= 1,
          "status %d", nvshmemx_init_status());
    nvshmem_finalize();
    CHECK("finalized", nvshmemx_init_status() == NVSHMEM_STATUS_NOT_INITIALIZED, "status %d",
          nvshmemx_init_status());

    EXPECT_ERROR("my_pe_after_finalize", nvshmem_my_pe() == -1, "not -1");
    EXPECT_ERROR("malloc_after_finalize", nvshmem_malloc(64) == NULL, "not NULL");
    nvshmem_barrier_all();
    EXPECT_ERROR("barrier_all_after_finalize", 1, "-");
    nvshmem_finalize();
    EXPECT_ERROR("finalize_twice", 1, "-");

    /* Init again after the last finalize: a new world. */
    nvshmem_init();
    CHECK("reinit", nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED &&
                        nvshmem_my_pe() >= 0 && nvshmem_n_pes() >= 1,
          "status %d", nvshmemx_init_status());
    nvshmem_barrier_all();

    printf("EXPECT_NIIN_LINES %d\n", expected_lines);
    fflush(stdout);
    if (exit_mode) {
        if (nvshmem_my_pe() == 0) nvshmem_global_exit(7);
        nvshmem_barrier_all(); /* PE 0 is gone: fails, or the launcher stops this PE */
        {
            struct timespec ts;
            ts.tv_sec = 30;
            ts.tv_nsec = 0;
            nanosleep(&ts, NULL);
        }
        return 3;
    }
    nvshmem_finalize();
    printf("DONE failures=%d\n", niin_test_failures);
    return niin_test_failures == 0 ? 0 : 1;
}
