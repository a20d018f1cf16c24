#!/bin/sh
# SPDX-License-Identifier: MIT
# test_static_link.sh — a program links libtensormm.a with the flags that
# the installed tensormm.pc gives (issue #23): the build is installed into
# a temporary DESTDIR, examples/hello.c is compiled with `pkg-config
# --static --cflags --libs tensormm`, its -ltensormm taken as
# libtensormm.a, and the program must need no libtensormm.so, run, and
# print the answer.  Every library that libtool recorded for the static
# library (the .la's dependency_libs) must be in Libs.private, since that
# is where a static link learns of them.  Where every library of
# Libs.private has its .a here and the compiler links -static at all, the
# program is linked fully -static too (in practice a build without CUDA:
# the CUDA libraries it names are linked shared).
# Skips (77) where pkg-config is not installed, or where configure was
# told --disable-static.  Ends with a Check-style summary line for
# scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
pkg_config=${PKG_CONFIG:-pkg-config}
have "$pkg_config" ||
	skip "$pkg_config is not installed (apt-get install pkg-config): the .pc file cannot be read"
src=$(cd "${srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
# A build configured without the archive has nothing to link; one that
# should have it and lacks it fails below.
if "$build/libtool" --features 2>/dev/null | grep -q 'disable static'; then
	skip "configured with --disable-static: no libtensormm.a to link"
fi
cc=${CC:-cc}
make_tmp
root=$tmp/root

# What the library's Makefile installs, as a packager installs it.
checks=$((checks + 1))
if ! ${MAKE:-make} -C "$build" install DESTDIR="$root" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	fail "make install DESTDIR=... failed"
	summary
fi
pc=$(find "$root" -name tensormm.pc | head -n 1)
archive=$(find "$root" -name libtensormm.a | head -n 1)
header=$(find "$root" -name tensormm.h | head -n 1)
checks=$((checks + 1))
if [ -z "$pc" ] || [ -z "$archive" ] || [ -z "$header" ]; then
	fail "the install lacks tensormm.pc, libtensormm.a or tensormm.h" \
	     "(is the static library disabled? configure --enable-static)"
	summary
fi
libdir=${archive%/*}

# The .pc names the configured prefix; under DESTDIR its files are
# elsewhere, so its two directories are pointed at them.
pkg() {
	PKG_CONFIG_PATH=${pc%/*} "$pkg_config" \
		--define-variable=libdir="$libdir" \
		--define-variable=includedir="${header%/*}" "$@" tensormm
}
cflags=$(pkg --cflags) || fail "pkg-config --cflags tensormm failed"
libs=$(pkg --static --libs) || fail "pkg-config --static --libs tensormm failed"
echo "pkg-config --static --cflags --libs: $cflags $libs"

# libtool's own list of what libtensormm.a needs, against the .pc's.
la=$libdir/libtensormm.la
if [ -f "$la" ]; then
	deps=$(sed -n "s/^dependency_libs='\(.*\)'$/\1/p" "$la")
	for d in $deps; do
		case $d in
		-l*)
			checks=$((checks + 1))
			case " $libs " in
			*" $d "*) ;;
			*) fail "libtensormm.a needs $d (libtensormm.la), which tensormm.pc does not give" ;;
			esac
			;;
		esac
	done
fi

# -l:libtensormm.a makes the linker take the archive although the .so
# lies beside it; everything else is the .pc's, in its order.
static_libs=
for w in $libs; do
	[ "$w" = -ltensormm ] && w=-l:libtensormm.a
	static_libs="$static_libs $w"
done
checks=$((checks + 1))
# shellcheck disable=SC2086 # the flags are words
if ! $cc $CFLAGS "$src/examples/hello.c" $cflags -o "$tmp/hello" \
	$LDFLAGS $static_libs >"$tmp/cc.log" 2>&1; then
	cat "$tmp/cc.log" >&2
	fail "hello.c does not link against libtensormm.a with the .pc's flags"
	summary
fi

checks=$((checks + 1))
if have readelf; then
	needed=$(readelf -d "$tmp/hello" | grep NEEDED)
else
	needed=$(objdump -p "$tmp/hello" | grep NEEDED)
fi
echo "$needed"
case $needed in
*libtensormm*) fail "the program needs libtensormm.so: it was not linked statically" ;;
esac

run_hello() {
	checks=$((checks + 1))
	out=$(TENSORMM_LOG=error "$1" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep '^w\[0\]'
	[ "$rc" -eq 0 ] || fail "$2 exited with $rc"
	checks=$((checks + 1))
	case $out in
	*"w[0] = 90 (expected 90)"*) ;;
	*) echo "$out" >&2; fail "$2 did not print w[0] = 90" ;;
	esac
}
run_hello "$tmp/hello" "hello linked with libtensormm.a"

# Fully -static, where this machine can: every -l of the .pc has its .a
# in the .pc's -L directories or the compiler's, and the compiler (with
# these CFLAGS: a sanitizer build cannot) links a -static program.
missing=
for w in $libs; do
	case $w in
	-ltensormm) ;;
	-l*)
		name=lib${w#-l}.a
		found=$($cc $CFLAGS -print-file-name="$name")
		[ "$found" != "$name" ] && continue
		for d in $libs; do
			case $d in -L*) [ -f "${d#-L}/$name" ] && found=${d#-L}/$name ;; esac
		done
		[ "$found" != "$name" ] || missing="$missing $name"
		;;
	esac
done
echo 'int main(void) { return 0; }' >"$tmp/probe.c"
if [ -n "$missing" ]; then
	echo "no fully static link: no$missing here"
# shellcheck disable=SC2086
elif ! $cc $CFLAGS -static "$tmp/probe.c" -o "$tmp/probe" $LDFLAGS \
	>/dev/null 2>&1; then
	echo "no fully static link: $cc $CFLAGS cannot link a -static program here"
else
	checks=$((checks + 1))
	# shellcheck disable=SC2086
	if ! $cc $CFLAGS -static "$src/examples/hello.c" $cflags \
		-o "$tmp/hello-static" $LDFLAGS $libs >"$tmp/cc.log" 2>&1; then
		cat "$tmp/cc.log" >&2
		fail "hello.c does not link -static with the .pc's flags"
	else
		echo "fully -static: linked"
		checks=$((checks + 1))
		if have readelf &&
		   readelf -d "$tmp/hello-static" | grep -q NEEDED; then
			fail "hello linked -static still needs shared libraries"
		fi
		run_hello "$tmp/hello-static" "hello linked -static"
	fi
fi
summary
