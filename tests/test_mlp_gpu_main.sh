#!/bin/sh
# SPDX-License-Identifier: MIT
# test_mlp_gpu_main.sh — examples/mlp_gpu whole (its main, its output,
# its own bit-identity check) on the CUDA test double: tests/mlp_gpu_fake
# is examples/mlp_gpu.c linked with the double's cuBLAS and the kernels'
# host twins instead of libcublas and nvcc's object.  Small shapes, a few
# seeds of the double's schedule, and the first race aborts the program.
# Skipped (77) where the build has no cuBLAS headers.  Ends with a
# Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
prog=$build/tests/mlp_gpu_fake
[ -x "$prog" ] || skip "SKIP: $prog is not built (no CUDA or cuBLAS)"

for seed in 1 2 3; do
	checks=$((checks + 1))
	out=$(CUDAFAKE_SEED=$seed CUDAFAKE_RACES=abort TENSORMM_LOG=error \
		TENSORMM_STATS_SHM=off \
		"$prog" --layers 4 --batch 16 --steps 4 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || fail "seed $seed: mlp_gpu exited with $rc"
	checks=$((checks + 1))
	n=$(printf '%s\n' "$out" |
		grep -c 'bit-identical to the unconstrained run: yes')
	[ "$n" -eq 2 ] ||
		fail "seed $seed: mlp_gpu did not report both modes bit-identical"
done

summary
