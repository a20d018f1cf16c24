/* SPDX-License-Identifier: MIT */
/*
 * fill_twin.c — a filling kernel on the CUDA test double (fill_twin.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cudafake/cudafake.h"
#include "fill_twin.h"

struct fill {
	uint8_t *out;
	size_t bytes;
	uint8_t value;
};

/* The kernel's host twin, run by the double in the stream's order. */
static void fill_on_host(void *arg)
{
	struct fill *f = arg;

	memset(f->out, f->value, f->bytes);
	free(f);
}

int fill_twin_launch(void *out, size_t bytes, uint8_t value, void *stream)
{
	struct fill *f = malloc(sizeof(*f));
	struct cudafake_range r = { out, bytes, true };

	if (!f)
		return -1;
	*f = (struct fill){ out, bytes, value };
	return cudafake_launch(stream, fill_on_host, f, &r, 1) == cudaSuccess
		       ? 0
		       : -1;
}
