#!/bin/sh
# SPDX-License-Identifier: MIT
# test_layers.sh — the tree keeps its layers: scripts/check-layers over
# the sources and the built objects, with the debts still to be paid off
# listed in tests/layer_debts.txt.  First the checker itself is held to a
# small made-up tree with one violation of each kind, so that a checker
# that stopped seeing them cannot pass.  Ends with a Check-style summary
# line.
. "$(dirname "$0")/lib.sh" || exit 99
have python3 || skip "python3 is not installed (apt-get install python3)"
src=${srcdir:-.}
layers="python3 $src/scripts/check-layers"

make_tmp
fixture=$tmp
mkdir -p "$fixture/lib/base" "$fixture/lib/core" "$fixture/lib/exec" \
	"$fixture/hints"
# Upward: base includes core.
printf '#include "lib/core/b.h"\n' >"$fixture/lib/base/a.c"
: >"$fixture/lib/core/b.h"
# A cycle within a layer: exec/x and exec/y include each other.
printf '#include "y.h"\n' >"$fixture/lib/exec/x.c"
: >"$fixture/lib/exec/x.h"
printf '#include "x.h"\n' >"$fixture/lib/exec/y.c"
: >"$fixture/lib/exec/y.h"
# Past the planner: lib/ includes a planner's header other than planner.h.
printf '#include "hints/analysis.h"\n#include "hints/planner.h"\n' \
	>"$fixture/lib/exec/g.c"
: >"$fixture/hints/analysis.h"
: >"$fixture/hints/planner.h"
expected='cycle lib/exec/x lib/exec/y
past-planner lib/exec/g -> hints/analysis
up lib/base/a -> lib/core/b'
found=$($layers --top "$fixture" --build "$fixture/none" --list | sort)
if [ "$found" != "$expected" ]; then
	echo "FAIL: check-layers on a tree with known violations found:" >&2
	echo "$found" >&2
	echo "expected:" >&2
	echo "$expected" >&2
	exit 1
fi
if $layers --top "$fixture" --build "$fixture/none" >/dev/null; then
	echo "FAIL: check-layers passed a tree with violations" >&2
	exit 1
fi
echo "check-layers self-test: the three kinds of violation are found"

# Not exec: the shell stays to remove the fixture at exit, and exits with
# the checker's status, its summary line printed.
$layers --build "${top_builddir:-.}" --debts "$src/tests/layer_debts.txt"
