#!/bin/sh
# SPDX-License-Identifier: MIT
# test_stat_cli.sh — tensormm-stat end to end: the list, the scrolling
# table, --json and --csv, column selection (-o) and timestamps (-t),
# report, plot and export (Chrome/Perfetto JSON) on a trace recorded by
# a small run, tunables and their sources, and every error case's exit
# code and message, with what it says to write instead.  Ends with a Check-style summary line for scripts/test.
. "$(dirname "$0")/lib.sh" || exit 99
B=${top_builddir:-.}
STAT=$B/tools/tensormm-stat
WL=$B/tests/stat_workload
make_tmp
# The background workload, if one is running, stops with the test.
bg=
on_exit() {
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
}

# After a failed check, what the last command said on stderr.
check_failed() {
	[ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" >&2
}

# run EXPECTED_STATUS ARGS...: runs tensormm-stat, keeping its output.
run() {
	want=$1
	shift
	"$STAT" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || {
		echo "  tensormm-stat $*: exit $got, expected $want" >&2
		return 1
	}
}
out_has() { grep -q -- "$1" "$tmp/out"; }
err_has() { grep -q -- "$1" "$tmp/err"; }
have_python=false
have python3 && have_python=true

# ---------------------------------------------------------------- basics
check "help" run 0 --help
check "help text" out_has "report TRACE"
check "version" run 0 --version
check "version text" out_has "^tensormm-stat [0-9]"
check "unknown option" run 2 --bogus
check "unknown option message" err_has "unknown option '--bogus'"
check "bad delay" run 2 0
check "bad delay message" err_has "not a number of seconds"
check "bad count" run 2 1 many
check "bad count message" err_has "COUNT 'many'"
check "bad pid" run 2 -p abc
check "bad pid message" err_has "needs a process id"
check "too many" run 2 1 2 3
check "report without file" run 2 report
check "plot without output" run 2 plot x.trace

# getopt_long: each command's --help, long forms, and errors that say
# what to write instead.
check "report --help" run 0 report --help
check "report --help text" out_has "--top N"
check "help report" run 0 help report
check "help report text" out_has "usage: tensormm-stat report"
check "export --help" run 0 export --help
check "export --help text" out_has "Perfetto"
check "help lists every command" sh -c \
	"'$STAT' --help | grep -c '^       tensormm-stat [a-z]' | grep -qx 4"
check "misplaced option" run 2 --top 3
check "misplaced option message" \
	err_has "option of report; write: tensormm-stat report TRACE"
check "misspelt option" run 2 --colums dev_used
check "misspelt option message" err_has "did you mean '--columns'?"
check "ambiguous option" run 2 --c
check "ambiguous option message" err_has "write --csv or --columns"
check "option without its value" run 2 -p
check "option without its value message" err_has "-p needs a process id"
check "value to a flag" run 2 --json=yes
check "value to a flag message" err_has "json takes no value"
check "misspelt command" run 2 reprot x.trace
check "misspelt command message" err_has "did you mean 'report'?"
check "list as a command" run 2 list
check "list as a command message" err_has "to list, give no argument"
check "columns help" run 0 -o help
for col in dev_used host pinned faults fbatch mig_in mig_out prefetched \
	   discarded uvm_evict resident; do
	check "column $col listed" out_has "^  $col "
done
check "unknown column" run 2 -o dev_used,bogus 1
check "unknown column message" err_has "unknown column 'bogus'"
check "unknown column lists the known" err_has "known columns: pid,ctx,"
check "trailing comma" run 2 -o dev_used, 1
check "columns with json" run 2 --json -o host 1
check "columns with json message" err_has "drop -o, or drop --json"
check "bad timestamp format" run 2 --timestamps=week 1
check "bad timestamp format message" err_has "iso, rel or unix"

# ---------------------------------------------------------------- pid
sh -c 'exit 0' &
dead=$!
wait "$dead"
check "missing pid" run 3 -p "$dead" 1 1
check "missing pid message" err_has "process $dead has no libtensormm context"
check "pid without context" run 3 -p $$
check "pid without context message" err_has "has no libtensormm context"

# ---------------------------------------------------------------- trace
trace=$tmp/run.trace
check "workload records a trace" \
	"$WL" "backend=sim,mode=swap,budget=160KiB,stats_shm=off,trace=$trace" 3
check "report" run 0 report "$trace"
check "report says simulated" out_has "SIMULATED"
check "report counts clean swap-outs apart" out_has "coll_time *clean *dead$"
check "report has 3 iterations" \
	test "$(grep -c -E '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +12 +36 ' \
		"$tmp/out")" -eq 3
check "report swaps" out_has "top tensors by swapped bytes"
check "report stalls" out_has "top tensors by stall time"
check "report names tensors" out_has "^  weight "
check "report has the last iteration's ops by time" \
	out_has "^# top ops by time, iteration 3 (simulated)"
# Each op of the workload: 2e6 flop at the P100 profile's 9.3 TFLOPS
# times its 0.6 efficiency, 358.4 ns, plus the 5 us launch: 5.358 us,
# so 0.373 TFLOP/s; and its 49152 bytes in that time, 9.2 GB/s.
check "an op's time, mean and rates" grep -q -E \
	"^  fwd1 +matmul +1 +0\.005 +[0-9.]+% +5\.358 +0\.000 +0\.373 +9\.2$" \
	"$tmp/out"
check "equal times rank by name" \
	test "$(grep -A2 '^# op ' "$tmp/out" | sed -n 2p | awk '{print $1}')" = bwd0

# liveness=discard: the liveness evictions of policy none drop the step's
# dead tensors with no copy; the report counts them as dead, not drops.
dtrace=$tmp/dead.trace
check "workload with liveness=discard" \
	"$WL" "backend=sim,mode=swap,budget=160KiB,stats_shm=off,policy=none,liveness=discard,trace=$dtrace" 3
check "report of it" run 0 report "$dtrace" -o iter,drops,recomp,dead
check "report counts dead drops apart" \
	test "$(grep -c -E '^ +3 +0 +0 +[1-9]' "$tmp/out")" -eq 1
check "export names the dead discards" run 0 export "$dtrace" -o "$tmp/dead.json"
check "export has a dead discard" grep -q '"dead discard act' "$tmp/dead.json"
check "report --top 2" run 0 report "$trace" --top 2
check "report top 2 rows" test "$(grep -c '^  weight ' "$tmp/out")" -le 4
check "report bad --top" run 2 report "$trace" --top 0
check "report columns" run 0 report "$trace" -o iter,recomp,stall --top 1
check "report columns header" out_has "^# *iter *recomp *stall$"
check "report columns rows" \
	test "$(grep -c -E '^ +[123] +[0-9]+ +[0-9.]+$' "$tmp/out")" -eq 3
check "report columns help" run 0 report --columns help
check "report columns help lists" out_has "^  diverged "
check "report unknown column" run 2 report "$trace" -o iter,faults
check "report unknown column message" err_has "known columns: iter,"

check "missing trace" run 1 report "$tmp/none.trace"
check "missing trace message" err_has "none.trace"
printf 'this is not a trace file at all, not even close\n' >"$tmp/text.trace"
check "not a trace" run 1 report "$tmp/text.trace"
check "not a trace message" err_has "is not a readable trace"
size=$(wc -c <"$trace")
head -c $((size - 10)) "$trace" >"$tmp/cut.trace"
check "truncated trace" run 1 report "$tmp/cut.trace"
check "truncated trace message" err_has "record it again with TENSORMM_TRACE"

svg=$tmp/it.svg
check "plot" run 0 plot "$trace" -o "$svg" --iteration 2
check "plot is svg" grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$svg"
check "plot says simulated" grep -q "SIMULATED times" "$svg"
check "plot has legend" grep -q ">persistent<" "$svg"
check "plot has budget" grep -q ">budget 160 KiB<" "$svg"
check "plot marks swaps" grep -q ">swap-out<" "$svg"
check "plot has axes" grep -q "time since the iteration began" "$svg"
if $have_python; then
	check "plot is well-formed XML" python3 -c \
		'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' \
		"$svg"
fi
check "plot --output" run 0 plot "$trace" --output "$svg" --iteration=1
check "plot --output is svg" grep -q '<svg xmlns=' "$svg"
check "plot missing iteration" run 1 plot "$trace" -o "$svg" --iteration 99
check "plot missing iteration message" err_has "has no iteration 99"
check "plot corrupt trace" run 1 plot "$tmp/cut.trace" -o "$svg"

# A plan with drops and planned swaps: recomputations to count and mark.
planned=$tmp/planned.trace
check "workload with a plan" "$WL" --handmade \
	"backend=sim,mode=swap,budget=160KiB,stats_shm=off,trace=$planned" 3
check "report planned" run 0 report "$planned"
check "report counts recomputations" \
	awk '/^ +2 / { found = $13 > 0 && $12 > 0 } END { exit !found }' \
	"$tmp/out"
check "plot planned" run 0 plot "$planned" -o "$svg"
check "plot marks recomputations" \
	test "$(grep -c 'l4,4 l-4,4' "$svg")" -ge 2
check "plot draws every kind" \
	test "$(grep -c '<path fill="#' "$svg")" -eq 4

# Collectives: counted in the report, on a network track in the export.
netted=$tmp/net.trace
check "workload with collectives" "$WL" --collective \
	"backend=sim,mode=swap,budget=160KiB,stats_shm=off,trace=$netted" 2
check "report collectives" run 0 report "$netted" -o iter,coll,coll_time,net
check "report collectives header" out_has "^# *iter *coll *coll_time *net$"
check "report counts collectives" \
	awk '/^ +2 / { found = $2 == 6 && $3 > 0 && $4 == 6 }
	     END { exit !found }' "$tmp/out"
check "report without collectives" run 0 report "$trace" -o iter,coll
check "report counts no collectives" \
	awk '/^ +2 / { found = $2 == 0 } END { exit !found }' "$tmp/out"
check "plot collectives" run 0 plot "$netted" -o "$tmp/net.svg"
check "plot has a network lane" grep -q '>network<' "$tmp/net.svg"
check "plot draws each collective" \
	test "$(grep -c 'class="collective"' "$tmp/net.svg")" -eq 6
check "plot without collectives has no network lane" \
	sh -c "! grep -q '>network<' '$svg'"
check "export collectives" run 0 export "$netted" -o "$tmp/net.json"
check "export has a network track" \
	grep -q '"tid":6,"name":"thread_name","args":{"name":"network"}' \
	"$tmp/net.json"
check "export puts collectives on it" \
	grep -q '"ph":"X","pid":1,"tid":6,.*"cat":"collective","name":"allreduce0"' \
	"$tmp/net.json"

# ---------------------------------------------------------------- export
json=$tmp/run.json
check "export" run 0 export "$trace" -o "$json"
check "export is quiet" test ! -s "$tmp/out"
check "export has events" grep -q '"traceEvents":\[' "$json"
check "export has ops" grep -q '"ph":"X","pid":1,"tid":2,' "$json"
check "export has counters" grep -q '"name":"device bytes in use"' "$json"
if $have_python; then
	check "export parses" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert isinstance(ev, list) and ev, d.keys()
for e in ev:
    assert "ph" in e and "pid" in e, e
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    if e["ph"] == "X":
        assert e["dur"] >= 0 and isinstance(e["name"], str), e
names = {e["args"]["name"]: e["tid"] for e in ev
         if e["ph"] == "M" and e["name"] == "thread_name"}
assert set(names) == {"iterations", "compute", "H2D", "D2H", "runtime",
                      "network"}, names
its = [e for e in ev if e["ph"] == "X" and e["tid"] == names["iterations"]]
assert [e["args"]["iteration"] for e in its] == [1, 2, 3], its
# laid end to end, each where the one before ended
for a, b in zip(its, its[1:]):
    assert abs(a["ts"] + a["dur"] - b["ts"]) < 0.01, (a, b)
ops = [e for e in ev if e["ph"] == "X" and e["tid"] == names["compute"]]
assert len(ops) == 36, len(ops)
assert {"fwd1", "bwd0"} <= {e["name"] for e in ops}
for e in ops:
    assert e["args"]["kind"] == "matmul" and e["args"]["stall_us"] >= 0, e
# each op inside its iteration
for e in ops:
    assert any(i["ts"] <= e["ts"] + 1e-3 and
               e["ts"] + e["dur"] <= i["ts"] + i["dur"] + 1e-3
               for i in its), e
copies = [e for e in ev if e["tid"] in (names["H2D"], names["D2H"])
          and e["ph"] == "i"]
assert copies and all(e["args"]["bytes"] == 16384 for e in copies), copies
mem = [e for e in ev if e["ph"] == "C" and e["name"] == "device bytes in use"]
assert mem and max(e["args"]["bytes"] for e in mem) > 0, mem
assert d["otherData"]["simulated"] is True and d["otherData"]["budget"] == 160 * 1024
' "$json"
fi
check "export one iteration to stdout" run 0 export "$trace" --iteration 2
if $have_python; then
	check "export one iteration parses" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
its = [e for e in ev if e.get("cat") == "iteration"]
assert len(its) == 1 and its[0]["args"]["iteration"] == 2 and its[0]["ts"] == 0, its
' "$tmp/out"
	# Names are the program's: quotes, backslashes, control bytes and
	# bytes that are not UTF-8 must still make valid JSON.  "fwd1" is
	# renamed in place and each record's CRC-32 made again.
	odd=$tmp/odd.trace
	check "odd names trace" python3 -c '
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
pos = struct.unpack_from("<I", b, 12)[0]
while pos < len(b):
    n = struct.unpack_from("<Q", b, pos + 4)[0]
    body = bytes(b[pos + 12:pos + 12 + n]).replace(b"fwd1\0", b"f\"\\\xff\0")
    body = body.replace(b"fwd2\0", b"\x01\xc3\xa9\n\0")
    b[pos + 12:pos + 12 + n] = body
    struct.pack_into("<I", b, pos + 12 + n, zlib.crc32(body))
    pos += n + 16
open(sys.argv[2], "wb").write(b)
' "$trace" "$odd"
	check "export odd names" run 0 export "$odd" -o "$json"
	check "export odd names parse" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["name"] for e in ev if e.get("cat") == "op"}
assert "f\"\\\ufffd" in names and "\x01\u00e9\n" in names, names
' "$json"
fi
rm -f "$json"
check "export missing iteration" run 1 export "$trace" -o "$json" --iteration 9
check "export missing iteration message" err_has "has no iteration 9"
check "export missing iteration leaves no file" test ! -e "$json"
check "export truncated trace" run 1 export "$tmp/cut.trace" -o "$json"
check "export truncated trace leaves no file" test ! -e "$json"
check "export without trace" run 2 export
check "export two traces" run 2 export "$trace" "$trace"

# ---------------------------------------------------------------- tunables
check "tunables" env TENSORMM_BUDGET=50% "$STAT" tunables \
	--config policy=none >"$tmp/out" 2>"$tmp/err"
check "tunable from environment" out_has "^  budget  *50%  *environment "
check "tunable from config" out_has "^  policy  *none  *config "
check "tunable default" out_has "^  stats_shm  *on  *default "
for name in backend mode sim_profile sim_capacity sim_memory sim_jitter \
	    sim_seed host_numa_node pinned_pool trace hints log; do
	check "tunable $name listed" out_has "^  $name "
done
TENSORMM_BUDGT=1 "$STAT" tunables >"$tmp/out" 2>"$tmp/err"
check "bad tunable exit" test $? -eq 1
check "bad tunable message" err_has "did you mean 'TENSORMM_BUDGET'"

# ---------------------------------------------------------------- live
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	"$WL" "backend=sim,mode=swap,budget=160KiB,stats_shm=on" 1 10 "$tmp/ready" &
	bg=$!
	i=0
	while [ ! -s "$tmp/ready" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "workload ready" test -s "$tmp/ready"
	# Another user's segment, where root can become someone else.
	if [ "$(id -u)" -eq 0 ] && have setpriv; then
		as_nobody() {
			setpriv --reuid=65534 --regid=65534 --clear-groups \
				"$STAT" "$@" >"$tmp/out" 2>"$tmp/err"
		}
		as_nobody -p "$bg"
		check "other user's pid exit" test $? -eq 1
		check "other user's pid message" \
			err_has "belongs to another user.*run tensormm-stat as"
		as_nobody
		check "other user's list exit" test $? -eq 0
		check "other user's list line" \
			out_has "^ *$bg  *1  *0 (another user's context"
	fi
	check "list" run 0
	check "list shows the workload" out_has "^ *$bg  *1  *[0-9]*  *sim "
	check "list header" out_has "^# *pid"
	check "list json" run 0 --json
	if $have_python; then
		check "list json parses" python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list), rows
me = [r for r in rows if r["pid"] == int(sys.argv[2])]
assert len(me) == 1, rows
r = me[0]
assert r["backend"] == "sim" and r["simulated"] is True, r
assert r["budget"] == 160 * 1024, r
assert r["plan"] in ("measuring", "guided", "diverged"), r
for k in ("device_in_use", "device_peak", "host_in_use", "swap_out_bytes",
          "swap_in_bytes", "prefetches", "prefetch_on_time",
          "prefetch_late", "stall_ns", "passive_evictions",
          "recomputations", "recompute_ns", "iterations",
          "last_iteration_ns"):
    assert isinstance(r[k], int), k
' "$tmp/out" "$bg"
	else
		check "list json shape" out_has "^\[{\"pid\":"
	fi
	check "list csv" run 0 --csv
	check "list csv header" test \
		"$(head -n 1 "$tmp/out" | cut -d, -f1-3)" = "pid,context,uid"
	check "list csv columns" \
		awk -F, 'NR == 1 { n = NF } NF != n { exit 1 }' "$tmp/out"
	check "scroll" run 0 -p "$bg" 0.1 3
	check "scroll lines" test "$(grep -c -v '^#' "$tmp/out")" -eq 3
	check "scroll header names" out_has "^# *pid *ctx *dev_used"
	check "scroll header units" out_has "^# .*MiB.*ms"
	check "scroll json" run 0 --json -p "$bg" 0.1 2
	check "scroll json lines" test "$(wc -l <"$tmp/out")" -eq 2
	if $have_python; then
		check "scroll json parses" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2 and all(r["pid"] == int(sys.argv[2]) for r in rows)
assert rows[1]["ops"] >= rows[0]["ops"], rows
' "$tmp/out" "$bg"
	fi
	check "scroll csv" run 0 --csv -p "$bg" 0.1 2
	check "scroll csv lines" test "$(wc -l <"$tmp/out")" -eq 3

	# -o: the columns asked, in that order; a figure the segment does
	# not publish is "-", never a made-up 0.
	check "columns" run 0 --pid "$bg" --columns pid,host,ops,resident 0.1 2
	check "columns header" out_has "^# *pid *host *ops *resident$"
	check "columns rows" awk -v pid="$bg" '
		!/^#/ { n++; ok += NF == 4 && $1 == pid && $4 == "-" }
		END { exit !(n == 2 && ok == 2) }' "$tmp/out"
	check "columns added" run 0 -p "$bg" -o +uvm 0.1 1
	check "columns added header" \
		out_has "^# *pid *ctx *dev_used.* last_it *faults .* resident$"
	check "list columns" run 0 -o pid,mode,dev_used
	check "list columns row" out_has "^ *$bg *swap *[0-9.]*$"
	# -t: each row starts with its time.
	check "timestamps" run 0 -t -p "$bg" 0.1 2
	check "timestamps header" out_has "^# time  *pid  *ctx"
	check "timestamps iso" test "$(grep -c -E \
		"^  [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z +$bg " \
		"$tmp/out")" -eq 2
	check "timestamps rel" run 0 -p "$bg" -t rel 0.2 2
	check "timestamps rel rows" awk '
		!/^#/ { t[n++] = $1 }
		END { exit !(n == 2 && t[0] < 0.2 && t[1] >= 0.2) }' "$tmp/out"
	check "timestamps csv" run 0 --csv --timestamps=unix -p "$bg" 0.1 1
	check "timestamps csv header" out_has "^time,pid,context,uid,"
	check "timestamps csv row" out_has "^[0-9]*\.[0-9][0-9][0-9],$bg,"
	check "timestamps list" run 0 --json -t
	if $have_python; then
		check "timestamps json" python3 -c '
import json, sys, datetime
rows = json.load(open(sys.argv[1]))
me = [r for r in rows if r["pid"] == int(sys.argv[2])][0]
t = datetime.datetime.strptime(me["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
assert abs((now - t).total_seconds()) < 60, (t, now)
assert list(me)[0] == "time", me
' "$tmp/out" "$bg"
	fi
	touch "$tmp/ready.stop"
	wait "$bg"
	check "workload ends cleanly" test $? -eq 0
	check "segment removed at exit" \
		test -z "$(ls /dev/shm | grep "^tensormm\.[0-9]*\.$bg\.")"
	bg=

	# mode=uvm: resident is the managed bytes on the device, the same
	# figure as dev_used; host counts the pinned copies of tensors
	# evicted by copy (see tensormm-stat(1)).  The budget holds as many
	# tensors as above: each 16 KiB tensor takes a whole 64 KiB managed
	# page.
		"$WL" "backend=sim,mode=uvm,uvm_swap_path=copy,budget=640KiB,stats_shm=on" \
		1 10 "$tmp/uvm.ready" &
	bg=$!
	i=0
	while [ ! -s "$tmp/uvm.ready" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "uvm workload ready" test -s "$tmp/uvm.ready"
	check "uvm columns" run 0 -p "$bg" -o mode,dev_used,resident,host,uvm \
		0.1 2
	check "uvm resident" awk '
		!/^#/ { n++; ok += $1 == "uvm" && $2 == $3 && $4 ~ /^[0-9.]+$/ }
		END { exit !(n == 2 && ok == 2) }' "$tmp/out"
	check "uvm json host" run 0 --json -p "$bg" 0.1 1
	check "uvm json host figure" out_has '"host_in_use":[0-9]'
	touch "$tmp/uvm.ready.stop"
	wait "$bg"
	check "uvm workload ends cleanly" test $? -eq 0
	bg=

	# A process killed with its context alive leaves its segment; the
	# next reader removes it.  Existence is checked while it lives, since
	# any reader (another test running now) may clean it once it is dead.
	rm -f "$tmp/ready"
	"$WL" "backend=sim,mode=swap,budget=160KiB,stats_shm=on" 1 crash "$tmp/ready" &
	stale=$!
	i=0
	while [ ! -s "$tmp/ready" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "crashing workload has a segment" \
		test -n "$(ls /dev/shm | grep "^tensormm\.[0-9]*\.$stale\.")"
	kill -KILL "$stale"
	wait "$stale" 2>/dev/null
	check "list after crash" run 0
	check "stale not listed" sh -c "! grep -q '^ *$stale ' '$tmp/out'"
	check "stale segment removed" \
		test -z "$(ls /dev/shm | grep "^tensormm\.[0-9]*\.$stale\.")"
fi

summary
