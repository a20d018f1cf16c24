/* SPDX-License-Identifier: MIT */
/*
 * toy_ops.h — small ops on 16 KiB tensors of uint32, shared by the tests
 * of the tracker and of plans.
 *
 * Each op is cheap and order-sensitive, so a stale or misplaced byte
 * changes every result computed from it.
 */
#ifndef TOY_OPS_H
#define TOY_OPS_H

#include "tensormm.h"

#define ELEMS 4096 /* uint32 per tensor */
#define BYTES (ELEMS * 4)

/* out[0] = in[0] * 3 + k */
int toy_fill(void *const *in, void *const *out, void *user, void *stream);
/* out[0] = rotl(in[0], 5) ^ (in[1] * 2654435761 + k) */
int toy_mix(void *const *in, void *const *out, void *user, void *stream);
/* out[0] = in[0] ^ 0x5a5a5a5a, out[1] = in[0] + 17 */
int toy_split(void *const *in, void *const *out, void *user, void *stream);
/* out[0] += 1, in place */
int toy_bump(void *const *in, void *const *out, void *user, void *stream);

/*
 * Sliced ops (TSPLIT): a tensor of BYTES seen as ROWS rows of COLS uint32.
 * Each has a whole-op form and a slice form that touches rows [begin,
 * end) only; running the slice form over consecutive ranges gives the
 * same bytes as the whole op.
 */
#define ROWS 64
#define COLS (ELEMS / ROWS)

/* out[0][r][c] = rotl(in[0][r][c], 3) ^ (r * COLS + c) * 40503 */
int toy_rows(void *const *in, void *const *out, void *user, void *stream);
int toy_rows_slice(void *const *in, void *const *out, size_t begin,
		   size_t end, void *user, void *stream);
/* out[0] = in[0] (ROWS x COLS) times in[1] (COLS x COLS, not sliced),
 * in wrapping uint32 arithmetic: exact, and every output element
 * depends on a whole input row and a whole weight column. */
int toy_matmul(void *const *in, void *const *out, void *user, void *stream);
int toy_matmul_slice(void *const *in, void *const *out, size_t begin,
		     size_t end, void *user, void *stream);

/* Runs one elementwise op; fails the test with the library's message. */
void toy_run(tmm_ctx *ctx, const char *name, unsigned flags, tmm_run_fn fn,
	     const tmm_tensor *in, unsigned n_in, const tmm_tensor *out,
	     unsigned n_out);

/* One step of a framework that makes its tensors every step: a chain of
 * `chain` (at most TOY_CHAIN_MAX) tensors made, computed from w (each
 * from the one before and one further back), folded into w, and
 * destroyed, inside one iteration.  Nothing is read from the host. */
#define TOY_CHAIN_MAX 64
void toy_chain_step(tmm_ctx *ctx, tmm_tensor w, int chain);

/* ELEMS words at v that depend on `salt`, each its own. */
void toy_pattern(uint32_t *v, uint32_t salt);

/* A PERSISTENT tensor "w" written with values that depend on `salt`. */
tmm_tensor toy_weight(tmm_ctx *ctx, uint32_t salt);

#endif /* TOY_OPS_H */
