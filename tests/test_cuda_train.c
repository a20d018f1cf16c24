/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_train.c — the MLP trains bit-identically on the cuda backend
 * under memory pressure, in swap and in uvm mode, with every policy, over
 * 20 orders of the CUDA test double's streams (tests/cudafake/), with no
 * race between the library's moves and the kernels.
 *
 * The kernels are the example's CPU loops run as host twins: each op
 * launches its loop on the compute stream with the bytes it reads and
 * writes (from its dimensions), so the double runs it in stream order,
 * after whatever the library queued before, and checks its bytes like
 * any copy's.  Every run is compared with the double's own unconstrained
 * run (issue #20).  Every run trains: compaction may move the running
 * op's own tensors while it places them (issue #21).  Swap mode runs over
 * an arena and over chunks mapped into a reserved range (pool=chunks, on
 * the double's driver calls, tests/cudafake/vmm.c), and falls back to the
 * arena on a device without virtual memory management.  In mode=uvm with
 * uvm_cap=library and a budget below the working set, the library
 * swaps tensors out itself (the double counts its prefetches to the host
 * and its copies out of managed memory), where uvm_cap=driver leaves the
 * pages to the driver.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_main.h"
#include "cudafake/cudafake.h"
#include "lib/core/context.h"
#include "mlp_model.h"
#include "tensormm.h"

#define SEEDS 20
#define MAX_PTRS 3

/* One launched kernel: its loop, and the pointers of the op's call. */
struct job {
	tmm_run_fn fn;
	void *in[MAX_PTRS], *out[MAX_PTRS];
	void *user;
};

static void twin(void *arg)
{
	struct job *j = arg;
	int rc = j->fn(j->in, j->out, j->user, NULL);

	ck_assert_int_eq(rc, 0);
	free(j);
}

/* Launches fn with the byte ranges r[0 .. n): n_in inputs first. */
static int launch(tmm_run_fn fn, void *const *in, unsigned n_in,
		  void *const *out, unsigned n_out, void *user, void *stream,
		  struct cudafake_range *r)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -1;
	j->fn = fn;
	j->user = user;
	for (unsigned k = 0; k < n_in; k++)
		j->in[k] = in[k];
	for (unsigned k = 0; k < n_out; k++) {
		j->out[k] = out[k];
		r[n_in + k].write = true;
	}
	return cudafake_launch(stream, twin, j, r, n_in + n_out) ==
			       cudaSuccess
		       ? 0
		       : -1;
}

#define F(n) ((size_t)(n) * sizeof(float))
/* A range the kernel reads; launch() marks the outputs' as writes. */
#define R(p, n) { (p), (n), false }

static int k_fc_forward(void *const *in, void *const *out, void *user,
			void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->b * d->i)), R(in[1], F(d->i * d->o)),
		R(in[2], F(d->o)), R(out[0], F(d->b * d->o)),
	};

	return launch(mlp_cpu_kernels()->fc_forward, in, 3, out, 1, user,
		      stream, r);
}

static int k_relu_forward(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->b * d->o)), R(out[0], F(d->b * d->o)),
	};

	return launch(mlp_cpu_kernels()->relu_forward, in, 1, out, 1, user,
		      stream, r);
}

static int k_relu_backward(void *const *in, void *const *out, void *user,
			   void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->b * d->o)), R(in[1], F(d->b * d->o)),
		R(out[0], F(d->b * d->o)),
	};

	return launch(mlp_cpu_kernels()->relu_backward, in, 2, out, 1, user,
		      stream, r);
}

static int k_softmax_xent(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->b * d->o)), R(in[1], d->b * sizeof(int32_t)),
		R(out[0], F(1)), R(out[1], F(d->b * d->o)),
	};

	return launch(mlp_cpu_kernels()->softmax_xent, in, 2, out, 2, user,
		      stream, r);
}

static int k_fc_backward(void *const *in, void *const *out, void *user,
			 void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->b * d->i)), R(in[1], F(d->i * d->o)),
		R(in[2], F(d->b * d->o)), R(out[0], F(d->i * d->o)),
		R(out[1], F(d->o)), R(out[d->has_dx ? 2 : 1], F(d->b * d->i)),
	};

	return launch(mlp_cpu_kernels()->fc_backward, in, 3, out,
		      d->has_dx ? 3 : 2, user, stream, r);
}

static int k_sgd_momentum(void *const *in, void *const *out, void *user,
			  void *stream)
{
	const struct mlp_dims *d = user;
	struct cudafake_range r[] = {
		R(in[0], F(d->o)), R(in[1], F(d->o)), R(in[2], F(d->o)),
		R(out[0], F(d->o)), R(out[1], F(d->o)),
	};

	return launch(mlp_cpu_kernels()->sgd_momentum, in, 3, out, 2, user,
		      stream, r);
}

static const struct mlp_kernels twins = {
	.fc_forward = k_fc_forward,
	.relu_forward = k_relu_forward,
	.relu_backward = k_relu_backward,
	.softmax_xent = k_softmax_xent,
	.fc_backward = k_fc_backward,
	.sgd_momentum = k_sgd_momentum,
};

struct result {
	uint8_t *weights;
	size_t len;
	uint64_t peak;
	uint64_t mapped_peak; /* pool=chunks: device bytes mapped, at most */
	uint64_t early;	      /* swap-outs retired before their copies
			       * ended (swap_engine.h) */
	struct tmm_stats st;
};

/* Trains the small MLP under `config`; 0, or its error (message in
 * why). */
static int train(const char *config, struct result *out, char *why,
		 size_t len)
{
	struct mlp_config mc;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	tmm_ctx *ctx;
	int rc;

	mlp_config_default(&mc);
	mc.batch = 32;
	mc.inputs = 64;
	mc.width = 64;
	mc.layers = 3;
	mc.classes = 10;
	mc.steps = 4;
	mc.kernels = &twins;
	if (tmm_ctx_create(&ctx, config) != 0) {
		snprintf(why, len, "%s", tmm_last_error(NULL));
		return -1;
	}
	rc = mlp_train(ctx, &mc, NULL, &out->weights, &out->len, NULL);
	if (rc != 0)
		snprintf(why, len, "%s", tmm_last_error(ctx));
	ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
	out->peak = st.device_peak;
	out->mapped_peak = st.device_mapped_peak;
	out->early = ctx->c.swap_out_early;
	out->st = st;
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	return rc;
}

static const char *const policies[] = {
	"passive",	"none",	    "vdnn-conv", "vdnn-all", "checkpoint",
	"superneurons", "capuchin", "tensile",	 "tsplit",   "auto",
};

#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

/*
 * The largest op's tensors in mode=uvm: every tensor of this small MLP
 * takes one whole 64 KiB managed page (lib/base/managed_page.h), and an
 * op has at most 6 of them (fc_backward).  A budget below it refuses the
 * op.
 */
#define UVM_LARGEST_OP (6u * 64u * 1024u)

/* Every policy of one mode at 30% of the unconstrained peak (in mode=uvm,
 * at least the largest op's pages), over the seeds: bit-identical to the
 * unconstrained run, and no race.  Every failing run is listed before the
 * test fails. */
static void every_policy(const char *mode)
{
	struct result ref = { 0 };
	char cfg[256], why[512];
	unsigned failed = 0;
	uint64_t budget, early = 0;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=swap,budget=512MiB,"
		 "policy=none,cupti=off,stats_shm=off,log=error");
	cudafake_reset(1);
	ck_assert_msg(train(cfg, &ref, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cudafake_races(), 0);
	ck_assert_uint_gt(ref.peak, 0);
	budget = ref.peak * 3 / 10;
	if (strncmp(mode, "uvm", 3) == 0 && budget < UVM_LARGEST_OP)
		budget = UVM_LARGEST_OP;
	for (size_t p = 0; p < N_POLICIES; p++) {
		for (unsigned seed = 1; seed <= SEEDS; seed++) {
			struct result r = { 0 };
			const char *bad = NULL;
			int rc;

			snprintf(cfg, sizeof(cfg),
				 "backend=cuda,mode=%s,budget=%lluB,policy=%s,"
				 "cupti=off,stats_shm=off,log=error", mode,
				 (unsigned long long)budget, policies[p]);
			cudafake_reset(seed);
			rc = train(cfg, &r, why, sizeof(why));
			if (rc != 0)
				bad = why;
			else if (cudafake_races())
				bad = cudafake_race(0);
			else if (r.len != ref.len ||
				 memcmp(r.weights, ref.weights, ref.len))
				bad = "weights differ from the unconstrained "
				      "run";
			else if (strstr(mode, "pool=chunks") &&
				 !r.mapped_peak)
				bad = "pool=chunks mapped nothing";
			else if (cudafake_vmm_mapped())
				bad = "chunks left mapped after the context";
			if (bad) {
				failed++;
				fprintf(stderr, "FAILED %s, seed %u: %s\n",
					cfg, seed, bad);
			}
			early += r.early;
			free(r.weights);
		}
	}
	free(ref.weights);
	ck_assert_msg(failed == 0, "%u of %zu runs failed (stderr lists "
		      "them)", failed, N_POLICIES * SEEDS);
	/* In swap mode over the arena, evictions whose memory was needed
	 * were retired with the compute engine waiting, not the host: the
	 * race check above covers that ordering.  Over chunks and in
	 * mode=uvm the host waits. */
	if (strcmp(mode, "swap") == 0)
		ck_assert_uint_gt(early, 0);
	else
		ck_assert_uint_eq(early, 0);
}

START_TEST(swap_mode_trains_bit_identically)
{
	every_policy("swap");
}
END_TEST

START_TEST(swap_mode_over_chunks_trains_bit_identically)
{
	every_policy("swap,pool=chunks");
}
END_TEST

/* A device without virtual memory management: pool=chunks falls back to
 * the arena, and the run is the same. */
START_TEST(chunks_fall_back_to_the_arena_without_vmm)
{
	struct result ref = { 0 }, r = { 0 };
	char why[512];
	const char *cfg = "backend=cuda,mode=swap,budget=512MiB,policy=none,"
			  "cupti=off,stats_shm=off,log=error";

	cudafake_reset(1);
	ck_assert_msg(train(cfg, &ref, why, sizeof(why)) == 0, "%s", why);
	setenv("CUDAFAKE_VMM", "0", 1);
	cudafake_reset(1);
	ck_assert_msg(train("backend=cuda,mode=swap,budget=512MiB,"
			    "policy=none,cupti=off,stats_shm=off,log=error,"
			    "pool=chunks", &r, why, sizeof(why)) == 0,
		      "%s", why);
	unsetenv("CUDAFAKE_VMM");
	ck_assert_uint_eq(r.mapped_peak, 0);
	ck_assert_uint_eq(r.len, ref.len);
	ck_assert(memcmp(r.weights, ref.weights, ref.len) == 0);
	free(ref.weights);
	free(r.weights);
}
END_TEST

START_TEST(uvm_mode_trains_bit_identically)
{
	every_policy("uvm");
}
END_TEST

/* mode=uvm evicting by pinned copy (lib/move/uvm_path.c): the copy out
 * must follow the kernel that last wrote the tensor, the discard the
 * copy, and the copy back the prefetch that makes its pages. */
START_TEST(uvm_mode_by_copy_trains_bit_identically)
{
	every_policy("uvm,uvm_swap_path=copy");
}
END_TEST

/* The same, the copies made by the library's copy kernel
 * (uvm_copier=kernel, lib/backend/cuda_copier.h), which the host does
 * not wait for: the copy stream's order alone must keep the bytes. */
START_TEST(uvm_mode_by_the_copy_kernel_trains_bit_identically)
{
	struct cudafake_moves_out before, after;

	cudafake_moves_out(&before);
	every_policy("uvm,uvm_swap_path=copy,uvm_copier=kernel");
	cudafake_moves_out(&after);
	ck_assert_uint_gt(after.kernel_copies, before.kernel_copies);
}
END_TEST

/*
 * mode=uvm at the largest op's pages, with policy passive: the plan moves
 * nothing, so every move to the host is the library's.  With
 * uvm_cap=library it swaps out (by prefetch to the host, or by copy out of
 * managed memory, as uvm_swap_path says) before its count of pages passes
 * the budget, and the results are the unconstrained run's; with
 * uvm_cap=driver nothing moves but by the driver, which the double
 * leaves alone.  Opening the backend times a prefetch each way
 * (cuda_link.c): a context that runs nothing says how many moves that
 * takes, and they are not the library's.
 */
static struct cudafake_moves_out moves_of_an_empty_context(const char *cfg)
{
	struct cudafake_moves_out before, after;
	tmm_ctx *ctx;

	cudafake_moves_out(&before);
	ck_assert_msg(tmm_ctx_create(&ctx, cfg) == 0, "%s",
		      tmm_last_error(NULL));
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
	cudafake_moves_out(&after);
	after.prefetches -= before.prefetches;
	after.copies -= before.copies;
	after.copy_bytes -= before.copy_bytes;
	return after;
}

static void library_cap(const char *path, const char *cap, unsigned seed,
			const struct result *ref)
{
	struct cudafake_moves_out before, after, opening;
	struct result r = { 0 };
	char cfg[256], why[512];
	unsigned long moves;

	snprintf(cfg, sizeof(cfg), "backend=cuda,mode=uvm,uvm_swap_path=%s,"
		 "uvm_cap=%s,budget=%uB,policy=passive,cupti=off,"
		 "stats_shm=off,log=error", path, cap, UVM_LARGEST_OP);
	cudafake_reset(seed);
	opening = moves_of_an_empty_context(cfg);
	cudafake_moves_out(&before);
	ck_assert_msg(train(cfg, &r, why, sizeof(why)) == 0, "%s: %s", cfg,
		      why);
	cudafake_moves_out(&after);
	ck_assert_msg(cudafake_races() == 0, "%s", cudafake_race(0));
	ck_assert_uint_eq(r.len, ref->len);
	ck_assert_msg(memcmp(r.weights, ref->weights, ref->len) == 0,
		      "%s, seed %u: weights differ from the unconstrained run",
		      cfg, seed);
	after.prefetches -= before.prefetches + opening.prefetches;
	after.copies -= before.copies + opening.copies;
	after.copy_bytes -= before.copy_bytes + opening.copy_bytes;
	moves = strcmp(path, "copy") == 0 ? after.copies : after.prefetches;
	/* The driver does not say which pages are on the device: the
	 * library's count of them is the device use it reports. */
	ck_assert_uint_gt(r.st.device_peak, 0);
	ck_assert_uint_eq(r.st.device_peak, r.st.uvm_held_peak);
	if (strcmp(cap, "library") == 0) {
		ck_assert_uint_gt(r.st.passive_evictions, 0);
		/* Each eviction a swap-out, or by copy a clean one (the
		 * tensor's pinned buffer held its bytes: no move). */
		ck_assert_uint_eq(r.st.swap_out_count + r.st.clean_evictions,
				  r.st.passive_evictions);
		if (strcmp(path, "copy") != 0)
			ck_assert_uint_eq(r.st.clean_evictions, 0);
		/* One move to the host per swap-out, by the way asked. */
		ck_assert_uint_ge(moves, r.st.swap_out_count);
		ck_assert_uint_le(r.st.uvm_held_peak, UVM_LARGEST_OP);
	} else {
		ck_assert_uint_eq(r.st.passive_evictions, 0);
		ck_assert_uint_eq(r.st.swap_out_count, 0);
		ck_assert_uint_eq(after.prefetches, 0);
		/* The only copies from managed memory to the host are the
		 * reads of the weights at the end, whose pages are on the
		 * device: by copy since (tmm_uvm_read). */
		ck_assert_uint_eq(after.copy_bytes, r.len);
		/* The count of pages went past the budget: only the driver
		 * could have held it. */
		ck_assert_uint_gt(r.st.uvm_held_peak, UVM_LARGEST_OP);
	}
	free(r.weights);
}

START_TEST(uvm_cap_library_swaps_out_itself)
{
	struct result ref = { 0 };
	char why[512];

	cudafake_reset(1);
	ck_assert_msg(train("backend=cuda,mode=swap,budget=512MiB,"
			    "policy=none,cupti=off,stats_shm=off,log=error",
			    &ref, why, sizeof(why)) == 0, "%s", why);
	for (unsigned seed = 1; seed <= 5; seed++) {
		library_cap("prefetch", "library", seed, &ref);
		library_cap("copy", "library", seed, &ref);
		library_cap("prefetch", "driver", seed, &ref);
		library_cap("copy", "driver", seed, &ref);
	}
	free(ref.weights);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cuda_train");

	/* Copies of managed memory queued like any, not holding the host as
	 * CUDA's do (tests/cudafake/README.md): the library's order must not
	 * rest on that, and the race detector then sees what it leaves out. */
	setenv("CUDAFAKE_MANAGED_COPY", "async", 1);
	TCase *tc = tcase_create("mlp");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swap_mode_trains_bit_identically);
	tcase_add_test(tc, swap_mode_over_chunks_trains_bit_identically);
	tcase_add_test(tc, chunks_fall_back_to_the_arena_without_vmm);
	tcase_add_test(tc, uvm_mode_trains_bit_identically);
	tcase_add_test(tc, uvm_mode_by_copy_trains_bit_identically);
	tcase_add_test(tc, uvm_mode_by_the_copy_kernel_trains_bit_identically);
	tcase_add_test(tc, uvm_cap_library_swaps_out_itself);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cuda_test_main(suite);
}
