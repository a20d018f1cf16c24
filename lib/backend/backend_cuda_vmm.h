/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda_vmm.h — the cuda backend's virtual memory ops (backend.h:
 * va_reserve, va_map, va_unmap, va_release) for swap mode's pool=chunks,
 * on the driver's virtual memory management API.
 *
 * backend_cuda.c puts these in its ops table and calls
 * tmm_cuda_vmm_close when the backend closes; their state hangs from
 * struct cuda_state (backend_cuda_mem.h).
 */
#ifndef TMM_BACKEND_CUDA_VMM_H
#define TMM_BACKEND_CUDA_VMM_H

#include <stddef.h>

#include "backend.h"

int tmm_cuda_va_reserve(struct tmm_backend *be, size_t bytes, size_t chunk,
			void **ptr);
int tmm_cuda_va_map(struct tmm_backend *be, void *ptr, size_t bytes);
void tmm_cuda_va_unmap(struct tmm_backend *be, void *ptr, size_t bytes);
void tmm_cuda_va_release(struct tmm_backend *be, void *ptr, size_t bytes);

/* Frees what the ops kept (ranges left are given back). */
void tmm_cuda_vmm_close(struct tmm_backend *be);

#endif /* TMM_BACKEND_CUDA_VMM_H */
