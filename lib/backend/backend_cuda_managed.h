/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_managed.h — the CUDA backend's ops on managed ranges, for
 * backend_cuda.c's table (backend.h says what each does).
 */
#ifndef TMM_BACKEND_CUDA_MANAGED_H
#define TMM_BACKEND_CUDA_MANAGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

int tmm_cuda_prefetch(struct tmm_backend *be, enum tmm_engine engine,
		      void *ptr, size_t bytes, enum tmm_location to,
		      int numa_node);
/* Several ranges to one place, ordered once: cudaMemPrefetchBatchAsync
 * where the runtime has it, one tmm_cuda_prefetch per range where not. */
int tmm_cuda_prefetch_batch(struct tmm_backend *be, enum tmm_engine engine,
			    const struct tmm_managed_range *ranges, unsigned n,
			    enum tmm_location to, int numa_node);
int tmm_cuda_advise(struct tmm_backend *be, void *ptr, size_t bytes,
		    enum tmm_advice advice);
int tmm_cuda_discard(struct tmm_backend *be, void *ptr, size_t bytes);
int tmm_cuda_managed_access(struct tmm_backend *be,
			    const struct tmm_managed_range *ranges,
			    unsigned n);
int tmm_cuda_managed_limit(struct tmm_backend *be, uint64_t bytes);
int tmm_cuda_managed_stats(struct tmm_backend *be,
			   struct tmm_managed_stats *st);

/*
 * Said by the backend just before the host touches [ptr, ptr + bytes) of
 * managed memory (a write when `write`), once it has waited for the
 * device work on those bytes (tmm_cuda_managed_access).  A weak
 * definition that does nothing: the CUDA test double's (tests/cudafake/)
 * checks that no work it has queued on the bytes is left unwaited for,
 * which its race detector could not otherwise see (the host's own
 * accesses are plain loads and stores).
 */
void tmm_cuda_host_touch(const void *ptr, size_t bytes, bool write);

#endif /* TMM_BACKEND_CUDA_MANAGED_H */
