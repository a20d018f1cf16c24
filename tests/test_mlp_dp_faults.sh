#!/bin/sh
# SPDX-License-Identifier: MIT
# test_mlp_dp_faults.sh — examples/mlp_dp when a copy of the library
# fails (TENSORMM_FAULT=copy@N, tensormm(7)), for every N of a run: one
# process, --accumulate 2, 2 steps, swap mode under 30% of its peak with
# passive swapping, so that the all-reduce of a bucket and the updates
# bring their tensors back with copies.  Each run must either
#  - end with the digest of the same run without the fault (the library
#    got over it), or
#  - exit 1 with "mlp_dp: rank 0: training failed" and the library's
#    reason on stderr,
# never another status, and never leave a sanitizer's report or its
# statistics segment (/dev/shm/tensormm.UID.PID.*) behind.  Some N land
# in the all-reduce of a bucket and some in the update of the bucket held
# back for the next all-reduce (dp_grads.h): those messages must name
# the op ("in the all-reduce of bucket 1 of 3", "in the update of
# parameter 2 (held for the next all-reduce) of bucket 0 of 3"), and
# both kinds must be seen.  The same with --zero 1, whose reduce-scatter
# and sharded update must be named.  N runs from 1 until 40 runs in a row
# have ended with the digest (past the run's last copy).  Then, on 2
# ranks under mpirun, a failure of rank 0 alone must end the whole job
# with its message, not hang (where mpirun is there).  Skips (77) where
# configure found no MPI, so mlp_dp was not built.  Ends with a
# Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
. "$(dirname "$0")/mlp_dp_lib.sh" || exit 99
dp_example mlp_dp
make_tmp

TENSORMM_BUDGET=30%peak TENSORMM_MODE=swap TENSORMM_POLICY=none
export TENSORMM_BUDGET TENSORMM_MODE TENSORMM_POLICY
model="--batch 64 --steps 2 --bucket-kib 8 --accumulate 2"
uid=$(id -u)
failed_in="mlp_dp: rank 0: training failed in"

# run N ARGS...: mlp_dp ARGS with copy call N failing; $rc its status,
# $pid its process (stdout in $tmp/out, stderr in $tmp/err).
run() {
	_n=$1
	shift
	TENSORMM_FAULT=copy@$_n "$prog" $model "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	wait "$pid"
	rc=$?
}

# sweep ARGS... -- WANTED...: every N with ARGS; each WANTED (a part of
# the message after "training failed in ") must be seen at least once.
sweep() {
	args=
	while [ "$1" != -- ]; do
		args="$args $1"
		shift
	done
	shift
	ref=$(dp 0 $model $args)
	checks=$((checks + 1))
	[ -n "$ref" ] || fail "mlp_dp$args without a fault printed no digest"
	: >"$tmp/named"
	n=0 clean=0
	while [ "$clean" -lt 40 ] && [ "$n" -lt 2000 ]; do
		n=$((n + 1))
		run "$n" $args
		what="mlp_dp$args with copy@$n"
		checks=$((checks + 1))
		if grep -q 'Sanitizer\|runtime error' "$tmp/err"; then
			fail "$what: a sanitizer's report:" \
			     "$(grep -m 3 'Sanitizer\|runtime error' "$tmp/err")"
		elif ls "/dev/shm/tensormm.$uid.$pid."* >/dev/null 2>&1; then
			fail "$what: left its statistics segment" \
			     "/dev/shm/tensormm.$uid.$pid.*"
			rm -f "/dev/shm/tensormm.$uid.$pid."*
		elif [ "$rc" -eq 0 ]; then
			got=$(dp_digest 0 "$what")
			[ "$got" = "$ref" ] ||
				fail "$what: ended with digest '$got', not '$ref'"
		elif [ "$rc" -eq 1 ] &&
		     grep -q '^mlp_dp: rank 0: training failed.*: [a-z]' \
			  "$tmp/err"; then
			sed -n "s/^$failed_in \(.*\) of bucket [0-9].*/\1/p" \
				"$tmp/err" >>"$tmp/named"
		else
			fail "$what: exit $rc, said: $(tail -n 3 "$tmp/err")"
		fi
		if [ "$rc" -eq 0 ]; then
			clean=$((clean + 1))
		else
			clean=0
		fi
	done
	for want in "$@"; do
		checks=$((checks + 1))
		grep -qF -- "$want" "$tmp/named" ||
			fail "mlp_dp$args: no copy@N of 1..$n failed in $want;" \
			     "failures named: $(sort -u "$tmp/named" | tr '\n' ';')"
	done
	echo "mlp_dp$args: copy@1..$n, $(wc -l <"$tmp/named") failure(s)" \
	     "in a named op"
}

sweep -- "the all-reduce" "(held for the next all-reduce)"
sweep --zero 1 -- "the reduce-scatter" "the update (sgd_shard)"

# On 2 ranks, only rank 0 failing (Open MPI's MPMD form gives it alone
# the fault): it must say so and stop rank 1 too, which would otherwise
# wait for it in the next collective for ever (60 s: a hang).  Rank 1,
# killed by the abort, could not remove a statistics segment: none made.
if have mpirun && have timeout; then
	mpi_setup
	checks=$((checks + 1))
	TENSORMM_STATS_SHM=off timeout 60 mpirun --oversubscribe \
		-x TENSORMM_BUDGET -x TENSORMM_MODE -x TENSORMM_POLICY \
		-x TENSORMM_STATS_SHM -np 1 -x TENSORMM_FAULT=copy@40+ "$prog" \
		--batch 64 --steps 2 --bucket-kib 8 : -np 1 "$prog" \
		--batch 64 --steps 2 --bucket-kib 8 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
		grep -q '^mlp_dp: rank 0: training failed' "$tmp/err" ||
		fail "2 ranks, rank 0 with copy@40+: exit $rc, said:" \
		     "$(grep -v '^ *$' "$tmp/err" | head -n 3)"
else
	echo "no mpirun or timeout on PATH: the 2-rank run is left out"
fi

summary
