/* SPDX-License-Identifier: MIT */
/*
 * drop.h — dropping a tensor to recompute it later (Capuchin §4.4, §5.3),
 * and the lineage that makes it safe.
 *
 * While an iteration runs, every op flagged TMM_OP_PURE is remembered with
 * its callback, its inputs and the version of each input.  A tensor whose
 * bytes came from such an op may be *dropped*: its device memory is freed
 * and it becomes DROPPED.  Bringing it back re-runs its producer
 * (lib/exec/recompute.h), above the mover because it runs an op; dropping
 * is here, below the mover, which sheds regenerated tensors before it
 * evicts anything and forgets a dropped tensor that is overwritten.  The
 * lineage is one structure spanning the two files: drop.c records it,
 * recompute.c reads it to regenerate.
 */
#ifndef TMM_DROP_H
#define TMM_DROP_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/context.h"

struct lineage_op {
	tmm_run_fn run;
	void *user;
	struct tmm_cost cost;
	uint32_t name;	   /* offset in names */
	uint32_t first;	   /* in handles / versions */
	uint16_t n_inputs, n_outputs;
};

struct tmm_lineage {
	uint64_t epoch;	   /* the iteration whose ops these are */
	struct lineage_op *ops;
	uint32_t n_ops, cap_ops;
	tmm_tensor *handles;
	uint64_t *versions; /* inputs: their version when the op ran;
			     * outputs: their size, for a throwaway buffer
			     * once the output itself is gone */
	uint32_t n_refs, cap_refs, cap_versions;
	char *names;
	uint32_t names_len, cap_names;
	unsigned depth;	    /* regenerations under way, nested */
};

/* The name of lineage op `op`, for messages. */
static inline const char *tmm_lineage_op_name(const struct tmm_lineage *lin,
					      const struct lineage_op *op)
{
	return lin->names + op->name;
}

int tmm_lineage_create(struct tmm_ctx *ctx);
void tmm_lineage_destroy(struct tmm_ctx *ctx);

/*
 * Remembers op, which just ran on recs[0 .. n) (inputs then outputs, as
 * in tmm_tracker_op), as the producer of its outputs when it is pure, and
 * bumps the version of every output.  An output that the op also reads
 * gets no producer: an in-place update cannot be re-run.
 */
void tmm_lineage_record(struct tmm_ctx *ctx, const tmm_op *op,
			struct tmm_tensor_rec *const *recs,
			const uint8_t *flags, unsigned n);

/* t's bytes were written by the host: they have no producer. */
void tmm_lineage_host_write(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Can t be dropped now?  It must be RESIDENT, unpinned, made by a pure op
 * of this iteration whose inputs are still live and unchanged.  Returns 0
 * or -EINVAL with the reason in ctx->error.
 */
int tmm_recompute_check(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Drops t (after tmm_recompute_check).  Returns 0 or -EINVAL. */
int tmm_recompute_drop(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* The lineage op that made t's bytes, or NULL. */
struct lineage_op *tmm_lineage_producer(const struct tmm_ctx *ctx,
					const struct tmm_tensor_rec *t);

/* Adds `delta` to the dropped_dependents of each input of op. */
void tmm_lineage_count_readers(struct tmm_ctx *ctx,
			       const struct lineage_op *op, int delta);

/* Can t be dropped, as a question: the program's last message stays. */
bool tmm_recompute_droppable(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/* Frees t's device memory, to be recomputed (after the check), without
 * counting a drop: one brought back for a recomputation goes again. */
void tmm_recompute_drop_uncounted(struct tmm_ctx *ctx,
				  struct tmm_tensor_rec *t);

/*
 * A DROPPED tensor is about to be overwritten or destroyed: it leaves the
 * dropped list without being regenerated, and becomes EMPTY.
 */
void tmm_recompute_forget(struct tmm_ctx *ctx, struct tmm_tensor_rec *t);

/*
 * Memory is short: drops the least recently used unpinned tensor that a
 * recomputation regenerated on the way to another (cheaper than swapping
 * anything out).  Returns true when it freed something.
 */
bool tmm_recompute_shed(struct tmm_ctx *ctx);

#endif /* TMM_DROP_H */
