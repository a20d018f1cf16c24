# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# tests/mlp_dp_lib.sh — what the data-parallel tests share
# (test_mlp_dp.sh, test_mlp_dp_staged.sh, test_gpt_dp.sh), sourced after
# tests/lib.sh:
#   dp_example NAME    sets prog to the example NAME (examples/mlp_dp,
#                      examples/gpt_dp), or skips (77) where configure
#                      found no MPI and did not build it.
#   mpi_setup          skips (77) without mpirun; lets Open MPI run as root
#                      (it refuses unless told twice, and a container's
#                      CI runs as root); under the sanitizers, suppresses
#                      the leaks of Open MPI's own libraries by name,
#                      never ours (tests/lsan-mpi.supp).  Those libraries
#                      are built without frame pointers: the fast
#                      unwinder stops at their first frame, so the slow
#                      one records the frames the suppressions name.
#                      Nothing reads LSAN_OPTIONS without a sanitizer.
#   dp N ARGS...       runs $prog on N ranks (0: one process, no mpirun),
#                      with $dp_ranks_args before ARGS on the ranks and
#                      $dp_env in their environment; stdout in $tmp/out,
#                      stderr in $tmp/err; prints the last line's digest.
#   dp_digest RC WHAT  after a run whose exit status is RC, its stdout in
#                      $tmp/out and stderr in $tmp/err: prints the
#                      weights digest of its last line, or nothing, and
#                      WHAT with the status and the error's tail on stderr.
#   budget0, peak0, swap_outs0
#                      rank 0's budget and device peak (MiB) and its
#                      swap-outs, from its report line in $tmp/out.

mpi_setup() {
	have mpirun || skip "no mpirun on PATH: install openmpi-bin"
	if [ "$(id -u)" -eq 0 ]; then
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
		export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
	fi
	_dp_lsan="suppressions=${srcdir:-.}/tests/lsan-mpi.supp"
	_dp_lsan="$_dp_lsan:fast_unwind_on_malloc=0"
	LSAN_OPTIONS="$_dp_lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
	export LSAN_OPTIONS
}

dp_example() {
	prog=${top_builddir:-.}/examples/$1
	[ -x "$prog" ] ||
		skip "examples/$1 was not built: configure found no MPI" \
		     "(install libopenmpi-dev and openmpi-bin, or" \
		     "scripts/setup-deps, then configure --with-mpi)"
}

dp() {
	_dp_n=$1
	shift
	if [ "$_dp_n" -eq 0 ]; then
		"$prog" "$@" >"$tmp/out" 2>"$tmp/err"
	else
		env ${dp_env:-} mpirun --oversubscribe -np "$_dp_n" "$prog" \
			${dp_ranks_args:-} "$@" >"$tmp/out" 2>"$tmp/err"
	fi
	dp_digest $? "${prog##*/} on $_dp_n rank(s) $*"
}

dp_digest() {
	_dp_rc=$1
	shift
	if [ "$_dp_rc" -ne 0 ]; then
		echo "$* exited with $_dp_rc:" >&2
		tail -n 5 "$tmp/err" >&2
		return
	fi
	tail -n 1 "$tmp/out" |
		sed -n 's/^weights digest: \([0-9a-f]\{16\}\)$/\1/p'
}

budget0() {
	sed -n 's/^rank 0: .*, budget \([0-9.]*\) MiB,.*/\1/p' "$tmp/out"
}

peak0() {
	sed -n 's/^rank 0: device peak \([0-9.]*\) MiB,.*/\1/p' "$tmp/out"
}

swap_outs0() {
	sed -n 's/^rank 0: .* \([0-9]*\) swap-out(s),.*/\1/p' "$tmp/out"
}
