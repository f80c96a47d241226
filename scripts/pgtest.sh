#!/usr/bin/env bash
# Starts (or stops) a private PostgreSQL cluster for the tests.
#
#   scripts/pgtest.sh [start] [DIR]   start if not already answering (default)
#   scripts/pgtest.sh stop [DIR]      stop the cluster started from DIR
#   scripts/pgtest.sh status [DIR]    exit 0 if it answers
#   scripts/pgtest.sh url             the URL tests use: this cluster's when it
#                                     answers, else the server on 5432
#
# DIR (default /tmp/docflow-pgtest, or $PGTEST_DIR) holds the cluster; its
# port is PGTEST_PORT (55432). Nothing under /etc or /var/lib is touched, and
# the server `make run` keeps its data on is not changed. The cluster runs
# without fsync: every test creates and drops databases, and each DROP
# DATABASE is a checkpoint, which with fsync made the tests wait on the disk
# for most of their time. Data in it is throwaway by design.
set -euo pipefail

cmd="${1:-start}"
case "$cmd" in
start | stop | status | url) shift || true ;;
-h | --help)
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
*) cmd=start ;;
esac

dir="${1:-${PGTEST_DIR:-/tmp/docflow-pgtest}}"
port="${PGTEST_PORT:-55432}"
data="$dir/data"
log="$dir/postgres.log"

say() { echo "pgtest.sh: $*"; }

answers() { pg_isready -h 127.0.0.1 -p "$port" -q 2>/dev/null; }

bindir() {
  local p
  if p="$(command -v pg_ctl 2>/dev/null)" && [ -x "$(dirname "$(readlink -f "$p")")/initdb" ]; then
    dirname "$(readlink -f "$p")"
    return
  fi
  p="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  [ -n "$p" ] && [ -x "$p/initdb" ] || return 1
  echo "$p"
}

# as runs a server program, as the postgres user when running as root
# (initdb and postgres refuse to run as root).
as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# The tests' server trusts every connection, but one role: its password is
# checked over TCP, so that a test can see a wrong password refused
# (internal/dbwizard TestConnectionFailuresAreAnswers). Added to a cluster
# created before the rule, and the running server reloaded.
password_rule="host all docflow_password_test 127.0.0.1/32 scram-sha-256"
password_role() {
  local hba="$data/pg_hba.conf" bin
  [ -s "$hba" ] || return 0
  grep -qxF "$password_rule" "$hba" && return 0
  { echo "$password_rule"; cat "$hba"; } >"$hba.new" && cat "$hba.new" >"$hba" && rm -f "$hba.new"
  if answers && bin="$(bindir)"; then
    as "$bin/pg_ctl" -D "$data" reload >/dev/null
  fi
}

start() {
  if answers; then
    password_role
    say "already answering on 127.0.0.1:$port"
    return 0
  fi
  local bin
  if ! bin="$(bindir)"; then
    say "PostgreSQL's server programs (initdb, pg_ctl) are not installed: run scripts/postgres.sh first"
    return 1
  fi
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  if [ ! -s "$data/PG_VERSION" ]; then
    say "creating the cluster in $data"
    # C.UTF-8 as Debian's own cluster has: lower() and case-insensitive
    # matches fold letters beyond ASCII (Zoë's address is zoË's).
    as "$bin/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
    # Room for every parallel test's pool; no fsync and no full pages
    # (a crashed test server loses only test data).
    cat >>"$data/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 400
shared_buffers = 256MB
fsync = off
full_page_writes = off
synchronous_commit = off
EOF
  fi
  password_role
  say "starting on 127.0.0.1:$port (data in $data, log $log)"
  as "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null
  answers && { say "answering on 127.0.0.1:$port"; return 0; }
  say "did not answer on $port; last log lines:"
  tail -n 20 "$log" 2>/dev/null || true
  return 1
}

stop() {
  local bin
  bin="$(bindir)" || return 0
  [ -s "$data/postmaster.pid" ] || { say "no cluster running from $dir"; return 0; }
  as "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null && say "stopped"
}

case "$cmd" in
start) start ;;
stop) stop ;;
status)
  if answers; then say "answering on 127.0.0.1:$port"; else say "not answering on 127.0.0.1:$port"; exit 1; fi
  ;;
url)
  if answers; then
    echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  else
    echo "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
  fi
  ;;
esac
