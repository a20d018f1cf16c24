#!/bin/sh
# SPDX-License-Identifier: MIT
# test_not_linked.sh — libtensormm links neither CUPTI nor cuDNN: it
# loads each where first used (lib/base/dynlib.h), so that a program
# that uses neither never loads them.  The shared library has no NEEDED
# entry for either, the static archive no undefined cupti* or cudnn*
# symbol, and tensormm.pc gives a static link neither.  Nor does it link
# MPI or NCCL, which only the data-parallel example uses (issue #26): a
# program that does not use them builds and links as before.  Each check runs
# where its file was built (a --disable-shared build has no .so) and its
# tool is installed; skips (77) when none can.  Ends with a Check-style
# summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
so=$build/lib/.libs/libtensormm.so
archive=$build/lib/.libs/libtensormm.a

# The shared objects a library needs, one a line.
needed() {
	if have readelf; then
		readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
	else
		objdump -p "$1" | awk '$1 == "NEEDED" { print $2 }'
	fi
}

if [ -f "$so" ] && { have readelf || have objdump; }; then
	list=$(needed "$so")
	echo "libtensormm.so needs:" $list
	# The tool read the entries at all: the C library is one.
	checks=$((checks + 1))
	echo "$list" | grep -q '^libc\.so' ||
		fail "no NEEDED entry read from $so"
	checks=$((checks + 1))
	lost=$(echo "$list" | grep -E '^lib(cupti|cudnn|mpi|nccl)')
	[ -z "$lost" ] || fail "libtensormm.so needs" $lost
fi

# A program that does not use MPI (the README's first one) needs neither
# MPI nor NCCL: libtool keeps the real program in .libs/ where the
# build is shared.
hello=$build/examples/.libs/hello
[ -f "$hello" ] || hello=$build/examples/hello
if head -c 4 "$hello" 2>/dev/null | grep -q ELF &&
	{ have readelf || have objdump; }; then
	list=$(needed "$hello")
	checks=$((checks + 1))
	echo "$list" | grep -q '^libc\.so' ||
		fail "no NEEDED entry read from $hello"
	checks=$((checks + 1))
	lost=$(echo "$list" | grep -E '^lib(mpi|nccl)')
	[ -z "$lost" ] || fail "examples/hello needs" $lost
fi

if [ -f "$archive" ] && have nm; then
	# The loader is in the archive: nm read it.
	checks=$((checks + 1))
	nm "$archive" 2>/dev/null | grep -q ' T tmm_dynlib_load$' ||
		fail "no tmm_dynlib_load in $archive"
	checks=$((checks + 1))
	lost=$(nm -u "$archive" 2>/dev/null |
		awk '$1 == "U" && $2 ~ /^(cupti|cudnn|MPI_|PMPI_|nccl)/ { print $2 }' |
		sort -u)
	[ -z "$lost" ] || fail "libtensormm.a calls" $lost "directly"
fi

if [ -f "$build/tensormm.pc" ]; then
	checks=$((checks + 1))
	lost=$(grep -E '^Libs' "$build/tensormm.pc" |
		grep -E -- '-l(cupti|cudnn|mpi|nccl)')
	[ -z "$lost" ] || fail "tensormm.pc links them: $lost"
fi

if [ "$checks" -eq 0 ]; then
	skip "no libtensormm.so, .a or tensormm.pc, or no readelf, objdump" \
	     "or nm: nothing to check"
fi
summary
