/*
 * device_mem.c — a tensor's device memory: a block of the pool in swap
 * mode, its managed pages in uvm mode (mover_uvm.c).
 *
 * Below the mover, which makes room before it takes memory, and below
 * dropping (drop.c), which only gives memory back.
 */
#include "device_mem.h"
#include "lib/mem/pool.h"
#include "mover_uvm.h"

int tmm_device_take(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_pool_block *b;
	int rc = tmm_pool_alloc(ctx->pool, t->bytes, &b);

	if (rc < 0)
		return rc;
	tmm_device_hold(ctx, t, b);
	return 0;
}

void tmm_device_hold(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
		     struct tmm_pool_block *b)
{
	t->block = b;
	t->dev = (char *)ctx->arena + b->offset;
	tmm_list_add_tail(&ctx->device_lru, &t->on_device);
}

void tmm_device_give_back(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	tmm_pool_free(ctx->pool, t->block);
	t->block = NULL;
	t->dev = NULL;
	if (tmm_list_linked(&t->on_device))
		tmm_list_del(&t->on_device);
}

void tmm_device_free(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (ctx->mode == TMM_MODE_UVM)
		tmm_uvm_discard(ctx, t);
	else
		tmm_device_give_back(ctx, t);
}
