// SPDX-License-Identifier: MIT
/*
 * check_cuda_abi_functions.c - every function cuda_api.h declares has the
 * type <cuda.h> gives it (under the name cuda.h maps it to, e.g.
 * cuMemcpyDtoH -> cuMemcpyDtoH_v2). cuda_api.h is read here with
 * CG_ABI_CHECK, which makes its type names stand for cuda.h's own.
 */
#include <cuda.h>

#define CG_ABI_CHECK
#include "cuda_api.h"

#define CG_CHECK_FUNCTION(name, symbol, params)                                           \
	_Static_assert(__builtin_types_compatible_p(cg_##name##_fn, __typeof__(&name)),     \
	               #name ": cuda_api.h's type differs from <cuda.h>'s");
CG_API_FUNCTIONS(CG_CHECK_FUNCTION)

#define CG_COUNT_FUNCTION(name, symbol, params) +1
unsigned check_cuda_abi_functions(void);
unsigned check_cuda_abi_functions(void)
{
	return 0 CG_API_FUNCTIONS(CG_COUNT_FUNCTION);
}
