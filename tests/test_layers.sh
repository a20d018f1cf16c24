#!/bin/sh
# test_layers.sh — the tree keeps its layers: scripts/check-layers over
# the sources and the built objects, with the debts still to be paid off
# listed in tests/layer_debts.txt.  Ends with a Check-style summary line.
command -v python3 >/dev/null 2>&1 || {
	echo "python3 is not installed (apt-get install python3)"
	exit 77
}
src=${srcdir:-.}
exec python3 "$src/scripts/check-layers" --build "${top_builddir:-.}" \
	--debts "$src/tests/layer_debts.txt"
