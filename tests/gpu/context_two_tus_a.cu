// context_two_tus_a.cu -- translation unit A of the two-TU device-context test: its own
// slot, kernels and checks (context_check.h). See context_two_tus_main.cu.
#include "context_check.h"

CONTEXT_CHECK_TU(a)
