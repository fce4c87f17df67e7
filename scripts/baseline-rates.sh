#!/usr/bin/env bash
# A stored baseline minutes old, checked against under a hog: issue 51's
# "never exit 1 in 20 tries" for an identical build.
#   scripts/baseline-rates.sh record DIR
#       builds scripts/spin.c into DIR and stores a baseline run of
#       `sh DIR/build.sh` (spin, 8.5 million iterations) labelled `base` in DIR/r.db
#   scripts/baseline-rates.sh check DIR [N [toggle|toggle-self|none [RATIO]]]
#       rewrites DIR/build.sh to spin ITERS*RATIO (the "new build": the
#       command's text stays the same, as a row's must), starts the hog, then runs N times
#         kdelta check cmd --cmd 'sh DIR/build.sh' --against base
#       and tallies the exit statuses and wall times; the hog is killed however this ends
# Run `record`, let ten minutes or more pass, then `check`.
set -euo pipefail
what=${1:?record or check}; dir=${2:?a directory}
here=$(cd "$(dirname "$0")" && pwd)
kdelta=${KDELTA:-$here/../target/release/kdelta}
export KDELTA_DB="$dir/r.db"
iters=8500000
if [ "$what" = record ]; then
  mkdir -p "$dir"
  cc -O2 -o "$dir/spin" "$here/spin.c"
  echo "exec $dir/spin $iters" > "$dir/build.sh"
  "$kdelta" run cmd --cmd "sh $dir/build.sh" --label base >/dev/null
  echo "baseline stored at $(date -u +%T) in $KDELTA_DB"
  exit 0
fi
n=${3:-20}; hog=${4:-toggle}; ratio=${5:-1.0}
new=$(python3 -c "print(int(round($iters * $ratio)))")
echo "exec $dir/spin $new" > "$dir/build.sh"
hog_pid=
trap '[ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null || true' EXIT INT TERM
case "$hog" in
  toggle) hog_pid=$("$here/../../shared/tools/hog.sh" toggle 0 2) ;;
  toggle-self) hog_pid=$("$here/../../shared/tools/hog.sh" toggle 0 0.7) ;;
esac
declare -A count=()
walls=()
for i in $(seq 1 "$n"); do
  t0=$(date +%s.%N)
  set +e
  out=$("$kdelta" check cmd --cmd "sh $dir/build.sh" --against base 2>&1)
  code=$?
  set -e
  wall=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  walls+=("$wall")
  count[$code]=$(( ${count[$code]:-0} + 1 ))
  echo "try $i at $(date -u +%T): exit $code in ${wall} s: $(printf '%s\n' "$out" | grep -v '^ *$' | head -1)"
done
printf 'ratio %s hog %s: exits' "$ratio" "$hog"
for c in "${!count[@]}"; do printf ' %s:%s' "$c" "${count[$c]}"; done
printf '; wall median %s s\n' "$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
