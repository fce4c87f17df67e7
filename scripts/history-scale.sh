#!/usr/bin/env bash
# How fast `kdelta history` answers on a store the size of a year of nightly
# runs from many hosts (default: 50 hosts x 400 nights = 20,000 runs of 200
# results each, 4,000,000 results), on SQLite and on PostgreSQL.
#
#   scripts/history-scale.sh [--runs N] [--results M] [--hosts H] [--repeat K]
#                            [--sqlite-only | --pg-only] [--kdelta PATH] [--keep FILE]
#                            [--keep-pg]
#
# The rows are real kdelta rows: a short real run (`kdelta run` of four
# LMbench latencies under `up` and `noht`, 10 samples each, with --label and
# --meta) is stored first, by kdelta itself (and pushed with `kdelta push` to
# the PostgreSQL store), so the schema, indexes and JSON columns are what
# kdelta writes. Its run and results are then multiplied in SQL (sqlite3 with
# recursive CTEs, psql with generate_series), never by running kdelta again:
# run i is night i / H on host `h(i % H)`, started one day apart per host (the
# hosts a minute apart), label `nightly`, metadata `branch=main` and a commit
# per night, the kernel release changing every 100 nights; each run holds M
# points (benchmark names and units from `kdelta list`, under `up`, `noht`,
# `ht` and `up+sched=batch`), each a copy of one real result (its samples_meta,
# summary, quality, warnings: rows as long as real ones) with its samples
# scaled by a factor of 0.98-1.02 that varies from run to run, and by 1.05
# from the middle night on for every tenth point (lat.syscall under up among
# them), so the change-point search has noise to test and a step to find.
# The summary column is the real result's, not recomputed for the scaled
# samples (history reads the samples).
#
# Then it times `kdelta history lat.syscall --host h17` K times (default 5):
# the first cold (the store's files dropped from the page cache with
# `dd iflag=nocache`, PostgreSQL restarted), the rest warm, and once more with
# `--label nightly --meta branch=main`. It prints the CPU model, row counts,
# database sizes, each time and the median. The stores live in a temporary
# directory (SQLite file; PostgreSQL a throwaway cluster from
# scripts/pg-throwaway.sh), removed at the end, on error and on Ctrl-C;
# `--keep FILE` keeps the SQLite store as FILE; `--keep-pg` leaves the
# PostgreSQL cluster running and prints its URL and the command that stops
# and removes it.
#
# Needs sqlite3 and PostgreSQL's initdb/pg_ctl/psql (`apt install sqlite3
# postgresql`), python3 and about 12 GB free under $TMPDIR for SQLite and 6 GB
# for PostgreSQL at the default size (one store at a time).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
runs=20000 results=200 hosts=50 repeat=5 do_sqlite=1 do_pg=1 keep="" keep_pg=0
kdelta="$repo/target/release/kdelta"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --sqlite-only) do_pg=0; shift ;;
    --pg-only) do_sqlite=0; shift ;;
    --kdelta) kdelta=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --keep-pg) keep_pg=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "history-scale: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in runs results hosts repeat; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "history-scale: --$v must be a positive integer, not ${!v}" >&2; exit 2; }
done
[ -x "$kdelta" ] || { echo "history-scale: no $kdelta (cargo build --release first, or --kdelta PATH)" >&2; exit 2; }
[ $((runs % hosts)) = 0 ] || { echo "history-scale: --runs must be a multiple of --hosts" >&2; exit 2; }
nights=$((runs / hosts))
host=h$((17 % hosts))
bench=lat.syscall
for t in python3 $([ $do_sqlite = 1 ] && echo sqlite3) $([ $do_pg = 1 ] && echo psql); do
  command -v "$t" >/dev/null || { echo "history-scale: $t not found (apt install sqlite3 postgresql python3)" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kdelta-scale.XXXXXX")
# PostgreSQL's own user (when run as root) must reach the cluster inside.
chmod 711 "$work"
pgdir="" kept_pg=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$pgdir" ]; then "$here/pg-throwaway.sh" stop "$pgdir" || true; fi
  if [ "$kept_pg" = 1 ]; then
    find "$work" -mindepth 1 -maxdepth 1 ! -name pg -exec rm -rf {} +
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export TMPDIR=$work NO_COLOR=1

say() { printf '%s\n' "$*" >&2; }

# The real rows: four LMbench latencies under two configurations.
seed=$work/seed.db
say "== a real run to copy ($kdelta)"
"$kdelta" run lat.syscall lat.read lat.write lat.fstat --config up,noht --runs 10 \
  --label nightly --meta branch=main --meta commit=0000000 --db "$seed" >"$work/seed.txt" \
  || { cat "$work/seed.txt" >&2; echo "history-scale: the real run failed" >&2; exit 1; }
# Benchmark names, families, units and directions as kdelta lists them.
names_sql=$("$kdelta" list --json | python3 -c '
import json, sys
def q(s):
    return "\x27" + s.replace("\x27", "\x27\x27") + "\x27"
rows = ["(%d, %s, %s, %s, %s)" % (i, q(b["name"]), q(b["family"]), q(b["unit"]), q(b["better"]))
        for i, b in enumerate(json.load(sys.stdin))]
print("INSERT INTO names VALUES " + ",\n".join(rows) + ";")')
nnames=$("$kdelta" list --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$results" -le $((4 * nnames)) ] || { echo "history-scale: --results at most $((4 * nnames)) (4 configurations x $nnames benchmarks)" >&2; exit 2; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
say "CPU: $cpu ($(nproc) CPUs), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
say "size: $hosts hosts x $nights nights = $runs runs x $results results"

# Seconds taken by "$@" (its output in $work/out).
seconds() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

# Time `kdelta history` on store $1, dropping caches with the command $2 first.
time_history() {
  local db=$1 cold=$2 times=() t i
  for ((i = 1; i <= repeat; i++)); do
    if [ "$i" = 1 ]; then $cold; fi
    t=$(seconds "$kdelta" history "$bench" --host "$host" --db "$db")
    times+=("$t")
    if [ "$i" = 1 ]; then
      say "   its answer:"
      sed "s/^/     /" "$work/out" | head -20 >&2 || true
    fi
  done
  printf '   history %s --host %s: %s s (first cold, then warm); median %s s\n' "$bench" "$host" \
    "${times[*]}" "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
  times=()
  for ((i = 1; i <= 3; i++)); do
    times+=("$(seconds "$kdelta" history "$bench" --host "$host" --label nightly --meta branch=main --db "$db")")
  done
  printf '   history %s --host %s --label nightly --meta branch=main: %s s (warm)\n' "$bench" "$host" "${times[*]}"
  t=$(seconds "$kdelta" runs --host "$host" --db "$db")
  printf '   runs --host %s: %s s, %s lines\n' "$host" "$t" "$(wc -l <"$work/out")"
}

# The SQL shared by both dialects once the names, configurations and seed
# results are in temporary tables: a point's variant of its seed's samples,
# the top 4 bits of a multiplicative hash of night, host and point (0-15),
# plus 16 (the 5% step) for every tenth point from the middle night on.
variant='((m.n * 7919 + m.h * 104729 + p.k * 1299709) * 2654435761 % 4294967296 / 268435456) + (CASE WHEN p.k % 10 = 0 AND m.n >= '$((nights / 2))' THEN 16 ELSE 0 END)'

sqlite_fill() {
  local db=$1
  cp "$seed" "$db"
  sqlite3 -bail "$db" <<SQL
PRAGMA journal_mode = DELETE;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -262144;
PRAGMA temp_store = MEMORY;
PRAGMA foreign_keys = ON;
BEGIN;
CREATE TEMP TABLE names (i INTEGER PRIMARY KEY, benchmark TEXT, family TEXT, unit TEXT, better TEXT);
$names_sql
CREATE TEMP TABLE seed AS SELECT row_number() OVER (ORDER BY id) - 1 AS s, * FROM results;
CREATE TEMP TABLE cfg (c INTEGER PRIMARY KEY, config TEXT);
INSERT INTO cfg VALUES (0, 'up'), (1, 'noht'), (2, 'ht'), (3, 'up+sched=batch');
CREATE TEMP TABLE pts AS
  WITH RECURSIVE k(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM k WHERE k + 1 < $results)
  SELECT k, n.benchmark, n.family, n.unit, n.better, c.config,
         coalesce((SELECT cpus FROM seed WHERE seed.config = c.config LIMIT 1), (SELECT cpus FROM seed WHERE config = 'noht' LIMIT 1)) AS cpus,
         k % (SELECT count(*) FROM seed) AS s
  FROM k JOIN names n ON n.i = k % $nnames JOIN cfg c ON c.c = k / $nnames;
CREATE TEMP TABLE var AS
  WITH RECURSIVE v(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM v WHERE v + 1 < 32)
  SELECT s, v, (SELECT json_group_array(value * (0.98 + (v % 16) * 0.0025) * (CASE WHEN v >= 16 THEN 1.05 ELSE 1 END))
                FROM json_each(seed.samples)) AS samples
  FROM seed, v;
CREATE UNIQUE INDEX temp.var_sv ON var (s, v);
CREATE TEMP TABLE plan AS
  WITH RECURSIVE i(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM i WHERE i + 1 < $runs)
  SELECT i, i % $hosts AS h, i / $hosts AS n, 'h' || (i % $hosts) AS hostname,
         strftime('%Y-%m-%dT%H:%M:%SZ', '2025-01-01 02:00:00', '+' || (i / $hosts) || ' days', '+' || (i % $hosts) || ' minutes') AS started,
         '6.' || (12 + (i / $hosts) / 100) || '.0-nightly' AS kernel,
         printf('%07x', (i / $hosts) * 2654435761 % 268435455) AS git
  FROM i;
INSERT INTO runs (label, started, finished, status, kdelta_version, command, pid, configs, host, environment, pid_start, meta, hostname, kernel)
  SELECT 'nightly', p.started, strftime('%Y-%m-%dT%H:%M:%SZ', p.started, '+20 minutes'), 'complete', t.kdelta_version,
         'kdelta run lat.syscall lat.read lat.write lat.fstat --config up,noht --label nightly --meta branch=main --meta commit=' || p.git,
         t.pid, t.configs, json_set(t.host, '\$.hostname', p.hostname, '\$.kernel_release', p.kernel), t.environment, t.pid_start,
         '{"branch":"main","commit":"' || p.git || '"}', p.hostname, p.kernel
  FROM plan p, (SELECT * FROM runs LIMIT 1) t ORDER BY p.i;
CREATE TEMP TABLE made AS
  SELECT r.id, p.h, p.n FROM plan p JOIN runs r ON r.hostname = p.hostname AND r.started = p.started ORDER BY r.id;
INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, reason, samples, summary,
                     extras, notes, warnings, iterations, simulated, samples_meta, quality, placement, below_resolution)
  SELECT m.id, p.k, p.benchmark, p.family, '{}', p.config, p.cpus, p.unit, p.better, d.status, d.reason, var.samples, d.summary,
         d.extras, d.notes, d.warnings, d.iterations, d.simulated, d.samples_meta, d.quality, d.placement, d.below_resolution
  FROM made m CROSS JOIN pts p JOIN seed d ON d.s = p.s JOIN var ON var.s = p.s AND var.v = $variant;
DELETE FROM results WHERE run_id = (SELECT min(id) FROM runs);
DELETE FROM runs WHERE id = (SELECT min(id) FROM runs);
COMMIT;
PRAGMA journal_mode = WAL;
SQL
}

run_sqlite() {
  local db=$work/store.db t
  say "== SQLite: filling $db"
  t=$(seconds sqlite_fill "$db")
  say "   filled in $t s"
  "$kdelta" runs --host "$host" --limit 3 --db "$db" >&2
  printf 'SQLite %s (%s)\n' "$(sqlite3 --version | cut -d' ' -f1)" "$db"
  printf '   rows: %s runs, %s results; file %s MiB\n' \
    "$(sqlite3 "$db" 'SELECT count(*) FROM runs')" "$(sqlite3 "$db" 'SELECT count(*) FROM results')" \
    "$(($(stat -c %s "$db") / 1048576))"
  printf '   query plan of the runs query:\n'
  sqlite3 "$db" "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE status = 'complete' AND hostname = '$host' ORDER BY started, id" | sed 's/^/     /'
  time_history "$db" "sqlite_cold $db"
  if [ -n "$keep" ]; then
    mv "$db" "$keep" && say "   kept the SQLite store as $keep"
  fi
  rm -f "$db" "$db-wal" "$db-shm"
}

# Drop a file's pages from the page cache (only that file, not the machine's).
uncache() { find "$@" -type f -exec dd if={} iflag=nocache count=0 status=none \; ; }
sqlite_cold() { uncache "$1"; }

# Restart the throwaway cluster with its files out of the page cache.
pg_cold() { "$here/pg-throwaway.sh" cold "$pgdir"; }

pg_fill() {
  local url=$1
  psql -q -v ON_ERROR_STOP=1 "$url" <<SQL
SET search_path TO kdelta;
SET synchronous_commit = off;
SET work_mem = '256MB';
BEGIN;
CREATE TEMP TABLE names (i INTEGER PRIMARY KEY, benchmark TEXT, family TEXT, unit TEXT, better TEXT);
$names_sql
CREATE TEMP TABLE seed AS SELECT (row_number() OVER (ORDER BY id) - 1)::int AS s, * FROM results;
CREATE TEMP TABLE cfg (c INTEGER PRIMARY KEY, config TEXT);
INSERT INTO cfg VALUES (0, 'up'), (1, 'noht'), (2, 'ht'), (3, 'up+sched=batch');
CREATE TEMP TABLE pts AS
  SELECT k, n.benchmark, n.family, n.unit, n.better, c.config,
         coalesce((SELECT cpus FROM seed WHERE seed.config = c.config LIMIT 1), (SELECT cpus FROM seed WHERE config = 'noht' LIMIT 1)) AS cpus,
         k % (SELECT count(*) FROM seed)::int AS s
  FROM generate_series(0, $results - 1) k JOIN names n ON n.i = k % $nnames JOIN cfg c ON c.c = k / $nnames;
CREATE TEMP TABLE var AS
  SELECT d.s, v, (SELECT json_agg(e.x::float8 * (0.98 + (v % 16) * 0.0025) * (CASE WHEN v >= 16 THEN 1.05 ELSE 1 END) ORDER BY e.o)::text
                  FROM json_array_elements_text(d.samples::json) WITH ORDINALITY e(x, o)) AS samples
  FROM seed d, generate_series(0, 31) v;
CREATE UNIQUE INDEX ON var (s, v);
CREATE TEMP TABLE plan AS
  SELECT i, i % $hosts AS h, i / $hosts AS n, 'h' || (i % $hosts) AS hostname,
         to_char(timestamp '2025-01-01 02:00:00' + (i / $hosts) * interval '1 day' + (i % $hosts) * interval '1 minute',
                 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
         to_char(timestamp '2025-01-01 02:20:00' + (i / $hosts) * interval '1 day' + (i % $hosts) * interval '1 minute',
                 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS finished,
         '6.' || (12 + (i / $hosts) / 100) || '.0-nightly' AS kernel,
         lpad(to_hex(((i / $hosts)::bigint * 2654435761) % 268435455), 7, '0') AS git
  FROM generate_series(0, $runs - 1) i;
CREATE TEMP TABLE template AS SELECT * FROM runs LIMIT 1;
CREATE TEMP TABLE made (id BIGINT PRIMARY KEY, h INT, n INT);
-- Night after night, as the hosts would have stored them.
DO \$\$
DECLARE night INT;
BEGIN
  FOR night IN 0 .. $nights - 1 LOOP
    WITH ins AS (
      INSERT INTO runs (label, started, finished, status, kdelta_version, command, pid, configs, host, environment, pid_start,
                        meta, hostname, kernel)
        SELECT 'nightly', p.started, p.finished, 'complete', t.kdelta_version,
               'kdelta run lat.syscall lat.read lat.write lat.fstat --config up,noht --label nightly --meta branch=main --meta commit=' || p.git,
               t.pid, t.configs,
               jsonb_set(jsonb_set(t.host::jsonb, '{hostname}', to_jsonb(p.hostname)), '{kernel_release}', to_jsonb(p.kernel))::text,
               t.environment, t.pid_start, '{"branch":"main","commit":"' || p.git || '"}', p.hostname, p.kernel
        FROM plan p, template t WHERE p.n = night ORDER BY p.i
        RETURNING id, hostname)
    INSERT INTO made SELECT ins.id, p.h, p.n FROM ins JOIN plan p ON p.n = night AND p.hostname = ins.hostname;
    INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, reason, samples, summary,
                         extras, notes, warnings, iterations, simulated, samples_meta, quality, placement, below_resolution)
      SELECT m.id, p.k, p.benchmark, p.family, '{}', p.config, p.cpus, p.unit, p.better, d.status, d.reason, var.samples, d.summary,
             d.extras, d.notes, d.warnings, d.iterations, d.simulated, d.samples_meta, d.quality, d.placement, d.below_resolution
      FROM made m CROSS JOIN pts p JOIN seed d ON d.s = p.s JOIN var ON var.s = p.s AND var.v = $variant
      WHERE m.n = night ORDER BY m.id, p.k;
  END LOOP;
END
\$\$;
DELETE FROM results WHERE run_id IN (SELECT id FROM template);
DELETE FROM runs WHERE id IN (SELECT id FROM template);
COMMIT;
VACUUM ANALYZE runs;
VACUUM ANALYZE results;
SQL
}

run_pg() {
  local url t
  pgdir=$work/pg
  say "== PostgreSQL: a throwaway cluster in $pgdir"
  url=$("$here/pg-throwaway.sh" start "$pgdir")
  "$kdelta" push --to "$url" --db "$seed" >&2
  say "   filling"
  t=$(seconds pg_fill "$url")
  say "   filled in $t s"
  "$kdelta" runs --host "$host" --limit 3 --db "$url" >&2
  printf 'PostgreSQL %s (a throwaway cluster, fsync off)\n' "$(psql -Atc 'SHOW server_version' "$url")"
  psql -qAt -F ' ' "$url" -c "SET search_path TO kdelta" -c "
    SELECT '   rows: ' || (SELECT count(*) FROM runs) || ' runs, ' || (SELECT count(*) FROM results) || ' results; database '
           || pg_database_size(current_database()) / 1048576 || ' MiB (results with indexes and TOAST '
           || pg_total_relation_size('results') / 1048576 || ' MiB)'"
  printf '   query plan of the runs query:\n'
  psql -qAt "$url" -c "SET search_path TO kdelta" -c "EXPLAIN SELECT id FROM runs WHERE status = 'complete' AND hostname = '$host' ORDER BY started, id" | sed 's/^/     /'
  time_history "$url" pg_cold
  if [ "$keep_pg" = 1 ]; then
    say "   kept the cluster running: $url"
    say "   stop and remove it with: $here/pg-throwaway.sh stop $pgdir"
    kept_pg=1
  else
    "$here/pg-throwaway.sh" stop "$pgdir"
  fi
  pgdir=""
}

say "kdelta $("$kdelta" --version | cut -d' ' -f2-)"
[ $do_sqlite = 1 ] && run_sqlite
[ $do_pg = 1 ] && run_pg
printf 'CPU: %s (%s CPUs); %s hosts x %s nights = %s runs x %s results\n' "$cpu" "$(nproc)" "$hosts" "$nights" "$runs" "$results"
