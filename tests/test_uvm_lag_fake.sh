#!/bin/sh
# SPDX-License-Identifier: MIT
# test_uvm_lag_fake.sh — mode=uvm under the plans that re-plan every
# iteration, on a device that lags behind the host as a real GPU does.
#
# The one run a real GPU showed wrong (an H200, bench/bench_gpu_train,
# tsplit in mode=uvm at 30% of the peak: every loss right, the final
# weights not) re-planned at every iteration, its copies and migrations
# in flight across many ops.  The double runs that here: tsplit and auto
# (whose plan at that budget is tsplit's) at 30%, both ways out of the
# device (uvm_swap_path copy and prefetch), over three seeds, with
# CUDAFAKE_LAG=20 (tests/cudafake/README.md) so that queued work runs
# mostly when the host waits, CUDAFAKE_KERNEL_COST=8 so that the plans
# are made from op times where compute costs as much as the copies (as
# on the H200, whose compute shape this is; by default the double's
# kernels are all but free, and its plans recompute rather than swap),
# the first race aborting the program, and copies of managed memory
# queued like any (CUDAFAKE_MANAGED_COPY=async: the order must not rest
# on CUDA's copies holding the host).
# Every row must be bit-identical to the unconstrained run: the losses of
# every step and the final weights read back by tmm_tensor_read.  The
# shape keeps the compute shape's proportions (weights twice an
# activation, 12 layers) at a size the double trains in seconds.  Skips
# (77) where the build has no cuda backend or no cuBLAS headers.  Ends
# with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
prog=$build/tests/bench_gpu_train_fake
[ -x "$prog" ] || skip "SKIP: $prog is not built (no CUDA or cuBLAS)"
make_tmp

for path in copy prefetch; do
	for seed in 1 2 3; do
		checks=$((checks + 1))
		CUDAFAKE_LAG=20 CUDAFAKE_KERNEL_COST=8 CUDAFAKE_SEED=$seed \
			CUDAFAKE_RACES=abort CUDAFAKE_MANAGED_COPY=async \
			TENSORMM_UVM_SWAP_PATH=$path TENSORMM_LOG=error \
			"$prog" --shape 128x12x64 --modes uvm \
			--policies tsplit,auto --budgets 0.3 --steps 6 \
			--warmup 2 >"$tmp/out" 2>"$tmp/err"
		rc=$?
		same=$(grep -c '^| \(tsplit\|auto\) | uvm | 30% (.*| yes |$' \
			"$tmp/out")
		if [ "$rc" -ne 0 ] || [ "$same" -ne 2 ]; then
			fail "uvm_swap_path=$path, seed $seed: exit $rc, $same" \
			     "of 2 rows bit-identical"
			cat "$tmp/out" "$tmp/err" >&2
		fi
	done
done

summary
