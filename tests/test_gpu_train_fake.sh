#!/bin/sh
# SPDX-License-Identifier: MIT
# test_gpu_train_fake.sh — bench/bench_gpu_train's table, run on the CUDA
# test double: tests/bench_gpu_train_fake is the same program with
# examples/mlp_gpu's own ops (mlp_gpu_train.c), linked with the double's
# cuBLAS and the kernels' host twins (tests/mlp_gpu_twins.c) instead of
# libcublas and nvcc's object, as tests/mlp_gpu_fake is.  A small shape,
# every policy in both modes at one budget, the first race aborting the
# program: every row is there and bit-identical, the figures are numbers,
# and --append writes what stdout shows, after what the file held.  What
# the double cannot tell, the speed, is left to a real GPU
# (scripts/gpu-check).  The ways of mode=uvm (uvm-copy, uvm-prefetch,
# uvm-copy-nokeep) and the runs with liveness=keep (swap-keep, uvm-keep)
# each give their rows, bit-identical.  Skips (77) where the build has no
# cuda backend or no cuBLAS headers.  Ends with a Check-style summary line for
# scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
prog=$build/tests/bench_gpu_train_fake
[ -x "$prog" ] || skip "SKIP: $prog is not built (no CUDA or cuBLAS)"
make_tmp

echo "an earlier chunk" >"$tmp/report.md"
CUDAFAKE_RACES=abort TENSORMM_LOG=error TMM_BENCH_COMMIT=abc1234 \
	"$prog" --shape 64x4x1024 \
	--steps 4 --warmup 2 --budgets 0.3 --append "$tmp/report.md" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "exit status $rc"; cat "$tmp/err" >&2; }

# The header: the device, the commit from the environment, bandwidths.
checks=$((checks + 1))
grep -q '^### custom: width 64, 4 layers, batch 1024$' "$tmp/out" ||
	fail "no header line for the shape"
checks=$((checks + 1))
grep -q '^Device cudafake.*; commit abc1234; pinned copy host to device [0-9.]* GB/s, device to host [0-9.]* GB/s' \
	"$tmp/out" || fail "the device line lacks the device, commit or bandwidths"

# The unconstrained row, then 11 policies x 2 modes, all bit-identical,
# each with numbers in its 11 figure columns.
checks=$((checks + 1))
[ "$(grep -c '^| unconstrained | swap | 90% of free |' "$tmp/out")" -eq 1 ] ||
	fail "no unconstrained row"
checks=$((checks + 1))
rows=$(grep -c '^| [a-z-]* | \(swap\|uvm\) | 30% (' "$tmp/out")
[ "$rows" -eq 22 ] || fail "$rows budgeted rows, expected 22"
checks=$((checks + 1))
same=$(grep -c '| yes |$' "$tmp/out")
[ "$same" -eq 22 ] || fail "$same of 22 rows bit-identical"
for policy in none passive vdnn-conv vdnn-all checkpoint superneurons \
	      capuchin tensile tsplit stream auto; do
	for mode in swap uvm; do
		checks=$((checks + 1))
		grep -q "^| $policy | $mode | 30% (" "$tmp/out" ||
			fail "no row for $policy in mode=$mode"
	done
done
checks=$((checks + 1))
bad=$(grep '^| [a-z-]* | \(swap\|uvm\) |' "$tmp/out" | awk -F'|' '
	{ for (i = 5; i <= 18; i++) {
		if (i == 14)
			continue # the driver column, below
		n = split($i, v, /[ \/]+/)
		for (k = 1; k <= n; k++)
			if (v[k] != "" && v[k] !~ /^[0-9]+(\.[0-9]+)?$/) {
				print; next
			} } }')
[ -z "$bad" ] || fail "rows with a figure that is not a number: $bad"
# The driver's own work: none in swap mode; in mode=uvm not counted, as
# the double's CUPTI refuses profiling by default.
checks=$((checks + 1))
bad=$(grep '^| [a-z-]* | \(swap\|uvm\) |' "$tmp/out" | awk -F'|' '
	($3 == " swap " && $14 != " — ") ||
	($3 == " uvm " && $14 != " not counted ")')
[ -z "$bad" ] || fail "rows whose driver column is wrong: $bad"

# With CUPTI's records, mode=uvm counts the driver's work where the
# counters are asked for (uvm-counters): bytes each way and the fault
# path's time, numbers.  By default (uvm) it does not.
CUDAFAKE_CUPTI=records CUDAFAKE_RACES=abort TENSORMM_LOG=error \
	"$prog" --shape 64x4x1024 --steps 4 --warmup 2 --budgets 0.3 \
	--modes uvm,uvm-counters --policies tensile >"$tmp/counted" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "counted: exit status $rc"; cat "$tmp/err" >&2; }
checks=$((checks + 1))
grep '^| tensile | uvm-counters | 30% (' "$tmp/counted" | awk -F'|' '
	$14 ~ /^ [0-9]+\.[0-9]\/[0-9]+\.[0-9], [0-9]+\.[0-9][0-9] $/ { ok = 1 }
	END { exit !ok }' || fail "no counted driver figures with CUPTI's records"
checks=$((checks + 1))
grep -q '^| tensile | uvm | 30% (.*| not counted |' "$tmp/counted" ||
	fail "mode=uvm counted the driver's work with uvm_counters off"

# --append: the file kept its chunk and gained exactly stdout.
checks=$((checks + 1))
{ echo "an earlier chunk"; cat "$tmp/out"; } | cmp -s - "$tmp/report.md" ||
	fail "--append did not add stdout's tables to the end of the file"

# mode=uvm by each way out, and by copy with uvm_keep=off beside it, and
# both modes with liveness=keep, and the mix of copies and migrations on
# the migrate stream: one row each, bit-identical, the race detector on.
CUDAFAKE_RACES=abort TENSORMM_LOG=error \
	"$prog" --shape 64x4x1024 --steps 4 --warmup 2 --budgets 0.3 \
	--modes uvm-copy,uvm-prefetch,uvm-copy-nokeep,swap-keep,uvm-keep,uvm-nocupti,uvm-counters,uvm-mix \
	--policies tensile,auto >"$tmp/ways" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "ways: exit status $rc"; cat "$tmp/err" >&2; }
for mode in uvm-copy uvm-prefetch uvm-copy-nokeep swap-keep uvm-keep \
	    uvm-nocupti uvm-counters uvm-mix; do
	for policy in tensile auto; do
		checks=$((checks + 1))
		grep -q "^| $policy | $mode | 30% (.*| yes |\$" "$tmp/ways" ||
			fail "no bit-identical row for $policy in $mode"
	done
done

# A slow way out by prefetch (1 GB/s to the host, a tenth of a copy's):
# the library measures it at open, and the bound of a run by prefetch
# counts its bytes out at that rate (1 MB a ms), where by copy they go
# at 10 GB/s.
CUDAFAKE_HOST_PREFETCH_MBPS=1000 CUDAFAKE_RACES=abort TENSORMM_LOG=error \
	"$prog" --shape 64x4x1024 --steps 4 --warmup 2 --budgets 0.3 \
	--modes uvm-copy,uvm-prefetch --policies tensile \
	>"$tmp/slow" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "slow prefetch: exit status $rc"; cat "$tmp/err" >&2; }
# Fields: 12 out MB, 17 bound ms.
bound_ok() {
	awk -F'|' -v mode="$1" -v per_ms="$2" '
		$3 == " " mode " " {
			n++
			want = $12 / per_ms
			if ($17 + 0 < want - 0.06 || $17 + 0 > want + 0.06)
				bad = 1
		}
		END { exit !(n == 1 && !bad) }' "$tmp/slow"
}
checks=$((checks + 1))
bound_ok uvm-prefetch 1 ||
	fail "the bound by prefetch is not its bytes out at 1 GB/s"
checks=$((checks + 1))
awk -F'|' '$3 == " uvm-copy " { n++; if ($17 + 0 >= $12 + 0) bad = 1 }
	END { exit !(n == 1 && !bad) }' "$tmp/slow" ||
	fail "the bound by copy counts its bytes at the prefetch's rate"

# --goals: issue #19's runs only (at 30%, the goal budget of a shape
# other than compute-bound), every one bit-identical, then the goals
# table judged from them: auto against its peers in each mode, uvm over
# swap, uvm with no pressure, and bit-identity over the 12 runs (auto by
# the copy kernel among them, which says what it copied).
CUDAFAKE_RACES=abort TENSORMM_LOG=error \
	"$prog" --shape 64x4x1024 --steps 4 --warmup 2 --goals \
	>"$tmp/goals" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "goals: exit status $rc"; cat "$tmp/err" >&2; }
for cell in "auto | swap | 30%" "tensile | swap | 30%" \
	    "capuchin | swap | 30%" "tsplit | swap | 30%" \
	    "auto | uvm | 30%" "tensile | uvm | 30%" "capuchin | uvm | 30%" \
	    "tsplit | uvm | 30%" "auto | uvm-copy | 30%" \
	    "auto | uvm-counters | 30%" "none | uvm | 200%"; do
	checks=$((checks + 1))
	[ "$(grep -c "^| $cell (.*| yes |\$" "$tmp/goals")" -eq 1 ] ||
		fail "--goals: no single bit-identical row for $cell"
done
checks=$((checks + 1))
[ "$(grep -c '^| auto | uvm-kernel | 30% (.*| yes; copy kernel [0-9.]* MB at [0-9.]* GB/s in, [0-9.]* out, [0-9]* blocks (measured at open) |$' \
	"$tmp/goals")" -eq 1 ] ||
	fail "--goals: no single bit-identical row by the copy kernel"
checks=$((checks + 1))
rows=$(grep -c '^| [a-z-]* | \(swap\|uvm\|uvm-copy\|uvm-counters\|uvm-kernel\) | [0-9]*% (' "$tmp/goals")
[ "$rows" -eq 12 ] || fail "--goals made $rows budgeted runs, not 12"
checks=$((checks + 1))
grep -q "^### Issue #19's goals, from the runs above\$" "$tmp/goals" ||
	fail "--goals printed no goals table"
for goal in "custom 30%: uvm+auto over swap+auto" \
	    "custom 30%, swap: auto against the best of tensile, capuchin, tsplit" \
	    "custom 30%, uvm: auto against the best of tensile, capuchin, tsplit" \
	    "custom, uvm with no pressure (none, 200%)"; do
	checks=$((checks + 1))
	grep "^| $goal | " "$tmp/goals" |
		grep -q '| \(yes\|\*\*no\*\*\) |$' ||
		fail "--goals: no judged row for \"$goal\""
done
checks=$((checks + 1))
grep -q '^| every run bit-identical to the unconstrained one | 12 of 12 | all | yes |$' \
	"$tmp/goals" || fail "--goals: bit-identity not 12 of 12"
checks=$((checks + 1))
grep -q '^[0-9][0-9]* goal(s) missed or not measured[.]$' "$tmp/goals" ||
	fail "--goals: no count of the goals missed"
# Below it, auto by the copy way, with the counters on and by the copy
# kernel, against uvm's limits (a custom shape has no cell limit, so
# swap+auto's alone).
for way in uvm-copy uvm-counters uvm-kernel; do
	checks=$((checks + 1))
	grep "^| custom 30% | $way | [0-9.]*x (.*, no cell limit | [0-9.]*x | " \
		"$tmp/goals" | grep -q '| \(yes\|\*\*no\*\*\) |$' ||
		fail "--goals: no row for auto by $way below the goals"
done

# --deadline: past it no run starts, and what would have run says so;
# the goals are printed all the same, the compute-bound shape's named
# cells "not run" (a deadline of 0: not even the reference runs).
CUDAFAKE_RACES=abort TENSORMM_LOG=error \
	"$prog" --shape compute --goals --deadline 0 \
	>"$tmp/late" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "deadline: exit status $rc"; cat "$tmp/err" >&2; }
checks=$((checks + 1))
grep -q '^| unconstrained | swap | 90% | .*| not run: past --deadline |$' \
	"$tmp/late" || fail "--deadline 0: the reference run is not said not run"
checks=$((checks + 1))
grep -q '^1 run(s) not made: past --deadline (0 s)[.]$' "$tmp/late" ||
	fail "--deadline 0: no count of the runs not made"
for goal in "compute-bound 40%: swap+auto" "compute-bound 40%: uvm+auto"; do
	checks=$((checks + 1))
	grep -q "^| $goal | not run | " "$tmp/late" ||
		fail "--deadline 0: \"$goal\" is not said not run"
done
checks=$((checks + 1))
"$prog" --deadline soon >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--deadline soon exited with $rc, not 2"

# A wrong option is refused with status 2, as is --goals with runs
# chosen by hand.
checks=$((checks + 1))
"$prog" --modes swap,gpu >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--modes swap,gpu exited with $rc, not 2"
checks=$((checks + 1))
"$prog" --goals --budgets 0.4 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--goals --budgets exited with $rc, not 2"
checks=$((checks + 1))
grep -q 'leave out --budgets' "$tmp/err" ||
	fail "--goals --budgets did not say which option to leave out"

summary
