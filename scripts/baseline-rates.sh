#!/usr/bin/env bash
# A stored baseline that is minutes old, checked against under a hog: issue 51's
# "never exit 1 in 20 tries" for an identical build. Records a baseline of
# scripts/spin.c (8.5 million iterations) labelled `base` in a throwaway store,
# waits WAIT seconds, starts the hog, then runs N times
#   kdelta check cmd --cmd 'spin ITERS*RATIO' --against base
# and tallies the exit statuses and wall times. The hog is killed however this ends.
#   scripts/baseline-rates.sh [N [WAIT [toggle|toggle-self|none [RATIO]]]]
set -euo pipefail
n=${1:-20}; wait_s=${2:-600}; hog=${3:-toggle}; ratio=${4:-1.0}
here=$(cd "$(dirname "$0")" && pwd)
kdelta=${KDELTA:-$here/../target/release/kdelta}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baseline-rates.XXXXXX")
hog_pid=
trap '[ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
cc -O2 -o "$tmp/spin" "$here/spin.c"
iters=8500000
new=$(python3 -c "print(int(round($iters * $ratio)))")
export KDELTA_DB="$tmp/r.db"
config=()
[ "$hog" = toggle-self ] && config=(--config cpus=0)
"$kdelta" run cmd --cmd "$tmp/spin $iters" --label base "${config[@]}" >/dev/null
echo "baseline stored at $(date -u +%T); waiting ${wait_s}s"
sleep "$wait_s"
case "$hog" in
  toggle) hog_pid=$("$here/../../shared/tools/hog.sh" toggle 0 2) ;;
  toggle-self) hog_pid=$("$here/../../shared/tools/hog.sh" toggle 0 0.7) ;;
esac
declare -A count=()
walls=()
for i in $(seq 1 "$n"); do
  t0=$(date +%s.%N)
  set +e
  line=$("$kdelta" check cmd --cmd "$tmp/spin $new" --against base "${config[@]}" 2>&1 | grep -v '^ *$' | head -1)
  code=${PIPESTATUS[0]}
  set -e
  wall=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  walls+=("$wall")
  count[$code]=$(( ${count[$code]:-0} + 1 ))
  echo "try $i: exit $code in ${wall} s: $line"
done
printf 'ratio %s hog %s, baseline %ss old at the first try: exits' "$ratio" "$hog" "$wait_s"
for c in "${!count[@]}"; do printf ' %s:%s' "$c" "${count[$c]}"; done
printf '; wall median %s s\n' "$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
