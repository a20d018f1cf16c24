#!/bin/sh
# SPDX-License-Identifier: MIT
# test_calibrate.sh — the short calibration: every cell marked faithful
# in bench/paper_figures.c keeps its gain within +-35% of its paper's
# (tensormm-bench --calibrate=short exits 0 and reports each table's
# faithful cells all within, none with a reason why not), and the
# assertion bites: with the searches capped far below the papers'
# batches (--max-batch 48, a drift of every cell) it exits 1 and names a
# cell.  Bad arguments exit 2.  Ends with a
# Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
B=${top_builddir:-.}
BENCH=$B/bench/tensormm-bench
make_tmp

# After a failed check, what tensormm-bench said, its warnings left out.
check_failed() {
	grep -v 'warn\]' "$tmp/err" | sed 's/^/  stderr: /' >&2
}

# run EXPECTED_STATUS ARGS...: runs tensormm-bench, keeping its output.
run() {
	want=$1
	shift
	"$BENCH" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || {
		echo "  tensormm-bench $*: exit $got, expected $want" >&2
		return 1
	}
}

# Each table's summary line says "K of N faithful cells": all within.
all_within() {
	n=$(grep -c 'faithful cells within' "$tmp/out")
	[ "$n" -eq 3 ] || { echo "  $n table summaries, expected 3" >&2; return 1; }
	grep 'faithful cells within' "$tmp/out" |
		awk '{ for (i = 1; i < NF; i++) if ($(i + 1) == "of") {
			if ($i != $(i + 2) || $i == 0) bad = 1 } }
		     END { exit bad }'
}

# A cell marked faithful holds the paper's gain, so it carries no reason
# why not (paper_figures.c's notes could set both).
faithful_without_reason() {
	awk -F'|' '/^\| / && $2 !~ /^ model/ {
			rows++
			if ($12 ~ /yes/ && $13 ~ /[^ ]/) bad = 1 }
		   END { exit bad || !rows }' "$tmp/out"
}

check "short calibration passes" run 0 --calibrate=short
check "every faithful cell within" all_within
check "no cell reported outside" sh -c "! grep -q '\*\*no\*\*' '$tmp/out'"
check "no faithful cell gives a reason why not" faithful_without_reason

check "a drift fails" run 1 --calibrate=short --max-batch 48
check "the drifted cell is named" \
	grep -q 'faithful cell capuchin-t2 vgg16, TF-ori' "$tmp/err"

check "bad form refused" run 2 --calibrate=most
check "bad form named" grep -q "neither full nor short" "$tmp/err"
check "bad tolerance refused" run 2 --calibrate --tolerance -1

summary
