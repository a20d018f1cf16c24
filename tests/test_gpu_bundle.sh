#!/bin/sh
# SPDX-License-Identifier: MIT
# test_gpu_bundle.sh — the folder that scripts/gpu-check makes for a GPU
# machine (gpu-bundle/), made here from the programs this build holds
# (`gpu-check --bundle`: what --prepare does after building, without
# make): at most 32 MiB; the GPU programs in it, stripped programs and not
# libtool wrappers; `ldd` on each, with the bundle's lib/, finds every
# library but CUDA's (the GPU machine's, which run searches for); `run`
# (and its --bench, --goals, --op-times, --mix and --kernel) exits 77
# where there is no GPU, from any directory, writing no report or trace; `run --goals` and
# `run --op-times` take no arguments, and --help describes them; `run
# --libs` finds every library here.  Skips (77) where the build has no
# cuda backend or no GPU example (no cuBLAS or nvcc).  Ends with a
# Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
src=$(cd "${srcdir:-.}" && pwd)
build=$(cd "${top_builddir:-.}" && pwd)
if ! grep -q '^#define TMM_HAVE_CUDA 1' "$build/config.h" 2>/dev/null ||
   [ ! -x "$build/bench/bench_gpu_train" ]; then
	skip "no cuda backend or no GPU example in this build: nothing to bundle"
fi
make_tmp
bundle=$tmp/gpu-bundle

checks=$((checks + 1))
BUILDDIR=$build GPU_BUNDLE=$bundle "$src/scripts/gpu-check" --bundle ||
	fail "gpu-check --bundle exited with $?"

# The cap of what is carried; a sanitized build, never carried, has the
# larger cap scripts/gpu-check gives it.
limit=32
grep -q -e '-fsanitize=' "$build/Makefile" 2>/dev/null && limit=192
checks=$((checks + 1))
size=$(du -sb "$bundle" | cut -f1)
echo "bundle: $size bytes"
[ "$size" -le $((limit << 20)) ] ||
	fail "the bundle is $size bytes, over $limit MiB"
for f in run COMMIT bin/mlp_gpu bin/bench_cuda_copy bin/bench_managed_copy \
	 bin/bench_gpu_train \
	 bin/test_cuda_backend bin/test_cuda_timing bin/test_cuda_copy_way \
	 lib/fallback; do
	checks=$((checks + 1))
	[ -e "$bundle/$f" ] || fail "no $f in the bundle"
done
checks=$((checks + 1))
ls "$bundle"/bin/test_cuda_* >/dev/null 2>&1 || fail "no GPU test in the bundle"
checks=$((checks + 1))
[ -x "$bundle/run" ] || fail "run is not executable"

for p in "$bundle"/bin/*; do
	name=${p##*/}
	checks=$((checks + 1))
	[ "$(head -c 4 "$p" | od -An -c | tr -d ' ')" = '177ELF' ] ||
		fail "$name is not a program (a libtool wrapper?)"
	if have readelf; then
		checks=$((checks + 1))
		! readelf -S "$p" | grep -q '[.]symtab' ||
			fail "$name is not stripped"
	fi
	checks=$((checks + 1))
	lost=$(LD_LIBRARY_PATH=$bundle/lib ldd "$p" 2>&1 |
		awk '/not found/ && $1 !~ /^lib(cu|nv)/ { print $1 }')
	[ -z "$lost" ] || fail "$name: ldd finds no $lost"
done
checks=$((checks + 1))
LD_LIBRARY_PATH=$bundle/lib "$bundle/bin/bench_gpu_train" --help \
	>/dev/null || fail "bin/bench_gpu_train --help exited with $?"

# From another directory, with no GPU: 77, and nothing run.
mkdir "$tmp/elsewhere"
# Whether `run ARGS...` from another folder exits with status $1.
exits_with() {
	want=$1
	shift
	checks=$((checks + 1))
	(cd "$tmp/elsewhere" && "$bundle/run" "$@" >/dev/null 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || fail "run $* exited with $rc, not $want"
}
if have nvidia-smi &&
   nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
	echo "a GPU answers here: run's exit 77 is not checked"
else
	checks=$((checks + 1))
	out=$(cd "$tmp/elsewhere" && "$bundle/run" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 77 ] || fail "run exited with $rc where there is no GPU"
	exits_with 77 --bench --steps 4
	exits_with 77 --goals
	exits_with 77 --op-times
	exits_with 77 --mix
	exits_with 77 --kernel
	checks=$((checks + 1))
	[ ! -e "$tmp/elsewhere/gpu-bench-report.md" ] &&
	[ ! -e "$tmp/elsewhere/compute.trace" ] ||
		fail "run --bench, --goals, --op-times, --mix or --kernel wrote" \
		     "with no GPU"
fi
# --goals picks its runs itself: arguments are refused before anything
# runs, GPU or not.
exits_with 2 --goals --steps 4
exits_with 2 --op-times --steps 4
exits_with 2 --mix --steps 4
exits_with 2 --kernel --steps 4
checks=$((checks + 1))
"$bundle/run" --help | grep -q -- '--op-times' ||
	fail "run --help does not describe --op-times"
checks=$((checks + 1))
"$bundle/run" --help | grep -q -- '--mix' ||
	fail "run --help does not describe --mix"
checks=$((checks + 1))
"$bundle/run" --help | grep -q -- '--kernel' ||
	fail "run --help does not describe --kernel"
checks=$((checks + 1))
"$bundle/run" --help | grep -q -- 'Exit status' ||
	fail "run --help stops before the exit status"
checks=$((checks + 1))
out=$(cd "$tmp/elsewhere" && "$bundle/run" --libs 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "run --libs exited with $rc on the machine that built it"

summary
