#!/bin/sh
# SPDX-License-Identifier: MIT
# test_mlp_dp.sh — data-parallel training (examples/mlp_dp, issue #26)
# gives the same weights however it is spread and squeezed:
#  - mpirun -np N mlp_dp --batch B gives the weights digest of one
#    process's mlp_dp --batch B --accumulate N (no MPI), for N = 2 and 4,
#    and so does --zero 1 (ZeRO stage 1);
#  - under a budget, every policy in both modes (swap, uvm) at 30% and
#    50% of the peak gives the unconstrained digest of the same N, at
#    N = 2 and 4.  Under the sanitizers (ASAN_OPTIONS set, as
#    scripts/test --sanitize does), where a run takes several times as
#    long, the policies tsplit, capuchin and auto only;
#  - the digest sees the training (fewer steps, another digest), and a
#    batch that does not split over the ranks is refused, naming what to
#    change.
# The model is small (3 hidden layers of 64) and trains 3 steps.  Skips
# (77) where configure found no MPI, so mlp_dp was not built, or where
# mpirun is missing.  The MPI runs take tests/lsan-mpi.supp: Open MPI's
# own libraries leak by design, ours must not.  Ends with a Check-style
# summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
. "$(dirname "$0")/mlp_dp_lib.sh" || exit 99
dp_example mlp_dp
mpi_setup
make_tmp

model="--batch 64 --steps 3 --bucket-kib 8"

for n in 2 4; do
	checks=$((checks + 1))
	acc=$(dp 0 $model --accumulate $n)
	[ -n "$acc" ] || fail "mlp_dp --accumulate $n printed no digest"
	eval "ref_$n=\$acc"
	eval "peak_$n=\$(peak0)"
	checks=$((checks + 1))
	got=$(dp $n $model)
	[ -n "$got" ] && [ "$got" = "$acc" ] ||
		fail "$n ranks: digest '$got', --accumulate $n: '$acc'"
	checks=$((checks + 1))
	got=$(dp $n $model --zero 1)
	[ -n "$got" ] && [ "$got" = "$acc" ] ||
		fail "$n ranks with --zero 1: digest '$got', not '$acc'"
done
echo "unconstrained digests: 2 ranks $ref_2, 4 ranks $ref_4"

# The digest follows the weights: a step fewer, another one.
checks=$((checks + 1))
got=$(dp 0 --batch 64 --steps 2 --bucket-kib 8 --accumulate 2)
[ -n "$got" ] && [ "$got" != "$ref_2" ] ||
	fail "2 steps and 3 steps give the same digest '$got'"

# squeeze N PERCENT MODE POLICIES...: each policy under PERCENT% of the
# peak in MODE on N ranks gives the unconstrained digest, under a budget
# that did bind (below the unconstrained run's peak).
squeeze() {
	n=$1 pct=$2 mode=$3
	shift 3
	eval "want=\$ref_$n peak=\$peak_$n"
	for policy in "$@"; do
		checks=$((checks + 1))
		got=$(TENSORMM_BUDGET=${pct}%peak TENSORMM_MODE=$mode \
		      TENSORMM_POLICY=$policy dp "$n" $model)
		[ -n "$got" ] && [ "$got" = "$want" ] ||
			fail "$n ranks, $policy $mode at $pct%peak: digest" \
			     "'$got', unconstrained '$want'"
		checks=$((checks + 1))
		b=$(budget0)
		awk -v b="$b" -v p="$peak" 'BEGIN { exit !(b != "" && b < p) }' ||
			fail "$n ranks, $policy $mode at $pct%peak: rank 0's" \
			     "budget '$b' MiB is not below the peak $peak MiB"
	done
}

all="none passive vdnn-conv vdnn-all checkpoint superneurons capuchin \
tensile tsplit auto"
[ -z "${ASAN_OPTIONS:-}" ] || all="tsplit capuchin auto"
for mode in swap uvm; do
	for n in 2 4; do
		squeeze $n 30 $mode $all
		squeeze $n 50 $mode $all
	done
done

# A batch that does not split is refused, with what to change.
checks=$((checks + 1))
"$prog" --batch 30 --accumulate 4 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--batch 30 .*multiple of 4' "$tmp/err" ||
	fail "--batch 30 --accumulate 4: exit $rc, said: $(cat "$tmp/err")"

summary
