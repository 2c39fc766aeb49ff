/*
 * nvshmemx.h -- NVSHMEM's extended API (nvshmemx_*) in niin-rs.
 *
 * As in NVSHMEM, the host extensions (init attributes, unique IDs, on-stream operations)
 * are declared by nvshmem.h already; this header includes it, so a program may include
 * either or both. The device extensions (warp/block variants) add their headers here.
 */
#ifndef NIIN_NVSHMEMX_H
#define NIIN_NVSHMEMX_H

#include "nvshmem.h"

#endif /* NIIN_NVSHMEMX_H */
