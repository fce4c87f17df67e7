#!/usr/bin/env bash
# How often kdelta stars a difference between two identical vCPUs: N runs of
# six single-task lat rows on cpus=0 against cpus=1 (nothing differs, so
# every star is false), quiet or with ../shared/tools/hog.sh noise.
#
#   scripts/identical-cpus.sh N none|toggle|toggle-self [KDELTA]
#
# toggle: a loop on CPU 0, 2 s on, 2 s off; toggle-self: on CPU 1, 0.7 s.
# Prints every starred row and a tally; a throwaway store in a temporary
# directory, removed at the end. The bar (DEVELOPERS.md): at most 1 row in 18.
set -euo pipefail
n=${1:?N}; mode=${2:?none|toggle|toggle-self}
k=${3:-$(dirname "$0")/../target/release/kdelta}
hog=$(dirname "$0")/../../shared/tools/hog.sh
dir=$(mktemp -d); h=
trap '[ -n "$h" ] && kill "$h" 2>/dev/null; rm -rf "$dir"' EXIT
case "$mode" in
  toggle) h=$("$hog" toggle 0 2) ;;
  toggle-self) h=$("$hog" toggle 1 0.7) ;;
  none) ;;
  *) echo "mode: none, toggle or toggle-self, not $mode" >&2; exit 2 ;;
esac
stars=0; rows=0; t0=$(date +%s)
for _ in $(seq "$n"); do
  out=$(KDELTA_DB="$dir/db.sqlite" "$k" run lat.syscall lat.read lat.write lat.stat lat.fstat lat.open \
    --config cpus=0,cpus=1 2>&1 | grep -E '^lat\.[a-z.]+ +us ' || true)
  grep '\*' <<<"$out" || true
  stars=$((stars + $(grep -c '\*' <<<"$out" || true))); rows=$((rows + $(grep -c . <<<"$out" || true)))
done
echo "starred $stars of $rows rows ($mode) in $(( $(date +%s) - t0 )) s"
