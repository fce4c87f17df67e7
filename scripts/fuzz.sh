#!/bin/sh
# Run every cargo-fuzz target in fuzz/ for a bounded time and print, per
# target: its name, the seconds it ran, the executions, and the crashes
# (inputs libFuzzer saved under fuzz/artifacts/TARGET/ during this run).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 120)
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Exit status: 0 no crash, 1 a target crashed, 2 a tool is missing or a
# target failed to build.
set -u
secs=${1:-120}
case $secs in
    '' | *[!0-9]* | 0) echo "fuzz.sh: seconds per target must be a whole number above 0, not '$secs'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/../fuzz" || exit 2

missing=
if ! cargo +nightly --version >/dev/null 2>&1; then
    missing="the nightly toolchain (rustup toolchain install nightly)"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    missing="${missing:+$missing and }cargo-fuzz (cargo install cargo-fuzz)"
fi
if [ -n "$missing" ]; then
    echo "fuzz.sh: cannot fuzz: missing $missing" >&2
    exit 2
fi

targets=$(cargo fuzz list 2>/dev/null)
if [ -z "$targets" ]; then
    echo "fuzz.sh: cargo fuzz list found no targets in $(pwd)" >&2
    exit 2
fi

log=$(mktemp) || exit 2
trap 'rm -f "$log"' EXIT
status=0
printf '%-12s %8s %12s %8s\n' target seconds executions crashes
for t in $targets; do
    if ! cargo +nightly fuzz build --release "$t" >"$log" 2>&1; then
        echo "fuzz.sh: $t does not build:" >&2
        tail -20 "$log" >&2
        status=2
        continue
    fi
    mkdir -p "artifacts/$t"
    before=$(ls "artifacts/$t" | wc -l)
    start=$(date +%s)
    cargo +nightly fuzz run --release "$t" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1
    took=$(($(date +%s) - start))
    # libFuzzer's final count: 'Done N runs in S second(s)', else the last '#N' status line.
    execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    crashes=$(($(ls "artifacts/$t" | wc -l) - before))
    printf '%-12s %8s %12s %8s\n' "$t" "$took" "${execs:-?}" "$crashes"
    if [ "$crashes" -gt 0 ]; then
        status=1
        echo "fuzz.sh: $t crashed; inputs in fuzz/artifacts/$t/, the end of its log:" >&2
        tail -30 "$log" >&2
    fi
done
exit $status
