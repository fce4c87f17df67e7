#!/usr/bin/env bash
# Interleaved comparison of Debian's dbench 4.0 with kdelta's dbench on the
# same loadfile (the issue's bar: kdelta within +-10% of dbench's MB/s, as
# medians of interleaved runs).
#
# usage: scripts/dbench-vs-kdelta.sh [-d DIR] [-r ROUNDS] [-t SECONDS] [-n] CLIENTS...
#   -d DIR      filesystem to measure (default: a directory under /var/tmp)
#   -r ROUNDS   interleaved rounds (default 10); the order alternates each round
#   -t SECONDS  timed phase of both tools (default 10)
#   -n          also run dbench with kill(2) made a no-op (LD_PRELOAD shim;
#               needs cc): dbench calls kill(parent, 0) before every operation
# Prints one line per pair, then the medians per client count.
# Needs: dbench (Debian package dbench), python3, a release build of kdelta.
set -euo pipefail
dir=/var/tmp/kdelta-dbcmp.$$
rounds=10
secs=10
nokill=0
while getopts "d:r:t:n" o; do
  case $o in
    d) dir=$OPTARG/kdelta-dbcmp.$$ ;;
    r) rounds=$OPTARG ;;
    t) secs=$OPTARG ;;
    n) nokill=1 ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-d DIR] [-r ROUNDS] [-t SECONDS] [-n] CLIENTS..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
kdelta=${KDELTA:-$here/target/release/kdelta}
loadfile=${LOADFILE:-/usr/share/dbench/client.txt}
command -v dbench >/dev/null || { echo "dbench not found (apt install dbench)" >&2; exit 2; }
[ -x "$kdelta" ] || { echo "no kdelta at $kdelta (cargo build --release)" >&2; exit 2; }
[ -r "$loadfile" ] || { echo "no loadfile at $loadfile" >&2; exit 2; }
work=$(mktemp -d)
db=$work/results.db
mkdir -p "$dir"
cleanup() { rm -rf "$dir" "$work"; }
trap cleanup EXIT INT TERM
if [ $nokill = 1 ]; then
  cat > "$work/nokill.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <sys/types.h>
int kill(pid_t pid, int sig) {
    static int (*real)(pid_t, int);
    if (sig == 0) return 0;
    if (!real) real = (int (*)(pid_t, int))dlsym(RTLD_NEXT, "kill");
    return real(pid, sig);
}
C
  cc -O2 -shared -fPIC -o "$work/nokill.so" "$work/nokill.c" -ldl
fi
run_dbench() { dbench -c "$loadfile" -D "$dir" -t "$secs" "$1" 2>&1 | awk '/^ *Throughput/{print $2}'; }
run_nokill() { LD_PRELOAD=$work/nokill.so dbench -c "$loadfile" -D "$dir" -t "$secs" "$1" 2>&1 | awk '/^ *Throughput/{print $2}'; }
run_kdelta() {
  KDELTA_DB=$db "$kdelta" run dbench --param clients="$1" --param loadfile="$loadfile" --param dir="$dir" \
    --param warmup=2s --param time="${secs}s" --runs 1 --format json 2>/dev/null |
    python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["results"][0]["median"])'
}
out=$work/pairs.txt
for i in $(seq "$rounds"); do
  for n in "$@"; do
    if [ $((i % 2)) = 1 ]; then d=$(run_dbench "$n"); k=$(run_kdelta "$n"); else k=$(run_kdelta "$n"); d=$(run_dbench "$n"); fi
    line="clients $n round $i dbench $d kdelta $k"
    [ $nokill = 1 ] && line="$line dbench_nokill $(run_nokill "$n")"
    echo "$line" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
for n in sorted({r[1] for r in rows}, key=int):
    d = [float(r[5]) for r in rows if r[1] == n]
    k = [float(r[7]) for r in rows if r[1] == n]
    line = "clients %s: %d rounds, median dbench %.1f MB/s, kdelta %.1f MB/s, kdelta/dbench %+.1f%%" % (
        n, len(d), st.median(d), st.median(k), 100 * (st.median(k) / st.median(d) - 1))
    nk = [float(r[9]) for r in rows if r[1] == n and len(r) > 9]
    if nk:
        line += ", dbench without kill %.1f MB/s (kdelta %+.1f%%)" % (st.median(nk), 100 * (st.median(k) / st.median(nk) - 1))
    print(line)
PY
