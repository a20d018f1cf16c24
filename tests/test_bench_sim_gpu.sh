#!/bin/sh
# SPDX-License-Identifier: MIT
# test_bench_sim_gpu.sh — bench/bench_sim_gpu --model runs one model of
# the zoo in both modes instead of issue #19's two shapes, and its goals
# table holds uvm+auto to swap+auto for that model; a model the zoo does
# not have, a bad batch, or a model with a shape, is refused with exit
# status 2 and a message that says what to give.  A model whose
# convolutions pick an algorithm prints superneurons in its own
# framework and in auto's, and auto in SuperNeurons', but the goals
# count each policy once; the MLP shapes, with nothing to pick, print
# superneurons once.  A budget above 1 runs with no pressure, beside
# the H200's figure; one above 4 is refused.  A small batch of ResNet-50
# (seconds).
# Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
bench="$build/bench/bench_sim_gpu"
make_tmp

"$bench" --model resnet50 --batch 4 --modes swap,uvm --budgets 0.5 \
	>"$tmp/out" 2>"$tmp/err"
check "a zoo model runs in both modes" test $? -eq 0
check_failed() { cat "$tmp/err" "$tmp/out" >&2; }
check "its swap table is there" \
	grep -q '^### resnet50, batch 4, mode=swap' "$tmp/out"
check "its uvm table is there" \
	grep -q '^### resnet50, batch 4, mode=uvm' "$tmp/out"
check "auto has a row at 50% in it" grep -q '^| auto | 50% | [0-9]' "$tmp/out"
check "uvm+auto is judged against swap+auto" \
	grep -q '^| resnet50 50%: uvm+auto over swap+auto | [0-9.]*x' "$tmp/out"
check "issue #19's shapes did not run" \
	sh -c "! grep -q 'compute shape' '$tmp/out'"
check "superneurons has a row in its own framework" \
	grep -q "^| superneurons, its workspaces | 50% | [0-9]" "$tmp/out"
check "and one in auto's" \
	grep -q "^| superneurons, TensorFlow's workspaces | 50% | [0-9]" \
	"$tmp/out"
check "auto has a row in SuperNeurons' framework" \
	grep -q "^| auto, SuperNeurons' workspaces | 50% | [0-9]" "$tmp/out"
check "the goals judge auto against the other policies" \
	grep -q 'auto against the best of the 9 other policies' "$tmp/out"
check "counting each policy once, in one framework" \
	sh -c "grep 'auto against the best of' '$tmp/out' |
		grep -qv 'best of the 9 other policies'; test \$? -eq 1"
check_failed() { :; }

"$bench" --shape transfer --budgets 0.3 >"$tmp/out" 2>"$tmp/err"
check "the transfer-bound shape runs" test $? -eq 0
check_failed() { cat "$tmp/err" "$tmp/out" >&2; }
check "its superneurons has one row: the MLP picks no algorithm" \
	test "$(grep -c '^| superneurons' "$tmp/out")" -eq 1
check_failed() { :; }

# Above 1, no pressure: the H200's figure is beside policy none at 200%,
# and no run moves anything (x 1.00 in lockstep and ahead).
"$bench" --shape compute --modes uvm --budgets 2 >"$tmp/out" 2>"$tmp/err"
check "a budget of twice the peak runs" test $? -eq 0
check "its none row runs at the unconstrained step, beside the H200's" \
	grep -q -E '^\| none \| 200% \| [0-9.]+ \| 1\.00 \| [0-9.]+ \| 1\.00 \| 0 \| 0 \| 1\.00 \| 1\.02 \|$' \
	"$tmp/out"
"$bench" --budgets 5 >"$tmp/out" 2>"$tmp/err"
check "a budget above 4 is refused with 2" test $? -eq 2
check "the refusal says the range" grep -q 'at most 4' "$tmp/err"

# uvm-mix beside uvm in one run: by mix, uvm+auto at compute 40% runs
# under its step by copy (1.37x against 1.45x when written), the copies
# that fit gone to the migrate engine.
"$bench" --shape compute --modes uvm,uvm-mix --budgets 0.4 >"$tmp/out" \
	2>"$tmp/err"
check "uvm and uvm-mix run side by side" test $? -eq 0
check "the mix's table is headed by its way" \
	grep -q 'mode=uvm,uvm_swap_path=mix, h200' "$tmp/out"
check "auto by mix beats auto by copy" awk -F'|' '
	/^### / { mix = /uvm_swap_path=mix/ }
	$2 == " auto " && $3 == " 40% " { x[mix] = $7 + 0; n++ }
	END { exit !(n == 2 && x[1] > 0 && x[1] < x[0]) }' "$tmp/out"

# By the copy kernel (uvm_copier=kernel) the simulator's copies hold no
# host: uvm+auto at compute 40% runs at its bound, the copies queued
# (1.00x when written; at the tunables' defaults the kernel moves at the
# copy engines' rate and takes no multiprocessors: what a GPU could
# reach at best).
"$bench" --shape compute --modes uvm,uvm-kernel --budgets 0.4 \
	>"$tmp/out" 2>"$tmp/err"
check "uvm and uvm-kernel run side by side" test $? -eq 0
check "auto by the copy kernel runs at its bound, under auto by copy" \
	awk -F'|' '
	/^### / { k = /uvm_copier=kernel/ }
	$2 == " auto " && $3 == " 40% " { x[k] = $7 + 0; b[k] = $10 + 0; n++ }
	END { exit !(n == 2 && x[1] > 0 && x[1] < x[0] &&
		     x[1] <= 1.02 * b[1]) }' "$tmp/out"
# --kernel-grid: uvm+auto by the copy kernel at rates and shares of
# compute no GPU has measured, beside its peers, judged on the twin and
# by the forecast alone (as on a GPU).  The transfer-bound
# shape alone (seconds).  At the copy engines' rate and no share it
# meets the goals; at the largest share the step grows as the rate
# falls, and at either rate as the share grows (with no share, the
# simulated transfer-bound step hides even the slowest kernel).
"$bench" --kernel-grid --shape transfer >"$tmp/out" 2>"$tmp/err"
check "the copy kernel's grid runs" test $? -eq 0
check_failed() { cat "$tmp/err" "$tmp/out" >&2; }
check "its peers are beside it" \
	grep -q 'swap+auto [0-9.]*x; uvm+auto by the runtime.s held copies [0-9.]*x, by mix [0-9.]*x' \
	"$tmp/out"
check "two tables, on the twin and by the forecast alone" awk '
	/^Auto judging its plans on the twin/ { t++ }
	/^Auto by its forecast alone, as on a GPU \(auto_twin=off\)/ { f++ }
	END { exit !(t == 1 && f == 1) }' "$tmp/out"
check "in each a row per rate, a column per share" awk -F'|' '
	/^\| [0-9.]+/ { n++; if (NF != 7) bad = 1 }
	END { exit !(n == 8 && !bad) }' "$tmp/out"
check "at the copy engines' rate and no share, the goals are met" \
	test "$(grep -c "^| [0-9.]* (the copy engines') | \*\*1\.0[0-2] / " \
		"$tmp/out")" -eq 2
check "slower rates and larger shares cost more, in both" awk -F'|' '
	function x(c) { split(c, p, "/"); gsub(/[* ]/, "", p[1]);
			return p[1] + 0 }
	/^\| [0-9.]+/ { r++; for (c = 3; c <= 6; c++) v[r, c] = x($c) }
	END { for (t = 0; t <= 4; t += 4)
		if (!(v[t + 4, 6] > v[t + 1, 6] && v[t + 1, 6] > v[t + 1, 3] &&
		      v[t + 4, 6] > v[t + 4, 3]))
			exit 1
	      exit !(r == 8) }' "$tmp/out"
check_failed() { :; }
"$bench" --kernel-grid --model resnet50 >"$tmp/out" 2>"$tmp/err"
check "the grid with a model is refused with 2" test $? -eq 2

"$bench" --modes uvm,mix >"$tmp/out" 2>"$tmp/err"
check "an unknown mode is refused with 2" test $? -eq 2
check "the refusal lists the modes" \
	grep -q 'swap, uvm, uvm-mix and uvm-kernel' "$tmp/err"

"$bench" --model nosuchnet >"$tmp/out" 2>"$tmp/err"
check "an unknown model is refused with 2" test $? -eq 2
check "the refusal says where the names are" \
	grep -q 'nosuchnet.*tensormm-bench --models list' "$tmp/err"
"$bench" --model resnet50 --shape compute >"$tmp/out" 2>"$tmp/err"
check "a model and a shape together are refused with 2" test $? -eq 2
check "the refusal says to give one" grep -q 'one or the other' "$tmp/err"
"$bench" --model resnet50 --batch 0 >"$tmp/out" 2>"$tmp/err"
check "a batch of 0 is refused with 2" test $? -eq 2
check "the refusal names the option" grep -q -- '--batch 0' "$tmp/err"

summary
