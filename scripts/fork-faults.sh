#!/bin/bash
# Page faults per fork of a fork loop, split into the forking process and its
# children, from the exceptions:page_fault_user tracepoint (needs perf and
# root). Used to check that lat.proc.fork's forker makes the faults lat_proc
# makes (docs/fidelity.md):
#   scripts/fork-faults.sh /path/to/lmbench/bin/lat_proc fork
#   scripts/fork-faults.sh target/release/build/kdelta-*/out/forker 3000
# The forking process is the one with the most faults; the children's count
# is their most common count (a pid reused by a later child counts twice).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
data=$(mktemp /tmp/fork-faults.XXXXXX)
trap 'rm -f "$data"' EXIT
taskset -c 0 perf record -q -o "$data" -e exceptions:page_fault_user -- "$@" >/dev/null 2>&1
perf script -i "$data" -F pid,trace 2>/dev/null | python3 -c '
import collections, re, sys
per_pid = collections.Counter()
for line in sys.stdin:
    m = re.match(r"\s*(\d+)\s+address=", line)
    if m:
        per_pid[int(m[1])] += 1
if not per_pid:
    sys.exit("no page faults recorded (is perf allowed to read tracepoints?)")
parent, parent_faults = per_pid.most_common(1)[0]
children = [n for pid, n in per_pid.items() if pid != parent]
if not children:
    sys.exit("the command forked no children")
child = collections.Counter(children).most_common(1)[0][0]
forks = sum(children) / child
print(f"forks ~{forks:.0f}: child {child} faults, parent {parent_faults / forks:.2f} per fork, total {child + parent_faults / forks:.1f}")
'
