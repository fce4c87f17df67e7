#!/usr/bin/env bash
# Interleaved comparison of Debian's dbench 4.0 with kdelta's dbench on the
# same loadfile (the issue's bar: kdelta within +-10% of dbench's MB/s, as
# medians of interleaved runs), or of Debian's tbench with kdelta's tbench
# (the bar: kdelta at least equal).
#
# usage: scripts/dbench-vs-kdelta.sh [-b dbench|tbench] [-d DIR] [-f FS] [-r ROUNDS] [-t SECONDS] [-n] [-x DBENCH] CLIENTS...
#   -b BENCH    dbench (default) or tbench: tbench against tbench_srv over loopback,
#               and kdelta's tbench with its own loopback server
#   -d DIR      filesystem to measure (default: a directory under /var/tmp)
#   -f FS       give every run a freshly made filesystem of type FS (ext4,
#               ext4-nojournal), a loop-mounted image under DIR; needs root.
#               Without it, runs share one filesystem and inherit its state
#               (see "Fresh filesystems" below)
#   -r ROUNDS   interleaved rounds (default 10); the order alternates each round
#   -t SECONDS  timed phase of both tools (default 10)
#   -x DBENCH   the dbench binary to compare with (default: dbench on PATH), e.g.
#               one built with scripts/dbench-preparse.patch (docs/fidelity.md)
#   -n          also run dbench with kill(2) made a no-op (LD_PRELOAD shim;
#               needs cc): dbench calls kill(parent, 0) before every operation,
#               as kdelta does by default (its liveness=signal does not)
# Prints one line per pair, then the medians per client count and the median
# of the per-pair ratios.
#
# Pairs: each tool's figure is one 10 s run next to the other tool's. kdelta
# retakes a sample that other work disturbed (in a later round, after waiting
# for quiet CPUs), and its result's median then spans those retakes: taken
# later, possibly at a quieter moment, than the dbench run it is paired with.
# So the script runs kdelta with --quiet-wait 0 and takes its first sample,
# the one taken next to the dbench run, whatever came after.
# Needs: dbench (Debian package dbench), python3, a release build of kdelta.
#
# Fresh filesystems: on ext4 without a journal (this VM's root), creating a
# file scans the block group's inode bitmap from its start and skips every
# inode deleted in the last 60 s (360 s while its inode-table block is dirty):
# ext4's recently_deleted(). A dbench run deletes thousands of files, so the
# next run on the same filesystem pays for the previous one's deletions, and
# consecutive runs of either tool vary by 2-3x. -f removes that history.
set -euo pipefail
dir=/var/tmp
rounds=10
secs=10
nokill=0
fresh=
bench=dbench
dbench_bin=dbench
while getopts "b:d:f:r:t:nx:" o; do
  case $o in
    d) dir=$OPTARG ;;
    f) fresh=$OPTARG ;;
    r) rounds=$OPTARG ;;
    t) secs=$OPTARG ;;
    n) nokill=1 ;;
    b) bench=$OPTARG ;;
    x) dbench_bin=$OPTARG ;;
    *) sed -n '2,24p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-b dbench|tbench] [-d DIR] [-f FS] [-r ROUNDS] [-t SECONDS] [-n] [-x DBENCH] CLIENTS..." >&2; exit 2; }
case $bench in
  dbench) ;;
  tbench) [ -z "$fresh" ] && [ $nokill = 0 ] || { echo "-f and -n are for dbench only" >&2; exit 2; } ;;
  *) echo "-b $bench: unknown benchmark (allowed: dbench, tbench)" >&2; exit 2 ;;
esac
case $fresh in
  '') ;;
  ext4) mkfs_opts=() ;;
  ext4-nojournal) mkfs_opts=(-O ^has_journal) ;;
  *) echo "-f $fresh: unknown filesystem (allowed: ext4, ext4-nojournal)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
kdelta=${KDELTA:-$here/target/release/kdelta}
loadfile=${LOADFILE:-/usr/share/dbench/client.txt}
if [ "$bench" = dbench ]; then
  command -v "$dbench_bin" >/dev/null || { echo "-x $dbench_bin: not found (apt install dbench, or a built dbench's path)" >&2; exit 2; }
else
  command -v "$bench" >/dev/null || { echo "$bench not found (apt install dbench)" >&2; exit 2; }
fi
[ -x "$kdelta" ] || { echo "no kdelta at $kdelta (cargo build --release)" >&2; exit 2; }
[ -r "$loadfile" ] || { echo "no loadfile at $loadfile" >&2; exit 2; }
[ -d "$dir" ] || { echo "-d $dir: not a directory" >&2; exit 2; }
work=$(mktemp -d)
db=$work/results.db
scratch=$dir/kdelta-dbcmp.$$
mnt=$work/mnt
image=$scratch.img
srv=
# Every step tolerates failure: under set -e one failing step (wait returns
# the killed server's status) would end the trap before the rest.
cleanup() {
  if [ -n "$srv" ]; then
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
  fi
  if [ -n "$fresh" ]; then
    if mountpoint -q "$mnt"; then umount "$mnt" || true; fi
    rm -f "$image"
  fi
  rm -rf "$scratch" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -n "$fresh" ]; then
  [ "$(id -u)" = 0 ] || { echo "-f needs root (mkfs and mount)" >&2; exit 2; }
  mkdir -p "$mnt"
  truncate -s 4G "$image"
fi
# Where the next run works: a fresh filesystem with -f, else the shared scratch directory.
prepare() {
  if [ -n "$fresh" ]; then
    mountpoint -q "$mnt" && umount "$mnt"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "${mkfs_opts[@]}" "$image"
    mount -o loop "$image" "$mnt"
    target=$mnt
  else
    mkdir -p "$scratch"
    target=$scratch
  fi
}
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
# kdelta's first sample from its JSON result (see "Pairs" above).
first_sample() { python3 "$here/scripts/first-sample.py" 2; }
run_dbench() { prepare; "$dbench_bin" -c "$loadfile" -D "$target" -t "$secs" "$1" 2>&1 | awk '/^ *Throughput/{print $2}'; }
run_nokill() { prepare; LD_PRELOAD=$work/nokill.so "$dbench_bin" -c "$loadfile" -D "$target" -t "$secs" "$1" 2>&1 | awk '/^ *Throughput/{print $2}'; }
run_kdelta() {
  prepare
  KDELTA_DB=$db "$kdelta" run dbench --param clients="$1" --param loadfile="$loadfile" --param dir="$target" \
    --param warmup=2s --param time="${secs}s" --runs 1 --quiet-wait 0 --format json 2>/dev/null |
    first_sample
}
if [ "$bench" = tbench ]; then
  # Debian's server on its default port 7003 (it listens on every address
  # while the script runs; the clients reach it on loopback). Its
  # per-connection workers end when their client disconnects.
  command -v tbench_srv >/dev/null || { echo "tbench_srv not found (apt install dbench)" >&2; exit 2; }
  tbench_srv >/dev/null 2>&1 &
  srv=$!
  sleep 0.5
  run_dbench() { tbench -c "$loadfile" -t "$secs" "$1" 127.0.0.1 2>&1 | awk '/^ *Throughput/{print $2}'; }
  run_kdelta() {
    KDELTA_DB=$db "$kdelta" run tbench --param clients="$1" --param loadfile="$loadfile" \
      --param warmup=2s --param time="${secs}s" --runs 1 --quiet-wait 0 --format json 2>/dev/null |
      first_sample
  }
fi
out=$work/pairs.txt
for i in $(seq "$rounds"); do
  for n in "$@"; do
    if [ $((i % 2)) = 1 ]; then d=$(run_dbench "$n"); k=$(run_kdelta "$n"); else k=$(run_kdelta "$n"); d=$(run_dbench "$n"); fi
    line="clients $n round $i $bench $d kdelta $k"
    [ $nokill = 1 ] && line="$line dbench_nokill $(run_nokill "$n")"
    echo "$line" | tee -a "$out"
  done
done
python3 - "$out" "$bench" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
for n in sorted({r[1] for r in rows}, key=int):
    d = [float(r[5]) for r in rows if r[1] == n]
    k = [float(r[7]) for r in rows if r[1] == n]
    ratios = [b / a for a, b in zip(d, k)]
    lower = sum(1 for r in ratios if r < 1)
    b = sys.argv[2]
    line = "clients %s: %d rounds, median %s %.1f MB/s, kdelta %.1f MB/s, kdelta/%s %+.1f%% (median pair ratio %.3f, kdelta lower in %d)" % (
        n, len(d), b, st.median(d), st.median(k), b, 100 * (st.median(k) / st.median(d) - 1), st.median(ratios), lower)
    nk = [float(r[9]) for r in rows if r[1] == n and len(r) > 9]
    if nk:
        line += ", dbench without kill %.1f MB/s (kdelta %+.1f%%)" % (st.median(nk), 100 * (st.median(k) / st.median(nk) - 1))
    print(line)
PY
