/* SPDX-License-Identifier: MIT */
/*
 * recompute_chain.h — memory-centric recomputation for a planner that
 * walks the ops (TSPLIT §V-D): where the plan has each tensor out of the
 * device, which chosen recomputations read it where, and what
 * recomputing a tensor at an access then takes.
 *
 * TSPLIT recomputes a backward layer's input from a checkpoint, running
 * the chain of dropped tensors between again for each backward layer
 * (O(N^2) time, O(1) extra memory), and keeps what fits, least recently
 * used going first.  The runtime does the same by itself
 * (lib/exec/recompute.c): a dropped tensor whose producer reads another
 * dropped tensor regenerates that one first, holds only the op's own
 * inputs and outputs while each link runs, and what it made on the way
 * is the first thing dropped again when memory runs short.  It does the
 * same for a source the program has freed, which it kept as a ghost;
 * but only a tensor on the device when freed can be kept so.  What the
 * runtime cannot do within the plan is bring back a source the plan
 * swapped out: that would be a swap-in outside the plan.  So a tensor
 * may be recomputed at an access where each input of its producer is on
 * the device, or dropped there by a chosen recomputation, or freed by the
 * program and not swapped out, each of the last two recomputable in turn
 * from inputs that are, down to tensors on the device (the checkpoints);
 * and a tensor such a chain reads there may not be swapped out across
 * that access.
 *
 * The book keeps two lists per trace tensor: the gaps it is out of the
 * device (each with the candidate it is recomputed by, or none: a swap),
 * and the accesses at which a chosen recomputation reads it (needs).
 */
#ifndef TMM_RECOMPUTE_CHAIN_H
#define TMM_RECOMPUTE_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"
#include "msps.h"

/* A chain longer than this is not followed: it counts as out of reach. */
#define TMM_CHAIN_MAX_DEPTH 64

struct tmm_chain_link;

struct tmm_chain_book {
	const struct tmm_analysis *an;
	const struct tmm_cands *cs;
	uint32_t *gap_head, *need_head; /* per trace tensor, into links */
	struct tmm_chain_link *links;
	uint32_t n_links, cap_links;
	/* Per trace tensor, the query that last visited it: a chain through
	 * a branching graph visits each tensor once. */
	uint32_t *seen, stamp;
};

/* An empty book over the tensors of an's trace and candidates cs (which
 * may be filled later).  Returns 0 or -ENOMEM. */
int tmm_chain_book_init(struct tmm_chain_book *b,
			const struct tmm_analysis *an,
			const struct tmm_cands *cs);
void tmm_chain_book_free(struct tmm_chain_book *b);

/*
 * Eviction e is in the plan.  `cand` is the candidate whose drop it is
 * (its tensor recomputed for e->back), or -1: a swap, or an eviction
 * nothing brings back within the plan.  Returns 0 or -ENOMEM.
 */
int tmm_chain_note_gap(struct tmm_chain_book *b, const struct tmm_eviction *e,
		       int64_t cand);

/* Whether a chosen recomputation reads tensor t at an access strictly
 * between `evict` and `back`. */
bool tmm_chain_needed_within(const struct tmm_chain_book *b, uint32_t t,
			     uint32_t evict, uint32_t back);

/*
 * Whether candidate c may be dropped and recomputed: at its back-access,
 * and at every access inside its gap where a chosen recomputation reads
 * its tensor (which then regenerates it first), each of its sources is
 * on the device or recomputable in turn (see above).
 */
bool tmm_chain_may_drop(struct tmm_chain_book *b, const struct tmm_cand *c);

/*
 * Eq. 4's extra time of dropping c: its recomputation at its back-access
 * (its producer, the tensors freed by the program it is recomputed
 * through, and the chain of dropped sources below it, each once), and
 * once more at each access inside its gap where a chosen recomputation
 * reads its tensor, as memory-centric recomputation runs it again there.
 */
double tmm_chain_drop_ns(struct tmm_chain_book *b, const struct tmm_cand *c);

/*
 * c is chosen for recomputation: notes, at its back-access and at every
 * access inside its gap where a chosen recomputation reads its tensor,
 * that each tensor its chain reads there is needed there (so none of
 * them is swapped out across it later).  Call after noting c's gap.
 * Returns 0 or -ENOMEM.
 */
int tmm_chain_choose(struct tmm_chain_book *b, const struct tmm_cand *c);

#endif /* TMM_RECOMPUTE_CHAIN_H */
