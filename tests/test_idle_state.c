/* SPDX-License-Identifier: MIT */
/*
 * test_idle_state.c — the offload_idle tunable (hints/idle_state.c) on a
 * hand-made training step: which persistent tensors a plan swaps out
 * for the time they idle across the step boundary, and which it leaves.
 *
 * The step: two layers, each with weights W and momentum M (1 MiB each,
 * made before the iteration), forward, backward, and an update of each
 * layer right after its backward, as a data-parallel trainer does.  Ops
 * take 1 ms and a 1 MiB copy 0.1 ms, so every idle gap here holds its
 * copies many times over; the activations (4 MiB each) make the peak.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "hints/idle_state.h"
#include "lib/base/fault.h"
#include "hints/planner.h"
#include "tensormm.h"

#include "trace_builder.h"

#define MIB (1024ull * 1024)
#define OP_NS 1000000ull

/* Holds all at the peak (13 MiB) only without some state. */
#define SHORT (12 * MIB)

struct step {
	struct builder b;
	uint32_t w1, m1, w2, m2, a1, a2, g1, g2;
};

static void make_step(struct step *s)
{
	struct builder *b = &s->b;

	b_init(b);
	s->w1 = b_tensor(b, MIB, false);
	s->m1 = b_tensor(b, MIB, false);
	s->w2 = b_tensor(b, MIB, false);
	s->m2 = b_tensor(b, MIB, false);
	s->a1 = b_tensor(b, 4 * MIB, true);
	s->a2 = b_tensor(b, 4 * MIB, true);
	s->g1 = b_tensor(b, MIB, true);
	s->g2 = b_tensor(b, MIB, true);
	b_op(b, 0, OP_NS, &s->w1, 1, &s->a1, 1);
	b_op(b, 0, OP_NS, (uint32_t[]){ s->a1, s->w2 }, 2, &s->a2, 1);
	b_op(b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s->a2, s->w2 }, 2,
	     &s->g2, 1);
	b_op(b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s->w2, s->g2, s->m2 },
	     3, (uint32_t[]){ s->w2, s->m2 }, 2);
	b_op(b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s->a1, s->w1 }, 2,
	     &s->g1, 1);
	b_op(b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s->w1, s->g1, s->m1 },
	     3, (uint32_t[]){ s->w1, s->m1 }, 2);
	b_free_after_last_use(b);
}

static void plan(const struct step *s, const char *policy, uint64_t budget,
		 enum tmm_offload_idle offload, struct tmm_plan *p)
{
	struct tmm_planner_input in = input(&s->b, budget, 10);
	char err[256];

	in.offload_idle = offload;
	ck_assert_int_eq(tmm_trace_validate(&s->b.t, err, sizeof(err)), 0);
	ck_assert_msg(tmm_planner_make(policy, &in, p, err, sizeof(err)) == 0,
		      "%s: %s", policy, err);
	ck_assert_msg(tmm_plan_validate(p, &s->b.t, err, sizeof(err)) == 0,
		      "%s", err);
}

/* The plan's one action of `type` on trace tensor t. */
static const struct tmm_plan_action *only(const struct tmm_plan *p,
					  const struct step *s,
					  enum tmm_action_type type, uint32_t t)
{
	const struct tmm_plan_action *found = NULL;

	ck_assert_msg(count(p, &s->b, type, t) == 1,
		      "%u actions of type %d on tensor %u, not 1",
		      count(p, &s->b, type, t), (int)type, t);
	for (uint32_t i = 0; i < p->n_actions; i++)
		if (p->actions[i].type == type &&
		    p->actions[i].key == s->b.tensors[t].key)
			found = &p->actions[i];
	return found;
}

/* First and last access of trace tensor t. */
static void span_of(const struct step *s, uint32_t t, uint32_t *first,
		    uint32_t *last)
{
	*first = *last = TMM_TRACE_NONE;
	for (uint32_t k = 0; k < s->b.t.n_accesses; k++)
		if (s->b.accesses[k].tensor == t) {
			if (*first == TMM_TRACE_NONE)
				*first = k;
			*last = k;
		}
}

/* A momentum leaves after its update and comes back for the next one:
 * a swap-out with no back-access after its last access, and a prefetch
 * for its first, fired before it. */
static void moved_across_boundary(const struct tmm_plan *p,
				  const struct step *s, uint32_t t)
{
	const struct tmm_plan_action *out, *in;
	uint32_t first, last;

	span_of(s, t, &first, &last);
	out = only(p, s, TMM_ACT_EVICT_SWAP, t);
	in = only(p, s, TMM_ACT_PREFETCH, t);
	ck_assert_uint_eq(out->trigger, last);
	ck_assert_uint_eq(out->back_access, TMM_PLAN_NONE);
	ck_assert_uint_eq(in->back_access, first);
	ck_assert_uint_lt(in->trigger, first);
}

START_TEST(idle_momentum_leaves_between_its_updates)
{
	struct step s;
	struct tmm_plan on, off;

	make_step(&s);
	plan(&s, "none", SHORT, TMM_OFFLOAD_IDLE_ON, &on);
	plan(&s, "none", SHORT, TMM_OFFLOAD_IDLE_OFF, &off);
	moved_across_boundary(&on, &s, s.m1);
	moved_across_boundary(&on, &s, s.m2);
	/* The second layer's weights idle from their update to the next
	 * step's second op, but memory is short only at the turn of the
	 * pass (op 3), while they are in use: they stay. */
	ck_assert_uint_eq(count(&on, &s.b, TMM_ACT_EVICT_SWAP, s.w2), 0);
	/* The first layer's weights are read by the step's first op: no
	 * room for a prefetch from the step's start (TENSILE's planner
	 * would wrap one around; this one does not). */
	ck_assert_uint_eq(count(&on, &s.b, TMM_ACT_EVICT_SWAP, s.w1), 0);
	ck_assert_uint_eq(count(&on, &s.b, TMM_ACT_PREFETCH, s.w1), 0);
	/* Off, `none` is liveness alone: no state moves. */
	ck_assert_uint_eq(count(&off, &s.b, TMM_ACT_EVICT_SWAP, s.m1), 0);
	ck_assert_uint_eq(count(&off, &s.b, TMM_ACT_EVICT_SWAP, s.m2), 0);
	ck_assert_uint_eq(count(&off, &s.b, TMM_ACT_EVICT_SWAP, s.w2), 0);
	ck_assert_uint_lt(on.predicted_peak, off.predicted_peak);
	tmm_plan_free(&on);
	tmm_plan_free(&off);
}
END_TEST

/* auto (the tunable's default) leaves it to policy auto: a paper
 * planner chosen by name plans as it did. */
START_TEST(auto_leaves_the_paper_planners_as_they_were)
{
	struct step s;
	struct tmm_plan a, off;

	make_step(&s);
	plan(&s, "capuchin", SHORT, TMM_OFFLOAD_IDLE_AUTO, &a);
	plan(&s, "capuchin", SHORT, TMM_OFFLOAD_IDLE_OFF, &off);
	ck_assert_uint_eq(a.n_actions, off.n_actions);
	ck_assert(memcmp(a.actions, off.actions,
			 sizeof(*a.actions) * a.n_actions) == 0);
	ck_assert_uint_eq(count(&a, &s.b, TMM_ACT_EVICT_SWAP, s.m1), 0);
	tmm_plan_free(&a);
	tmm_plan_free(&off);
}
END_TEST

/* Where everything fits, nothing moves. */
START_TEST(no_pressure_no_offload)
{
	struct step s;
	struct tmm_plan p;

	make_step(&s);
	plan(&s, "none", 64 * MIB, TMM_OFFLOAD_IDLE_ON, &p);
	ck_assert_uint_eq(p.n_actions, 0);
	tmm_plan_free(&p);
}
END_TEST

/* A buffer made once and refilled every step (a C trainer's activation
 * buffer) holds nothing worth bringing back before its first access,
 * which overwrites it: not state, not moved. */
START_TEST(a_refilled_buffer_is_not_state)
{
	struct step s;
	struct tmm_plan p;
	uint32_t buf;

	make_step(&s);
	/* Rebuild with the buffer: written by the second op, read by the
	 * fifth, idle across the boundary like a momentum. */
	b_init(&s.b);
	s.w1 = b_tensor(&s.b, MIB, false);
	s.m1 = b_tensor(&s.b, MIB, false);
	buf = b_tensor(&s.b, 4 * MIB, false);
	s.b.tensors[buf].kind = TMM_ACTIVATION;
	s.a1 = b_tensor(&s.b, 4 * MIB, true);
	s.a2 = b_tensor(&s.b, 4 * MIB, true);
	b_op(&s.b, 0, OP_NS, &s.w1, 1, &s.a1, 1);
	b_op(&s.b, 0, OP_NS, &s.a1, 1, &buf, 1);
	b_op(&s.b, 0, OP_NS, &buf, 1, &s.a2, 1);
	b_op(&s.b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s.a2, buf }, 2,
	     NULL, 0);
	b_op(&s.b, TMM_OP_BACKWARD, OP_NS, (uint32_t[]){ s.a1, s.w1, s.m1 },
	     3, (uint32_t[]){ s.w1, s.m1 }, 2);
	b_free_after_last_use(&s.b);
	plan(&s, "none", 10 * MIB, TMM_OFFLOAD_IDLE_ON, &p);
	ck_assert_uint_eq(count(&p, &s.b, TMM_ACT_PREFETCH, buf), 0);
	ck_assert_uint_eq(count(&p, &s.b, TMM_ACT_EVICT_SWAP, buf), 0);
	moved_across_boundary(&p, &s, s.m1);
	tmm_plan_free(&p);
}
END_TEST

/* Every planner that takes the tunable makes a valid plan with it (plan()
 * validates), and tensile and stream, which plan state their own way,
 * make the same plan with it on as off. */
START_TEST(every_planner_takes_it)
{
	static const char *const takes[] = { "none", "vdnn-conv", "vdnn-all",
					     "checkpoint", "superneurons",
					     "capuchin", "tsplit" };
	static const char *const own[] = { "tensile", "stream" };
	struct step s;

	make_step(&s);
	for (size_t i = 0; i < sizeof(takes) / sizeof(takes[0]); i++) {
		struct tmm_plan p;

		plan(&s, takes[i], SHORT, TMM_OFFLOAD_IDLE_ON, &p);
		ck_assert_msg(count(&p, &s.b, TMM_ACT_PREFETCH, s.m1) == 1,
			      "%s: no prefetch of the idle momentum",
			      takes[i]);
		tmm_plan_free(&p);
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		struct tmm_plan on, off;

		plan(&s, own[i], SHORT, TMM_OFFLOAD_IDLE_ON, &on);
		plan(&s, own[i], SHORT, TMM_OFFLOAD_IDLE_OFF, &off);
		ck_assert_uint_eq(on.n_actions, off.n_actions);
		ck_assert(memcmp(on.actions, off.actions,
				 sizeof(*on.actions) * on.n_actions) == 0);
		tmm_plan_free(&on);
		tmm_plan_free(&off);
	}
}
END_TEST

/* tmm_idle_state_any says whether any state would move: yes where
 * memory is short while the momentum idles, no where all fits.  (Policy
 * auto makes no variant then.) */
START_TEST(any_says_whether_state_would_move)
{
	struct step s;
	struct tmm_planner_input short_in, roomy_in;
	struct tmm_analysis an;

	make_step(&s);
	short_in = input(&s.b, SHORT, 10);
	roomy_in = input(&s.b, 64 * MIB, 10);
	ck_assert_int_eq(tmm_analysis_init(&an, &short_in), 0);
	ck_assert(tmm_idle_state_any(&an));
	tmm_analysis_free(&an);
	ck_assert_int_eq(tmm_analysis_init(&an, &roomy_in), 0);
	ck_assert(!tmm_idle_state_any(&an));
	tmm_analysis_free(&an);
}
END_TEST

/* Policy auto with offload_idle=off makes no variant. */
START_TEST(auto_off_makes_no_variant)
{
	struct step s;
	struct tmm_plan p;

	make_step(&s);
	plan(&s, "auto", SHORT, TMM_OFFLOAD_IDLE_OFF, &p);
	ck_assert_msg(strstr(p.policy, "+idle") == NULL, "%s", p.policy);
	tmm_plan_free(&p);
}
END_TEST

/* Out of host memory while adding the state's swaps (or anywhere in a
 * planner that takes them): -ENOMEM and a message, nothing leaked
 * (the sanitizers' pass of make check), whatever *out held before. */
START_TEST(out_of_memory_with_offload_on)
{
	static const char *const takes[] = { "none", "capuchin", "tsplit",
					     "auto" };
	struct step s;
	char err[256], spec[32];

	make_step(&s);
	for (size_t i = 0; i < sizeof(takes) / sizeof(takes[0]); i++)
		for (unsigned k = 1; k <= 24; k++) {
			struct tmm_planner_input in = input(&s.b, SHORT, 10);
			struct tmm_plan p;
			int rc;

			in.offload_idle = strcmp(takes[i], "auto")
						  ? TMM_OFFLOAD_IDLE_ON
						  : TMM_OFFLOAD_IDLE_AUTO;
			memset(&p, 0xA5, sizeof(p));
			snprintf(spec, sizeof(spec), "host_alloc@%u", k);
			ck_assert_int_eq(tmm_fault_set(spec), 0);
			rc = tmm_planner_make(takes[i], &in, &p, err,
					      sizeof(err));
			ck_assert_int_eq(tmm_fault_set(""), 0);
			ck_assert_msg(rc == 0 || rc == -ENOMEM, "%s, %s: %d",
				      takes[i], spec, rc);
			if (rc == 0)
				tmm_plan_free(&p);
			else
				ck_assert_ptr_nonnull(
					strstr(err, "out of memory"));
		}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("idle_state");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, idle_momentum_leaves_between_its_updates);
	tcase_add_test(tc, auto_leaves_the_paper_planners_as_they_were);
	tcase_add_test(tc, no_pressure_no_offload);
	tcase_add_test(tc, a_refilled_buffer_is_not_state);
	tcase_add_test(tc, every_planner_takes_it);
	tcase_add_test(tc, auto_off_makes_no_variant);
	tcase_add_test(tc, any_says_whether_state_would_move);
	tcase_add_test(tc, out_of_memory_with_offload_on);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite);
}
