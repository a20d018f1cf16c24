# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# tests/lib.sh — the prelude every shell test sources first, so that each
# counts, reports, skips and cleans up the same way.  A test loads it with
#
#	. "$(dirname "$0")/lib.sh" || exit 99
#
# which finds it beside the test wherever make check runs the test from:
# in a build directory apart from the sources, the test's path is
# $(srcdir)/tests/test_x.sh, and this file sits next to it (Makefile.am
# ships it with dist_check_DATA).  Paths to built programs still come from
# top_builddir and to sources from srcdir, as before.  Plain POSIX sh:
# make check runs the tests with $(SHELL), a user with /bin/sh (dash).
#
# What it gives:
#   checks, failures   the counters, both 0 on loading.
#   fail MESSAGE...    counts one failure and prints "FAIL: MESSAGE" on
#                      stderr; the caller counts its check itself.
#   check DESC CMD...  one check: runs CMD, and where it fails, fail DESC
#                      then check_failed.
#   check_failed       does nothing; a test redefines it to show, after a
#                      failed check, what explains it (a saved stderr).
#   summary            prints the Check-style line that scripts/test adds
#                      up ("100%: Checks: N, Failures: F, Errors: 0") and
#                      exits 0 where nothing failed, 1 where something did.
#   skip MESSAGE...    prints MESSAGE (what is missing and how to get it)
#                      and exits 77, which automake reports as SKIP.
#   have COMMAND       whether COMMAND is on PATH, quietly.
#   make_tmp           makes a fresh directory $tmp named after the test,
#                      removed when the script exits, however it exits.
#   on_exit            does nothing; a test redefines it to undo more at
#                      exit (stop a background process), before $tmp goes.
# Loading it also unsets every TENSORMM_* variable, as Makefile.am's
# AM_TESTS_ENVIRONMENT does under make check: those variables win over a
# program's config string (tensormm(7)), so one left in a shell that runs
# a test by hand would change what the test asks for.  A test that wants
# one sets it itself.
#
# Its own variables start with _lib_, since sh has no local variables and a
# test's own (name, desc, pct) must not be overwritten by a check.

checks=0
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check_failed() { :; }

check() {
	_lib_desc=$1
	shift
	checks=$((checks + 1))
	if ! "$@"; then
		fail "$_lib_desc"
		check_failed
	fi
}

summary() {
	# A test that ran no check has tested nothing: that is an error of
	# the test (99), not a pass, nor a division by zero.
	if [ "$checks" -eq 0 ]; then
		echo "FAIL: ${0##*/} ran no check" >&2
		exit 99
	fi
	_lib_pct=$(( (checks - failures) * 100 / checks ))
	echo "$_lib_pct%: Checks: $checks, Failures: $failures, Errors: 0"
	[ "$failures" -eq 0 ] || exit 1
	exit 0
}

skip() {
	echo "$*"
	exit 77
}

have() {
	command -v "$1" >/dev/null 2>&1
}

on_exit() { :; }

_lib_exit() {
	on_exit
	[ -z "${tmp:-}" ] || rm -rf "$tmp"
}

make_tmp() {
	_lib_name=${0##*/}
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/${_lib_name%.sh}.XXXXXX") || {
		echo "mktemp -d failed in ${TMPDIR:-/tmp}: is TMPDIR writable?" >&2
		exit 99
	}
	trap _lib_exit EXIT
}

for _lib_v in $(env | sed -n 's/^\(TENSORMM_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$_lib_v"
done
