/* SPDX-License-Identifier: MIT */
/*
 * clean_copy.c — the host buffers kept by tensors swapped back in (see
 * clean_copy.h).
 */
#include "clean_copy.h"
#include "lib/mem/hostmem.h"

/* Whether t may keep a clean copy at all.  In mode=uvm only the copy
 * way swaps in from a host buffer (uvm_path.c); the prefetch way's
 * tensors have none to keep. */
static bool may_keep(const struct tmm_tensor_rec *t)
{
	return t->kind != TMM_SCRATCH && !t->view_parent && t->n_views == 0;
}

bool tmm_clean_keep(struct tmm_tensor_rec *t)
{
	if (!t->host || t->clean_host || !t->clean || !may_keep(t))
		return false;
	t->clean_host = t->host;
	t->host = NULL;
	return true;
}

bool tmm_clean_holds(const struct tmm_tensor_rec *t)
{
	return t->clean_host && t->clean && t->clean_version == t->version &&
	       may_keep(t);
}

bool tmm_clean_reuse(struct tmm_tensor_rec *t)
{
	if (!t->clean_host || t->host)
		return false;
	t->host = t->clean_host;
	t->clean_host = NULL;
	return true;
}

void tmm_clean_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (!t->clean_host)
		return;
	ctx->c.host_in_use -= t->bytes;
	tmm_hostmem_put(ctx->hostmem, t->clean_host, t->bytes);
	t->clean_host = NULL;
	t->clean = false;
}

uint64_t tmm_clean_reclaim(struct tmm_ctx *ctx)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < ctx->n_slots; i++) {
		struct tmm_tensor_rec *t = tmm_tensor_at(ctx, i);

		if (!t->live || !t->clean_host)
			continue;
		bytes += t->bytes;
		tmm_clean_drop(ctx, t);
	}
	return bytes;
}
