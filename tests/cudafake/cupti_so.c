/* SPDX-License-Identifier: MIT */
/*
 * cupti_so.c — the double's libcupti.so.N (stand_in.h): the CUPTI entry
 * points libtensormm looks up (TMM_CUPTI_CALLS), each handing its call
 * to the double's CUPTI in the program that loaded it.
 */
#include "stand_in.h"

CUptiResult cuptiGetVersion(uint32_t *version)
{
	return cudafake_cupti.cuptiGetVersion(version);
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	return cudafake_cupti.cuptiGetResultString(result, str);
}

CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *device)
{
	return cudafake_cupti.cuptiGetDeviceId(context, device);
}

CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream,
			       uint8_t per_thread, uint32_t *id)
{
	return cudafake_cupti.cuptiGetStreamIdEx(context, stream, per_thread,
						 id);
}

CUptiResult cuptiActivityRegisterCallbacks(
	CUpti_BuffersCallbackRequestFunc requested,
	CUpti_BuffersCallbackCompleteFunc completed)
{
	return cudafake_cupti.cuptiActivityRegisterCallbacks(requested,
							     completed);
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	return cudafake_cupti.cuptiActivityEnable(kind);
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	return cudafake_cupti.cuptiActivityDisable(kind);
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	return cudafake_cupti.cuptiActivityFlushAll(flag);
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
				       CUpti_Activity **record)
{
	return cudafake_cupti.cuptiActivityGetNextRecord(buffer, valid,
							 record);
}

CUptiResult cuptiActivityPushExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	return cudafake_cupti.cuptiActivityPushExternalCorrelationId(kind,
								     id);
}

CUptiResult cuptiActivityPopExternalCorrelationId(
	CUpti_ExternalCorrelationKind kind, uint64_t *last)
{
	return cudafake_cupti.cuptiActivityPopExternalCorrelationId(kind,
								    last);
}

CUptiResult cuptiActivityConfigureUnifiedMemoryCounter(
	CUpti_ActivityUnifiedMemoryCounterConfig *config, uint32_t count)
{
	return cudafake_cupti.cuptiActivityConfigureUnifiedMemoryCounter(
		config, count);
}
