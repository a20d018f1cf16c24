/* SPDX-License-Identifier: MIT */
/*
 * tensor.h — host access to a tensor wherever it is, dropped included
 * (tensor.c); the tensor calls themselves are declared in tensormm.h.
 */
#ifndef TMM_EXEC_TENSOR_H
#define TMM_EXEC_TENSOR_H

#include "lib/core/context.h"

/*
 * Host <-> tensor copies wherever t is (tmm_tensor_write/read after their
 * checks): a dropped tensor is recomputed first, or forgotten when the
 * write covers all of it, and a dropped tensor whose lineage reads t is
 * recomputed before t is written; then the mover copies
 * (tmm_mover_write/read, and their errors).
 */
int tmm_tensor_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			  size_t offset, const void *src, size_t bytes);
int tmm_tensor_host_read(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			 size_t offset, void *dst, size_t bytes);

#endif /* TMM_EXEC_TENSOR_H */
