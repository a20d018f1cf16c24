#!/bin/sh
# SPDX-License-Identifier: MIT
# test_bench_scaling.sh — bench/bench_scaling, the data-parallel scaling
# table (issue 26 §5): it says its figures are simulated and what it does
# not model, one rank has no collective, two ranks all-reduce, and the
# all-reduce takes far longer on a PCIe 3.0 node's network (11.69 GB/s)
# than on NVLink 4 (450 GB/s).  A small MLP batch keeps it to seconds.
# Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
B=${top_builddir:-.}
BENCH=$B/bench/bench_scaling
make_tmp

# The coll_ms column (4th) of the row of `ranks` ranks, from file $1.
coll() { awk -v n="$2" '$1 == n { print $4; exit }' "$1"; }

run() { # profile, output file
	"$BENCH" --models mlp_compute --batch 64 --ranks 1,2 --budgets 50 \
		--iterations 2 --profile "$1" >"$2" 2>"$tmp/err"
}

check "runs on a PCIe profile" run p100-pcie3-16g "$tmp/pcie"
check "runs on an NVLink profile" run h100-sxm5-pcie5-80g "$tmp/nvlink"
check "says simulated" grep -q "SIMULATED" "$tmp/pcie"
check "says what it does not model" \
	grep -q "not modelled: congestion across nodes, stragglers" "$tmp/pcie"
check "names the network" grep -q "InfiniBand EDR through PCIe 3.0" \
	"$tmp/pcie"
check "one rank has no collective" \
	awk -v c="$(coll "$tmp/pcie" 1)" 'BEGIN { exit !(c == 0) }'
check "two ranks all-reduce" \
	awk -v c="$(coll "$tmp/pcie" 2)" 'BEGIN { exit !(c > 0) }'
check "PCIe takes over 10x NVLink's time" \
	awk -v p="$(coll "$tmp/pcie" 2)" -v n="$(coll "$tmp/nvlink" 2)" \
	'BEGIN { exit !(n > 0 && p > 10 * n) }'
check "a bad rank list is refused" \
	sh -c "! '$BENCH' --ranks 0 >/dev/null 2>&1"
check "an unknown profile is refused" \
	sh -c "! '$BENCH' --profile nope >/dev/null 2>&1"

summary
