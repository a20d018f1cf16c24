/* SPDX-License-Identifier: MIT */
/*
 * dp_comm.h — the ranks of examples/mlp_dp and the few collectives it
 * needs on host memory, over MPI.
 *
 * A program started by mpirun or srun (Open MPI's, PMI's or PMIx's rank
 * variables are set) joins MPI_COMM_WORLD; one started on its own is the
 * only rank and never initialises MPI, so that `mlp_dp --accumulate N`
 * needs no MPI at all.  Every collective here is ordered by rank: what
 * rank r sends lands at offset r of what every rank receives, so a sum
 * over the result in index order is the same sum on every rank.
 */
#ifndef DP_COMM_H
#define DP_COMM_H

#include <stdbool.h>
#include <stddef.h>

struct dp_comm {
	int rank, size;
	bool mpi;	/* MPI was initialised (and is finalised by close) */
};

/* Joins the launcher's ranks, or makes a world of one.  Returns 0, or -1
 * with the reason on stderr. */
int dp_comm_open(struct dp_comm *c, int *argc, char ***argv);
void dp_comm_close(struct dp_comm *c);

/* Every rank sends `bytes` from `send`; `recv` (size x bytes) receives
 * rank r's at r x bytes.  Returns 0 or -EIO. */
int dp_comm_allgather(const struct dp_comm *c, const void *send,
		      size_t bytes, void *recv);

/* Rank r's send holds size blocks of `bytes`; block q goes to rank q,
 * which receives it at r x bytes of its recv.  Returns 0 or -EIO. */
int dp_comm_alltoall(const struct dp_comm *c, const void *send,
		     size_t bytes, void *recv);

/* Rank `root`'s `bytes` at buf reach every rank's buf.  0 or -EIO. */
int dp_comm_bcast(const struct dp_comm *c, void *buf, size_t bytes,
		  int root);

/* Every rank's int; *all_same says whether they are equal.  0 or -EIO. */
int dp_comm_same(const struct dp_comm *c, unsigned long long v,
		 bool *all_same);

/* Stops every rank: MPI_Abort where MPI runs, else exit. */
void dp_comm_abort(const struct dp_comm *c, int code);

#endif /* DP_COMM_H */
