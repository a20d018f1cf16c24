#!/bin/sh
# SPDX-License-Identifier: MIT
# test_man_warnings.sh — the man pages as installed: every page in man/
# formats without a warning from man(1) and is installed (dist_man_MANS
# in Makefile.am); every installed program (bin_PROGRAMS) has its page
# in section 1, and every long option its --help prints is on that page;
# every function that include/tensormm.h or include/tensormm_cudnn.h
# exports (TMM_EXPORT) has its page man/<function>.3, itself or a
# ".so man3/<page>.3" link to a page that names the function in NAME and
# declares it in SYNOPSIS.
# Skips (77) where man is not installed.  Ends with a Check-style summary
# line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
have man || skip "man is not installed (apt-get install man-db)"
src=${srcdir:-.}
build=${top_builddir:-.}
dir=$src/man

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

# A link page's ".so man3/x.3" is found from the current directory, as
# man finds it from the top of its tree once installed: pages are
# formatted from a scratch directory whose man1, man3 and man7 are man/.
absdir=$(cd "$dir" && pwd)
make_tmp
tree=$tmp
for sec in 1 3 7; do
	ln -s "$absdir" "$tree/man$sec" || exit 99
done

for path in "$absdir"/*.[1-8]; do
	page=${path##*/}
	checks=$((checks + 1))
	warnings=$(cd "$tree" &&
		   MANWIDTH=80 man --warnings -l "$path" 2>&1 >/dev/null)
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

# The functions a header exports: the name on the line after each line
# that is TMM_EXPORT alone.
exported() {
	awk 'export { if (match($0, /[a-z_0-9]+\(/))
			      print substr($0, RSTART, RLENGTH - 1)
		      export = 0 }
	     /^TMM_EXPORT$/ { export = 1 }' "$@"
}
# The text of section $2 of page $1, from its .SH to the next.
section() {
	awk -v sec="$2" '/^\.SH/ { on = ($2 == sec || $2 == "\"" sec "\"") ; next }
			 on' "$1"
}
headers=$src/include/tensormm.h
[ -f "$src/include/tensormm_cudnn.h" ] &&
	headers="$headers $src/include/tensormm_cudnn.h"
functions=$(exported $headers)
checks=$((checks + 1))
[ "$(echo "$functions" | wc -w)" -ge 20 ] ||
	fail "found only $(echo "$functions" | wc -w) TMM_EXPORT functions in $headers"
for fn in $functions; do
	checks=$((checks + 1))
	page=$dir/$fn.3
	if [ ! -f "$page" ]; then
		fail "$fn is exported but has no man/$fn.3 (a page, or a" \
		     "'.so man3/<page>.3' link to the page that documents it)"
		continue
	fi
	target=$page
	link=$(sed -n '1s/^\.so man3\/\([^ /]*\.3\)$/\1/p' "$page")
	if [ -n "$link" ]; then
		target=$dir/$link
		if [ ! -f "$target" ] || grep -q '^\.so ' "$target"; then
			fail "man/$fn.3 links to man3/$link, which is not a page"
			continue
		fi
	elif grep -q '^\.so ' "$page"; then
		fail "man/$fn.3: a link page is one line, .so man3/<page>.3"
		continue
	fi
	# NAME: "a, b, c \- what they do"; the names before "\-".
	names=$(section "$target" NAME | sed 's/\\-.*//; s/,/ /g')
	case " $(echo $names) " in
	*" $fn "*) ;;
	*) fail "man/${target##*/} (the page of $fn) does not name $fn" \
		"in NAME (it names: $(echo $names))" ;;
	esac
	checks=$((checks + 1))
	section "$target" SYNOPSIS | grep -q "[ *]$fn(" ||
		fail "man/${target##*/} (the page of $fn) does not declare" \
		     "$fn in SYNOPSIS"
done

summary
