/* SPDX-License-Identifier: MIT */
/*
 * guard.c — what a call may do when the context is already in a call
 * (guard.h): the table of the calls allowed inside a callback, the
 * refusals and their messages, and tmm_last_error, which has to know
 * where a refusal left its message.
 *
 * The rule of the table: inside a callback a call may read, and may not
 * change, the context.  The callback runs with the op's tensors pinned
 * and its device pointers handed out, and tmm_run records the op's
 * accesses, reaps and fires the plan's actions after the callback
 * returns; anything that makes tensors resident, evicts, frees, records
 * or plans in between would act on a half-run op.  Reads are safe: the
 * statistics, a tensor's size, and the bytes of a tensor that is where
 * they are (tmm_guard_read_in_callback refuses the two reads that are
 * not: the op's own outputs, and a dropped tensor).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"

extern _Thread_local char tmm_create_error[512];

/* One public call: its name, and why it is refused inside a callback
 * (NULL: allowed there, it only reads). */
struct call_rule {
	const char *name;
	const char *refused;
};

static const struct call_rule rules[TMM_CALL_COUNT] = {
	[TMM_CALL_CTX_DESTROY] = {
		"tmm_ctx_destroy",
		"the context would be freed under tmm_run, which the callback "
		"returns to; the context is left intact, destroy it after "
		"tmm_run returns" },
	[TMM_CALL_TENSOR_CREATE] = {
		"tmm_tensor_create",
		"it would add to the tensor table and the iteration's trace "
		"in the middle of the op; create tensors before tmm_run" },
	[TMM_CALL_TENSOR_VIEW] = {
		"tmm_tensor_view",
		"it would add to the tensor table and the iteration's trace "
		"in the middle of the op; make views before tmm_run" },
	[TMM_CALL_TENSOR_DESTROY] = {
		"tmm_tensor_destroy",
		"freeing a tensor may recompute or move others while the op's "
		"kernels use the device; destroy it after tmm_run returns" },
	[TMM_CALL_TENSOR_READ] = { "tmm_tensor_read", NULL },
	[TMM_CALL_TENSOR_WRITE] = {
		"tmm_tensor_write",
		"writing may materialise, recompute or move tensors while the "
		"op's kernels use the device; write before or after tmm_run" },
	[TMM_CALL_TENSOR_FILL] = {
		"tmm_tensor_fill",
		"a fill runs an op of its own, which may make tensors "
		"resident or move them while the op's kernels use the device; "
		"fill before or after tmm_run" },
	[TMM_CALL_TENSOR_BYTES] = { "tmm_tensor_bytes", NULL },
	[TMM_CALL_RUN] = {
		"tmm_run",
		"a nested tmm_run would make tensors resident, evict and "
		"record accesses in the middle of the running op; run the "
		"next op after this tmm_run returns" },
	[TMM_CALL_ACQUIRE] = {
		"tmm_acquire",
		"it would make a tensor resident and record an access in the "
		"middle of the op; acquire before tmm_run" },
	[TMM_CALL_RELEASE] = {
		"tmm_release",
		"a callback may only read the context; release after tmm_run "
		"returns" },
	[TMM_CALL_WORKSPACE] = {
		"tmm_workspace",
		"it would give back the workspace the op may be using and may "
		"evict tensors; take the workspace just before tmm_run" },
	[TMM_CALL_WORKSPACE_RELEASE] = {
		"tmm_workspace_release",
		"the op may be using the workspace; release it after tmm_run "
		"returns" },
	[TMM_CALL_ITERATION_BEGIN] = {
		"tmm_iteration_begin",
		"an iteration cannot begin in the middle of an op (it would "
		"recompute and start a new trace around it); call it after "
		"tmm_run returns" },
	[TMM_CALL_ITERATION_END] = {
		"tmm_iteration_end",
		"an iteration cannot end in the middle of an op (it would "
		"close the trace, plan and give back the workspace before the "
		"op's accesses are recorded); call it after tmm_run returns" },
	[TMM_CALL_REHEARSAL_BEGIN] = {
		"tmm_rehearsal_begin",
		"a rehearsal cannot begin in the middle of an op; call it "
		"before the first tmm_iteration_begin" },
	[TMM_CALL_REHEARSAL_END] = {
		"tmm_rehearsal_end",
		"a rehearsal cannot end in the middle of an op; call it after "
		"tmm_iteration_end" },
	[TMM_CALL_STATS_GET] = { "tmm_stats_get", NULL },
	[TMM_CALL_STATS_PRINT] = { "tmm_stats_print", NULL },
	[TMM_CALL_RELEASE_CACHED] = {
		"tmm_release_cached",
		"it frees memory the running op's copies may be using; call "
		"it after tmm_run returns" },
	[TMM_CALL_STATS_RESET_PEAK] = {
		"tmm_stats_reset_peak",
		"a callback may only read the context; reset the peak after "
		"tmm_run returns" },
	[TMM_CALL_CUDNN_ALGO] = {
		"tmm_cudnn_conv_*_algo",
		"it takes a workspace, which may evict tensors and give back "
		"the one the op is using; choose the algorithm just before "
		"tmm_run" },
};

/* The last refusal of this thread for a context in a call on another
 * thread: that thread may be writing ctx->error, so it is kept here. */
static _Thread_local struct {
	const struct tmm_ctx *ctx;
	uint16_t serial;	/* ctx->serial: not a later context at
				 * the same address */
	unsigned fails;		/* ctx->fails at the refusal */
	char msg[256];
} busy;

int tmm_guard_contended(struct tmm_ctx *ctx, uintptr_t holder,
			enum tmm_call call)
{
	const struct call_rule *r = &rules[call];

	if (holder != (uintptr_t)pthread_self()) {
		busy.ctx = ctx;
		busy.serial = ctx->serial;
		busy.fails = atomic_load_explicit(&ctx->fails,
						  memory_order_relaxed);
		snprintf(busy.msg, sizeof(busy.msg),
			 "%s: the context is in a call on another thread; a "
			 "context is not thread-safe: serialise the calls "
			 "(retry, or take a lock of your own around them) or "
			 "give each thread a context of its own", r->name);
		return -EBUSY;
	}
	/* The owner is this thread: only a callback calls back in. */
	if (!ctx->callback)
		return tmm_fail(ctx, -EBUSY,
				"%s: this thread is already in a call on the "
				"context and no callback is running (a "
				"libtensormm bug: please report it)", r->name);
	if (!r->refused)
		return TMM_GUARD_NESTED;
	return tmm_fail(ctx, -EBUSY,
			"%s: refused inside the callback of op '%s': %s "
			"(tensormm(7), Callbacks and threads)", r->name,
			ctx->callback, r->refused);
}

/* Appends `text` to the string in buf[0 .. size), cutting it short where
 * buf ends: a message too long loses its tail, not the call. */
static void append(char *buf, size_t size, const char *text)
{
	size_t len = strlen(buf);

	while (*text && len + 1 < size)
		buf[len++] = *text++;
	buf[len] = '\0';
}

int tmm_fail_callback(struct tmm_ctx *ctx, int code,
		      const struct tmm_callback_frame *f, const char *fmt, ...)
{
	char inner[sizeof(ctx->error)] = "";
	va_list ap;

	if (atomic_load_explicit(&ctx->fails, memory_order_relaxed) !=
	    f->fails)
		memcpy(inner, ctx->error, sizeof(inner));
	va_start(ap, fmt);
	vsnprintf(ctx->error, sizeof(ctx->error), fmt, ap);
	va_end(ap);
	if (inner[0]) {
		append(ctx->error, sizeof(ctx->error), "; inside it: ");
		append(ctx->error, sizeof(ctx->error), inner);
	}
	tmm_fail_add_context(ctx);
	atomic_fetch_add_explicit(&ctx->fails, 1, memory_order_relaxed);
	return code;
}

int tmm_guard_read_in_callback(struct tmm_ctx *ctx, tmm_tensor h,
			       const struct tmm_tensor_rec *t)
{
	char label[64];

	for (unsigned i = 0; i < ctx->callback_n_outputs; i++)
		if (ctx->callback_outputs[i].id == h.id)
			return tmm_fail(ctx, -EBUSY,
					"tmm_tensor_read: refused inside the "
					"callback of op '%s': tensor %s is its "
					"output %u, which the op is writing; "
					"read it after tmm_run returns "
					"(tensormm(7), Callbacks and threads)",
					ctx->callback,
					tmm_tensor_label(t, label,
							 sizeof(label)),
					i);
	if (t->state == TMM_TS_DROPPED)
		return tmm_fail(ctx, -EBUSY,
				"tmm_tensor_read: refused inside the callback "
				"of op '%s': tensor %s was dropped, and "
				"reading it would recompute it, running "
				"another op inside this one; read it after "
				"tmm_run returns (tensormm(7), Callbacks and "
				"threads)", ctx->callback,
				tmm_tensor_label(t, label, sizeof(label)));
	return 0;
}

const char *tmm_last_error(const tmm_ctx *ctx)
{
	uintptr_t holder;

	if (!ctx)
		return tmm_create_error;
	if (tmm_ctx_check(ctx) < 0)
		return "invalid context (NULL, destroyed, or not a tmm_ctx)";
	/* This thread's refusal, unless the context failed again since. */
	if (busy.ctx == ctx && busy.serial == ctx->serial &&
	    busy.fails == atomic_load_explicit(&ctx->fails,
					       memory_order_relaxed))
		return busy.msg;
	holder = atomic_load_explicit(&ctx->owner, memory_order_acquire);
	if (holder && holder != (uintptr_t)pthread_self())
		return "the context is in a call on another thread, which "
		       "may be writing its message; call tmm_last_error "
		       "from the thread whose call failed";
	return ctx->error;
}
