#!/bin/sh
# SPDX-License-Identifier: MIT
# test_spdx.sh — every source file and script of the tree says its license
# (MIT, LICENSE) in an SPDX line at its top: the first line of a C file,
# the line after a script's #!.  Ends with a Check-style summary line for
# scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
src=${srcdir:-.}
line='SPDX-License-Identifier: MIT'

for f in $(find "$src/lib" "$src/hints" "$src/include" "$src/tools" \
		"$src/examples" "$src/tests" "$src/bench" \
		\( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -type f); do
	checks=$((checks + 1))
	head -n1 "$f" | grep -q "$line" ||
		fail "$f: no '$line' on its first line"
done
for f in "$src"/scripts/* "$src"/tests/*.sh; do
	[ -f "$f" ] || continue
	checks=$((checks + 1))
	sed -n 2p "$f" | grep -q "$line" ||
		fail "$f: no '$line' after its #! line"
done
# A tree with no files found would pass: it must have found the sources.
[ "$checks" -gt 300 ] || fail "only $checks files found under $src"

summary
