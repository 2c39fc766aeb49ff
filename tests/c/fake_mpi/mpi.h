/*
 * fake_mpi/mpi.h -- a stand-in for MPI with just what nvshmemx.h's NIIN_HAS_MPI path
 * and the test programs use, so that path compiles and runs where no MPI is installed.
 * Ranks are niinrun's PEs (NIIN_PE / NIIN_NPES); MPI_Bcast goes through files in the
 * job's rendezvous directory. One communicator (MPI_COMM_WORLD), bytes only.
 *
 * For tests of niin-rs only: on a machine with MPI, compile with the real <mpi.h>.
 */
#ifndef NIIN_FAKE_MPI_H
#define NIIN_FAKE_MPI_H

#include "../niin_rendezvous.h"

typedef int MPI_Comm;
typedef int MPI_Datatype;

#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 15
#define MPI_COMM_WORLD ((MPI_Comm)1)
#define MPI_BYTE ((MPI_Datatype)1)

static int niin_fake_mpi_initialized = 0;
static int niin_fake_mpi_bcasts = 0;

static inline int MPI_Init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    niin_fake_mpi_initialized = 1;
    return MPI_SUCCESS;
}

static inline int MPI_Finalize(void) {
    niin_fake_mpi_initialized = 0;
    return MPI_SUCCESS;
}

static inline int MPI_Initialized(int *flag) {
    *flag = niin_fake_mpi_initialized;
    return MPI_SUCCESS;
}

static inline int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    if (comm != MPI_COMM_WORLD || niin_launcher_rank() < 0) return MPI_ERR_OTHER;
    *rank = niin_launcher_rank();
    return MPI_SUCCESS;
}

static inline int MPI_Comm_size(MPI_Comm comm, int *size) {
    if (comm != MPI_COMM_WORLD || niin_launcher_size() < 1) return MPI_ERR_OTHER;
    *size = niin_launcher_size();
    return MPI_SUCCESS;
}

static inline int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    char name[64];
    int rank = -1;
    if (type != MPI_BYTE || count < 0 || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    snprintf(name, sizeof name, "fake-mpi-bcast-%d", niin_fake_mpi_bcasts++);
    if (rank == root) return niin_rv_publish(name, buf, (size_t)count) == 0 ? 0 : MPI_ERR_OTHER;
    return niin_rv_fetch(name, buf, (size_t)count, 60) == 0 ? 0 : MPI_ERR_OTHER;
}

#endif /* NIIN_FAKE_MPI_H */
