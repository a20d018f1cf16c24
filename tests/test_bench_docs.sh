#!/bin/sh
# SPDX-License-Identifier: MIT
# test_bench_docs.sh — scripts/bench-docs, the generator of
# docs/benchmarks.md: each directive is replaced by what it names, the
# page says which commit and machine made it, a failing command or a bad
# directive leaves the old page as it was, and the caller's TENSORMM_*
# variables do not reach the commands.  Runs on made templates, not on
# the real benchmarks (those take minutes).  Ends with a Check-style
# summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
src=$(cd "${srcdir:-.}" && pwd)
gen="$src/scripts/bench-docs"
make_tmp

cat >"$tmp/other.md" <<'EOF'
# Other
## Wanted
kept line
### Nested
nested line
## Next
not kept
EOF
cat >"$tmp/good.md.in" <<EOF
# Title
Some prose.
@run text printf 'plain output\n'
## Section
@run md printf '# Out\n| a | b |\n|---|---|\n| 1 | 2 |\n'
@run text echo "env:\${TENSORMM_BUDGET:-unset}"
@include $tmp/other.md ## Wanted
End.
EOF

TENSORMM_BUDGET=1GiB "$gen" --no-build --template "$tmp/good.md.in" \
	--out "$tmp/page.md" 2>"$tmp/err"
check "a good template is made into a page" test $? -eq 0
check "the title stays first" sh -c "head -n1 '$tmp/page.md' | grep -qx '# Title'"
check "the page names the commit" grep -q 'at commit `[0-9a-f]' "$tmp/page.md"
check "the page names its load" grep -q 'load average' "$tmp/page.md"
check "text output is preformatted under its command" \
	grep -qx '    plain output' "$tmp/page.md"
check "the command is shown" grep -qx "    \$ printf 'plain output\\\\n'" \
	"$tmp/page.md"
check "md output is copied as markdown" grep -qx '| 1 | 2 |' "$tmp/page.md"
check "md output's headings go below the template's" \
	grep -qx '### Out' "$tmp/page.md"
check "the caller's TENSORMM_* variables do not reach a command" \
	grep -qx '    env:unset' "$tmp/page.md"
check "an include copies its section" grep -qx 'kept line' "$tmp/page.md"
check "an include copies its subsections" grep -qx 'nested line' \
	"$tmp/page.md"
check "an include stops at the next heading of its level" \
	sh -c "! grep -q 'not kept' '$tmp/page.md'"
check "the prose is kept" grep -qx 'End.' "$tmp/page.md"

# Failures keep the old page.
cp "$tmp/page.md" "$tmp/before.md"
printf '# T\n@run text false\n' >"$tmp/fails.md.in"
"$gen" --no-build --template "$tmp/fails.md.in" --out "$tmp/page.md" \
	2>"$tmp/err"
check "a failing command fails the run" test $? -eq 1
check "a failing command is named" grep -q "'false' failed" "$tmp/err"
check "a failing command leaves the old page" cmp -s "$tmp/page.md" \
	"$tmp/before.md"

printf '# T\n@frobnicate\n' >"$tmp/bad.md.in"
"$gen" --no-build --template "$tmp/bad.md.in" --out "$tmp/page.md" \
	2>"$tmp/err"
check "an unknown directive fails the run" test $? -eq 1
check "an unknown directive is named" grep -q 'unknown directive: @frob' \
	"$tmp/err"
check "an unknown directive leaves the old page" cmp -s "$tmp/page.md" \
	"$tmp/before.md"

printf '# T\n@include %s ## Absent\n' "$tmp/other.md" >"$tmp/noinc.md.in"
"$gen" --no-build --template "$tmp/noinc.md.in" --out "$tmp/page.md" \
	2>"$tmp/err"
check "a missing section fails the run" test $? -eq 1
check "a missing section leaves the old page" cmp -s "$tmp/page.md" \
	"$tmp/before.md"
check "no temporary page is left behind" \
	sh -c "! ls -A '$tmp' | grep -q '^\\.bench-docs'"

check "--list prints the commands of the real template" \
	sh -c "'$gen' --list | grep -q tensormm-bench"

summary
