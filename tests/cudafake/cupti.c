/*
 * cupti.c — the CUPTI entry points the cuda backend calls, as on a
 * driver that refuses profiling: every call fails with
 * CUPTI_ERROR_NOT_SUPPORTED, so op times come from cudaEvent pairs, the
 * backend's documented fallback (cuda_timing.c).  Timing kernels by
 * activity records on the double is left to later work.
 */
#include <cupti.h>
#include <stdlib.h>

/* The CUPTI API version the double reports: the headers', unless
 * CUDAFAKE_CUPTI_VERSION names another (an older library loaded at run
 * time than the one built against). */
CUptiResult cuptiGetVersion(uint32_t *version)
{
	const char *v = getenv("CUDAFAKE_CUPTI_VERSION");

	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*str = result == CUPTI_SUCCESS
		       ? "CUPTI_SUCCESS"
		       : "CUPTI is not available on the CUDA test double";
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(
	CUpti_BuffersCallbackRequestFunc requested,
	CUpti_BuffersCallbackCompleteFunc completed)
{
	(void)requested;
	(void)completed;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	(void)kind;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	(void)kind;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
				       CUpti_Activity **record)
{
	(void)buffer;
	(void)valid;
	(void)record;
	return CUPTI_ERROR_MAX_LIMIT_REACHED;
}

CUptiResult cuptiActivityPushExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	(void)kind;
	(void)id;
	return CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityPopExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t *last)
{
	(void)kind;
	(void)last;
	return CUPTI_ERROR_NOT_SUPPORTED;
}
