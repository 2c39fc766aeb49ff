/*
 * niin/impl/nccl_caps.h -- what the NCCL device headers this translation unit is compiled
 * with can do, as macros (NIIN_NCCL_HAS_*, and NIIN_USE_* = capability and the
 * NIIN_DEVICE_GIN knob of niin/config.h together).
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal: included by niin/context.h and
 * niin/impl/common_impl.h; CUDA C++ only, after <nccl.h>.
 */
#ifndef NIIN_IMPL_NCCL_CAPS_H
#define NIIN_IMPL_NCCL_CAPS_H

#include "niin/config.h"
#include <nccl.h>

/* ---- NCCL device-API capabilities of the headers in use ------------------------------ */

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < 22803
#error "niin-rs's device API needs NCCL 2.28.3 or later (nccl_device.h)"
#endif

/* ncclGin (put, putValue, flush, GIN/hybrid barriers): 2.28.7. */
#if NCCL_VERSION_CODE >= 22807
#define NIIN_NCCL_HAS_GIN 1
#else
#define NIIN_NCCL_HAS_GIN 0
#endif

/* ncclGin::get: 2.30.3. */
#if NCCL_VERSION_CODE >= 23003
#define NIIN_NCCL_HAS_GIN_GET 1
#else
#define NIIN_NCCL_HAS_GIN_GET 0
#endif

/* NIIN_DEVICE_GIN (niin/config.h): 0 leaves the GIN path out of this TU. What the code
 * below uses: the headers' capabilities and the knob together. */
#define NIIN_USE_GIN (NIIN_NCCL_HAS_GIN && NIIN_DEVICE_GIN)
#define NIIN_USE_GIN_GET (NIIN_NCCL_HAS_GIN_GET && NIIN_DEVICE_GIN)

/* NCCL's VA signals (a 64-bit add at window + offset, carried by a put): 2.29.7. */
#if NIIN_USE_GIN && NCCL_VERSION_CODE >= 22907
#define NIIN_USE_GIN_VA_SIGNAL 1
#else
#define NIIN_USE_GIN_VA_SIGNAL 0
#endif

#endif /* NIIN_IMPL_NCCL_CAPS_H */
