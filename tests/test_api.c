/* SPDX-License-Identifier: MIT */
/*
 * test_api.c — the public API's contract: handles, errors, messages.
 *
 * Null, destroyed and foreign handles must be refused with -EBADF and a
 * message, never crash; every bad argument must give a negative errno and
 * a message that says what was wrong.  Statistics are test_api_stats.c's.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "config.h"
#include "tensormm.h"

static tmm_ctx *ctx;

static void setup(void)
{
	ck_assert_int_eq(tmm_ctx_create(&ctx, "backend=sim,mode=swap,"
					      "budget=1MiB"), 0);
}

static void teardown(void)
{
	ck_assert_int_eq(tmm_ctx_destroy(ctx), 0);
}

static int copy_in0(void *const *in, void *const *out, void *user,
		    void *stream)
{
	(void)user;
	(void)stream;
	memcpy(out[0], in[0], 64);
	return 0;
}

static int fail_einval(void *const *in, void *const *out, void *user,
		       void *stream)
{
	(void)in;
	(void)out;
	(void)user;
	(void)stream;
	return -EINVAL;
}

#define contains(hay, needle) ck_assert_ptr_nonnull(strstr((hay), (needle)))

START_TEST(bad_handles_are_refused)
{
	tmm_ctx *other;
	tmm_tensor t, foreign, dead;
	char buf[64];

	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "t", &t),
			 0);
	/* null */
	ck_assert_int_eq(tmm_tensor_read(ctx, TMM_TENSOR_NULL, 0, buf, 1),
			 -EBADF);
	contains(tmm_last_error(ctx), "null tensor handle");
	/* destroyed; its slot reused by a new tensor with a new generation */
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "d",
					   &dead), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, dead), 0);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, dead), -EBADF);
	contains(tmm_last_error(ctx), "destroyed");
	{
		tmm_tensor reuse;

		ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION,
						   "r", &reuse), 0);
		ck_assert(reuse.id != dead.id);
		ck_assert_int_eq(tmm_tensor_write(ctx, dead, 0, buf, 1),
				 -EBADF);
		ck_assert_int_eq(tmm_tensor_write(ctx, reuse, 0, buf, 1), 0);
	}
	/* foreign */
	ck_assert_int_eq(tmm_ctx_create(&other, "backend=sim,mode=swap,"
						"budget=1MiB"), 0);
	ck_assert_int_eq(tmm_tensor_create(other, 64, TMM_ACTIVATION, "f",
					   &foreign), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, foreign, 0, buf, 1), -EBADF);
	contains(tmm_last_error(ctx), "another context");
	ck_assert_int_eq(tmm_ctx_destroy(other), 0);
	/* garbage bits */
	ck_assert_int_eq(tmm_tensor_destroy(ctx, (tmm_tensor){ ~0ull }),
			 -EBADF);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, (tmm_tensor){ 12345 }), 0);
	ck_assert_uint_eq(tmm_tensor_bytes(ctx, t), 64);
	/* a handle in an op */
	{
		tmm_tensor in[1] = { TMM_TENSOR_NULL };
		tmm_op op = { .name = "bad", .inputs = in, .n_inputs = 1,
			      .outputs = &t, .n_outputs = 1, .run = copy_in0 };

		ck_assert_int_eq(tmm_run(ctx, &op), -EBADF);
	}
}
END_TEST

START_TEST(bad_contexts_are_refused)
{
	tmm_ctx *c;
	tmm_tensor t;
	uint64_t not_a_ctx[64] = { 0 };

	ck_assert_int_eq(tmm_ctx_destroy(NULL), -EBADF);
	ck_assert_int_eq(tmm_tensor_create(NULL, 64, TMM_ACTIVATION, NULL,
					   &t), -EBADF);
	ck_assert_int_eq(tmm_run(NULL, NULL), -EBADF);
	ck_assert_int_eq(tmm_iteration_begin(NULL), -EBADF);
	contains(tmm_last_error((tmm_ctx *)not_a_ctx), "invalid context");
	/* Destroying twice is refused, not a double free. */
	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim"), 0);
	ck_assert_int_eq(tmm_ctx_destroy(c), 0);
	ck_assert_int_eq(tmm_ctx_destroy(c), -EBADF);
}
END_TEST

START_TEST(bad_config_names_key_and_value)
{
	tmm_ctx *c = (tmm_ctx *)1;

	ck_assert_int_eq(tmm_ctx_create(&c, "budget=12Q"), -EINVAL);
	ck_assert_ptr_null(c);
	contains(tmm_last_error(NULL), "budget");
	contains(tmm_last_error(NULL), "12Q");
	contains(tmm_last_error(NULL), "accepted");
	ck_assert_int_eq(tmm_ctx_create(&c, "nosuchkey=1"), -EINVAL);
	contains(tmm_last_error(NULL), "nosuchkey");
	ck_assert_int_eq(tmm_ctx_create(NULL, NULL), -EINVAL);
	ck_assert_int_eq(tmm_ctx_create(&c, "host_numa_node=1023"), -EINVAL);
	contains(tmm_last_error(NULL), "NUMA node");
	/* A budget of the program's own peak on a shared device. */
	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim,budget=40%peak,"
					    "share=group1"), -EINVAL);
	contains(tmm_last_error(NULL), "share=group1");
	contains(tmm_last_error(NULL), "share=off");
	/* Backends this build cannot give say so. */
	ck_assert_int_eq(tmm_ctx_create(&c, "backend=cuda"), -ENODEV);
	contains(tmm_last_error(NULL), "backend=cuda");
	/* A simulated device smaller than what the budget asks. */
	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim,sim_capacity=1MiB,"
					    "budget=2MiB"), 0);
	{
		struct tmm_stats st = { .version = TMM_STATS_VERSION };

		ck_assert_int_eq(tmm_stats_get(c, &st), 0);
		ck_assert_uint_eq(st.budget, 1u << 20);
		ck_assert_uint_eq(st.device_capacity, 1u << 20);
		ck_assert_uint_eq(st.simulated, 1);
	}
	tmm_ctx_destroy(c);
}
END_TEST

/* The measured H100's rates on a device of 4 GiB: in swap mode the
 * context takes its budget at creation, the whole device before a peak is
 * measured. */
#define H100 "backend=sim,sim_profile=h100-sxm5-pcie5-80g,sim_capacity=4GiB"

START_TEST(mode_auto_resolves_by_the_device)
{
	static const char *const configs[][2] = {
		/* The sim has concurrent managed access: auto is uvm. */
		{ "backend=sim", "uvm" },
		{ "backend=sim,mode=auto", "uvm" },
		{ "backend=sim,mode=uvm", "uvm" },
		{ "backend=sim,mode=swap", "swap" },
		/* Under a budget, auto takes swap where mode=uvm would move
		 * tensors by prefetch at 8.7 GB/s out (the measured H100's
		 * profile): 3.6x the pinned copies' time. */
		{ H100 ",uvm_swap_path=prefetch,budget=40%", "swap" },
		{ H100 ",uvm_swap_path=prefetch,budget=40%peak", "swap" },
		{ H100 ",uvm_swap_path=prefetch,budget=2GiB", "swap" },
		/* Without pressure uvm, which holds only what it uses. */
		{ H100 ",uvm_swap_path=prefetch", "uvm" },
		{ H100 ",uvm_swap_path=prefetch,budget=100%", "uvm" },
		/* By copy (auto's way there) a copy of managed memory holds
		 * the host, as CUDA's does (sim_managed_copy=held): no
		 * kernel runs beside it, so swap. */
		{ H100 ",budget=40%", "swap" },
		{ H100 ",uvm_swap_path=copy,budget=40%", "swap" },
		/* Queued like any copy, it moves at the pinned rates. */
		{ H100 ",sim_managed_copy=queued,budget=40%", "uvm" },
		{ H100 ",sim_managed_copy=queued,uvm_swap_path=copy,"
		  "budget=40%", "uvm" },
		/* A profile whose prefetches run at the pinned rates. */
		{ "backend=sim,sim_profile=p100-pcie3-16g,"
		  "uvm_swap_path=prefetch,budget=40%", "uvm" },
		/* Asked for, each mode is kept. */
		{ H100 ",uvm_swap_path=prefetch,budget=40%,mode=uvm", "uvm" },
	};
	struct tmm_stats st;
	tmm_ctx *c;

	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		ck_assert_msg(tmm_ctx_create(&c, configs[i][0]) == 0, "%s",
			      tmm_last_error(NULL));
		st.version = TMM_STATS_VERSION;
		ck_assert_int_eq(tmm_stats_get(c, &st), 0);
		ck_assert_str_eq(st.mode, configs[i][1]);
		ck_assert_int_eq(tmm_ctx_destroy(c), 0);
	}
}
END_TEST

/* Whether creating a context with `config` logs a line holding all of
 * `want` (NULL-terminated). */
static bool creation_logs(const char *config, const char *const *want)
{
	char line[1024];
	bool said = false;
	FILE *log = tmpfile();
	tmm_ctx *c;
	int saved;

	ck_assert_ptr_nonnull(log);
	fflush(stderr);
	saved = dup(2);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(log), 2), 0);
	ck_assert_int_eq(tmm_ctx_create(&c, config), 0);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, 2), 0);
	close(saved);
	ck_assert_int_eq(tmm_ctx_destroy(c), 0);
	rewind(log);
	while (!said && fgets(line, sizeof(line), log)) {
		said = true;
		for (const char *const *w = want; *w; w++)
			said &= strstr(line, *w) != NULL;
	}
	fclose(log);
	return said;
}

/* When auto takes swap for its way of moving, the log says why, with the
 * rates or the held host, and names the mode that would keep managed
 * memory. */
START_TEST(mode_auto_says_why_it_took_swap)
{
	static const char *const slow[] = { "mode=auto: swap", "8.7 GB/s out",
					    "3.6x", "mode=uvm", NULL };
	static const char *const held[] = { "mode=auto: swap", "by copy",
					    "holds the host", "mode=uvm",
					    NULL };

	ck_assert(creation_logs(H100 ",uvm_swap_path=prefetch,budget=40%,"
				"log=info", slow));
	ck_assert(creation_logs(H100 ",budget=40%,log=info", held));
}
END_TEST

START_TEST(bad_arguments_say_what_is_wrong)
{
	tmm_tensor t;
	char buf[128] = { 0 };

	ck_assert_int_eq(tmm_tensor_create(ctx, 0, TMM_ACTIVATION, "z", &t),
			 -EINVAL);
	contains(tmm_last_error(ctx), "0 bytes");
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, (enum tmm_kind)9, "k",
					   &t), -EINVAL);
	/* Larger than the budget: made (a parent of views may be), and
	 * refused where it is needed whole. */
	ck_assert_int_eq(tmm_tensor_create(ctx, 2u << 20, TMM_PERSISTENT,
					   "huge", &t), 0);
	{
		void *p;

		ck_assert_int_eq(tmm_acquire(ctx, t, TMM_WRITE, &p), -ENOMEM);
		contains(tmm_last_error(ctx), "huge");
		contains(tmm_last_error(ctx), "TENSORMM_BUDGET");
		ck_assert_int_eq(tmm_tensor_fill(ctx, t, 0), -ENOMEM);
		contains(tmm_last_error(ctx), "TENSORMM_BUDGET");
		ck_assert_int_eq(tmm_tensor_destroy(ctx, t), 0);
	}
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "t", &t),
			 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 60, buf, 8), -EINVAL);
	contains(tmm_last_error(ctx), "outside tensor 't'");
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 0, NULL, 8), -EINVAL);
	ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, buf, 8), -ENODATA);
	contains(tmm_last_error(ctx), "never written");
	/* A partial write zero-fills the rest. */
	buf[0] = 7;
	ck_assert_int_eq(tmm_tensor_write(ctx, t, 8, buf, 1), 0);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, buf, 64), 0);
	ck_assert_int_eq(buf[0], 0);
	ck_assert_int_eq(buf[8], 7);
	ck_assert_int_eq(buf[63], 0);
	/* Bad op descriptors. */
	ck_assert_int_eq(tmm_run(ctx, NULL), -EINVAL);
	{
		tmm_op op = { .name = "noarr", .n_inputs = 1 };

		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "noarr");
	}
	{
		tmm_op op = { .name = "norun", .outputs = &t, .n_outputs = 1 };

		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "no run callback");
	}
	{
		tmm_op op = { .name = "flags", .outputs = &t, .n_outputs = 1,
			      .run = copy_in0, .flags = 0x8 };

		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "unknown flags 0x8");
		op.flags = 0;
		op.n_outputs = TMM_OP_MAX_TENSORS + 1;
		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "at most");
	}
	{
		/* A collective is never pure, and only a collective moves
		 * bytes on the network. */
		tmm_op op = { .name = "allreduce", .kind = TMM_OP_COLLECTIVE,
			      .flags = TMM_OP_PURE, .inputs = &t,
			      .n_inputs = 1, .outputs = &t, .n_outputs = 1,
			      .run = copy_in0 };

		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "drop TMM_OP_PURE");
		op.flags = 0;
		op.cost.net_bytes = -1;
		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "net_bytes");
		op.kind = TMM_OP_MATMUL;
		op.cost.net_bytes = 64;
		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "only a TMM_OP_COLLECTIVE");
		op.kind = TMM_OP_KIND_COUNT;
		op.cost.net_bytes = 0;
		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "unknown kind");
		op.kind = TMM_OP_COLLECTIVE;
		op.cost.net_bytes = 64;
		ck_assert_int_eq(tmm_run(ctx, &op), 0);
	}
	/* Unbalanced iteration markers. */
	ck_assert_int_eq(tmm_iteration_end(ctx), -EINVAL);
	ck_assert_int_eq(tmm_iteration_begin(ctx), 0);
	ck_assert_int_eq(tmm_iteration_begin(ctx), -EINVAL);
	ck_assert_int_eq(tmm_iteration_end(ctx), 0);
	/* Stats need their version. */
	{
		struct tmm_stats st = { .version = 999 };

		ck_assert_int_eq(tmm_stats_get(ctx, &st), -EINVAL);
		ck_assert_int_eq(tmm_stats_get(ctx, NULL), -EINVAL);
	}
	/* A caller built against version 1, 2, 3, 5, 8 or 11 gets its shorter
	 * struct filled and nothing written past it. */
	{
		struct tmm_stats st;

		memset(&st, 0xab, sizeof(st));
		st.version = 1;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 1);
		ck_assert_uint_eq(st.budget, 1u << 20);
		ck_assert_uint_eq(st.iterations, 1);
		ck_assert_uint_eq(st.drops, 0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 2;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 2);
		ck_assert_uint_eq(st.prefetch_late, 0);
		ck_assert_uint_eq(st.plans_made, 0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 3;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 3);
		ck_assert_uint_eq(st.uvm_discard_bytes, 0);
		ck_assert_uint_eq(st.split_ops, 0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 5;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 5);
		ck_assert_uint_eq(st.device_mapped_peak, 0);
		ck_assert_uint_eq(st.uvm_held, 0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 8;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 8);
		ck_assert_uint_eq(st.clean_eviction_bytes, 0);
		ck_assert_uint_eq(st.prefetch_wait_ns, 0xababababababababull);
		ck_assert_uint_eq(st.dead_discard_bytes,
				  0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 9;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 9);
		ck_assert_uint_eq(st.dead_discard_bytes, 0);
		ck_assert_uint_eq(st.uvm_kept, 0xababababababababull);
		ck_assert_uint_eq(st.uvm_kept_hits, 0xababababababababull);

		memset(&st, 0xab, sizeof(st));
		st.version = 10;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 10);
		ck_assert_uint_eq(st.uvm_kept_hits, 0);
		ck_assert_uint_eq(st.uvm_fault_ns, 0xababababababababull);
		ck_assert_uint_eq(st.uvm_driver_counted, 0xababababu);

		memset(&st, 0xab, sizeof(st));
		st.version = 11;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.version, 11);
		ck_assert_uint_eq(st.uvm_fault_ns, 0);
		ck_assert_uint_eq(st.reserved11, 0);
		ck_assert_uint_eq(st.link_h2d_mbps, 0xababababababababull);
		ck_assert_uint_eq(st.uvm_prefetch_out_bytes,
				  0xababababababababull);

		/* The current version: the profile's link (p100-pcie3-16g:
		 * 11.69 GB/s in, 12.9 out, no managed rates of its own, so
		 * the pinned ones). */
		memset(&st, 0xab, sizeof(st));
		st.version = TMM_STATS_VERSION;
		ck_assert_int_eq(tmm_stats_get(ctx, &st), 0);
		ck_assert_uint_eq(st.link_h2d_mbps, 11690);
		ck_assert_uint_eq(st.link_d2h_mbps, 12900);
		ck_assert_uint_eq(st.uvm_prefetch_h2d_mbps, 11690);
		ck_assert_uint_eq(st.uvm_prefetch_d2h_mbps, 12900);
		ck_assert_uint_eq(st.uvm_prefetch_out_bytes, 0);
	}
}
END_TEST

START_TEST(failed_op_loses_nothing)
{
	tmm_tensor a, fresh_out, old_out;
	char data[64], back[64];

	memset(data, 0x42, sizeof(data));
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "a", &a),
			 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "fresh",
					   &fresh_out), 0);
	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "old",
					   &old_out), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, a, 0, data, 64), 0);
	ck_assert_int_eq(tmm_tensor_write(ctx, old_out, 0, data, 64), 0);
	{
		tmm_tensor out[2] = { fresh_out, old_out };
		tmm_op op = { .name = "failing", .inputs = &a, .n_inputs = 1,
			      .outputs = out, .n_outputs = 2,
			      .run = fail_einval };

		ck_assert_int_eq(tmm_run(ctx, &op), -EINVAL);
		contains(tmm_last_error(ctx), "failing");
		contains(tmm_last_error(ctx), "run callback returned -22");
	}
	ck_assert_int_eq(tmm_tensor_read(ctx, a, 0, back, 64), 0);
	ck_assert_mem_eq(back, data, 64);
	/* The fresh output holds nothing, as before the op. */
	ck_assert_int_eq(tmm_tensor_read(ctx, fresh_out, 0, back, 64),
			 -ENODATA);
}
END_TEST

START_TEST(acquire_pins_and_nests)
{
	tmm_tensor t;
	void *p1 = NULL, *p2 = NULL;
	char data[64] = "acquired";

	ck_assert_int_eq(tmm_tensor_create(ctx, 64, TMM_ACTIVATION, "t", &t),
			 0);
	ck_assert_int_eq(tmm_acquire(ctx, t, TMM_READ, &p1), -ENODATA);
	ck_assert_int_eq(tmm_acquire(ctx, t, TMM_WRITE, &p1), 0);
	ck_assert_ptr_nonnull(p1);
	/* Backed sim memory is host memory: write through the pointer. */
	memcpy(p1, data, sizeof(data));
	ck_assert_int_eq(tmm_acquire(ctx, t, TMM_READ, &p2), 0);
	ck_assert_ptr_eq(p1, p2);
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t), -EBUSY);
	ck_assert_int_eq(tmm_release(ctx, t), 0);
	ck_assert_int_eq(tmm_release(ctx, t), 0);
	ck_assert_int_eq(tmm_release(ctx, t), -EINVAL);
	contains(tmm_last_error(ctx), "not acquired");
	ck_assert_int_eq(tmm_acquire(ctx, t, (enum tmm_access)0, &p1),
			 -EINVAL);
	{
		char back[64];

		ck_assert_int_eq(tmm_tensor_read(ctx, t, 0, back, 64), 0);
		ck_assert_mem_eq(back, data, 64);
	}
	ck_assert_int_eq(tmm_tensor_destroy(ctx, t), 0);
}
END_TEST

/* mode=uvm: host reads and writes, and acquire, over managed memory. */
START_TEST(host_io_and_acquire_in_uvm_mode)
{
	struct tmm_stats st = { .version = TMM_STATS_VERSION };
	char back[256], zeros[256] = { 0 };
	tmm_tensor t;
	void *p = NULL;
	tmm_ctx *c;

	ck_assert_int_eq(tmm_ctx_create(&c, "backend=sim,mode=uvm,"
					    "budget=1MiB"), 0);
	ck_assert_int_eq(tmm_tensor_create(c, 256, TMM_ACTIVATION, "t", &t),
			 0);
	ck_assert_int_eq(tmm_tensor_read(c, t, 0, back, 256), -ENODATA);
	/* A partial write of a fresh tensor: the rest reads as zeros. */
	ck_assert_int_eq(tmm_tensor_write(c, t, 100, "uvm", 4), 0);
	ck_assert_int_eq(tmm_tensor_read(c, t, 0, back, 256), 0);
	ck_assert_mem_eq(back, zeros, 100);
	ck_assert_str_eq(back + 100, "uvm");
	ck_assert_mem_eq(back + 104, zeros, 152);
	/* Acquired for kernels: its one page faults onto the device, whole
	 * (the managed arena gives every tensor whole 64 KiB pages). */
	ck_assert_int_eq(tmm_acquire(c, t, TMM_READ_WRITE, &p), 0);
	ck_assert_str_eq((char *)p + 100, "uvm");
	memcpy(p, "dev", 4);
	ck_assert_int_eq(tmm_release(c, t), 0);
	ck_assert_int_eq(tmm_stats_get(c, &st), 0);
	ck_assert_uint_eq(st.uvm_faults, 1);
	ck_assert_uint_eq(st.uvm_fault_bytes, 64 * 1024);
	ck_assert_uint_eq(st.device_in_use, 64 * 1024);
	/* A host read between steps copies from the device-only page and
	 * leaves it there; within a step it takes the page back. */
	ck_assert_int_eq(tmm_tensor_read(c, t, 0, back, 4), 0);
	ck_assert_str_eq(back, "dev");
	ck_assert_int_eq(tmm_stats_get(c, &st), 0);
	ck_assert_uint_eq(st.device_in_use, 64 * 1024);
	ck_assert_int_eq(tmm_iteration_begin(c), 0);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(tmm_tensor_read(c, t, 0, back, 4), 0);
	ck_assert_str_eq(back, "dev");
	ck_assert_int_eq(tmm_iteration_end(c), 0);
	ck_assert_int_eq(tmm_stats_get(c, &st), 0);
	ck_assert_uint_eq(st.device_in_use, 0);
	ck_assert_uint_eq(st.device_peak, 64 * 1024);
	ck_assert_int_eq(tmm_tensor_destroy(c, t), 0);
	ck_assert_int_eq(tmm_ctx_destroy(c), 0);
}
END_TEST

/* The header's version, the library's and configure's agree. */
START_TEST(versions_agree)
{
	char parts[32];

	ck_assert_str_eq(tmm_version(), TMM_VERSION_STRING);
	ck_assert_str_eq(tmm_version(), PACKAGE_VERSION);
	snprintf(parts, sizeof(parts), "%d.%d.%d", TMM_VERSION_MAJOR,
		 TMM_VERSION_MINOR, TMM_VERSION_PATCH);
	ck_assert_str_eq(parts, TMM_VERSION_STRING);
	ck_assert_int_eq(TMM_VERSION, TMM_VERSION_MAJOR * 10000 +
					      TMM_VERSION_MINOR * 100 +
					      TMM_VERSION_PATCH);
}
END_TEST

START_TEST(strerror_names_codes)
{
	ck_assert_str_eq(tmm_strerror(0), "success");
	contains(tmm_strerror(-EBADF), "handle");
	contains(tmm_strerror(-ENOMEM), "memory");
	contains(tmm_strerror(-ENODATA), "never written");
	contains(tmm_strerror(-EBADMSG), "corrupt");
	contains(tmm_strerror(-EAGAIN), "iteration");
	ck_assert_str_eq(tmm_strerror(-12345), "unknown error");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("api");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bad_handles_are_refused);
	tcase_add_test(tc, bad_contexts_are_refused);
	tcase_add_test(tc, bad_config_names_key_and_value);
	tcase_add_test(tc, mode_auto_resolves_by_the_device);
	tcase_add_test(tc, mode_auto_says_why_it_took_swap);
	tcase_add_test(tc, bad_arguments_say_what_is_wrong);
	tcase_add_test(tc, failed_op_loses_nothing);
	tcase_add_test(tc, acquire_pins_and_nests);
	tcase_add_test(tc, host_io_and_acquire_in_uvm_mode);
	tcase_add_test(tc, strerror_names_codes);
	tcase_add_test(tc, versions_agree);
	suite_add_tcase(s, tc);
	return check_run_all(srunner_create(s));
}
