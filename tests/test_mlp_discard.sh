#!/bin/sh
# SPDX-License-Identifier: MIT
# test_mlp_discard.sh — examples/mlp reads each step's loss with
# tmm_tensor_read after the step's last op, then destroys it.  Under
# liveness=discard it trains to the same losses as with liveness=keep
# and to the bytes of its own unconstrained run: the measured step's read
# marks the loss (TMM_TT_READ_AFTER_LAST), so its eviction copies it,
# while the tensors nobody reads after their last op are still
# discarded.  (Before that mark the first guided step failed with
# -ENODATA.)  Cheap: swap mode, policy none, the demo's 30% budget,
# 3 steps.  Ends with a Check-style summary line.
. "$(dirname "$0")/lib.sh" || exit 99
build=${top_builddir:-.}

# The demo under one liveness; prints its output, returns its status.
demo() {
	TENSORMM_LOG=error TENSORMM_MODE=swap TENSORMM_POLICY=none \
		TENSORMM_LIVENESS=$1 "$build/examples/mlp" --steps 3 2>&1
}

checks=$((checks + 1))
keep=$(demo keep)
rc=$?
[ "$rc" -eq 0 ] || fail "examples/mlp with liveness=keep exited with $rc"
checks=$((checks + 1))
discard=$(demo discard)
rc=$?
echo "$discard"
[ "$rc" -eq 0 ] || fail "examples/mlp with liveness=discard exited with $rc"

losses() { echo "$1" | grep '^step '; }
checks=$((checks + 1))
[ -n "$(losses "$keep")" ] &&
	[ "$(losses "$keep")" = "$(losses "$discard")" ] ||
	fail "the losses under liveness=discard differ from liveness=keep's"
checks=$((checks + 1))
case $discard in
*"bit-identical to the unconstrained run: yes"*) ;;
*) fail "under liveness=discard the weights or losses differ from the" \
	"unconstrained run's" ;;
esac
# Something was discarded, or the check above proves nothing.
checks=$((checks + 1))
echo "$discard" | awk '$1 == "dead" && $2 > 0 { n++ } END { exit !n }' ||
	fail "liveness=discard discarded nothing (no 'dead' line with a count)"

summary
