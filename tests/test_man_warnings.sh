#!/bin/sh
# test_man_warnings.sh — the man pages as installed: every page in man/
# formats without a warning from man(1) and is installed (dist_man_MANS
# in Makefile.am); every installed program (bin_PROGRAMS) has its page
# in section 1, and every long option its --help prints is on that page.
# Skips (77) where man is not installed.  Ends with a Check-style summary
# line for scripts/test.
command -v man >/dev/null 2>&1 || {
	echo "man is not installed (apt-get install man-db)"
	exit 77
}
src=${srcdir:-.}
build=${top_builddir:-.}
dir=$src/man
checks=0
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# The words of a Makefile.am variable, continuation lines included
# (both "VAR =" and "VAR +=").
am_words() {
	awk -v var="$1" '
		$1 == var && ($2 == "=" || $2 == "+=") {
			on = 1; $1 = ""; $2 = ""
		}
		on { line = $0; sub(/\\$/, "", line); gsub(/[ \t]+/, " ", line)
		     printf "%s ", line
		     if ($0 !~ /\\$/) on = 0 }
	' "$src/Makefile.am"
}
installed=$(am_words dist_man_MANS)
programs=$(am_words bin_PROGRAMS)

for path in "$dir"/*.[1-8]; do
	page=${path##*/}
	checks=$((checks + 1))
	warnings=$(MANWIDTH=80 man --warnings -l "$path" 2>&1 >/dev/null)
	[ -z "$warnings" ] || fail "man --warnings -l $page:
$warnings"
	checks=$((checks + 1))
	case " $installed " in
	*" man/$page "*) ;;
	*) fail "man/$page is not in dist_man_MANS (Makefile.am)" ;;
	esac
done

for prog in $programs; do
	name=${prog##*/}
	page=$dir/$name.1
	checks=$((checks + 1))
	case " $installed " in
	*" man/$name.1 "*) ;;
	*) fail "$prog is installed but man/$name.1 is not"; continue ;;
	esac
	# The page's text with roff's "\-" read as "-".
	text=$(sed 's/\\-/-/g' "$page")
	for opt in $("$build/$prog" --help 2>/dev/null |
		     grep -o -- '--[a-z][a-z-]*' | sort -u); do
		checks=$((checks + 1))
		case $text in
		*"$opt"*) ;;
		*) fail "$name --help has $opt, man/$name.1 does not" ;;
		esac
	done
done

pct=$(( (checks - failures) * 100 / checks ))
echo "$pct%: Checks: $checks, Failures: $failures, Errors: 0"
[ "$failures" -eq 0 ]
