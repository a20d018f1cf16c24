#!/bin/sh
# test_hello.sh — the README's first program (examples/hello.c) builds
# against the public header and library alone, and trains to the answer
# it prints.  Ends with a Check-style summary line for scripts/test.
build=${top_builddir:-.}
checks=0
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

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

pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
