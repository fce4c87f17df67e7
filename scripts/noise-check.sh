#!/usr/bin/env bash
# Check that a kdelta comparison holds up under one-sided noise: run the same
# `kdelta run` several times, quiet or with a CPU-bound loop on one CPU
# (../shared/tools/hog.sh, or the same loop written here), and print per run
# how many changes were starred, then the medians of every result.
#
# With -e it also measures power: the changes it names are real ones, and the
# last lines give both rates, the real changes starred (power) and the other
# changes starred (false stars).
#
# usage: scripts/noise-check.sh [-n RUNS] [-m quiet|toggle|on] [-c CPU] [-s SECONDS] [-k KDELTA] [-e REGEX] -- RUN-ARGS...
#   -n RUNS     how many runs (default 5)
#   -m MODE     quiet (default), toggle (the loop switched on and off every
#               SECONDS), on (the loop runs throughout) or alternate (runs
#               alternate quiet and on, RUNS of each, and the medians of the
#               two are compared: absolute figures drift on a shared machine,
#               so quiet and loaded runs are interleaved)
#   -c CPU      the CPU the loop is pinned to (default 0)
#   -s SECONDS  the toggle period (default 2)
#   -k KDELTA   the kdelta binary (default target/release/kdelta)
#   -e REGEX    power mode: the changes whose `benchmark params [config]`
#               matches REGEX (Python syntax; `.` for every change) are real;
#               the rest are expected to show no difference
# Examples (the false-star bar, then the power bar):
#   scripts/noise-check.sh -n 3 -m toggle -- lat.syscall lat.read lat.write lat.stat lat.fstat lat.open --config cpus=0,cpus=1
#   scripts/noise-check.sh -n 3 -e . -- lat.pipe lat.unix lat.proc.fork --config up,noht
# Needs python3 to read kdelta's JSON. Each run uses a private database that
# is removed at the end; the loop is killed on exit.
set -euo pipefail

runs=5 mode=quiet cpu=0 secs=2 kd=target/release/kdelta expect=
while getopts "n:m:c:s:k:e:" o; do
  case $o in
    n) runs=$OPTARG ;; m) mode=$OPTARG ;; c) cpu=$OPTARG ;; s) secs=$OPTARG ;; k) kd=$OPTARG ;; e) expect=$OPTARG ;;
    *) sed -n '2,27p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
case $mode in quiet|toggle|on|alternate) ;; *) echo "noise-check: -m $mode is not allowed: quiet, toggle, on or alternate" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "noise-check: give the arguments of kdelta run after --" >&2; exit 2; }

work=$(mktemp -d)
hog=
cleanup() {
  if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# taskset execs the shell, so each PID below is the loop itself.
case $mode in
  on) taskset -c "$cpu" sh -c 'while :; do :; done' & hog=$! ;;
  toggle) ( trap 'kill $h 2>/dev/null; exit 0' TERM INT
            h=; while :; do taskset -c "$cpu" sh -c 'while :; do :; done' & h=$!; sleep "$secs" & wait $!
                            kill $h; wait $h 2>/dev/null || true; h=; sleep "$secs" & wait $!; done ) & hog=$! ;;
esac

total=$runs
[ "$mode" = alternate ] && total=$((2 * runs))
for i in $(seq 1 "$total"); do
  if [ "$mode" = alternate ]; then
    if [ $((i % 2)) = 0 ]; then taskset -c "$cpu" sh -c 'while :; do :; done' & hog=$!; echo on > "$work/m$i"; sleep 0.2; else echo quiet > "$work/m$i"; fi
  else
    echo "$mode" > "$work/m$i"
  fi
  KDELTA_DB="$work/r$i.db" "$kd" run "$@" --format json > "$work/r$i.json"
  if [ "$mode" = alternate ] && [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=; fi
done

python3 - "$work" "$total" "$mode" "$expect" <<'EOF'
import json, re, sys, statistics
work, runs, mode, expect = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
real = re.compile(expect) if expect else None
stars = total = 0
found = reals = false_stars = others = 0
medians = {}
for i in range(1, runs + 1):
    d = json.load(open(f"{work}/r{i}.json"))
    m = open(f"{work}/m{i}").read().strip()
    s = t = 0
    for table in d["comparisons"]:
        for row in table["rows"]:
            for col, c in zip(table["columns"][1:], row["changes"]):
                if c is None:
                    continue
                t += 1
                s += bool(c["significant"])
                who = f'{row["benchmark"]} {" ".join(f"{k}={v}" for k, v in row["params"].items())} [{col["name"]}]'
                r = c.get("rounds")
                held = f'held in {r["held"]} of {r["rounds"]} rounds, p {r["p"]:.3g}' if r else "rounds unknown"
                is_real = bool(real and real.search(who))
                if is_real:
                    reals += 1; found += bool(c["significant"])
                else:
                    others += 1; false_stars += bool(c["significant"])
                if c["significant"] or is_real:
                    mark = "starred" if c["significant"] else "NOT starred"
                    kind = "real" if is_real else "expected none"
                    print(f'  run {i}: {mark} ({kind}) {who}: {c["change_pct"]:+.1f}% ({held}; rank test p {c["p_mann_whitney"] or 1:.3g})')
    stars += s; total += t
    for r in d["results"]:
        key = f'{r["benchmark"]} {" ".join(f"{k}={v}" for k, v in r["params"].items())} [{r["config"]}]'
        medians.setdefault(key, {}).setdefault(m, []).append(r.get("median"))
    print(f"run {i} ({m}): {s} of {t} changes starred")
print(f"all runs ({mode}): {stars} of {total} changes starred")
if real:
    print(f"power: {found} of {reals} real changes starred" + (f" ({100 * found / reals:.0f}%)" if reals else ""))
    print(f"false stars: {false_stars} of {others} other changes starred" + (f" ({100 * false_stars / others:.0f}%)" if others else ""))
def mm(v):
    vals = [x for x in v if x is not None]
    return statistics.median(vals) if vals else float("nan")
for k, by in medians.items():
    line = "; ".join(f"{m} {mm(v):.4g} ({', '.join(f'{x:.4g}' if x is not None else '-' for x in v)})" for m, v in by.items())
    if "quiet" in by and "on" in by:
        line += f"; on/quiet {mm(by['on']) / mm(by['quiet']):.3f}"
    print(f"  {k}: {line}")
EOF
