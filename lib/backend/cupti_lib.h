/* SPDX-License-Identifier: MIT */
/*
 * cupti_lib.h — CUPTI's entry points, loaded by the first op timing that
 * asks for CUPTI (cuda_timing.c) rather than linked, so that a program
 * that never times ops by CUPTI never loads it (lib/base/dynlib.h).
 *
 * The table's fields are typed by cupti.h and named as CUPTI's functions;
 * TMM_CUPTI_CALLS lists them, for the table here and for the CUDA test
 * double's stand-in library (tests/cudafake/), which must provide each.
 * Built with CUPTI only (TMM_HAVE_CUPTI).
 */
#ifndef TMM_CUPTI_LIB_H
#define TMM_CUPTI_LIB_H

#include <stddef.h>

#include <cupti.h>

#include "lib/base/dynlib.h"

#define TMM_CUPTI_CALLS(X)                                                 \
	X(cuptiGetVersion)                                                 \
	X(cuptiGetResultString)                                            \
	X(cuptiGetDeviceId)                                                \
	X(cuptiGetStreamIdEx)                                              \
	X(cuptiActivityRegisterCallbacks)                                  \
	X(cuptiActivityEnable)                                             \
	X(cuptiActivityDisable)                                            \
	X(cuptiActivityFlushAll)                                           \
	X(cuptiActivityGetNextRecord)                                      \
	X(cuptiActivityPushExternalCorrelationId)                          \
	X(cuptiActivityPopExternalCorrelationId)                           \
	X(cuptiActivityConfigureUnifiedMemoryCounter)

struct tmm_cupti {
	TMM_CUPTI_CALLS(TMM_DYNLIB_FIELD)
};

/*
 * CUPTI, loaded on the first call in the process from the directories of
 * dl_path (the tunable; NULL or "": the dynamic linker's search); NULL
 * when it cannot be, with the reason and what to do in why.
 */
const struct tmm_cupti *tmm_cupti_load(const char *dl_path, char *why,
				       size_t whylen);

#endif /* TMM_CUPTI_LIB_H */
