#!/usr/bin/env bash
# Interleaved comparison of LMbench 3's latency programs with kdelta's lat.*
# benchmarks that stand for them (the fidelity check of docs/fidelity.md;
# the bar: every ratio kdelta/LMbench within 0.90..1.10).
#
# usage: scripts/lmbench-vs-kdelta.sh [-r ROUNDS] [-c CPU] [-k KDELTA] [-n "N..."] LMBENCH_BIN_DIR [ROW...]
#   LMBENCH_BIN_DIR  where LMbench's lat_sig, lat_proc, lat_select and hello
#                    are (e.g. lmbench/bin/x86_64-linux-gnu after its make)
#   -r ROUNDS   interleaved rounds (default 3); the order of the two tools
#               alternates from round to round
#   -c CPU      the CPU both are pinned to with taskset (default 0); kdelta
#               runs with --config cpus=CPU
#   -k KDELTA   the kdelta binary (default: target/release/kdelta)
#   -n "N..."   descriptor counts for the select rows (default "10 100")
#   ROW         sig.install sig.catch proc.fork proc.exec proc.shell
#               select.file select.tcp (default: these, issue 19's rows), or
#               any of the other rows below, or `all`
# Each kdelta figure is the median of one `kdelta run` at its default
# settings (10 ms samples); each LMbench figure is what one LMbench
# invocation prints (its own median of 11 repetitions), each repetition
# timed over $ENOUGH microseconds: 10000 (kdelta's sample time) unless set.
# Without it LMbench works out its own on every start, which on a busy VM
# takes a minute per invocation. Prints every pair as it comes, then per row the
# median of each tool and the median of the per-round ratios.
#
# What each pair runs (the same system calls, see docs/fidelity.md):
#   sig.install  lat_sig install           kdelta lat.sig.install
#   sig.catch    lat_sig catch             kdelta lat.sig.catch
#   proc.fork    lat_proc fork             kdelta lat.proc.fork
#   proc.exec    lat_proc exec             kdelta lat.proc.exec (prog=hello)
#   proc.shell   lat_proc shell            kdelta lat.proc.shell (prog=hello)
#   select.file  lat_select -n M file      kdelta lat.select.file fds=N
#   select.tcp   lat_select -n M tcp       kdelta lat.select.tcp fds=N
#   syscall.null lat_syscall null          kdelta lat.syscall (and .read .write
#                .fstat; .stat .open on a small file of the script's)
#   pipe, unix   lat_pipe, lat_unix        kdelta lat.pipe, lat.unix
#   tcp          lat_tcp localhost         kdelta lat.tcp (server: lat_tcp -s, pinned too)
#   ctx          lat_ctx -s 0 2            kdelta lat.ctx procs=2 size=0
#   bw.rd bw.wr bw.cp  bw_mem 64m rd|wr|cp kdelta bw.mem.* size=64M (MB/s)
# lat_proc execs /tmp/hello: this script copies LMbench's hello there. LMbench's
# lat_select -n M dup's M descriptors into the lowest free numbers, among the
# pipes its benchmp harness holds (and the listening socket for tcp), but
# passes nfds = M, so it polls only those below M. The script finds, with
# strace, the M at which LMbench polls exactly N descriptors (the work
# kdelta's fds=N does; about N+9 for file and N+10 for tcp here) and prints
# the nominal lat_select -n N figure beside it.
# Needs: taskset, strace, python3, LMbench built, a release build of kdelta.
set -euo pipefail
rounds=3
cpu=0
kdelta=target/release/kdelta
ns="10 100"
while getopts "r:c:k:n:" o; do
  case $o in
    r) rounds=$OPTARG ;;
    c) cpu=$OPTARG ;;
    k) kdelta=$OPTARG ;;
    n) ns=$OPTARG ;;
    *) sed -n '2,36p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-c CPU] [-k KDELTA] [-n \"N...\"] LMBENCH_BIN_DIR [ROW...]" >&2; exit 2; }
lmb=$(cd "$1" && pwd)
shift
rows=("$@")
issue=(sig.install sig.catch proc.fork proc.exec proc.shell select.file select.tcp)
others=(syscall.null syscall.read syscall.write syscall.stat syscall.fstat syscall.open pipe unix tcp ctx bw.rd bw.wr bw.cp)
[ ${#rows[@]} -gt 0 ] || rows=("${issue[@]}")
[ "${rows[*]}" != all ] || rows=("${issue[@]}" "${others[@]}")
kdelta=$(cd "$(dirname "$kdelta")" && pwd)/$(basename "$kdelta")
for p in lat_sig lat_proc lat_select hello lat_syscall lat_pipe lat_unix lat_tcp lat_ctx bw_mem; do
  [ -x "$lmb/$p" ] || { echo "$lmb/$p is missing: build LMbench first" >&2; exit 2; }
done
[ -x "$kdelta" ] || { echo "$kdelta is missing: cargo build --release" >&2; exit 2; }
if [ -e /tmp/hello ] && ! cmp -s "$lmb/hello" /tmp/hello; then
  echo "/tmp/hello exists and is not LMbench's hello: move it away first (lat_proc execs /tmp/hello)" >&2
  exit 2
fi
cp "$lmb/hello" /tmp/hello
export ENOUGH=${ENOUGH:-10000}

work=$(mktemp -d)
server=
trap 'rm -rf "$work"; [ -z "$server" ] || "$lmb/lat_tcp" -S localhost >/dev/null 2>&1 || true' EXIT
echo kdelta > "$work/file"
for r in "${rows[@]}"; do
  if [ "$r" = tcp ] || [ "$r" = all ]; then
    (cd "$work" && taskset -c "$cpu" "$lmb/lat_tcp" -s >/dev/null 2>&1)
    server=1
    sleep 1
  fi
done
db=$work/kdelta.db
out=$work/pairs.tsv
: > "$out"

# One row expands to its points: "row" or "row:N" for select.
points=()
for r in "${rows[@]}"; do
  case $r in
    select.*) for n in $ns; do points+=("$r:$n"); done ;;
    sig.install|sig.catch|proc.fork|proc.exec|proc.shell|syscall.*|pipe|unix|tcp|ctx|bw.rd|bw.wr|bw.cp) points+=("$r") ;;
    *) echo "unknown row $r" >&2; exit 2 ;;
  esac
done

# LMbench prints "<what>: <figure> microseconds" on stderr.
lmbench_fig() {
  (cd "$work" && taskset -c "$cpu" "$@" 2>&1 >/dev/null) | awk '/microseconds/ { print $(NF-1) }' | tail -1
}

# The -n M at which lat_select polls exactly N descriptors (counted in the
# write set of its timed select, seen with strace).
declare -A nfds
polled() {
  (cd "$work" && strace -f -e trace=select,pselect6 -o "$work/strace.txt" "$lmb/lat_select" -N 1 -n "$1" "$2" >/dev/null 2>&1) || true
  grep -m1 -E 'select6?\([0-9]+, NULL, \[' "$work/strace.txt" | sed -E 's/^[^[]*\[([^]]*)\].*/\1/' | wc -w
}
find_nfds() {
  local kind=$1 n=$2 m=$2
  command -v strace >/dev/null || { echo "strace is missing: cannot find lat_select's -n for $n descriptors" >&2; exit 2; }
  while (( $(polled "$m" "$kind") < n )); do
    m=$((m + 1))
    (( m <= n + 64 )) || { echo "lat_select never polls $n $kind descriptors below -n $m" >&2; exit 2; }
  done
  nfds[$kind:$n]=$m
  echo "# lat_select -n $m $kind polls $n descriptors" >&2
}

# The last line's second field (lat_ctx: "2 1.23"; bw_mem: "64.00 9876.54").
lmbench_second() {
  (cd "$work" && taskset -c "$cpu" "$@" 2>&1 >/dev/null) | awk 'NF == 2 { v = $2 } END { print v }'
}

lmbench_run() {
  local p=$1 n=${1#*:}
  case $p in
    syscall.stat | syscall.open) lmbench_fig "$lmb/lat_syscall" "${p#syscall.}" "$work/file" ;;
    syscall.*) lmbench_fig "$lmb/lat_syscall" "${p#syscall.}" ;;
    pipe) lmbench_fig "$lmb/lat_pipe" ;;
    unix) lmbench_fig "$lmb/lat_unix" ;;
    tcp) lmbench_fig "$lmb/lat_tcp" localhost ;;
    ctx) lmbench_second "$lmb/lat_ctx" -s 0 2 ;;
    bw.*) lmbench_second "$lmb/bw_mem" 64m "${p#bw.}" ;;
    sig.install) lmbench_fig "$lmb/lat_sig" install ;;
    sig.catch) lmbench_fig "$lmb/lat_sig" catch ;;
    proc.fork) lmbench_fig "$lmb/lat_proc" fork ;;
    proc.exec) lmbench_fig "$lmb/lat_proc" exec ;;
    proc.shell) lmbench_fig "$lmb/lat_proc" shell ;;
    select.file:*) lmbench_fig "$lmb/lat_select" -n "${nfds[file:$n]}" file ;;
    select.tcp:*) lmbench_fig "$lmb/lat_select" -n "${nfds[tcp:$n]}" tcp ;;
  esac
}

lmbench_nominal() {
  local p=$1 n=${1#*:}
  case $p in
    select.file:*) lmbench_fig "$lmb/lat_select" -n "$n" file ;;
    select.tcp:*) lmbench_fig "$lmb/lat_select" -n "$n" tcp ;;
  esac
}

kdelta_run() {
  local p=$1 n=${1#*:} args
  case $p in
    select.*) args=("lat.${p%%:*}" --param "fds=$n") ;;
    syscall.null) args=(lat.syscall) ;;
    syscall.*) args=("lat.${p#syscall.}") ;;
    ctx) args=(lat.ctx --param procs=2 --param size=0) ;;
    bw.*) args=("bw.mem.${p#bw.}" --param size=64M) ;;
    *) args=("lat.$p") ;;
  esac
  taskset -c "$cpu" "$kdelta" --db "$db" run "${args[@]}" --config "cpus=$cpu" --format json \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["median"] if r["status"]=="ok" else "nan")'
}

for p in "${points[@]}"; do
  case $p in
    select.file:*) find_nfds file "${p#*:}" ;;
    select.tcp:*) find_nfds tcp "${p#*:}" ;;
  esac
done

echo "# round point kdelta lmbench ratio [lmbench nominal -n N]  (us; MB/s for bw.*)"
for ((round = 1; round <= rounds; round++)); do
  for p in "${points[@]}"; do
    if ((round % 2)); then
      l=$(lmbench_run "$p"); k=$(kdelta_run "$p")
    else
      k=$(kdelta_run "$p"); l=$(lmbench_run "$p")
    fi
    nom=$(lmbench_nominal "$p")
    ratio=$(python3 -c "print(f'{$k/$l:.3f}' if float('$l') > 0 else 'nan')")
    echo "$round $p $k $l $ratio ${nom:+[nominal $nom]}"
    printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$k" "$l" "$ratio" "${nom:-}" >> "$out"
  done
done

echo
python3 - "$out" "$rounds" "$cpu" <<'EOF'
import statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    p, k, l, r, nom = line.rstrip("\n").split("\t")
    rows.setdefault(p, []).append((float(k), float(l), float(r), float(nom) if nom else None))
print(f"medians over {sys.argv[2]} alternated rounds, both pinned to CPU {sys.argv[3]}")
print(f"{'row':<18} {'kdelta':>10} {'LMbench':>11} {'ratio':>6}  {'min..max ratio':>14}  LMbench nominal -n N   (us; MB/s for bw.*)")
for p, v in rows.items():
    ks, ls, rs = [x[0] for x in v], [x[1] for x in v], [x[2] for x in v]
    noms = [x[3] for x in v if x[3] is not None]
    nom = f"{st.median(noms):.4f}" if noms else ""
    print(f"{p:<18} {st.median(ks):>10.4f} {st.median(ls):>11.4f} {st.median(rs):>6.3f}  {min(rs):>6.3f}..{max(rs):<6.3f}  {nom}")
EOF
