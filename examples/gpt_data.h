/* SPDX-License-Identifier: MIT */
/*
 * gpt_data.h — the random numbers and the synthetic token sequences of
 * the GPT example (gpt_model.c): a splitmix64 stream, and sequences from
 * a fixed random Markov chain.  Apart from the model so that it stays
 * one concept a file; the bytes are the model's, unchanged.
 */
#ifndef GPT_DATA_H
#define GPT_DATA_H

#include <stdint.h>

/* The next 64 random bits of the stream *s. */
uint64_t gpt_next_u64(uint64_t *s);

/* Uniform in [-1, 1), from the stream *s. */
float gpt_next_unit(uint64_t *s);

/*
 * `samples` sequences of `seq` tokens below `vocab` from a random Markov
 * chain drawn from *rng: each token has four successors, taken with
 * probabilities 1/2, 1/4, 1/8 and 1/8, so the next token is learnable
 * (the loss can fall from ln(vocab) towards 1.21 nats) but never
 * certain.  *in receives the tokens and *tgt each position's target, the
 * next token (malloc'd, samples x seq each, set even on failure: free
 * both).  Returns 0 or -ENOMEM.
 */
int gpt_make_data(unsigned vocab, unsigned seq, unsigned samples,
		  uint64_t *rng, int32_t **in, int32_t **tgt);

#endif /* GPT_DATA_H */
