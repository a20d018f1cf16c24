/* SPDX-License-Identifier: MIT */
/*
 * test_fit_longlived.c — a trainer that creates every tensor up front and
 * keeps it, as hand-written C trainers do, trains at any budget its
 * largest op fits, under every policy, in swap mode (over an arena and
 * over chunks, pool=chunks) and uvm mode, bit-identically.
 *
 * Issue #21's notes: such a program failed in swap mode at 10-12% of its
 * peak under every policy, passive included, with no room for an op that
 * fit: tmm_run pinned all of an op's tensors before placing them, and
 * the long-lived tensors of many sizes left no hole.  Here the layers'
 * activations differ in size (prime-ish KiB counts), and the budget is
 * the largest op's working set plus a little, then fractions of the peak.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "tensormm.h"
#include "lib/base/managed_page.h"

#define LAYERS 24
#define STEPS 3
#define KIB 1024u

/* Activation sizes in KiB, repeating, layer 0 being the input. */
static const size_t act_kib[9] = { 3, 17, 5, 29, 11, 23, 7, 19, 2 };
#define ACT_BYTES(l) (act_kib[(l) % 9] * KIB)
#define W_BYTES (1 * KIB)

/* Every op: out[k] mixes its inputs' bytes, wrapped to their sizes, with
 * its salt.  An output listed as an input too is updated in place. */
struct mix {
	unsigned n_in, n_out;
	size_t in_bytes[3], out_bytes[2];
	uint8_t salt;
};

static int mix(void *const *in, void *const *out, void *user, void *stream)
{
	const struct mix *m = user;

	(void)stream;
	for (unsigned o = 0; o < m->n_out; o++) {
		uint8_t *dst = out[o];

		for (size_t k = 0; k < m->out_bytes[o]; k++) {
			unsigned v = m->salt + o;

			for (unsigned i = 0; i < m->n_in; i++) {
				const uint8_t *src = in[i];

				v = v * 31 + src[(k * (i + 3)) % m->in_bytes[i]];
			}
			dst[k] = (uint8_t)v;
		}
	}
	return 0;
}

struct model {
	tmm_tensor w[LAYERS], act[LAYERS + 1], grad[LAYERS + 1];
	struct mix fwd[LAYERS], bwd[LAYERS], upd[LAYERS];
};

static int create(tmm_ctx *ctx, size_t bytes, enum tmm_kind kind,
		  tmm_tensor *t, uint8_t seed)
{
	uint8_t buf[32 * KIB];
	int rc = tmm_tensor_create(ctx, bytes, kind, NULL, t);

	for (size_t k = 0; k < bytes && rc == 0; k++)
		buf[k] = (uint8_t)(seed * 7 + k * 13);
	return rc ? rc : tmm_tensor_write(ctx, *t, 0, buf, bytes);
}

/* Every tensor is made before the first step and lives to the end. */
static int build(tmm_ctx *ctx, struct model *m)
{
	int rc = 0;

	for (unsigned l = 0; l <= LAYERS && rc == 0; l++) {
		rc = create(ctx, ACT_BYTES(l), TMM_ACTIVATION, &m->act[l],
			    (uint8_t)l);
		if (rc == 0)
			rc = create(ctx, ACT_BYTES(l), TMM_GRADIENT,
				    &m->grad[l], (uint8_t)(l + 50));
		if (rc == 0 && l < LAYERS)
			rc = create(ctx, W_BYTES, TMM_PERSISTENT, &m->w[l],
				    (uint8_t)(l + 100));
	}
	for (unsigned l = 0; l < LAYERS; l++) {
		m->fwd[l] = (struct mix){ 2, 1, { ACT_BYTES(l), W_BYTES },
					  { ACT_BYTES(l + 1) }, (uint8_t)l };
		m->bwd[l] = (struct mix){ 3, 1,
					  { ACT_BYTES(l + 1), W_BYTES,
					    ACT_BYTES(l) },
					  { ACT_BYTES(l) }, (uint8_t)(l + 9) };
		m->upd[l] = (struct mix){ 3, 1,
					  { W_BYTES, ACT_BYTES(l + 1),
					    ACT_BYTES(l) },
					  { W_BYTES }, (uint8_t)(l + 17) };
	}
	return rc;
}

static int run(tmm_ctx *ctx, const char *name, unsigned flags,
	       struct mix *m, tmm_tensor *in, tmm_tensor *out)
{
	/* Convolutions to the planners: SuperNeurons offloads their
	 * outputs, vdnn-conv too. */
	tmm_op op = { .name = name, .kind = TMM_OP_CONV, .flags = flags,
		      .run = mix, .user = m, .inputs = in,
		      .n_inputs = m->n_in, .outputs = out,
		      .n_outputs = m->n_out };

	return tmm_run(ctx, &op);
}

/* One step: forward, then backward with each layer's weight update (in
 * place: the weight is an input and the output). */
static int step(tmm_ctx *ctx, struct model *m)
{
	int rc = tmm_iteration_begin(ctx);

	for (unsigned l = 0; l < LAYERS && rc == 0; l++) {
		tmm_tensor in[2] = { m->act[l], m->w[l] };

		rc = run(ctx, "forward", TMM_OP_PURE, &m->fwd[l], in,
			 &m->act[l + 1]);
	}
	for (unsigned l = LAYERS; l-- > 0 && rc == 0;) {
		tmm_tensor in[3] = { m->grad[l + 1], m->w[l], m->act[l] };
		tmm_tensor uin[3] = { m->w[l], m->grad[l + 1], m->act[l] };

		rc = run(ctx, "backward", TMM_OP_PURE | TMM_OP_BACKWARD,
			 &m->bwd[l], in, &m->grad[l]);
		if (rc == 0)
			rc = run(ctx, "update", TMM_OP_BACKWARD, &m->upd[l],
				 uin, &m->w[l]);
	}
	return rc ? rc : tmm_iteration_end(ctx);
}

/* Trains under config; the weights' bytes go to w (LAYERS * W_BYTES). */
static void train(const char *config, uint8_t *w, struct tmm_stats *st)
{
	struct model m;
	tmm_ctx *ctx;
	int rc;

	ck_assert_msg(tmm_ctx_create(&ctx, config) == 0, "%s: %s", config,
		      tmm_last_error(NULL));
	rc = build(ctx, &m);
	for (unsigned s = 0; s < STEPS && rc == 0; s++)
		rc = step(ctx, &m);
	ck_assert_msg(rc == 0, "%s: %s", config, tmm_last_error(ctx));
	for (unsigned l = 0; l < LAYERS; l++)
		ck_assert_int_eq(tmm_tensor_read(ctx, m.w[l], 0,
						 w + l * W_BYTES, W_BYTES),
				 0);
	st->version = TMM_STATS_VERSION;
	ck_assert_int_eq(tmm_stats_get(ctx, st), 0);
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

/* `bytes` rounded up to `unit`. */
static uint64_t in_units(uint64_t bytes, uint64_t unit)
{
	return (bytes + unit - 1) / unit * unit;
}

/* The largest working set of one op, each tensor rounded up to `unit`:
 * the pool's in mode=swap (every size here is a multiple of it), a
 * managed big page in mode=uvm. */
static uint64_t largest_op(uint64_t unit)
{
	uint64_t most = 0;

	for (unsigned l = 0; l < LAYERS; l++) {
		uint64_t a0 = in_units(ACT_BYTES(l), unit);
		uint64_t a1 = in_units(ACT_BYTES(l + 1), unit);
		uint64_t w = in_units(W_BYTES, unit);
		uint64_t fwd = a0 + w + a1;
		uint64_t bwd = a1 + w + 2 * a0;

		most = fwd > most ? fwd : most;
		most = bwd > most ? bwd : most;
	}
	return most;
}

static const char *const policies[] = {
	"passive",  "none",    "vdnn-all", "checkpoint", "superneurons",
	"capuchin", "tensile", "tsplit",   "stream", "auto",
};

#define N_POLICIES (sizeof(policies) / sizeof(*policies))

START_TEST(a_longlived_trainer_trains_wherever_its_largest_op_fits)
{
	static uint8_t ref[LAYERS * W_BYTES], w[LAYERS * W_BYTES];
	struct tmm_stats st;
	char config[160];
	uint64_t budgets[4], peak[2];
	unsigned runs = 0;

	train("backend=sim,sim_memory=backed,mode=swap,policy=none", ref, &st);
	peak[0] = st.device_peak;
	ck_assert_uint_gt(peak[0], 4 * largest_op(256));
	/* In mode=uvm every tensor here takes a whole 64 KiB page. */
	train("backend=sim,sim_memory=backed,mode=uvm,policy=none", w, &st);
	ck_assert_mem_eq(w, ref, sizeof(ref));
	peak[1] = st.device_peak;
	ck_assert_uint_gt(peak[1], 4 * largest_op(TMM_MANAGED_PAGE));
	/* Swap mode over an arena, uvm mode, swap mode over chunks. */
	for (int m = 0; m < 3; m++) {
		static const char *const modes[] = { "swap", "uvm",
						     "swap,pool=chunks" };
		const uint64_t *pk = &peak[m == 1];

		/* Just above the largest op (its three tensors, each
		 * rounded up; in mode=uvm, exactly its pages), then 10%,
		 * 12% and 25% of the peak where those are larger. */
		budgets[0] = m == 1 ? largest_op(TMM_MANAGED_PAGE)
				    : largest_op(256) + 3 * 256;
		budgets[1] = *pk / 10;
		budgets[2] = *pk * 12 / 100;
		budgets[3] = *pk / 4;
		for (size_t b = 0; b < 4; b++) {
			if (budgets[b] < budgets[0])
				continue;
			for (size_t p = 0; p < N_POLICIES; p++) {
				snprintf(config, sizeof(config),
					 "backend=sim,sim_memory=backed,"
					 "mode=%s,policy=%s,budget=%lluB,"
					 "log=error", modes[m],
					 policies[p],
					 (unsigned long long)budgets[b]);
				train(config, w, &st);
				ck_assert_msg(memcmp(w, ref, sizeof(ref)) == 0,
					      "%s: weights differ", config);
				ck_assert_uint_le(st.device_peak,
						  budgets[b]);
				runs++;
			}
		}
	}
	ck_assert_uint_ge(runs, 3 * 2 * N_POLICIES);
}
END_TEST

/*
 * The layer planners (vDNN, checkpointing, SuperNeurons) find the feature
 * maps of such a trainer too: a buffer made before the first step whose
 * first access in each step overwrites it whole is made anew every step,
 * as a framework's fresh activation is (hints/analysis.c,
 * tmm_made_fresh).  Issue #23: they gave no action at all for it.
 */
START_TEST(the_layer_planners_act_on_longlived_activations)
{
	static const char *const layered[] = { "vdnn-all", "checkpoint",
					       "superneurons" };
	static uint8_t ref[LAYERS * W_BYTES], w[LAYERS * W_BYTES];
	struct tmm_stats st;
	char config[160];
	uint64_t budget;

	train("backend=sim,sim_memory=backed,mode=swap,policy=none", ref, &st);
	budget = st.device_peak / 4;
	for (size_t p = 0; p < 3; p++) {
		snprintf(config, sizeof(config),
			 "backend=sim,sim_memory=backed,mode=swap,policy=%s,"
			 "budget=%lluB,log=error", layered[p],
			 (unsigned long long)budget);
		train(config, w, &st);
		ck_assert_msg(memcmp(w, ref, sizeof(ref)) == 0,
			      "%s: weights differ", config);
		fprintf(stderr, "%s: %llu actions, %llu swap-outs, %llu drops, "
			"%llu passive evictions\n", layered[p],
			(unsigned long long)st.plan_actions,
			(unsigned long long)st.swap_out_count,
			(unsigned long long)st.drops,
			(unsigned long long)st.passive_evictions);
		ck_assert_msg(st.plan_actions > 0, "%s: no action", config);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fit_longlived");
	TCase *tc = tcase_create("fit_longlived");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
		       a_longlived_trainer_trains_wherever_its_largest_op_fits);
	tcase_add_test(tc, the_layer_planners_act_on_longlived_activations);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
