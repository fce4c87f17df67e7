#!/usr/bin/env bash
# Rounds of four dbench runs one after the other on one tmpfs: Debian's dbench,
# dbench 4.0 built from source as it is, the same built with
# scripts/dbench-preparse.patch (-DPREPARSE), and kdelta's dbench (its first
# sample, --quiet-wait 0). docs/fidelity.md ("dbench with its parsing moved
# out of the timed phase") reads it.
#
# usage: scripts/dbench-four-way.sh BUILT PREPARSED TMPFS [ROUNDS]
#   BUILT, PREPARSED  the two dbench binaries built from Debian's source
#   TMPFS             an empty directory on a tmpfs (emptied before every run)
#   ROUNDS            default 4; each round runs 2 then 8 clients
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
built=$1 pre=$2 T=$3 rounds=${4:-4}
L=${LOADFILE:-/usr/share/dbench/client.txt}
here=$(cd "$(dirname "$0")/.." && pwd)
K=${KDELTA:-$here/target/release/kdelta}
for b in /usr/bin/dbench "$built" "$pre" "$K"; do [ -x "$b" ] || { echo "not executable: $b" >&2; exit 2; }; done
[ -d "$T" ] || { echo "$T: not a directory" >&2; exit 2; }
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
prep() { find "$T" -mindepth 1 -delete; sync; }
d() { prep; "$1" -c "$L" -D "$T" -t 10 "$2" 2>&1 | awk '/^ *Throughput/{print $2}'; }
k() {
  prep
  KDELTA_DB=$db/k.db "$K" run dbench --param clients="$1" --param loadfile="$L" --param dir="$T" \
    --param warmup=2s --param time=10s --runs 1 --quiet-wait 0 --format json 2>/dev/null |
    python3 "$here/scripts/first-sample.py" 1
}
for r in $(seq "$rounds"); do
  for n in 2 8; do
    a=$(d /usr/bin/dbench $n); b=$(d "$built" $n); c=$(d "$pre" $n); e=$(k $n)
    echo "round $r clients $n debian $a built $b preparsed $c kdelta $e load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
