// SPDX-License-Identifier: MIT
/* launch_attrs.c - which launch attributes a vGPU launch honours
 * (launch_attrs.h). */
#include "launch_attrs.h"

#include <stddef.h>

CUresult cu_launch_attrs_check(const CUlaunchAttribute *attrs, unsigned int n, const char **why)
{
	*why = "";
	if (n && !attrs) {
		*why = "numAttrs > 0 with no attrs";
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (unsigned int i = 0; i < n; i++) {
		const CUlaunchAttributeValue *v = &attrs[i].value;

		switch (attrs[i].id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			break;
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (v->cooperative) {
				*why = "CU_LAUNCH_ATTRIBUTE_COOPERATIVE: cooperative launches are "
				       "not supported";
				return CUDA_ERROR_NOT_SUPPORTED;
			}
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
			if (v->clusterDim.x > 1 || v->clusterDim.y > 1 || v->clusterDim.z > 1) {
				*why = "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: thread block "
				       "clusters are not supported";
				return CUDA_ERROR_NOT_SUPPORTED;
			}
			break;
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			*why = "CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: thread block "
			       "clusters are not supported";
			return CUDA_ERROR_NOT_SUPPORTED;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
			*why = "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT is not supported";
			return CUDA_ERROR_NOT_SUPPORTED;
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
			*why = "CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT is not supported";
			return CUDA_ERROR_NOT_SUPPORTED;
		case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
			*why = "CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE: graphs are not "
			       "supported";
			return CUDA_ERROR_NOT_SUPPORTED;
		default:
			*why = "an unknown launch attribute";
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	return CUDA_SUCCESS;
}
