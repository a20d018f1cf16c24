/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu_train.c — training under a memory budget on a real GPU, every
 * policy in both modes, against the unconstrained run (issue #19).
 *
 * The model is examples/mlp_gpu's (mlp_model.c, with the cuBLAS and
 * kernel ops of mlp_gpu_train.c), in two shapes:
 *
 *   compute   width 4096, 12 layers, batch 2048 (compute-bound)
 *   transfer  width 1024, 24 layers, batch 8192 (transfer-bound)
 *
 * For each shape it trains once unconstrained (mode=swap, policy=none, a
 * budget of 90% of the free device memory; it must not swap), which gives
 * the reference losses and weights, the peak device bytes and the
 * compute time of a step, then every chosen policy in every chosen mode
 * at every chosen fraction of that peak, and prints one markdown row per
 * run as it ends (the columns are described in the table's header).  At
 * the start it measures the pinned copy bandwidth each way, which gives
 * each run's lower bound.  Progress goes to stderr, the tables to stdout
 * and, with --append FILE, to the end of FILE as well, so that runs of
 * one shape or one mode each (every run under 10 minutes) make one
 * report.  With --goals it makes only the runs issue #19's goals are
 * judged by (gpu_train_cells), and ends with a table of those goals, each
 * beside the figure that meets or misses it (gpu_goals.h): the first call
 * of a short GPU loan.  With --deadline S no run starts S seconds after
 * the program did: the rows not made say so, and the tables and the goals
 * are printed all the same, so that a time limit around the program (a
 * loan's) loses none of what ran.
 *
 *   bench/bench_gpu_train [--shape compute|transfer|all|WxLxB]
 *       [--modes swap,uvm,uvm-copy,uvm-prefetch,uvm-copy-nokeep,uvm-mix,
 *                uvm-kernel,uvm-kernel-4,uvm-kernel-64]
 *       [--policies all|P,P,...] [--budgets 0.4,0.3]
 *       [--steps N] [--warmup N] [--append FILE] [--commit TEXT]
 *       [--goals] [--deadline S]
 *
 * The commit printed is --commit's, else $TMM_BENCH_COMMIT's (the
 * bundle of scripts/gpu-check --prepare sets it), else "unknown".
 * Exit status: 0 when every run ran and was bit-identical to the
 * unconstrained one (and in mode=swap kept its peak under the budget),
 * 1 otherwise, 2 for a wrong option, 77 when there is no GPU.  A goal
 * missed is a measurement, not a failure: it changes no exit status.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "gpu_goals.h"
#include "gpu_train_options.h"
#include "mlp_gpu_train.h"
#include "mlp_model.h"
#include "tensormm.h"

#define MIB (1024.0 * 1024.0)
#define BW_BYTES (256u << 20) /* each bandwidth measurement */
#define BW_ROUNDS 3
/* Left free beside a uvm run's managed memory: cuBLAS, the driver. */
#define UVM_MARGIN (256ull << 20)

/* One training run. */
struct run {
	unsigned steps, warmup;
	float *losses;
	uint8_t *weights;
	size_t len;
	uint64_t step_ns[MAX_STEPS];	/* last_iteration_ns after each step */
	struct tmm_stats warm, end;	/* after step `warmup`, and the last */
	char err[256];			/* why it failed, when it did */
};

static FILE *report; /* --append's file, or NULL */

/* Prints to stdout and to the report, and flushes both: a run that is
 * cut short keeps the rows it finished. */
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (report) {
		va_start(ap, fmt);
		vfprintf(report, fmt, ap);
		va_end(ap);
		fflush(report);
	}
}

#define cuda_failed(e, call) bench_cuda_check("bench_gpu_train", e, call)

/* ---- the copy bandwidth ------------------------------------------------ */

/*
 * GB/s (1e9 bytes) of the best of BW_ROUNDS pinned cudaMemcpyAsync of
 * BW_BYTES each way, timed by events on the copy's stream.
 */
static int measure_bandwidth(double *h2d, double *d2h)
{
	void *dev = NULL, *host = NULL;
	cudaStream_t s = NULL;
	cudaEvent_t a = NULL, b = NULL;
	int rc = -1;

	*h2d = *d2h = 0;
	if (cuda_failed(cudaMalloc(&dev, BW_BYTES), "cudaMalloc") ||
	    cuda_failed(cudaMallocHost(&host, BW_BYTES), "cudaMallocHost") ||
	    cuda_failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
			"cudaStreamCreateWithFlags") ||
	    cuda_failed(cudaEventCreate(&a), "cudaEventCreate") ||
	    cuda_failed(cudaEventCreate(&b), "cudaEventCreate"))
		goto out;
	memset(host, 1, BW_BYTES);
	for (int dir = 0; dir < 2; dir++) {
		for (int r = 0; r < BW_ROUNDS; r++) {
			float ms = 0;
			double gbps;
			cudaError_t e;

			e = cudaEventRecord(a, s);
			if (e == cudaSuccess)
				e = dir == 0 ? cudaMemcpyAsync(
						       dev, host, BW_BYTES,
						       cudaMemcpyHostToDevice, s)
					     : cudaMemcpyAsync(
						       host, dev, BW_BYTES,
						       cudaMemcpyDeviceToHost, s);
			if (e == cudaSuccess)
				e = cudaEventRecord(b, s);
			if (e == cudaSuccess)
				e = cudaEventSynchronize(b);
			if (e == cudaSuccess)
				e = cudaEventElapsedTime(&ms, a, b);
			if (cuda_failed(e, "a timed cudaMemcpyAsync"))
				goto out;
			gbps = ms > 0 ? BW_BYTES / (ms * 1e6) : 0;
			if (dir == 0 && gbps > *h2d)
				*h2d = gbps;
			if (dir == 1 && gbps > *d2h)
				*d2h = gbps;
		}
	}
	rc = *h2d > 0 && *d2h > 0 ? 0 : -1;
out:
	if (b)
		cudaEventDestroy(b);
	if (a)
		cudaEventDestroy(a);
	if (s)
		cudaStreamDestroy(s);
	cudaFreeHost(host);
	cudaFree(dev);
	return rc;
}

/* ---- one run ----------------------------------------------------------- */

static int after_step(tmm_ctx *ctx, unsigned step, void *arg)
{
	struct run *r = arg;
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	int rc = tmm_stats_get(ctx, &st);

	if (rc)
		return rc;
	if (step >= 1 && step <= r->steps)
		r->step_ns[step - 1] = st.last_iteration_ns;
	if (step == r->warmup)
		r->warm = st;
	r->end = st;
	return 0;
}

static void run_free(struct run *r)
{
	free(r->losses);
	free(r->weights);
	r->losses = NULL;
	r->weights = NULL;
}

/* Trains sh in a fresh context made from config; 0 or the error, whose
 * message is in r->err. */
static int train(const struct shape *sh, const char *config, struct run *r)
{
	struct mlp_config mc;
	tmm_ctx *ctx;
	int rc;

	r->err[0] = 0;
	rc = tmm_ctx_create(&ctx, config);
	if (rc) {
		snprintf(r->err, sizeof(r->err), "no context: %s",
			 tmm_last_error(NULL));
		return rc;
	}
	mlp_config_default(&mc);
	mc.width = sh->width;
	mc.layers = sh->layers;
	mc.batch = sh->batch;
	mc.steps = r->steps;
	mc.kernels = mlp_gpu_ops();
	mc.after_step = after_step;
	mc.after_step_arg = r;
	r->losses = calloc(r->steps, sizeof(float));
	rc = r->losses ? mlp_train(ctx, &mc, r->losses, &r->weights, &r->len,
				   NULL)
		       : -ENOMEM;
	if (rc)
		snprintf(r->err, sizeof(r->err), "%s (%s)",
			 tmm_last_error(ctx), tmm_strerror(rc));
	tmm_ctx_destroy(ctx);
	/* ~40 contexts in a row: CUDA may give the next one this
	 * context's stream address, which cuBLAS must be set to anew. */
	mlp_gpu_blas_forget_stream();
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median of the steps after the warm-up, in ms. */
static double median_ms(const struct run *r)
{
	unsigned n = r->steps - r->warmup;
	uint64_t v[MAX_STEPS];

	memcpy(v, r->step_ns + r->warmup, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u64);
	return (n % 2 ? (double)v[n / 2]
		      : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2) /
	       1e6;
}

/* A counter's growth per steady step. */
#define PER_STEP(r, field) \
	((double)((r)->end.field - (r)->warm.field) / \
	 ((r)->steps - (r)->warmup))

/* Bytes moved to the host and to the device per steady step: the
 * runtime's moves and the driver's own (uvm: faults in, evictions out). */
static double out_bytes(const struct run *r)
{
	return PER_STEP(r, swap_out_bytes) + PER_STEP(r, uvm_eviction_bytes);
}

static double in_bytes(const struct run *r)
{
	return PER_STEP(r, swap_in_bytes) + PER_STEP(r, uvm_fault_bytes);
}


/*
 * Which final weights differ, into buf: how many of the model's tensors,
 * and the first (in mlp_model.c's order, W then b of each layer from the
 * input's) with how many of its floats.  A run on a real GPU cannot be
 * repeated at will, so the one that goes wrong says where.
 */
static void weights_differ(const struct run *ref, const struct run *r,
			   const struct shape *sh, char *buf, size_t len)
{
	struct mlp_config mc;
	const float *a = (const float *)ref->weights;
	const float *b = (const float *)r->weights;
	size_t at = 0, first_n = 0, first_diff = 0;
	unsigned tensors = 0;
	char first[16] = "";

	mlp_config_default(&mc);
	for (unsigned l = 0; l <= sh->layers; l++) {
		size_t in = l == 0 ? mc.inputs : sh->width;
		size_t out = l == sh->layers ? mc.classes : sh->width;
		size_t n[2] = { in * out, out };

		for (unsigned k = 0; k < 2; k++) {
			size_t diff = 0;

			for (size_t i = 0; i < n[k] &&
					   (at + i + 1) * sizeof(float) <= r->len;
			     i++)
				diff += memcmp(&a[at + i], &b[at + i],
					       sizeof(float)) != 0;
			if (diff && !tensors++) {
				snprintf(first, sizeof(first), "%s%u",
					 k ? "b" : "W", l);
				first_n = n[k];
				first_diff = diff;
			}
			at += n[k];
		}
	}
	if (!tensors || at * sizeof(float) != r->len) {
		snprintf(buf, len, "NO: final weights");
		return;
	}
	snprintf(buf, len, "NO: final weights (%u tensors; %s: %zu of %zu "
		 "floats)", tensors, first, first_diff, first_n);
}

/* Writes "yes" into buf, or what differs from the reference; returns
 * whether they are bit-identical. */
static bool compare(const struct run *ref, const struct run *r,
		    const struct shape *sh, char *buf, size_t len)
{
	for (unsigned s = 0; s < r->steps; s++)
		if (memcmp(&ref->losses[s], &r->losses[s], sizeof(float))) {
			snprintf(buf, len, "NO: loss of step %u", s + 1);
			return false;
		}
	if (ref->len != r->len || memcmp(ref->weights, r->weights, r->len)) {
		weights_differ(ref, r, sh, buf, len);
		return false;
	}
	snprintf(buf, len, "yes");
	return true;
}

/* ---- one shape's table ------------------------------------------------- */

struct bench {
	const struct options *o;
	double h2d, d2h;	/* GB/s */
	char device[512];	/* name, memory, versions */
	char date[32];
	time_t started;
	int failed;		/* runs that failed or differed */
	int not_run;		/* runs not started: past --deadline */
	struct goal_book goals; /* every budgeted run, for --goals */
};

static void print_header(const struct bench *b, const struct shape *sh)
{
	const struct options *o = b->o;

	out("\n### %s: width %u, %u layers, batch %u\n\n", sh->name,
	    sh->width, sh->layers, sh->batch);
	out("Device %s; %s; commit %s; pinned copy host to device %.1f GB/s, "
	    "device to host %.1f GB/s (cudaMemcpyAsync of %u MiB from "
	    "cudaMallocHost memory, best of %d, timed by events).\n\n",
	    b->device, b->date, o->commit, b->h2d, b->d2h, BW_BYTES >> 20,
	    BW_ROUNDS);
	out("%u steps a run; each figure is per steady step, over steps "
	    "%u to %u:\n\n", o->steps, o->warmup + 1, o->steps);
	out("- *step ms*: median of tmm_stats.last_iteration_ns read after "
	    "each step (wall time of the iteration, the loss read "
	    "included); *x*: over the unconstrained run's.\n");
	out("- *stall ms*: growth of tmm_stats.stall_ns (compute waiting for "
	    "copies, as the host waits); *late*: of prefetch_late; *late "
	    "ms*: of prefetch_wait_ns (compute waiting for late prefetches, "
	    "measured on the device, which stall ms misses where the host "
	    "runs ahead).\n");
	out("- *skipped*: growth of plan_actions_skipped (the plan's actions "
	    "that did not apply, as a swap-out of a tensor the host still "
	    "saw arriving did before b71123d); *passive*: of "
	    "guided_passive_evictions (evictions passive mode made while "
	    "following the plan).\n");
	out("- *out MB*, *in MB* (1e6 bytes): growth of swap_out_bytes + "
	    "uvm_eviction_bytes, and of swap_in_bytes + uvm_fault_bytes "
	    "(the runtime's moves, and the driver's own in mode=uvm); "
	    "*driver* is the uvm_* part alone (in: faults + prefetches, "
	    "out: evictions) and the time the driver spent servicing page "
	    "faults (uvm_fault_ns), *not counted* where the backend could "
	    "not report them (uvm_driver_counted: on CUDA, CUPTI's "
	    "unified-memory counters), — in swap mode; "
	    "*clean MB*: growth of clean_eviction_bytes, evictions that "
	    "copied nothing (the host held the bytes), not in *out*.\n");
	out("- *peak MiB*: tmm_stats.device_peak at the end (in mode=uvm "
	    "what the runtime reports of managed pages on the device).\n");
	out("- *bound ms*: max(unconstrained step, out / device-to-host "
	    "bandwidth, in / host-to-device bandwidth), where in mode=uvm "
	    "the bytes that left by prefetch to the host (uvm_prefetch_"
	    "out_bytes) or by the driver's evictions count at the library's "
	    "prefetch-to-host rate (uvm_prefetch_d2h_mbps, measured at "
	    "open); *bound x* over the unconstrained step.\n");
	out("- *bit-identical*: the losses of every step and the final "
	    "weights against the unconstrained run's.\n\n");
	out("| policy | mode | budget | step ms | x | stall ms | late "
	    "| late ms | skipped | passive | out MB | in MB "
	    "| driver in/out MB, faults ms | clean MB | peak MiB | bound ms "
	    "| bound x "
	    "| bit-identical |\n");
	out("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
	    "|---:|---:|---:|---:|---|\n");
}

/*
 * The least time a steady step's moves to the host take, in ms: the
 * runtime's copies at the pinned rate measured at start, and what left
 * by prefetch (mode=uvm's prefetch way) or by the driver's own evictions
 * at the prefetch-to-host rate the library measured at open (on the H100
 * of docs/gpu-h100.md, 8.7 GB/s against a copy's 55).
 */
static double out_ms_at_least(const struct bench *b, const struct run *r)
{
	double by_prefetch = PER_STEP(r, uvm_prefetch_out_bytes) +
			     PER_STEP(r, uvm_eviction_bytes);
	double by_copy = out_bytes(r) - by_prefetch;
	double pf_rate = r->end.uvm_prefetch_d2h_mbps > 0
				 ? r->end.uvm_prefetch_d2h_mbps / 1e3
				 : b->d2h;

	return by_copy / (b->d2h * 1e6) + by_prefetch / (pf_rate * 1e6);
}

static void print_row(const struct bench *b, const char *policy,
		      const char *mode, const char *budget,
		      const struct run *r, double compute_ms,
		      const char *verdict)
{
	double ms = median_ms(r), o_b = out_bytes(r), i_b = in_bytes(r);
	double bound = compute_ms;
	double t_out = out_ms_at_least(b, r), t_in = i_b / (b->h2d * 1e6);
	char driver[64];

	if (strcmp(r->end.mode, "uvm") != 0)
		snprintf(driver, sizeof(driver), "—");
	else if (!r->end.uvm_driver_counted)
		snprintf(driver, sizeof(driver), "not counted");
	else
		snprintf(driver, sizeof(driver), "%.1f/%.1f, %.2f",
			 (PER_STEP(r, uvm_fault_bytes) +
			  PER_STEP(r, uvm_prefetch_bytes)) / 1e6,
			 PER_STEP(r, uvm_eviction_bytes) / 1e6,
			 PER_STEP(r, uvm_fault_ns) / 1e6);
	if (t_out > bound)
		bound = t_out;
	if (t_in > bound)
		bound = t_in;
	out("| %s | %s | %s | %.1f | %.2f | %.1f | %.1f | %.2f | %.1f "
	    "| %.1f | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %.2f "
	    "| %s |\n",
	    policy, mode, budget, ms, ms / compute_ms,
	    PER_STEP(r, stall_ns) / 1e6, PER_STEP(r, prefetch_late),
	    PER_STEP(r, prefetch_wait_ns) / 1e6,
	    PER_STEP(r, plan_actions_skipped),
	    PER_STEP(r, guided_passive_evictions),
	    o_b / 1e6, i_b / 1e6, driver,
	    PER_STEP(r, clean_eviction_bytes) / 1e6,
	    r->end.device_peak / MIB, bound, bound / compute_ms, verdict);
}

static void print_failed(const char *policy, const char *mode,
			 const char *budget, const char *why)
{
	out("| %s | %s | %s | — | — | — | — | — | — | — | — | — | — | — | — "
	    "| — | — | %s |\n",
	    policy, mode, budget, why);
}

/* Whether --deadline has passed: no run starts then. */
static bool past_deadline(const struct bench *b)
{
	return b->o->has_deadline &&
	       difftime(time(NULL), b->started) >= (double)b->o->deadline_s;
}

/* Runs one shape's table; 0, or -1 when it could not go on. */
static int bench_shape(struct bench *b, const struct shape *sh)
{
	const struct options *o = b->o;
	struct run *ref = calloc(1, sizeof(*ref)), *r = calloc(1, sizeof(*r));
	char config[192], budget_text[64], why[300], verdict[192];
	struct cell cells[MAX_CELLS];
	unsigned n_cells;
	double compute_ms;
	int rc = -1;

	if (!ref || !r) {
		fprintf(stderr, "bench_gpu_train: out of memory\n");
		goto done;
	}
	goal_book_expect(&b->goals, sh->name);
	print_header(b, sh);
	if (past_deadline(b)) {
		print_failed("unconstrained", "swap", "90%",
			     "not run: past --deadline");
		b->not_run++;
		rc = 0;
		goto done;
	}
	fprintf(stderr, "bench_gpu_train: %s: unconstrained run\n", sh->name);
	ref->steps = o->steps;
	ref->warmup = o->warmup;
	if (train(sh, "backend=cuda,mode=swap,policy=none,budget=90%", ref)) {
		snprintf(why, sizeof(why), "error: %s", ref->err);
		print_failed("unconstrained", "swap", "90%", why);
		b->failed++;
		goto done;
	}
	compute_ms = median_ms(ref);
	print_row(b, "unconstrained", "swap", "90% of free", ref, compute_ms,
		  "(reference)");
	if (ref->end.swap_out_count || ref->end.drops ||
	    ref->end.passive_evictions) {
		out("\nThe unconstrained run moved or dropped tensors: the "
		    "model needs more than 90%% of the free device memory; "
		    "no budgeted run of this shape.\n");
		b->failed++;
		goto done;
	}
	n_cells = gpu_train_cells(o, sh, cells);
	for (unsigned c = 0; c < n_cells; c++) {
		const struct run_mode *mode = cells[c].mode;
		const char *policy = cells[c].policy;
		unsigned long long budget = (unsigned long long)(
			(double)ref->end.device_peak * cells[c].budget);
		struct goal_run noted = { sh->name, mode->name, policy,
					  cells[c].budget, 0, 0, false };
		bool same;

		snprintf(budget_text, sizeof(budget_text), "%.0f%% (%.1f MiB)",
			 100 * cells[c].budget, budget / MIB);
		if (past_deadline(b)) {
			print_failed(policy, mode->name, budget_text,
				     "not run: past --deadline");
			b->not_run++;
			continue;
		}
		if (mode->uvm) {
			size_t free_b = 0, total_b = 0;

			if (cuda_failed(cudaMemGetInfo(&free_b, &total_b),
					"cudaMemGetInfo"))
				goto done;
			/* Never more managed memory than the card has
			 * free. */
			if (ref->end.device_peak + UVM_MARGIN > free_b) {
				snprintf(why, sizeof(why),
					 "skipped: needs %.0f MiB managed, "
					 "%.0f MiB free",
					 (ref->end.device_peak + UVM_MARGIN) /
						 MIB,
					 free_b / MIB);
				/* Not noted for the goals: not run. */
				print_failed(policy, mode->name, budget_text,
					     why);
				continue;
			}
		}
		fprintf(stderr, "bench_gpu_train: %s: %s, %s, %s (%.0f s in)\n",
			sh->name, policy, mode->name, budget_text,
			difftime(time(NULL), b->started));
		snprintf(config, sizeof(config),
			 "backend=cuda,%s,policy=%s,budget=%lluB",
			 mode->config, policy, budget);
		memset(r, 0, sizeof(*r));
		r->steps = o->steps;
		r->warmup = o->warmup;
		if (train(sh, config, r)) {
			snprintf(why, sizeof(why), "error: %s", r->err);
			print_failed(policy, mode->name, budget_text, why);
			goal_book_add(&b->goals, &noted);
			b->failed++;
			run_free(r);
			continue;
		}
		same = compare(ref, r, sh, verdict, sizeof(verdict));
		if (!same)
			b->failed++;
		if (!mode->uvm && r->end.device_peak > budget) {
			snprintf(verdict + strlen(verdict),
				 sizeof(verdict) - strlen(verdict),
				 "; peak above the budget");
			b->failed++;
			same = false;
		}
		/* A row by the copy kernel says how much it copied, so that
		 * one whose kernel could not be had (the context's warning
		 * says why) is not read as the kernel's. */
		if (strstr(mode->config, "uvm_copier=kernel")) {
			double kernel_mb = PER_STEP(r, uvm_kernel_copy_bytes) /
					   1e6;

			if (kernel_mb > 0)
				snprintf(verdict + strlen(verdict),
					 sizeof(verdict) - strlen(verdict),
					 "; copy kernel %.1f MB at %.1f GB/s "
					 "in, %.1f out, %llu blocks (measured "
					 "at open)",
					 kernel_mb,
					 r->end.uvm_kernel_copy_h2d_mbps / 1e3,
					 r->end.uvm_kernel_copy_d2h_mbps / 1e3,
					 (unsigned long long)r->end
						 .uvm_kernel_copy_blocks);
			else
				snprintf(verdict + strlen(verdict),
					 sizeof(verdict) - strlen(verdict),
					 "; no copy by the kernel");
			if (!(kernel_mb > 0) &&
			    out_bytes(r) + in_bytes(r) > 0) {
				b->failed++;
				same = false;
			}
		}
		print_row(b, policy, mode->name, budget_text, r, compute_ms,
			  verdict);
		noted.ms = median_ms(r);
		noted.x = noted.ms / compute_ms;
		noted.ok = same;
		goal_book_add(&b->goals, &noted);
		run_free(r);
	}
	rc = 0;
done:
	if (ref)
		run_free(ref);
	free(ref);
	free(r);
	return rc;
}

/* ---- main -------------------------------------------------------------- */

/* Name, memory and versions of the device the contexts use. */
static void describe_device(char *buf, size_t len)
{
	struct cudaDeviceProp p;
	int dev = 0, drv = 0, rt = 0;
	size_t free_b = 0, total_b = 0;

	memset(&p, 0, sizeof(p));
	cudaGetDevice(&dev);
	if (cudaGetDeviceProperties(&p, dev) != cudaSuccess)
		snprintf(p.name, sizeof(p.name), "device %d", dev);
	cudaMemGetInfo(&free_b, &total_b);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	snprintf(buf, len,
		 "%s (%.1f GiB, %.1f GiB free at the start; driver API "
		 "%d.%d, runtime %d.%d)",
		 p.name, total_b / (MIB * 1024), free_b / (MIB * 1024),
		 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

int main(int argc, char **argv)
{
	struct options o;
	time_t now = time(NULL);
	struct bench b = { .o = &o, .started = now };
	unsigned most_rows = 1;
	int n = 0, status;

	memset(&o, 0, sizeof(o));
	status = gpu_train_parse_args(&o, argc, argv);
	if (status)
		return status == 1 ? 0 : status;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
		(void)cudaGetLastError();
		printf("bench_gpu_train: no CUDA device; skipped\n");
		return 77;
	}
	if (o.append) {
		report = fopen(o.append, "a");
		if (!report) {
			fprintf(stderr, "bench_gpu_train: %s: %s\n", o.append,
				strerror(errno));
			return 1;
		}
	}
	strftime(b.date, sizeof(b.date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	describe_device(b.device, sizeof(b.device));
	if (measure_bandwidth(&b.h2d, &b.d2h))
		return 1;
	fprintf(stderr, "bench_gpu_train: pinned copies: host to device "
		"%.1f GB/s, device to host %.1f GB/s\n", b.h2d, b.d2h);
	for (unsigned s = 0; s < o.n_shapes; s++)
		if (o.shapes[s].batch > most_rows)
			most_rows = o.shapes[s].batch;
	if (mlp_gpu_blas_open(most_rows))
		return 1;
	for (unsigned s = 0; s < o.n_shapes; s++)
		if (bench_shape(&b, &o.shapes[s]))
			break;
	mlp_gpu_blas_close();
	if (o.goals)
		goal_book_print(&b.goals,
				"Issue #19's goals, from the runs above", out);
	goal_book_free(&b.goals);
	if (b.not_run)
		out("\n%d run(s) not made: past --deadline (%u s).\n",
		    b.not_run, o.deadline_s);
	if (b.failed)
		out("\n%d run(s) failed, differed from the unconstrained run "
		    "or went above the budget.\n", b.failed);
	if (report)
		fclose(report);
	return b.failed ? 1 : 0;
}
