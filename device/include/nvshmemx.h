/*
 * nvshmemx.h -- NVSHMEM's extended API (nvshmemx_*) in niin-rs.
 *
 * As in NVSHMEM, the host extensions (init attributes, unique IDs, on-stream operations)
 * and the device extensions (nvshmemx_*_warp/_block: niin/threadgroup.h, niin/sync.h)
 * are declared by nvshmem.h already; this header includes it, so a program may include
 * either or both.
 */
#ifndef NIIN_NVSHMEMX_H
#define NIIN_NVSHMEMX_H

#include "nvshmem.h"

#endif /* NIIN_NVSHMEMX_H */
