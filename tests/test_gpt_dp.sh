#!/bin/sh
# SPDX-License-Identifier: MIT
# test_gpt_dp.sh — the data-parallel GPT (examples/gpt_dp, issue #26 §3)
# gives the same weights however it is spread and squeezed:
#  - mpirun -np N gpt_dp --batch B gives the weights digest of one
#    process's gpt_dp --batch B --accumulate N (no MPI), for N = 2 and 4,
#    and at N > 1 the ranks declared bytes on the network (the buckets
#    ran as TMM_OP_COLLECTIVE ops), and so does -np 2 --accumulate 2
#    for --accumulate 4;
#  - at N = 2, the policies tsplit, capuchin, stream and auto in
#    mode=swap, and tsplit in mode=uvm, under 30% of the peak give the
#    unconstrained digest, and the budget did bind: rank 0 swapped out
#    or evicted something;
#  - bucketing changes nothing: 4 buckets at 8 KiB (head, each block,
#    embeddings), 3 at 1 GiB, one digest;
#  - the digest sees the training (a step fewer, another digest), and a
#    batch that does not split over the ranks is refused, naming
#    --batch.
# The model is small (2 blocks of width 32, sequences of 16 tokens) and
# trains 3 steps.  Skips (77) where configure found no MPI, so gpt_dp was
# not built, or where mpirun is missing; tests/mlp_dp_lib.sh lets Open
# MPI run as root and suppresses its own leaks under the sanitizers.
# Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
. "$(dirname "$0")/mlp_dp_lib.sh" || exit 99
dp_example gpt_dp
mpi_setup
make_tmp

model="--batch 8 --steps 3 --layers 2 --d-model 32 --seq 16 --bucket-kib 8"

# Rank 0's MiB declared on the network, and its passive and uvm
# evictions summed, from its report line in $tmp/out.
net0() {
	sed -n 's/^rank 0: .* \([0-9.]*\) MiB declared on the network.*/\1/p' \
		"$tmp/out"
}
evictions0() {
	_re='s/^rank 0: .* \([0-9]*\) passive eviction(s), \([0-9]*\) uvm.*/'
	sed -n "$_re\\1 \\2/p" "$tmp/out" | awk '{ print $1 + $2 }'
}

for n in 2 4; do
	checks=$((checks + 1))
	acc=$(dp 0 $model --accumulate $n)
	[ -n "$acc" ] || fail "gpt_dp --accumulate $n printed no digest"
	eval "ref_$n=\$acc"
	checks=$((checks + 1))
	got=$(dp $n $model)
	[ -n "$got" ] && [ "$got" = "$acc" ] ||
		fail "$n ranks: digest '$got', --accumulate $n: '$acc'"
	checks=$((checks + 1))
	net=$(net0)
	awk -v b="$net" 'BEGIN { exit !(b != "" && b > 0) }' ||
		fail "$n ranks: rank 0 declared '$net' MiB on the network"
done
echo "unconstrained digests (simulated run): 2 ranks $ref_2, 4 ranks $ref_4"

# Ranks and micro-batches compose: 2 ranks of 2 micro-batches sum the
# same 4 contributions in the same order as 4 micro-batches.
checks=$((checks + 1))
got=$(dp 2 $model --accumulate 2)
[ -n "$got" ] && [ "$got" = "$ref_4" ] ||
	fail "2 ranks x --accumulate 2: digest '$got', --accumulate 4:" \
	     "'$ref_4'"

# Buckets group the gradients, never change them: the head and the
# embeddings each get one of their own, and the blocks one each at
# 8 KiB (a block is about 50 KiB), or one for both at 1 GiB; the same
# digest either way.
checks=$((checks + 1))
got=$(dp 2 $model)
grep -q '^4 bucket(s) of gradients a step$' "$tmp/out" ||
	fail "2 blocks at --bucket-kib 8: $(grep 'bucket(s)' "$tmp/out")," \
	     "not 4 buckets"
checks=$((checks + 1))
got=$(dp 2 --batch 8 --steps 3 --layers 2 --d-model 32 --seq 16 \
	--bucket-kib 1048576)
[ -n "$got" ] && [ "$got" = "$ref_2" ] &&
	grep -q '^3 bucket(s) of gradients a step$' "$tmp/out" ||
	fail "2 ranks at --bucket-kib 1048576: digest '$got' (want" \
	     "'$ref_2'), $(grep 'bucket(s)' "$tmp/out") (want 3)"

# The digest follows the weights: a step fewer, another one.
checks=$((checks + 1))
got=$(dp 0 --batch 8 --steps 2 --layers 2 --d-model 32 --seq 16 \
	--bucket-kib 8 --accumulate 2)
[ -n "$got" ] && [ "$got" != "$ref_2" ] ||
	fail "2 steps and 3 steps give the same digest '$got'"

# squeeze MODE POLICIES...: each policy under 30% of the peak in MODE on
# 2 ranks gives the unconstrained digest, and rank 0 swapped out or
# evicted something.
squeeze() {
	mode=$1
	shift
	for policy in "$@"; do
		checks=$((checks + 1))
		got=$(TENSORMM_BUDGET=30%peak TENSORMM_MODE=$mode \
		      TENSORMM_POLICY=$policy dp 2 $model)
		[ -n "$got" ] && [ "$got" = "$ref_2" ] ||
			fail "2 ranks, $policy $mode at 30%peak: digest" \
			     "'$got', unconstrained '$ref_2'"
		checks=$((checks + 1))
		so=$(swap_outs0)
		ev=$(evictions0)
		moved=$(( ${so:-0} + ${ev:-0} ))
		[ "$moved" -gt 0 ] ||
			fail "2 ranks, $policy $mode at 30%peak: rank 0" \
			     "neither swapped out nor evicted anything:" \
			     "$(grep '^rank 0' "$tmp/out")"
	done
}
squeeze swap tsplit capuchin stream auto
squeeze uvm tsplit

# A batch that does not split is refused, naming --batch.
checks=$((checks + 1))
"$prog" --batch 7 --accumulate 2 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -ne 0 ] && grep -q -- '--batch 7 .*multiple of 2' "$tmp/err" ||
	fail "--batch 7 --accumulate 2: exit $rc, said: $(cat "$tmp/err")"

summary
