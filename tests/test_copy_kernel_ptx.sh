#!/bin/sh
# SPDX-License-Identifier: MIT
# test_copy_kernel_ptx.sh — the PTX of the copy kernel that the library
# carries (uvm_copier=kernel, lib/backend/cuda_copier.h) is what a driver
# will take: unescaped from the C string the build made of it, it has the
# entry the backend asks for by name, with the three parameters it
# launches it with, and ptxas (the compiler the driver's JIT is) builds
# it for the GPUs the library targets, sm_80 and sm_90.  On a machine
# without a GPU this is the only check that the string is sound.  Skips
# (77) where the build has no cuda backend, had no nvcc, or ptxas is not
# found beside it.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}
ptx_c=$build/lib/backend/cuda_copy_kernel_ptx.c
[ -f "$ptx_c" ] || skip "SKIP: $ptx_c is not built (no cuda backend)"
grep -q '= "";' "$ptx_c" && skip "SKIP: built without nvcc: no copy kernel"
ptxas=
for p in "$(command -v ptxas 2>/dev/null)" /usr/local/cuda/bin/ptxas; do
	[ -n "$p" ] && [ -x "$p" ] && { ptxas=$p; break; }
done
[ -n "$ptxas" ] || skip "SKIP: no ptxas to build the PTX with"
make_tmp

# One line of PTX per string line: "TEXT\n" back to TEXT.
sed -n 's/^"\(.*\)\\n"$/\1/p' "$ptx_c" | sed 's/\\"/"/g; s/\\\\/\\/g' \
	>"$tmp/k.ptx"
check "the string holds PTX" grep -q '^\.version ' "$tmp/k.ptx"
check "its entry is the one the backend asks for" \
	grep -q '^\.visible \.entry tmm_copy_kernel($' "$tmp/k.ptx"
check "it takes three parameters, as it is launched with" \
	test "$(grep -c 'tmm_copy_kernel_param_[0-9]' "$tmp/k.ptx")" -ge 3
check_failed() { cat "$tmp/err" >&2; }
for arch in sm_80 sm_90; do
	check "ptxas builds it for $arch" \
		"$ptxas" -arch="$arch" -o "$tmp/k.$arch.cubin" "$tmp/k.ptx" \
		2>"$tmp/err"
done
summary
