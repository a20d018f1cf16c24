#!/bin/sh
# test_man_warnings.sh — every man page formats without a warning from
# man(1).  Skips (77) where man is not installed.  Ends with a Check-style
# summary line for scripts/test.
command -v man >/dev/null 2>&1 || {
	echo "man is not installed (apt-get install man-db)"
	exit 77
}
dir=${srcdir:-.}/man
checks=0
failures=0
for page in libtensormm.3 tensormm.7 tensormm-stat.1; do
	checks=$((checks + 1))
	if [ ! -f "$dir/$page" ]; then
		echo "FAIL: $dir/$page is missing" >&2
		failures=$((failures + 1))
		continue
	fi
	warnings=$(MANWIDTH=80 man --warnings -l "$dir/$page" 2>&1 >/dev/null)
	if [ -n "$warnings" ]; then
		echo "FAIL: man --warnings -l $page:" >&2
		echo "$warnings" >&2
		failures=$((failures + 1))
	fi
done
pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
