#!/bin/sh
# SPDX-License-Identifier: MIT
# test_mlp_dp_staged.sh — examples/mlp_dp on the cuda backend with its
# collectives staged through host memory (--transport mpi,
# examples/dp_staged.c; issue #26 §7), on the CUDA test double: the
# program whole, built as tests/mlp_dp_fake with the double, the
# kernels' host twins and the double's cuBLAS.  Every rank is on device
# 0, as ranks sharing one GPU are (the double is each process's own, so
# this checks the staging, not two processes' contention).
#  - mpirun -np N (N = 2, 4) gives the weights digest of one process's
#    --accumulate N on the same backend, and so does --zero 1 (the
#    reduce-scatter and all-gather); the MPI runs with the device behind
#    the host (CUDAFAKE_LAG) and the race detector aborting on a race
#    (CUDAFAKE_RACES=abort), so a copy read before it landed shows;
#  - at 30% and 50% of the peak, in swap (swap-outs seen) and uvm, with
#    five policies (three under the sanitizers), the same digest;
#  - every cudaMemcpyAsync of a one-step run failing in turn (the fault
#    tunable): the run gives the reference digest, or fails naming the
#    call, the staging's copies to the host and back among them;
#  - the flag's misuse is refused naming what to change: a value other
#    than mpi or nccl, nccl on the sim, nccl in a build without it.
# Skips (77) where the double's mlp_dp was not built (no MPI or no
# cuBLAS) or mpirun is missing.  Ends with a Check-style summary line.
. "$(dirname "$0")/lib.sh" || exit 99
. "$(dirname "$0")/mlp_dp_lib.sh" || exit 99
build=${top_builddir:-.}
prog=$build/tests/mlp_dp_fake
[ -x "$prog" ] || skip "tests/mlp_dp_fake was not built: configure" \
	"found no MPI or no CUDA with cuBLAS"
mpi_setup
TENSORMM_BACKEND=cuda TENSORMM_STATS_SHM=off CUDAFAKE_RACES=abort
export TENSORMM_BACKEND TENSORMM_STATS_SHM CUDAFAKE_RACES
make_tmp

model="--batch 64 --steps 3 --bucket-kib 8"

# dp (tests/mlp_dp_lib.sh) runs the double's mlp_dp with host staging on
# the ranks, the device 3 steps behind the host there; the environment
# reaches every rank (mpirun passes it on a single node).
dp_ranks_args="--transport mpi"
dp_env="CUDAFAKE_LAG=3"

for n in 2 4; do
	checks=$((checks + 1))
	acc=$(dp 0 $model --accumulate $n)
	[ -n "$acc" ] || fail "--accumulate $n printed no digest"
	eval "ref_$n=\$acc"
	for zero in 0 1; do
		checks=$((checks + 1))
		got=$(dp $n $model --zero $zero)
		[ -n "$got" ] && [ "$got" = "$acc" ] ||
			fail "$n ranks staged, --zero $zero: digest '$got'," \
			     "--accumulate $n: '$acc'"
	done
done
echo "digests on the double: 2 ranks $ref_2, 4 ranks $ref_4"
checks=$((checks + 1))
[ "$ref_2" != "$ref_4" ] || fail "2 and 4 ranks give one digest '$ref_2'"

# The uvm run's unconstrained peak, for its budget's check.
checks=$((checks + 1))
got=$(TENSORMM_MODE=uvm dp 2 $model)
[ "$got" = "$ref_2" ] || fail "uvm, unconstrained: digest '$got'"
uvm_peak=$(peak0)
[ -n "$uvm_peak" ] || fail "the unconstrained uvm run reported no peak"

# Budgets of 30% and 50% of the peak, which bind: swap's swap-outs show
# it, uvm's budget is below its unconstrained peak.  In mode=swap the
# context takes its whole budget (the whole device, until the first
# iteration has measured the peak) when it is made: mlp_dp opens cuBLAS
# before it, or could not open it at all.
# Under the sanitizers (ASAN_OPTIONS set, as scripts/test --sanitize
# does), where a run takes several times as long, three policies.
policies="none passive tsplit capuchin auto"
[ -z "${ASAN_OPTIONS:-}" ] || policies="tsplit capuchin auto"
for pct in 30 50; do
	for policy in $policies; do
		checks=$((checks + 2))
		got=$(TENSORMM_MODE=swap TENSORMM_BUDGET=${pct}%peak \
		      TENSORMM_POLICY=$policy TENSORMM_LOG=error dp 2 $model)
		[ -n "$got" ] && [ "$got" = "$ref_2" ] ||
			fail "$policy, swap at $pct%peak: digest '$got'," \
			     "not '$ref_2'"
		s=$(swap_outs0)
		[ -n "$s" ] && [ "$s" -gt 0 ] ||
			fail "$policy, swap at $pct%peak: '$s' swap-outs," \
			     "the budget did not bind"
		checks=$((checks + 2))
		got=$(TENSORMM_MODE=uvm TENSORMM_BUDGET=${pct}%peak \
		      TENSORMM_POLICY=$policy TENSORMM_LOG=error dp 2 $model)
		[ -n "$got" ] && [ "$got" = "$ref_2" ] ||
			fail "$policy, uvm at $pct%peak: digest '$got'," \
			     "not '$ref_2'"
		b=$(budget0)
		awk -v b="$b" -v p="$uvm_peak" \
			'BEGIN { exit !(b != "" && p != "" && b < p) }' ||
			fail "$policy, uvm at $pct%peak: budget '$b' MiB not" \
			     "below the peak '$uvm_peak' MiB"
	done
done

# Every cudaMemcpyAsync of a one-step run (one process, --accumulate 2,
# staged all the same) failing in turn: the library's copies at the
# context's opening fall back, the staging's fail the op naming the
# copy, and the rank stops with exit 1.  The calls stop short of 60.
one="--batch 64 --steps 1 --bucket-kib 8 --accumulate 2 --transport mpi"
ref_one=$(dp 0 $one)
checks=$((checks + 1))
[ -n "$ref_one" ] || fail "the one-step run printed no digest"
to_host=0 to_device=0
n=1
while [ $n -le 60 ]; do
	checks=$((checks + 1))
	TENSORMM_FAULT=cudaMemcpyAsync@$n "$prog" $one >"$tmp/out" \
		2>"$tmp/err"
	rc=$?
	got=$(tail -n 1 "$tmp/out" |
	      sed -n 's/^weights digest: \([0-9a-f]\{16\}\)$/\1/p')
	if [ "$rc" -eq 0 ]; then
		[ "$got" = "$ref_one" ] ||
			fail "cudaMemcpyAsync@$n: digest '$got', not '$ref_one'"
	elif [ "$rc" -ne 1 ] || ! grep -q 'cudaMemcpyAsync' "$tmp/err"; then
		fail "cudaMemcpyAsync@$n: exit $rc, said: $(cat "$tmp/err")"
	fi
	grep -q 'cudaMemcpyAsync(gradients to the host)' "$tmp/err" &&
		to_host=$((to_host + 1))
	grep -q 'cudaMemcpyAsync(sums to the device)' "$tmp/err" &&
		to_device=$((to_device + 1))
	n=$((n + 1))
done
checks=$((checks + 1))
[ $to_host -gt 0 ] && [ $to_device -gt 0 ] ||
	fail "no failed staging copy named: $to_host to the host," \
	     "$to_device to the device"

# refused N PATTERN CMD...: CMD exits with N and says PATTERN.
refused() {
	want=$1 pattern=$2
	shift 2
	checks=$((checks + 1))
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] && grep -q -- "$pattern" "$tmp/err" ||
		fail "$*: exit $rc (not $want), said: $(cat "$tmp/err")"
}
refused 2 "--transport takes mpi or nccl, not 'gloo'" \
	"$prog" $model --transport gloo
# The double has no NCCL: its build is one without it.
refused 1 "has no NCCL" "$prog" $model --transport nccl
if [ -x "$build/examples/mlp_dp" ]; then
	refused 1 "--transport nccl needs the cuda backend.*on sim" \
		env TENSORMM_BACKEND=sim "$build/examples/mlp_dp" $model \
		--transport nccl
fi

summary
