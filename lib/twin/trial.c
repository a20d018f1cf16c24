/* SPDX-License-Identifier: MIT */
/*
 * trial.c — replaying an iteration on a virtual twin of the device
 * (trial.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/api/lifecycle.h"
#include "lib/core/context.h"
#include "lib/exec/tensor.h"
#include "lib/exec/guide.h"
#include "lib/exec/guide_input.h"
#include "lib/move/mover.h"
#include "lib/record/tracker.h"
#include "trial.h"
#include "lib/base/tunables.h"
#include "lib/base/xalloc.h"

/* Iterations a trial runs: the first measured, as the real run's, then
 * guided ones: the first of those feeds late prefetches back (Capuchin
 * §4.4) to the next, the last is the steady state the result reports.
 * mode=uvm settles two steps later: the blocks one guided step leaves
 * populated (uvm_keep) are taken by the next, and the layout that gives
 * is the steady one only from the fourth iteration (tensile on the
 * compute-bound MLP at 40%, simulated: 87.9, 73.6, 71.3 and 71.5 ms at
 * iterations 3 to 6; with three, auto judged it 23% slower than it ran
 * and took a plan 5% slower). */
#define TRIAL_ITERATIONS 3
#define TRIAL_ITERATIONS_UVM 5

const struct tmm_twin_ops tmm_twin_ops = { .run = tmm_trial_run };

int tmm_trial_device_of(const struct tmm_ctx *ctx,
			struct tmm_trial_device *dev)
{
	return tmm_guide_twin_device(ctx, dev);
}

/*
 * The twin's configuration: every tunable spelled out, so nothing of the
 * caller's environment (a trace file, a plan file, a policy) reaches it.
 * The twin plans nothing (policy passive): it follows the plan it is
 * given.
 */
static int twin_config(const struct tmm_trial_device *dev, char *buf,
		       size_t len)
{
	size_t n_tunables, used = 0;
	const struct tmm_tunable *tt = tmm_tunables(&n_tunables);

	for (size_t i = 0; i < n_tunables; i++) {
		const char *key = tt[i].name, *val = tt[i].def;
		char num[32];
		int w;

		if (strcmp(key, "backend") == 0)
			val = "sim";
		else if (strcmp(key, "mode") == 0)
			val = dev->uvm ? "uvm" : "swap";
		else if (strcmp(key, "pool") == 0)
			val = dev->chunks ? "chunks" : "arena";
		else if (strcmp(key, "uvm_swap_path") == 0)
			val = tt[i].choices[dev->uvm_swap_path];
		else if (strcmp(key, "uvm_fresh") == 0)
			val = tt[i].choices[dev->uvm_fresh];
		else if (strcmp(key, "uvm_cap") == 0)
			val = tt[i].choices[dev->uvm_cap];
		else if (strcmp(key, "uvm_keep") == 0)
			val = tt[i].choices[dev->uvm_keep ? 1 : 0];
		else if (strcmp(key, "uvm_compact") == 0)
			val = tt[i].choices[dev->uvm_compact ? 1 : 0];
		else if (strcmp(key, "liveness") == 0)
			val = tt[i].choices[dev->liveness_discard ? 1 : 0];
		else if (strcmp(key, "sim_host") == 0)
			val = tt[i].choices[dev->host_ahead ? 1 : 0];
		else if (strcmp(key, "sim_managed_copy") == 0)
			val = tt[i].choices[dev->managed_copy_held ? 0 : 1];
		else if (strcmp(key, "uvm_copier") == 0)
			val = tt[i].choices[dev->copy_kernel
						    ? TMM_UVM_COPIER_KERNEL
						    : TMM_UVM_COPIER_RUNTIME];
		else if (strcmp(key, "sim_copy_kernel_gbps") == 0) {
			snprintf(num, sizeof(num), "%.17g",
				 dev->copy_kernel_gbps);
			val = num;
		} else if (strcmp(key, "sim_copy_kernel_sm") == 0) {
			snprintf(num, sizeof(num), "%.17g",
				 dev->copy_kernel_sm);
			val = num;
		}
		else if (strcmp(key, "budget") == 0 ||
			 strcmp(key, "sim_capacity") == 0) {
			/* With its unit: a bare budget is refused. */
			snprintf(num, sizeof(num), "%lluB",
				 (unsigned long long)(key[0] == 'b'
							      ? dev->budget
							      : dev->capacity));
			val = num;
		} else if (strcmp(key, "policy") == 0)
			val = "passive";
		else if (strcmp(key, "sim_profile") == 0)
			val = dev->profile;
		else if (strcmp(key, "sim_memory") == 0)
			val = "phantom";
		else if (strcmp(key, "sim_jitter") == 0 ||
			 strcmp(key, "replan_drift") == 0)
			val = "0";
		else if (strcmp(key, "stats_shm") == 0)
			val = "off";
		else if (strcmp(key, "log") == 0)
			val = "error";
		w = snprintf(buf + used, len - used, "%s%s=%s", used ? "," : "",
			     key, val);
		if (w < 0 || (size_t)w >= len - used)
			return -ENOMEM;
		used += (size_t)w;
	}
	return 0;
}

struct key_pair {
	uint64_t from, to;
};

struct replay {
	const struct tmm_trace *t;
	tmm_ctx *ctx;
	tmm_tensor *h;	    /* per trace tensor: the twin's handle */
	uint32_t *by_ordinal; /* made-inside tensors by creation ordinal */
	uint32_t n_ordinals;
	uint32_t *last;	    /* per trace tensor: its last access */
	bool *written;	    /* per trace tensor: has bytes in the twin */
	tmm_tensor *io;	    /* one op's inputs then outputs */
	unsigned char *sliced;
	struct tmm_trial_result *evictions_to; /* guided iterations' */
	bool freed_events;  /* the trace orders its destructions */
	uint32_t next_event; /* the next event to look at for one */
	/* Tensors made before the iteration, n_outside of them: */
	struct key_pair *to_twin;   /* trace key -> twin key */
	struct key_pair *from_twin; /* twin key -> trace index */
	uint32_t n_outside;
};

static bool made_inside(const struct tmm_trace *t, uint32_t i)
{
	return t->tensors[i].flags & TMM_TT_MADE_INSIDE;
}

static uint32_t ordinal_of(const struct tmm_trace *t, uint32_t i)
{
	return (uint32_t)(t->tensors[i].key & ~TMM_KEY_IN_ITERATION);
}

static int replay_init(struct replay *x, const struct tmm_trace *t)
{
	uint32_t most = 0;

	memset(x, 0, sizeof(*x));
	x->t = t;
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (made_inside(t, i) && ordinal_of(t, i) + 1 > most)
			most = ordinal_of(t, i) + 1;
	x->n_ordinals = most;
	x->h = tmm_calloc(t->n_tensors + 1, sizeof(*x->h));
	x->by_ordinal = tmm_malloc(sizeof(uint32_t) * (most + 1));
	x->last = tmm_malloc(sizeof(uint32_t) * (t->n_tensors + 1));
	x->io = tmm_malloc(sizeof(*x->io) * (t->n_op_tensors + 1));
	x->written = tmm_calloc(t->n_tensors + 1, sizeof(bool));
	x->sliced = tmm_malloc(t->n_op_tensors + 1);
	if (!x->h || !x->by_ordinal || !x->last || !x->io || !x->sliced ||
	    !x->written)
		return -ENOMEM;
	memset(x->by_ordinal, 0xff, sizeof(uint32_t) * (most + 1));
	for (uint32_t i = 0; i < t->n_tensors; i++) {
		x->last[i] = 0;
		if (made_inside(t, i))
			x->by_ordinal[ordinal_of(t, i)] = i;
	}
	for (uint32_t k = 0; k < t->n_accesses; k++)
		x->last[t->accesses[k].tensor] = k;
	for (uint32_t e = 0; e < t->n_events && !x->freed_events; e++)
		x->freed_events = t->events[e].kind == TMM_EV_FREED;
	return 0;
}

static void replay_free(struct replay *x)
{
	free(x->h);
	free(x->by_ordinal);
	free(x->last);
	free(x->io);
	free(x->sliced);
	free(x->written);
	free(x->to_twin);
	free(x->from_twin);
}

/* What the program wrote from the host, which the trace does not record:
 * the write's moves and times, no bytes (tmm_tensor_host_write on a
 * phantom device; tmm_tensor_write refuses one). */
static int give_bytes(struct replay *x, uint32_t i)
{
	struct tmm_tensor_rec *t = tmm_tensor_find(x->ctx, x->h[i]);
	int rc = t ? tmm_tensor_host_write(x->ctx, t, 0, NULL, t->bytes)
		   : -EBADF;

	x->written[i] = rc == 0;
	return rc;
}

/*
 * What an op run before the iteration wrote (TMM_TT_FIRST_BYTES_BY_OP):
 * an init kernel of no inputs that writes the tensor once, as the zoo's
 * driver runs (bench/models/drive.c).  Unlike a host write it places the
 * tensor on the device, evicting the least recently used tensors when
 * the device is full, so the first ones written are on the host when the
 * iteration starts, not the last: a twin writing them all from the host
 * started from the opposite device and parted from the run (BERT-base
 * at width scale 18 under stream: trained on the twin, 20 passive
 * evictions in the run).
 */
static int init_on_device(struct replay *x, uint32_t i)
{
	tmm_op init = { .name = "init", .kind = TMM_OP_OTHER,
			.outputs = &x->h[i], .n_outputs = 1,
			.cost = { .bytes = (double)x->t->tensors[i].bytes } };
	int rc = tmm_run(x->ctx, &init);

	x->written[i] = rc == 0;
	return rc;
}

/* Two keys of one tensor made before the iteration (or a key and its
 * trace index); tables of them are sorted by `from`. */
static int by_from(const void *a, const void *b)
{
	uint64_t x = ((const struct key_pair *)a)->from;
	uint64_t y = ((const struct key_pair *)b)->from;

	return x < y ? -1 : x > y;
}

/* The pair whose `from` is `key` (pairs sorted by `from`), or NULL. */
static const struct key_pair *find_pair(const struct key_pair *pairs,
					uint32_t n, uint64_t key)
{
	struct key_pair want = { key, 0 };

	return bsearch(&want, pairs, n, sizeof(*pairs), by_from);
}

/* `key` in the twin's terms (pairs: trace key to twin key, for tensors
 * made before the iteration); a made-inside tensor is keyed by its
 * ordinal in both, so it is not among the pairs and keeps its key. */
static uint64_t twin_key(const struct key_pair *pairs, uint32_t n,
			 uint64_t key)
{
	const struct key_pair *p = find_pair(pairs, n, key);

	return p ? p->to : key;
}

/*
 * Tensors made before the iteration: created and given bytes in the order
 * of their keys, which is the order the program created them in (a
 * handle counts up its slots), not the order the iteration first used
 * them: each is placed on the device as it is written, so the order is
 * the pool's layout, and passive mode's victims follow from it.  Each is
 * written as the program wrote it: by an op on the device or from the
 * host (TMM_TT_FIRST_BYTES_BY_OP).  Fills the key tables x->to_twin and
 * x->from_twin.
 */
static int make_outside(struct replay *x)
{
	const struct tmm_trace *t = x->t;
	uint32_t n = 0, made = 0;
	int rc = 0;

	x->to_twin = tmm_malloc(sizeof(*x->to_twin) * (t->n_tensors + 1));
	x->from_twin = tmm_malloc(sizeof(*x->from_twin) * (t->n_tensors + 1));
	if (!x->to_twin || !x->from_twin)
		return -ENOMEM;
	/* Trace key -> index first, sorted: the creation order. */
	for (uint32_t i = 0; i < t->n_tensors; i++)
		if (!made_inside(t, i))
			x->to_twin[n++] = (struct key_pair){ t->tensors[i].key,
							     i };
	qsort(x->to_twin, n, sizeof(*x->to_twin), by_from);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = (uint32_t)x->to_twin[j].to;

		rc = tmm_tensor_create(x->ctx, t->tensors[i].bytes,
				       (enum tmm_kind)t->tensors[i].kind,
				       "twin", &x->h[i]);
		if (rc == 0)
			rc = t->tensors[i].flags & TMM_TT_FIRST_BYTES_BY_OP
				     ? init_on_device(x, i)
				     : give_bytes(x, i);
		if (rc < 0)
			break;
		x->from_twin[made++] = (struct key_pair){ x->h[i].id, i };
		x->to_twin[j].to = x->h[i].id;
	}
	/* The tables hold the tensors made, in the same order. */
	x->n_outside = made;
	qsort(x->from_twin, made, sizeof(*x->from_twin), by_from);
	return rc;
}

/* Creates the made-inside tensors up to ordinal `upto`, in order, so each
 * gets the key it had; an ordinal the trace never saw (a tensor created
 * and not used) is a placeholder created and destroyed at once. */
static int create_upto(struct replay *x, uint32_t *next, uint32_t upto)
{
	for (; *next <= upto && *next < x->n_ordinals; (*next)++) {
		uint32_t i = x->by_ordinal[*next];
		tmm_tensor gap;
		int rc;

		if (i == UINT32_MAX) {
			rc = tmm_tensor_create(x->ctx, 1, TMM_SCRATCH, "gap",
					       &gap);
			if (rc == 0)
				rc = tmm_tensor_destroy(x->ctx, gap);
		} else {
			rc = tmm_tensor_create(
				x->ctx, x->t->tensors[i].bytes,
				(enum tmm_kind)x->t->tensors[i].kind, "twin",
				&x->h[i]);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Destroys trace tensor i in the twin, if the twin made it there. */
static int destroy(struct replay *x, uint32_t i)
{
	int rc;

	if (!made_inside(x->t, i) || !x->h[i].id)
		return 0;
	rc = tmm_tensor_destroy(x->ctx, x->h[i]);
	x->h[i] = TMM_TENSOR_NULL;
	x->written[i] = false;
	return rc;
}

/*
 * Destroys the tensors the program had destroyed before access k (k =
 * n_accesses: before the iteration ended), in the program's order: where
 * several go between two ops, the order decides which hole the next
 * allocation finds, and a tensor with dropped readers brings them back
 * on its way out.  A trace without the order (read from a file) frees
 * by free_ns, in trace order.
 */
static int free_due(struct replay *x, uint32_t k)
{
	const struct tmm_trace *t = x->t;
	uint64_t at = k < t->n_accesses ? t->accesses[k].begin_ns : UINT64_MAX;
	int rc = 0;

	if (x->freed_events) {
		for (; rc == 0 && x->next_event < t->n_events &&
		       t->events[x->next_event].access <= k;
		     x->next_event++) {
			const struct tmm_trace_event *ev =
				&t->events[x->next_event];

			if (ev->kind == TMM_EV_FREED &&
			    ev->tensor < t->n_tensors)
				rc = destroy(x, ev->tensor);
		}
		return rc;
	}
	for (uint32_t i = 0; rc == 0 && i < t->n_tensors; i++)
		if ((t->tensors[i].flags & TMM_TT_FREED_INSIDE) &&
		    t->tensors[i].free_ns <= at && x->last[i] < k)
			rc = destroy(x, i);
	return rc;
}

/* Destroys what is left of the iteration's tensors. */
static int free_rest(struct replay *x)
{
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < x->t->n_tensors; i++)
		rc = destroy(x, i);
	return rc;
}

/* The op whose accesses begin at k, cost only. */
static int replay_op(struct replay *x, uint32_t k, uint32_t *next_ordinal)
{
	const struct tmm_trace *t = x->t;
	const struct tmm_trace_access *a = &t->accesses[k];
	const struct tmm_trace_op *o = &t->ops[a->op];
	uint32_t n = o->n_inputs + o->n_outputs;
	tmm_op op = {
		.name = tmm_trace_str(t, o->name), .kind = o->kind,
		.flags = o->flags & (TMM_OP_PURE | TMM_OP_BACKWARD),
		.inputs = x->io, .n_inputs = o->n_inputs,
		.outputs = x->io + o->n_inputs, .n_outputs = o->n_outputs,
		.cost = { .flops = o->flops, .bytes = o->bytes,
			  .net_bytes = o->net_bytes },
		.slice_extent = tmm_trace_op_slices(t, k),
	};

	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = t->op_tensors[o->first + j];
		int rc = 0;

		if (made_inside(t, i))
			rc = create_upto(x, next_ordinal, ordinal_of(t, i));
		if (rc == 0 && j < o->n_inputs && !x->written[i])
			rc = give_bytes(x, i);
		if (rc < 0)
			return rc;
		x->io[j] = x->h[i];
		x->sliced[j] = 0;
	}
	/* Which tensors the op cut into rows, from its accesses. */
	for (uint32_t j = k; j < t->n_accesses && t->accesses[j].op == a->op;
	     j++)
		for (uint32_t m = 0; m < n; m++)
			if (t->op_tensors[o->first + m] ==
				    t->accesses[j].tensor &&
			    t->accesses[j].slices)
				x->sliced[m] = 1;
	if (op.slice_extent)
		op.sliced = x->sliced;
	for (uint32_t j = o->n_inputs; j < n; j++)
		x->written[t->op_tensors[o->first + j]] = true;
	return tmm_run(x->ctx, &op);
}

/* A direct access: acquire and release. */
static int replay_direct(struct replay *x, uint32_t k, uint32_t *next_ordinal)
{
	const struct tmm_trace_access *a = &x->t->accesses[k];
	enum tmm_access mode = (enum tmm_access)(a->flags &
						 (TMM_TA_READ | TMM_TA_WRITE));
	void *p;
	int rc = 0;

	if (made_inside(x->t, a->tensor))
		rc = create_upto(x, next_ordinal, ordinal_of(x->t, a->tensor));
	if (rc == 0 && !x->written[a->tensor] && !(a->flags & TMM_TA_WRITE))
		rc = give_bytes(x, a->tensor);
	x->written[a->tensor] = true;
	if (rc == 0)
		rc = tmm_acquire(x->ctx, x->h[a->tensor], mode ? mode : TMM_READ,
				 &p);
	if (rc == 0)
		rc = tmm_release(x->ctx, x->h[a->tensor]);
	return rc;
}

/* The trace tensor that the twin knows by `key`, or TMM_TRACE_NONE. */
static uint32_t tensor_of_twin_key(const struct replay *x, uint64_t key)
{
	const struct key_pair *p;

	if (key & TMM_KEY_IN_ITERATION) {
		uint64_t ordinal = key & ~TMM_KEY_IN_ITERATION;

		return ordinal < x->n_ordinals ? x->by_ordinal[ordinal]
					       : TMM_TRACE_NONE;
	}
	p = find_pair(x->from_twin, x->n_outside, key);
	return p ? (uint32_t)p->to : TMM_TRACE_NONE;
}

/* Appends the passive evictions of the iteration the twin is recording,
 * in the replayed trace's terms. */
static int list_evictions(struct replay *x, struct tmm_trial_result *r)
{
	const struct tmm_trace *tw = tmm_tracker_current(x->ctx);
	struct tmm_trial_eviction *grown;
	uint32_t n = 0;

	for (uint32_t e = 0; tw && e < tw->n_events; e++)
		n += tw->events[e].kind == TMM_EV_PASSIVE_EVICT;
	if (!n || !x->t->n_accesses)
		return 0;
	grown = tmm_realloc(r->evicted, sizeof(*grown) * (r->n_evicted + n));
	if (!grown)
		return -ENOMEM;
	r->evicted = grown;
	for (uint32_t e = 0; e < tw->n_events; e++) {
		const struct tmm_trace_event *ev = &tw->events[e];
		uint32_t i, at;

		if (ev->kind != TMM_EV_PASSIVE_EVICT ||
		    ev->tensor >= tw->n_tensors)
			continue;
		i = tensor_of_twin_key(x, tw->tensors[ev->tensor].key);
		if (i == TMM_TRACE_NONE)
			continue;
		at = ev->access < x->t->n_accesses ? ev->access
						   : x->t->n_accesses - 1;
		r->evicted[r->n_evicted++] =
			(struct tmm_trial_eviction){ i, at };
	}
	return 0;
}

static int replay_iteration(struct replay *x)
{
	const struct tmm_trace *t = x->t;
	uint32_t next_ordinal = 0;
	int rc = tmm_iteration_begin(x->ctx);

	x->next_event = 0;
	for (uint32_t k = 0; rc == 0 && k < t->n_accesses;) {
		uint32_t op = t->accesses[k].op, end = k + 1;

		rc = free_due(x, k);
		if (rc < 0)
			break;
		if (op == TMM_TRACE_NONE) {
			rc = replay_direct(x, k, &next_ordinal);
		} else {
			while (end < t->n_accesses &&
			       t->accesses[end].op == op)
				end++;
			rc = replay_op(x, k, &next_ordinal);
		}
		k = end;
	}
	if (rc == 0)
		rc = create_upto(x, &next_ordinal, x->n_ordinals);
	if (rc == 0 && x->freed_events)
		rc = free_due(x, t->n_accesses);
	if (rc == 0 && x->evictions_to)
		rc = list_evictions(x, x->evictions_to);
	if (rc == 0)
		rc = tmm_iteration_end(x->ctx);
	if (rc == 0)
		rc = free_rest(x);
	return rc;
}

/* The plan with each key replaced by the twin's key of the same tensor. */
static int plan_for_twin(const struct replay *x, const struct tmm_plan *p,
			 struct tmm_plan *out)
{
	int rc = tmm_plan_copy(out, p);

	if (rc < 0)
		return rc;
	for (uint32_t k = 0; k < out->n_accesses; k++)
		out->access_keys[k] = twin_key(x->to_twin, x->n_outside,
					       out->access_keys[k]);
	for (uint32_t a = 0; a < out->n_actions; a++)
		out->actions[a].key = twin_key(x->to_twin, x->n_outside,
					       out->actions[a].key);
	return 0;
}

int tmm_trial_run(const struct tmm_trial_device *dev,
		  const struct tmm_trace *t, const struct tmm_plan *p,
		  struct tmm_trial_result *r)
{
	struct replay x;
	struct tmm_plan twin_plan = { 0 };
	struct tmm_stats st;
	char cfg[2048];
	int iterations = dev->uvm ? TRIAL_ITERATIONS_UVM : TRIAL_ITERATIONS;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&x, 0, sizeof(x));
	st.version = TMM_STATS_VERSION;
	rc = twin_config(dev, cfg, sizeof(cfg));
	if (rc == 0)
		rc = replay_init(&x, t);
	if (rc == 0)
		rc = tmm_ctx_assemble(&x.ctx, cfg, NULL);
	if (rc == 0)
		rc = make_outside(&x);
	if (rc == 0)
		rc = plan_for_twin(&x, p, &twin_plan);
	/* The first iteration is measured in passive mode, as the real
	 * run's was: the state it leaves (what passive mode put on the
	 * host) is where the plan starts from.  The plan takes over from
	 * the second, and those are judged. */
	if (rc == 0)
		rc = replay_iteration(&x);
	if (rc == 0)
		rc = tmm_guide_install(x.ctx, &twin_plan);
	x.evictions_to = r;
	for (int i = 1; rc == 0 && i < iterations; i++)
		rc = replay_iteration(&x);
	if (x.ctx && tmm_stats_get(x.ctx, &st) == 0) {
		r->passive_evictions = st.guided_passive_evictions;
		r->divergences = st.plan_divergences;
		r->iteration_ns = st.last_iteration_ns;
		r->device_peak = st.device_peak;
		r->trained = rc == 0 && st.guided_passive_evictions == 0 &&
			     st.plan_divergences == 0 &&
			     st.guided_iterations == (uint64_t)iterations - 1;
	}
	tmm_plan_free(&twin_plan);
	if (x.ctx)
		tmm_ctx_destroy(x.ctx);
	replay_free(&x);
	return rc;
}
