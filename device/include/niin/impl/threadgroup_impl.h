/*
 * niin/impl/threadgroup_impl.h -- bodies of niin/threadgroup.h: the scope-templated
 * transfers of niin/impl/rma_impl.h with the warp and block scopes.
 *
 * Part of niin-rs (NVSHMEM implemented over NCCL). Internal.
 */
#ifndef NIIN_IMPL_THREADGROUP_IMPL_H
#define NIIN_IMPL_THREADGROUP_IMPL_H

#include "niin/impl/common_impl.h"
#include "niin/impl/rma_impl.h"

#if defined(__CUDACC__)
NIIN_BEGIN_C_DECLS

/* SCOPE: the NVSHMEM suffix; COOP: niin::detail::ScopeWarp or ScopeBlock. */
#define NIIN_DEFINE_TG_TYPED_SCOPE(NAME, TYPE, SCOPE, COOP)                                    \
    NIIN_DEVICE void nvshmemx_##NAME##_put_##SCOPE(TYPE *dest, const TYPE *source,             \
                                                   size_t nelems, int pe) {                    \
        niin::detail::put(COOP{}, "nvshmemx_" #NAME "_put_" #SCOPE, dest, source,              \
                          nelems * sizeof(TYPE), pe, true);                                    \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_##NAME##_get_##SCOPE(TYPE *dest, const TYPE *source,             \
                                                   size_t nelems, int pe) {                    \
        niin::detail::get(COOP{}, "nvshmemx_" #NAME "_get_" #SCOPE, dest, source,              \
                          nelems * sizeof(TYPE), pe, true);                                    \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_##NAME##_put_nbi_##SCOPE(TYPE *dest, const TYPE *source,         \
                                                       size_t nelems, int pe) {                \
        niin::detail::put(COOP{}, "nvshmemx_" #NAME "_put_nbi_" #SCOPE, dest, source,          \
                          nelems * sizeof(TYPE), pe, false);                                   \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_##NAME##_get_nbi_##SCOPE(TYPE *dest, const TYPE *source,         \
                                                       size_t nelems, int pe) {                \
        niin::detail::get(COOP{}, "nvshmemx_" #NAME "_get_nbi_" #SCOPE, dest, source,          \
                          nelems * sizeof(TYPE), pe, false);                                   \
    }
#define NIIN_DEFINE_TG_TYPED(NAME, TYPE)                                     \
    NIIN_DEFINE_TG_TYPED_SCOPE(NAME, TYPE, warp, niin::detail::ScopeWarp)   \
    NIIN_DEFINE_TG_TYPED_SCOPE(NAME, TYPE, block, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_TYPE(NIIN_DEFINE_TG_TYPED)
#undef NIIN_DEFINE_TG_TYPED
#undef NIIN_DEFINE_TG_TYPED_SCOPE

#define NIIN_DEFINE_TG_SIZED_SCOPE(BITS, TYPE, SCOPE, COOP)                                     \
    NIIN_DEVICE void nvshmemx_put##BITS##_##SCOPE(void *dest, const void *source, size_t nelems, \
                                                  int pe) {                                     \
        niin::detail::put(COOP{}, "nvshmemx_put" #BITS "_" #SCOPE, dest, source,                \
                          nelems * sizeof(TYPE), pe, true);                                     \
    }                                                                                           \
    NIIN_DEVICE void nvshmemx_get##BITS##_##SCOPE(void *dest, const void *source, size_t nelems, \
                                                  int pe) {                                     \
        niin::detail::get(COOP{}, "nvshmemx_get" #BITS "_" #SCOPE, dest, source,                \
                          nelems * sizeof(TYPE), pe, true);                                     \
    }                                                                                           \
    NIIN_DEVICE void nvshmemx_put##BITS##_nbi_##SCOPE(void *dest, const void *source,           \
                                                      size_t nelems, int pe) {                  \
        niin::detail::put(COOP{}, "nvshmemx_put" #BITS "_nbi_" #SCOPE, dest, source,            \
                          nelems * sizeof(TYPE), pe, false);                                    \
    }                                                                                           \
    NIIN_DEVICE void nvshmemx_get##BITS##_nbi_##SCOPE(void *dest, const void *source,           \
                                                      size_t nelems, int pe) {                  \
        niin::detail::get(COOP{}, "nvshmemx_get" #BITS "_nbi_" #SCOPE, dest, source,            \
                          nelems * sizeof(TYPE), pe, false);                                    \
    }
#define NIIN_DEFINE_TG_SIZED(BITS, TYPE)                                     \
    NIIN_DEFINE_TG_SIZED_SCOPE(BITS, TYPE, warp, niin::detail::ScopeWarp)   \
    NIIN_DEFINE_TG_SIZED_SCOPE(BITS, TYPE, block, niin::detail::ScopeBlock)
NIIN_FOR_EACH_RMA_SIZE(NIIN_DEFINE_TG_SIZED)
#undef NIIN_DEFINE_TG_SIZED
#undef NIIN_DEFINE_TG_SIZED_SCOPE

#define NIIN_DEFINE_TG_MEM(SCOPE, COOP)                                                        \
    NIIN_DEVICE void nvshmemx_putmem_##SCOPE(void *dest, const void *source, size_t bytes,     \
                                             int pe) {                                         \
        niin::detail::put(COOP{}, "nvshmemx_putmem_" #SCOPE, dest, source, bytes, pe, true);   \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_getmem_##SCOPE(void *dest, const void *source, size_t bytes,     \
                                             int pe) {                                         \
        niin::detail::get(COOP{}, "nvshmemx_getmem_" #SCOPE, dest, source, bytes, pe, true);   \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_putmem_nbi_##SCOPE(void *dest, const void *source, size_t bytes, \
                                                 int pe) {                                     \
        niin::detail::put(COOP{}, "nvshmemx_putmem_nbi_" #SCOPE, dest, source, bytes, pe,      \
                          false);                                                              \
    }                                                                                          \
    NIIN_DEVICE void nvshmemx_getmem_nbi_##SCOPE(void *dest, const void *source, size_t bytes, \
                                                 int pe) {                                     \
        niin::detail::get(COOP{}, "nvshmemx_getmem_nbi_" #SCOPE, dest, source, bytes, pe,      \
                          false);                                                              \
    }
NIIN_DEFINE_TG_MEM(warp, niin::detail::ScopeWarp)
NIIN_DEFINE_TG_MEM(block, niin::detail::ScopeBlock)
#undef NIIN_DEFINE_TG_MEM

NIIN_END_C_DECLS
#endif /* __CUDACC__ */

#endif /* NIIN_IMPL_THREADGROUP_IMPL_H */
