#!/bin/sh
# SPDX-License-Identifier: MIT
# test_hello.sh — the README's first program (examples/hello.c) builds
# against the public header and library alone, and trains to the answer
# it prints, and is the program the README shows.  Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}

checks=$((checks + 1))
out=$(TENSORMM_LOG=error "$build/examples/hello" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "examples/hello exited with $rc"
checks=$((checks + 1))
case $out in
*"w[0] = 90 (expected 90)"*) ;;
*) fail "examples/hello did not print w[0] = 90" ;;
esac
# Under the budget, the library had to move tensors: the statistics say so.
checks=$((checks + 1))
case $out in
*"budget 12.00 MiB"*) ;;
*) fail "examples/hello did not run under its 12 MiB budget" ;;
esac

# The README shows the program whole: it must be this one.
checks=$((checks + 1))
src=${srcdir:-.}
awk '/^## A first program/ { on = 1 } on && code && /^```$/ { exit }
     on && code { print } on && /^```c$/ { code = 1 }' "$src/README.md" |
	cmp -s - "$src/examples/hello.c" ||
	fail "README.md's first program differs from examples/hello.c"

summary
