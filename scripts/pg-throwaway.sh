#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `start DIR` makes one in DIR
# (initdb, then pg_ctl on a Unix socket in DIR and no TCP port) and prints the
# URL of its `postgres` database; `stop DIR` stops it and removes DIR;
# `cold DIR` restarts it with its files dropped from the page cache (a cold
# start, for timing the first query).
# initdb refuses root, so as root the cluster is made and run by the
# `postgres` user (or `nobody`). Used by .ci/run; handy on a developer box:
#   dir=$(mktemp -d); export KDELTA_TEST_PG=$(scripts/pg-throwaway.sh start "$dir")
#   cargo test --release; scripts/pg-throwaway.sh stop "$dir"
set -euo pipefail

find_bin() {
  local b
  if b=$(command -v "$1" 2>/dev/null); then echo "$b"; return; fi
  for b in /usr/lib/postgresql/*/bin/"$1"; do [ -x "$b" ] && { echo "$b"; return; }; done
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    local u=postgres
    id "$u" >/dev/null 2>&1 || u=nobody
    runuser -u "$u" -- "$@"
  else
    "$@"
  fi
}

server() {
  as_owner "$1" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -c fsync=off -c max_connections=100" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
}

cmd=${1:?usage: pg-throwaway.sh start|stop|cold DIR}
dir=${2:?usage: pg-throwaway.sh start|stop|cold DIR}
case "$cmd" in
  start)
    initdb=$(find_bin initdb) || { echo "pg-throwaway: no initdb (install postgresql)" >&2; exit 1; }
    pg_ctl=$(find_bin pg_ctl) || { echo "pg-throwaway: no pg_ctl (install postgresql)" >&2; exit 1; }
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      u=postgres; id "$u" >/dev/null 2>&1 || u=nobody
      chown "$u" "$dir"; chmod 700 "$dir"
    fi
    as_owner "$initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    server "$pg_ctl"
    # The socket directory must be reachable by the tests' user.
    chmod 755 "$dir"
    echo "postgresql://postgres@/postgres?host=$dir"
    ;;
  stop)
    pg_ctl=$(find_bin pg_ctl) || exit 0
    [ -d "$dir/data" ] && as_owner "$pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  cold)
    pg_ctl=$(find_bin pg_ctl) || { echo "pg-throwaway: no pg_ctl (install postgresql)" >&2; exit 1; }
    as_owner "$pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    find "$dir/data" -type f -exec dd if={} iflag=nocache count=0 status=none \;
    server "$pg_ctl"
    ;;
  *) echo "usage: pg-throwaway.sh start|stop|cold DIR" >&2; exit 2 ;;
esac
