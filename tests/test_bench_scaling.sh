#!/bin/sh
# SPDX-License-Identifier: MIT
# test_bench_scaling.sh — bench/bench_scaling, the data-parallel scaling
# table (issue 26 §5): it says its figures are simulated and what it does
# not model, one rank has no collective, two ranks all-reduce, and the
# all-reduce takes far longer on a PCIe 3.0 node's network (11.69 GB/s)
# than on NVLink 4 (450 GB/s); the exposed collective time, measured in
# the same run, lies between 0 and the collectives' time; no step beats
# its lower bound, the reach column says "no" exactly where the bound
# exceeds the goal, and ZeRO-1 makes a rank need less.  A small MLP batch
# keeps it to seconds.  Where a rank's weights do not fit (4 ranks at 30%
# of the compute-bound MLP's peak), stream's plan beats none's, which
# leaves them to passive mode, and auto's is no slower than stream's.
# ResNet-50 at 4 ranks and 30% trains faster with offload_idle than
# without.  Optimizer steps held back a bucket hide more of the
# all-reduce than steps run where the MLP has them (--update-lag 0).
# Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
B=${top_builddir:-.}
BENCH=$B/bench/bench_scaling
make_tmp

# The coll_ms column (4th) of the row of `ranks` ranks, from file $1.
coll() { awk -v n="$2" '$1 == n { print $4; exit }' "$1"; }

# Every row of file $1 has column $2 (1-based) above ($3 ">") or at
# least ($3 ">=") column $4, and there is at least one row.
rows_hold() {
	awk -v a="$2" -v op="$3" -v b="$4" '
		/^#/ || NF < 14 { next }
		{ rows++; x = $a + 0; y = $b + 0
		  if (op == ">=" && !(x >= y)) bad++
		  if (op == ">" && !(x > y)) bad++ }
		END { exit !(rows > 0 && bad == 0) }' "$1"
}

# Every row of file $1 has column $2 at least 0, and there is a row.
rows_nonnegative() {
	awk -v a="$2" '/^#/ || NF < 14 { next }
		{ rows++; if (!($a + 0 >= 0)) bad++ }
		END { exit !(rows > 0 && bad == 0) }' "$1"
}

# The columns: 3 step_ms, 4 coll_ms, 5 exp_ms, 7 bound_ms, 8 goal_ms,
# 12 need_MiB, 13 z1_step_ms, 14 z1_need_MiB, 15 reach.

# The exp_ms column (5th) of the row of `ranks` ranks, from file $1.
exposed() { awk -v n="$2" '$1 == n { print $5; exit }' "$1"; }

# Every row of file $1 says in its reach column "no" where bound > goal,
# else "met" where step <= goal, else "open".
reach_holds() {
	awk '/^#/ || NF < 15 { next }
		{ rows++
		  want = $7 > $8 ? "no" : ($3 <= $8 ? "met" : "open")
		  if ($15 != want) bad++ }
		END { exit !(rows > 0 && bad == 0) }' "$1"
}

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
check "says how exp is measured" grep -q "^# exp: compute waiting for" \
	"$tmp/pcie"
check "says how the bound is got" grep -q "^# bound: .*Belady over" \
	"$tmp/pcie"
check "the ring on PCIe counts in the bound" \
	grep -q "plus the ring's, which crosses PCIe" "$tmp/pcie"
check "no exposed collective time below 0" rows_nonnegative "$tmp/pcie" 5
check "no exposed collective time below 0 (NVLink)" \
	rows_nonnegative "$tmp/nvlink" 5
check "exposed collective time within the collectives'" \
	rows_hold "$tmp/pcie" 4 ">=" 5
check "exposed collective time within the collectives' (NVLink)" \
	rows_hold "$tmp/nvlink" 4 ">=" 5
# With --update-lag 0 the MLP updates each layer as soon as its
# gradients are ready, and waits for their all-reduce at once; held
# back a bucket (the default), the all-reduce hides behind the next
# bucket's backward.
"$BENCH" --models mlp_compute --batch 64 --ranks 1,2 --budgets 50 \
	--iterations 2 --profile p100-pcie3-16g --update-lag 0 \
	>"$tmp/nolag" 2>"$tmp/err"
check "says where the optimizer steps run" \
	grep -q "^# update lag 1: an optimizer step" "$tmp/pcie"
check "holding updates back a bucket hides more of the all-reduce" \
	awk -v l="$(exposed "$tmp/pcie" 2)" -v z="$(exposed "$tmp/nolag" 2)" \
	'BEGIN { exit !(l >= 0 && z > 0 && l < z) }'
check "a bad update lag is refused" \
	sh -c "! '$BENCH' --update-lag 9 >/dev/null 2>&1"
check "two ranks on PCIe wait for their all-reduce" \
	awk -v e="$(exposed "$tmp/pcie" 2)" 'BEGIN { exit !(e > 0) }'
check "no step is below its lower bound" rows_hold "$tmp/pcie" 3 ">=" 7
check "no step is below its lower bound (NVLink)" \
	rows_hold "$tmp/nvlink" 3 ">=" 7
check "reach follows bound, goal and step" reach_holds "$tmp/pcie"
check "reach follows bound, goal and step (NVLink)" reach_holds "$tmp/nvlink"
check "the goal is a positive step time" awk '
	!/^#/ && NF >= 14 { n++; if (!($8 > 0)) bad++ }
	END { exit !(n > 0 && !bad) }' "$tmp/pcie"
check "one rank needs the same with ZeRO-1" \
	awk '$1 == 1 && NF >= 14 { exit !($12 == $14) }' "$tmp/pcie"
check "two ranks need less with ZeRO-1" \
	awk '$1 == 2 && NF >= 14 { exit !($14 < $12) }' "$tmp/pcie"
# The step_ms of the 4-rank row of the command "$@".
step4() {
	"$@" 2>"$tmp/err" | awk '$1 == 4 && NF >= 14 { print $3 }'
}
# The MLP's step at 4 ranks and 30% under policy $1.
weights_step() {
	step4 "$BENCH" --models mlp_compute --batch 2048 --ranks 4 \
		--budgets 30 --iterations 3 --profile h100-sxm5-pcie5-80g \
		--policy "$1"
}
none_ms=$(weights_step none)
stream_ms=$(weights_step stream)
auto_ms=$(weights_step auto)
check "stream's weights plan beats passive mode's ($stream_ms < $none_ms ms)" \
	awk -v s="$stream_ms" -v n="$none_ms" \
	'BEGIN { exit !(s > 0 && n > 0 && s < n) }'
check "auto is no slower than stream ($auto_ms <= $stream_ms ms)" \
	awk -v a="$auto_ms" -v s="$stream_ms" \
	'BEGIN { exit !(a > 0 && s > 0 && a <= s) }'
# ResNet-50 at 4 ranks and 30%: with offload_idle (its default, auto)
# policy auto may also pick Capuchin's plan with idle state swapped out,
# so its step is no longer than with offload_idle=off, and there it is
# shorter (docs/scaling.md: 277.1 to 222.5 ms, simulated).
resnet_step() {
	step4 env TENSORMM_OFFLOAD_IDLE="$1" "$BENCH" --models resnet50 \
		--batch 256 --ranks 4 --budgets 30 --iterations 3
}
idle_ms=$(resnet_step auto)
plain_ms=$(resnet_step off)
check "offload_idle shortens ResNet-50's step ($idle_ms < $plain_ms ms)" \
	awk -v i="$idle_ms" -v p="$plain_ms" \
	'BEGIN { exit !(i > 0 && p > 0 && i < p) }'
check "a bad rank list is refused" \
	sh -c "! '$BENCH' --ranks 0 >/dev/null 2>&1"
check "an unknown profile is refused" \
	sh -c "! '$BENCH' --profile nope >/dev/null 2>&1"

summary
