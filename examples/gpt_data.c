/* SPDX-License-Identifier: MIT */
/*
 * gpt_data.c — the GPT example's random numbers and data (gpt_data.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "gpt_data.h"

uint64_t gpt_next_u64(uint64_t *s)
{
	/* splitmix64: small, and good enough for synthetic data */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float gpt_next_unit(uint64_t *s)
{
	return (float)((double)(gpt_next_u64(s) >> 11) * 0x1.0p-53 * 2.0 -
		       1.0);
}

int gpt_make_data(unsigned vocab, unsigned seq, unsigned samples,
		  uint64_t *rng, int32_t **in_out, int32_t **tgt_out)
{
	unsigned *succ = malloc(sizeof(unsigned) * 4 * vocab);
	size_t len = (size_t)samples * seq;

	*in_out = malloc(sizeof(int32_t) * len);
	*tgt_out = malloc(sizeof(int32_t) * len);
	if (!succ || !*in_out || !*tgt_out) {
		free(succ);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < 4 * vocab; k++)
		succ[k] = (unsigned)(gpt_next_u64(rng) % vocab);
	for (unsigned s = 0; s < samples; s++) {
		int32_t *in = *in_out + (size_t)s * seq;
		int32_t *tgt = *tgt_out + (size_t)s * seq;
		unsigned tok = (unsigned)(gpt_next_u64(rng) % vocab);

		for (unsigned p = 0; p < seq; p++) {
			unsigned r = (unsigned)(gpt_next_u64(rng) % 8);
			unsigned pick = r < 4 ? 0 : r < 6 ? 1 : r < 7 ? 2 : 3;

			in[p] = (int32_t)tok;
			tok = succ[tok * 4 + pick];
			tgt[p] = (int32_t)tok;
		}
	}
	free(succ);
	return 0;
}
