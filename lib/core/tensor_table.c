/* SPDX-License-Identifier: MIT */
/*
 * tensor_table.c — the table of tensor records, and their handles.
 *
 * The records' side of context.h: slots in chunks that never move, a
 * new record and its end, and a handle's record.  What a tensor holds
 * (device memory, a host copy, its place in a trace) is the business of
 * the layers above (lib/exec/tensor.c): nothing here moves bytes.
 *
 * Handles are values: (context serial, slot generation, slot index + 1)
 * packed in 64 bits.  A destroyed tensor's slot gets a new generation, so
 * its old handle no longer matches; a handle of another context carries
 * another serial; the zero handle has no slot.  All three are refused with
 * -EBADF and a message, never dereferenced blindly.
 *
 * The generation has 24 bits, and the handle no room for more: a slot
 * reused 2^24 times would give a new tensor the very handle of its first
 * one, so a stale handle would name a live tensor.  Instead a slot that
 * has used its last generation is retired, never given out again, and the
 * generation never wraps.  That costs one record per 2^24 tensors made
 * and destroyed (bytes per million tensors), and bounds the tensors a
 * context may ever make at 2^24 slots of 2^24 generations: 2^48, some
 * nine years at a million tensors a second.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "lib/base/xalloc.h"

#define INDEX_BITS 24
#define GEN_BITS 24
#define INDEX_MASK ((1u << INDEX_BITS) - 1)
#define GEN_MASK ((1u << GEN_BITS) - 1)
#define MAX_SLOTS (INDEX_MASK - 1)

static tmm_tensor encode(const struct tmm_ctx *ctx,
			 const struct tmm_tensor_rec *t)
{
	return (tmm_tensor){ ((uint64_t)ctx->serial << 48) |
			     ((uint64_t)(t->gen & GEN_MASK) << INDEX_BITS) |
			     (t->index + 1) };
}

static struct tmm_tensor_rec *slot(const struct tmm_ctx *ctx, uint32_t i)
{
	return &ctx->chunks[i / TMM_TABLE_CHUNK][i % TMM_TABLE_CHUNK];
}

/* Why a handle names no tensor here. */
enum handle_fault { HANDLE_OK, HANDLE_NULL, HANDLE_FOREIGN, HANDLE_STALE };

/* Decodes a handle without side effects: the record, or NULL and why. */
static struct tmm_tensor_rec *find(const struct tmm_ctx *ctx, tmm_tensor h,
				   enum handle_fault *fault)
{
	uint32_t index = (uint32_t)(h.id & INDEX_MASK);
	uint32_t gen = (uint32_t)((h.id >> INDEX_BITS) & GEN_MASK);
	uint16_t serial = (uint16_t)(h.id >> 48);
	struct tmm_tensor_rec *t;

	if (index == 0) {
		*fault = HANDLE_NULL;
		return NULL;
	}
	if (serial != ctx->serial) {
		*fault = HANDLE_FOREIGN;
		return NULL;
	}
	index--;
	t = index < ctx->n_slots ? slot(ctx, index) : NULL;
	if (!t || !t->live || (t->gen & GEN_MASK) != gen) {
		*fault = HANDLE_STALE;
		return NULL;
	}
	*fault = HANDLE_OK;
	return t;
}

struct tmm_tensor_rec *tmm_tensor_find(struct tmm_ctx *ctx, tmm_tensor h)
{
	enum handle_fault fault;

	return find(ctx, h, &fault);
}

tmm_tensor tmm_tensor_handle(const struct tmm_ctx *ctx,
			     const struct tmm_tensor_rec *t)
{
	return encode(ctx, t);
}

struct tmm_tensor_rec *tmm_tensor_lookup(struct tmm_ctx *ctx, tmm_tensor h,
					 const char *caller)
{
	enum handle_fault fault;
	struct tmm_tensor_rec *t = find(ctx, h, &fault);

	if (t && t->ghost) {
		/* Destroyed, as far as the program can tell. */
		t = NULL;
		fault = HANDLE_STALE;
	}
	switch (fault) {
	case HANDLE_OK:
		break;
	case HANDLE_NULL:
		tmm_fail(ctx, -EBADF, "%s: null tensor handle", caller);
		break;
	case HANDLE_FOREIGN:
		tmm_fail(ctx, -EBADF,
			 "%s: tensor handle %#llx belongs to another context",
			 caller, (unsigned long long)h.id);
		break;
	case HANDLE_STALE:
		tmm_fail(ctx, -EBADF,
			 "%s: tensor handle %#llx names a destroyed or "
			 "unknown tensor", caller, (unsigned long long)h.id);
		break;
	}
	return t;
}

const char *tmm_tensor_label(const struct tmm_tensor_rec *t, char *buf,
			     size_t len)
{
	if (t->name)
		snprintf(buf, len, "'%s'", t->name);
	else
		snprintf(buf, len, "#%u", t->index);
	return buf;
}

int tmm_tensor_no_data(struct tmm_ctx *ctx, const struct tmm_tensor_rec *t,
		       const char *call)
{
	char label[64];

	tmm_tensor_label(t, label, sizeof(label));
	if (t->dead)
		return tmm_fail(ctx, -ENODATA,
				"%s: tensor %s is read after its last access "
				"in the iteration, where liveness=discard "
				"dropped its bytes, since the measured "
				"iteration made no such read; read it there "
				"in every step, write it first, or set "
				"liveness=keep to keep them", call, label);
	return tmm_fail(ctx, -ENODATA, "%s: tensor %s was never written", call,
			label);
}

static int take_slot(struct tmm_ctx *ctx, struct tmm_tensor_rec **out)
{
	uint32_t index;

	if (ctx->n_free) {
		index = ctx->free_slots[--ctx->n_free];
	} else {
		if (ctx->n_slots >= MAX_SLOTS)
			return tmm_fail(ctx, -ENOMEM,
					"too many tensors: all %u slots in "
					"use, %u of them retired after 2^24 "
					"tensors each; destroy tensors, or "
					"make fewer", MAX_SLOTS,
					ctx->retired_slots);
		if (ctx->n_slots == ctx->n_chunks * TMM_TABLE_CHUNK) {
			void *p = tmm_realloc(ctx->chunks,
					      (ctx->n_chunks + 1) *
					      sizeof(*ctx->chunks));
			struct tmm_tensor_rec *chunk;

			if (!p)
				return tmm_fail(ctx, -ENOMEM, "out of host "
						"memory growing the tensor "
						"table past %u tensors",
						ctx->n_slots);
			ctx->chunks = p;
			chunk = tmm_calloc(TMM_TABLE_CHUNK, sizeof(*chunk));
			if (!chunk)
				return tmm_fail(ctx, -ENOMEM, "out of host "
						"memory growing the tensor "
						"table past %u tensors",
						ctx->n_slots);
			ctx->chunks[ctx->n_chunks++] = chunk;
		}
		index = ctx->n_slots++;
		slot(ctx, index)->index = index;
	}
	*out = slot(ctx, index);
	return 0;
}

static int give_slot(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (ctx->n_free == ctx->cap_free) {
		uint32_t cap = ctx->cap_free ? 2 * ctx->cap_free : 64;
		void *p = tmm_realloc(ctx->free_slots, cap * sizeof(uint32_t));

		if (!p)
			return -ENOMEM; /* the slot is leaked, not reused */
		ctx->free_slots = p;
		ctx->cap_free = cap;
	}
	ctx->free_slots[ctx->n_free++] = t->index;
	return 0;
}

int tmm_tensor_new(struct tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		   const char *name, struct tmm_tensor_rec **out)
{
	struct tmm_tensor_rec *t = NULL;
	int rc = take_slot(ctx, &t);

	if (rc < 0)
		return rc;
	t->name = NULL;
	if (name && !(t->name = tmm_strdup(name))) {
		give_slot(ctx, t);
		return tmm_fail(ctx, -ENOMEM, "out of host memory copying "
				"the tensor's name '%s'", name);
	}
	t->live = true;
	t->kind = kind;
	t->state = TMM_TS_EMPTY;
	t->bytes = bytes;
	t->pins = t->placing_pins = t->acquires = 0;
	t->placing_level = 0;
	t->read_by = (tmm_event){ 0 };
	t->net_by = (tmm_event){ 0 };
	t->dev = t->host = t->clean_host = NULL;
	t->clean = false;
	t->clean_version = 0;
	t->block = NULL;
	t->copy = (tmm_event){ 0 };
	t->uvm_host_preferred = false;
	t->uvm_advised = 0;
	t->uvm_host_touched = false;
	tmm_list_init(&t->on_device);
	tmm_list_init(&t->in_flight);
	t->last_use = ctx->use_clock;
	t->op_mark = 0;
	t->version = 0;
	t->first_bytes_by_op = false;
	t->producer = 0;
	t->producer_epoch = 0;
	t->dropped_dependents = 0;
	tmm_list_init(&t->dropped);
	tmm_list_init(&t->ghosts);
	t->ghost = false;
	t->regenerated = false;
	t->pending_prefetch = UINT32_MAX;
	t->rehearsed = ctx->rehearsal != NULL;
	t->view_parent = NULL;
	t->view_offset = 0;
	tmm_list_init(&t->views);
	tmm_list_init(&t->view_link);
	t->n_views = 0;
	t->view_ahead = t->view_behind = false;
	t->view_mark = 0;
	ctx->live_tensors++;
	*out = t;
	return 0;
}

void tmm_tensor_free(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->read_by.valid)
		ctx->be.ops->event_release(&ctx->be, &t->read_by);
	if (t->net_by.valid)
		ctx->be.ops->event_release(&ctx->be, &t->net_by);
	free(t->name);
	t->name = NULL;
	t->live = false;
	/* A view leaves its parent's list; a parent freed with views still
	 * alive (the whole table at tmm_ctx_destroy, in any order) leaves
	 * them without a parent. */
	if (t->view_parent) {
		tmm_list_del(&t->view_link);
		t->view_parent->n_views--;
		t->view_parent = NULL;
		ctx->live_views--;
	}
	while (!tmm_list_empty(&t->views)) {
		struct tmm_tensor_rec *v = tmm_container_of(
			t->views.next, struct tmm_tensor_rec, view_link);

		tmm_list_del(&v->view_link);
		v->view_parent = NULL;
		ctx->live_views--;
	}
	t->n_views = 0;
	ctx->live_tensors--;
	/* Its last generation used: retired, so that the generation never
	 * wraps back to a handle given out before. */
	if (t->gen == GEN_MASK) {
		ctx->retired_slots++;
		return;
	}
	t->gen++;
	give_slot(ctx, t);
}

int tmm_tensor_mark_net(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	if (t->net_by.valid)
		be->ops->event_release(be, &t->net_by);
	t->net_by = (tmm_event){ 0 };
	/* Without one, the collective ran in the compute stream's order. */
	if (!be->ops->collective_event)
		return 0;
	rc = be->ops->collective_event(be, &t->net_by);
	if (rc < 0)
		t->net_by = (tmm_event){ 0 };
	/* A view's bytes are its parent's: its other views and the parent
	 * itself wait through the parent (tmm_tensor_wait_net). */
	if (rc == 0 && t->view_parent)
		rc = tmm_tensor_mark_net(ctx, t->view_parent);
	return rc;
}

/* One record's wait (tmm_tensor_wait_net). */
static int wait_net_one(struct tmm_backend *be, struct tmm_tensor_rec *t,
			enum tmm_engine engine, bool host)
{
	int rc;

	if (!t->net_by.valid)
		return 0;
	/* Most collectives have ended by the time their tensors are used
	 * again (the optimizer comes after the whole backward pass). */
	rc = be->ops->event_query(be, &t->net_by);
	if (rc == 0)
		rc = host ? be->ops->event_sync(be, &t->net_by)
			  : be->ops->engine_wait(be, engine, &t->net_by);
	/* A copy engine's wait orders only its own later work: the
	 * compute stream still has to wait, should the copy not be
	 * queued or the tensor stay (a back-access during a swap-out). */
	if (rc < 0 || (!host && engine != TMM_ENGINE_COMPUTE))
		return rc < 0 ? rc : 0;
	be->ops->event_release(be, &t->net_by);
	t->net_by = (tmm_event){ 0 };
	return 0;
}

int tmm_tensor_wait_net(struct tmm_ctx *ctx, struct tmm_tensor_rec *t,
			enum tmm_engine engine, bool host)
{
	int rc = wait_net_one(&ctx->be, t, engine, host);

	/* A view's bytes are its parent's: a collective on the parent (or
	 * on a sibling view, which marked the parent too) holds them. */
	if (rc == 0 && t->view_parent)
		rc = wait_net_one(&ctx->be, t->view_parent, engine, host);
	return rc;
}

int tmm_tensor_wait_readers(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	struct tmm_backend *be = &ctx->be;
	int rc;

	rc = tmm_tensor_wait_net(ctx, t, TMM_ENGINE_COMPUTE, false);
	if (rc < 0 || !t->read_by.valid)
		return rc < 0 ? rc : 0;
	/* Most such copies have long ended: then nothing need wait. */
	rc = be->ops->event_query(be, &t->read_by);
	if (rc == 0)
		rc = be->ops->engine_wait(be, TMM_ENGINE_COMPUTE, &t->read_by);
	be->ops->event_release(be, &t->read_by);
	t->read_by = (tmm_event){ 0 };
	return rc < 0 ? rc : 0;
}

struct tmm_tensor_rec *tmm_tensor_at(const struct tmm_ctx *ctx, uint32_t i)
{
	return slot(ctx, i);
}
