/* SPDX-License-Identifier: MIT */
/*
 * cuda_um.c — the driver's managed-memory work from CUPTI's records (see
 * cuda_um.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pthread.h>
#include <string.h>

#include "cuda_um.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tmm_cuda_um_sums sums;
static uint32_t own_device;

static const CUpti_ActivityUnifiedMemoryCounterConfig config[] = {
	{ .scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
	  .kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
	  .enable = 1 },
	{ .scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
	  .kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
	  .enable = 1 },
	{ .scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE,
	  .kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
	  .enable = 1 },
};

void tmm_cuda_um_reset(uint32_t device)
{
	pthread_mutex_lock(&lock);
	memset(&sums, 0, sizeof(sums));
	own_device = device;
	pthread_mutex_unlock(&lock);
}

const CUpti_ActivityUnifiedMemoryCounterConfig *tmm_cuda_um_config(
	uint32_t *n)
{
	*n = (uint32_t)(sizeof(config) / sizeof(config[0]));
	return config;
}

void tmm_cuda_um_note(const CUpti_Activity *record)
{
	const CUpti_ActivityUnifiedMemoryCounter3 *r =
		(const CUpti_ActivityUnifiedMemoryCounter3 *)record;
	uint32_t cause = r->flags;

	pthread_mutex_lock(&lock);
	switch (r->counterKind) {
	case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
		if (r->dstId != own_device)
			break;
		/* flags: the migration's cause (CUpti_ActivityUnified-
		 * MemoryMigrationCause); USER is a cudaMemPrefetchAsync. */
		if (cause == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER)
			sums.prefetch_bytes += r->value;
		else
			sums.fault_bytes += r->value;
		break;
	case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
		if (r->srcId != own_device)
			break;
		sums.to_host_bytes += r->value;
		if (cause ==
		    CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION) {
			sums.evictions++;
			sums.eviction_bytes += r->value;
		}
		break;
	case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
		if (r->srcId != own_device)
			break;
		sums.fault_groups++;
		sums.faults += r->value;
		if (r->end > r->start)
			sums.fault_ns += r->end - r->start;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&lock);
}

void tmm_cuda_um_read(struct tmm_cuda_um_sums *out)
{
	pthread_mutex_lock(&lock);
	*out = sums;
	pthread_mutex_unlock(&lock);
}
