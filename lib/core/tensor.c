/*
 * tensor.c — the tensor table and the tensor API.
 *
 * Handles are values: (context serial, slot generation, slot index + 1)
 * packed in 64 bits.  A destroyed tensor's slot gets a new generation, so
 * its old handle no longer matches; a handle of another context carries
 * another serial; the zero handle has no slot.  All three are refused with
 * -EBADF and a message, never dereferenced blindly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "lib/move/mover.h"
#include "lib/exec/recompute.h"
#include "lib/exec/rehearse.h"
#include "lib/exec/tracker.h"

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

static int take_slot(struct tmm_ctx *ctx, struct tmm_tensor_rec **out)
{
	uint32_t index;

	if (ctx->n_free) {
		index = ctx->free_slots[--ctx->n_free];
	} else {
		if (ctx->n_slots >= MAX_SLOTS)
			return tmm_fail(ctx, -ENOMEM,
					"too many tensors (at most %u live)",
					MAX_SLOTS);
		if (ctx->n_slots == ctx->n_chunks * TMM_TABLE_CHUNK) {
			void *p = realloc(ctx->chunks, (ctx->n_chunks + 1) *
							       sizeof(*ctx->chunks));
			struct tmm_tensor_rec *chunk;

			if (!p)
				return tmm_fail(ctx, -ENOMEM, "out of memory");
			ctx->chunks = p;
			chunk = calloc(TMM_TABLE_CHUNK, sizeof(*chunk));
			if (!chunk)
				return tmm_fail(ctx, -ENOMEM, "out of memory");
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
		void *p = realloc(ctx->free_slots, cap * sizeof(uint32_t));

		if (!p)
			return -ENOMEM; /* the slot is leaked, not reused */
		ctx->free_slots = p;
		ctx->cap_free = cap;
	}
	ctx->free_slots[ctx->n_free++] = t->index;
	return 0;
}

int tmm_tensor_create(tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		      const char *name, tmm_tensor *out)
{
	struct tmm_tensor_rec *t = NULL;
	char b1[32], b2[32];
	int rc;

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	if (!out)
		return tmm_fail(ctx, -EINVAL, "tmm_tensor_create: out is NULL");
	*out = TMM_TENSOR_NULL;
	if (bytes == 0)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_create: tensor '%s' has 0 bytes",
				name ? name : "");
	if ((unsigned)kind >= TMM_KIND_COUNT)
		return tmm_fail(ctx, -EINVAL,
				"tmm_tensor_create: kind %d is not a tmm_kind "
				"(PERSISTENT, ACTIVATION, GRADIENT, SCRATCH)",
				(int)kind);
	if (bytes > ctx->budget)
		return tmm_fail(ctx, -ENOMEM,
				"tmm_tensor_create: tensor '%s' (%s) is larger "
				"than the whole device budget (%s); raise "
				"TENSORMM_BUDGET",
				name ? name : "",
				tmm_fmt_bytes(bytes, b1, sizeof(b1)),
				tmm_fmt_bytes(ctx->budget, b2, sizeof(b2)));
	rc = take_slot(ctx, &t);
	if (rc < 0)
		return rc;
	t->name = NULL;
	if (name && !(t->name = strdup(name))) {
		give_slot(ctx, t);
		return tmm_fail(ctx, -ENOMEM, "out of memory");
	}
	t->live = true;
	t->kind = kind;
	t->state = TMM_TS_EMPTY;
	t->bytes = bytes;
	t->pins = t->acquires = 0;
	t->dev = t->host = NULL;
	t->block = NULL;
	t->copy = (tmm_event){ 0 };
	tmm_list_init(&t->on_device);
	tmm_list_init(&t->in_flight);
	t->last_use = ctx->use_clock;
	t->op_mark = 0;
	t->version = 0;
	t->producer = 0;
	t->producer_epoch = 0;
	t->dropped_dependents = 0;
	tmm_list_init(&t->dropped);
	tmm_list_init(&t->ghosts);
	t->ghost = false;
	t->regenerated = false;
	t->pending_prefetch = UINT32_MAX;
	t->rehearsed = ctx->rehearsal != NULL;
	ctx->live_tensors++;
	*out = encode(ctx, t);
	tmm_tracker_tensor_made(ctx, t);
	return 0;
}

void tmm_tensor_retire(struct tmm_ctx *ctx, struct tmm_tensor_rec *t)
{
	if (t->ghost) {
		tmm_list_del(&t->ghosts);
		t->ghost = false;
	}
	tmm_mover_release(ctx, t);
	free(t->name);
	t->name = NULL;
	t->live = false;
	t->gen = (t->gen + 1) & GEN_MASK;
	ctx->live_tensors--;
	give_slot(ctx, t);
}

int tmm_tensor_destroy(tmm_ctx *ctx, tmm_tensor h)
{
	struct tmm_tensor_rec *t;
	char label[64];

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	t = tmm_tensor_lookup(ctx, h, "tmm_tensor_destroy");
	if (!t)
		return -EBADF;
	if (t->acquires)
		return tmm_fail(ctx, -EBUSY,
				"tmm_tensor_destroy: tensor %s is acquired "
				"%u time(s); tmm_release it first",
				tmm_tensor_label(t, label, sizeof(label)),
				t->acquires);
	/* A dropped tensor may need this one's bytes to be recomputed, now
	 * or later in the iteration: the tensor stays, out of reach and
	 * without device memory, while that lineage may need it
	 * (tmm_recompute_ghost); one that cannot be recomputed itself
	 * brings its dropped readers back first. */
	if (!tmm_recompute_ghost(ctx, t) && t->dropped_dependents) {
		int rc = tmm_recompute_settle_readers(ctx, t);

		if (rc < 0)
			return rc;
	}
	tmm_tracker_tensor_gone(ctx, t);
	if (!t->ghost)
		tmm_tensor_retire(ctx, t);
	return 0;
}

void tmm_tensor_table_clear(struct tmm_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->n_slots; i++) {
		struct tmm_tensor_rec *t = slot(ctx, i);

		if (t->live)
			tmm_tensor_retire(ctx, t);
	}
}

size_t tmm_tensor_bytes(const tmm_ctx *ctx, tmm_tensor h)
{
	enum handle_fault fault;
	struct tmm_tensor_rec *t;

	if (tmm_ctx_check(ctx) < 0)
		return 0;
	t = find(ctx, h, &fault);
	return t && !t->ghost ? t->bytes : 0;
}

/* Checks a host access range; returns the record or NULL (error set). */
static struct tmm_tensor_rec *io_check(struct tmm_ctx *ctx, tmm_tensor h,
				       size_t offset, const void *buf,
				       size_t bytes, const char *caller,
				       int *rc)
{
	struct tmm_tensor_rec *t = tmm_tensor_lookup(ctx, h, caller);
	char label[64];

	*rc = -EBADF;
	if (!t)
		return NULL;
	*rc = -EINVAL;
	if (!buf) {
		tmm_fail(ctx, -EINVAL, "%s: buffer is NULL", caller);
		return NULL;
	}
	if (offset > t->bytes || bytes > t->bytes - offset) {
		tmm_fail(ctx, -EINVAL,
			 "%s: range [%zu, %zu + %zu) is outside tensor %s of "
			 "%zu bytes", caller, offset, offset, bytes,
			 tmm_tensor_label(t, label, sizeof(label)), t->bytes);
		return NULL;
	}
	if (ctx->be.info.phantom) {
		*rc = -ENOTSUP;
		tmm_fail(ctx, -ENOTSUP,
			 "%s: the simulated device is in phantom mode (sizes "
			 "only, no bytes); use TENSORMM_SIM_MEMORY=backed",
			 caller);
		return NULL;
	}
	*rc = 0;
	return t;
}

int tmm_tensor_write(tmm_ctx *ctx, tmm_tensor h, size_t offset,
		     const void *src, size_t bytes)
{
	struct tmm_tensor_rec *t;
	int rc;

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	t = io_check(ctx, h, offset, src, bytes, "tmm_tensor_write", &rc);
	if (!t)
		return rc;
	/* A rehearsal moves no bytes; host writes are not accesses of the
	 * trace, so there is nothing more to record. */
	if (ctx->rehearsal)
		return 0;
	return tmm_mover_write(ctx, t, offset, src, bytes);
}

int tmm_tensor_read(tmm_ctx *ctx, tmm_tensor h, size_t offset, void *dst,
		    size_t bytes)
{
	struct tmm_tensor_rec *t;
	int rc;

	if (tmm_ctx_check(ctx) < 0)
		return -EBADF;
	t = io_check(ctx, h, offset, dst, bytes, "tmm_tensor_read", &rc);
	if (!t)
		return rc;
	if (ctx->rehearsal)
		return tmm_rehearse_read(ctx, t, dst, bytes);
	return tmm_mover_read(ctx, t, offset, dst, bytes);
}
