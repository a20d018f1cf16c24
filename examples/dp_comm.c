/* SPDX-License-Identifier: MIT */
/*
 * dp_comm.c — ranks and host-memory collectives over MPI (dp_comm.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "dp_comm.h"

/* Whether a launcher started this process as one of several ranks. */
static bool launched(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
	};

	for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
		if (getenv(vars[k]))
			return true;
	return false;
}

int dp_comm_open(struct dp_comm *c, int *argc, char ***argv)
{
	*c = (struct dp_comm){ .rank = 0, .size = 1, .mpi = false };
	if (!launched())
		return 0;
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "mlp_dp: MPI_Init failed\n");
		return -1;
	}
	c->mpi = true;
	MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c->size);
	return 0;
}

void dp_comm_close(struct dp_comm *c)
{
	if (c->mpi)
		MPI_Finalize();
	c->mpi = false;
}

/* MPI counts are ints: the buckets are far smaller, but say so. */
static int count_of(size_t bytes, int *count)
{
	if (bytes > INT_MAX) {
		fprintf(stderr, "mlp_dp: a collective of %zu bytes is more "
			"than MPI's int count: lower --bucket-kib\n", bytes);
		return -EIO;
	}
	*count = (int)bytes;
	return 0;
}

/* MPI_Allgather and MPI_Alltoall share one signature: either, over
 * bytes a rank, with a world of one a copy. */
typedef int (*exchange_fn)(const void *, int, MPI_Datatype, void *, int,
			   MPI_Datatype, MPI_Comm);

static int exchange(const struct dp_comm *c, exchange_fn fn,
		    const void *send, size_t bytes, void *recv)
{
	int n, rc;

	if (!c->mpi) {
		memcpy(recv, send, bytes);
		return 0;
	}
	if ((rc = count_of(bytes, &n)))
		return rc;
	return fn(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD) ==
			       MPI_SUCCESS
		       ? 0
		       : -EIO;
}

int dp_comm_allgather(const struct dp_comm *c, const void *send,
		      size_t bytes, void *recv)
{
	return exchange(c, MPI_Allgather, send, bytes, recv);
}

int dp_comm_alltoall(const struct dp_comm *c, const void *send,
		     size_t bytes, void *recv)
{
	return exchange(c, MPI_Alltoall, send, bytes, recv);
}

int dp_comm_bcast(const struct dp_comm *c, void *buf, size_t bytes,
		  int root)
{
	int n, rc;

	if (!c->mpi)
		return 0;
	if ((rc = count_of(bytes, &n)))
		return rc;
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD) ==
	       MPI_SUCCESS ? 0 : -EIO;
}

int dp_comm_same(const struct dp_comm *c, unsigned long long v,
		 bool *all_same)
{
	unsigned long long *all = malloc(sizeof(v) * (size_t)c->size);
	int rc;

	if (!all)
		return -ENOMEM;
	rc = dp_comm_allgather(c, &v, sizeof(v), all);
	*all_same = true;
	for (int r = 0; rc == 0 && r < c->size; r++)
		if (all[r] != v)
			*all_same = false;
	free(all);
	return rc;
}

void dp_comm_abort(const struct dp_comm *c, int code)
{
	if (c->mpi)
		MPI_Abort(MPI_COMM_WORLD, code);
	exit(code);
}
