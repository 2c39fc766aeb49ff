// context_two_tus_b.cu -- translation unit B of the two-TU device-context test, and the
// library that context_dlopen_main.cu loads after nvshmem_init (built -shared). See
// context_two_tus_main.cu.
#include "context_check.h"

CONTEXT_CHECK_TU(b)
