/* SPDX-License-Identifier: MIT */
/*
 * hello.c — the smallest complete libtensormm program (the README's first
 * program).  Each step makes four 4 MiB activations, each twice the one
 * before, then adds them into a weight w in place: 24 MiB of tensors
 * under a 12 MiB budget on the simulated GPU, whose device memory is host
 * memory.  Build it with
 *
 *   cc hello.c $(pkg-config --cflags --libs tensormm) -o hello
 */
#include <stdio.h>
#include <tensormm.h>

#define N (1u << 20) /* floats per tensor: 4 MiB */
#define CHECK(call)                                                        \
	do {                                                               \
		if ((call) < 0) {                                          \
			fprintf(stderr, "%s: %s\n", #call,                 \
				tmm_last_error(ctx));                      \
			return 1;                                          \
		}                                                          \
	} while (0)

/* act = 2 * in.  The output is not an input: it is fully overwritten. */
static int twice(void *const *in, void *const *out, void *user, void *stream)
{
	(void)user, (void)stream;
	for (size_t i = 0; i < N; i++)
		((float *)out[0])[i] = 2 * ((const float *)in[0])[i];
	return 0;
}

/* w += act.  w is read too, so it is listed as an input and an output. */
static int add(void *const *in, void *const *out, void *user, void *stream)
{
	(void)user, (void)stream;
	for (size_t i = 0; i < N; i++)
		((float *)out[0])[i] += ((const float *)in[1])[i];
	return 0;
}

int main(void)
{
	static float zeros[N], ones[N];
	tmm_ctx *ctx = NULL;
	tmm_tensor x, w, act[4];
	float w0;

	CHECK(tmm_ctx_create(&ctx, "backend=sim,budget=12MiB"));
	CHECK(tmm_tensor_create(ctx, sizeof(ones), TMM_PERSISTENT, "x", &x));
	CHECK(tmm_tensor_create(ctx, sizeof(zeros), TMM_PERSISTENT, "w", &w));
	for (size_t i = 0; i < N; i++)
		ones[i] = 1;
	CHECK(tmm_tensor_write(ctx, x, 0, ones, sizeof(ones)));
	CHECK(tmm_tensor_write(ctx, w, 0, zeros, sizeof(zeros)));
	for (int step = 0; step < 3; step++) {
		CHECK(tmm_iteration_begin(ctx));
		for (int l = 0; l < 4; l++) {
			tmm_tensor in = l ? act[l - 1] : x;
			tmm_op op = { .name = "twice", .flags = TMM_OP_PURE,
				      .inputs = &in, .n_inputs = 1,
				      .outputs = &act[l], .n_outputs = 1,
				      .run = twice, .cost = { N, 8.0 * N } };

			CHECK(tmm_tensor_create(ctx, sizeof(ones),
						TMM_ACTIVATION, "act", &act[l]));
			CHECK(tmm_run(ctx, &op));
		}
		for (int l = 3; l >= 0; l--) {
			tmm_tensor in[2] = { w, act[l] };
			tmm_op op = { .name = "add", .flags = TMM_OP_BACKWARD,
				      .inputs = in, .n_inputs = 2,
				      .outputs = &w, .n_outputs = 1,
				      .run = add, .cost = { N, 12.0 * N } };

			CHECK(tmm_run(ctx, &op));
			CHECK(tmm_tensor_destroy(ctx, act[l]));
		}
		CHECK(tmm_iteration_end(ctx));
	}
	CHECK(tmm_tensor_read(ctx, w, 0, &w0, sizeof(w0)));
	printf("w[0] = %g (expected %d)\n", w0, 3 * (2 + 4 + 8 + 16));
	CHECK(tmm_stats_print(ctx, NULL, NULL, 0));
	CHECK(tmm_ctx_destroy(ctx));
	return w0 == 3 * (2 + 4 + 8 + 16) ? 0 : 1;
}
