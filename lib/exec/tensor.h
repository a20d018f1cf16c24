/*
 * tensor.h — retiring tensor records (tensor.c); the tensor calls
 * themselves are declared in tensormm.h.
 */
#ifndef TMM_EXEC_TENSOR_H
#define TMM_EXEC_TENSOR_H

#include "lib/core/context.h"

/* Frees a tensor's record and everything it holds (no checks). */
void tmm_tensor_retire(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Destroys every live tensor (context teardown). */
void tmm_tensor_table_clear(struct tmm_ctx *ctx);

#endif /* TMM_EXEC_TENSOR_H */
