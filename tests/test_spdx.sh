#!/bin/sh
# SPDX-License-Identifier: MIT
# test_spdx.sh — every source file and script of the tree says its license
# (MIT, LICENSE) in an SPDX line at its top: the first line of a C file,
# the line after a script's #!.  Ends with a Check-style summary line for
# scripts/test.
src=${srcdir:-.}
line='SPDX-License-Identifier: MIT'
checks=0
failures=0

for f in $(find "$src/lib" "$src/hints" "$src/include" "$src/tools" \
		"$src/examples" "$src/tests" "$src/bench" \
		\( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -type f); do
	checks=$((checks + 1))
	head -n1 "$f" | grep -q "$line" ||
		{ echo "FAIL: $f: no '$line' on its first line" >&2;
		  failures=$((failures + 1)); }
done
for f in "$src"/scripts/* "$src"/tests/*.sh; do
	[ -f "$f" ] || continue
	checks=$((checks + 1))
	sed -n 2p "$f" | grep -q "$line" ||
		{ echo "FAIL: $f: no '$line' after its #! line" >&2;
		  failures=$((failures + 1)); }
done
# A tree with no files found would pass: it must have found the sources.
[ "$checks" -gt 300 ] ||
	{ echo "FAIL: only $checks files found under $src" >&2;
	  failures=$((failures + 1)); }

pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
