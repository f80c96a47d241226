#!/usr/bin/env bash
# Starts (or stops) a private ClickHouse server for tests.
#
#   scripts/clickhouse.sh [start] [DIR]   start if not already answering (default)
#   scripts/clickhouse.sh stop [DIR]      stop the server started from DIR
#   scripts/clickhouse.sh status [DIR]    exit 0 if it answers
#
# DIR (default /tmp/docflow-clickhouse, or $CLICKHOUSE_DIR) holds its own
# config, data and logs; nothing under /etc or /var/lib is touched. Ports come
# from CLICKHOUSE_TCP_PORT (19000) and CLICKHOUSE_HTTP_PORT (18123). Idempotent:
# starting a running server and stopping a stopped one both succeed.
set -euo pipefail

cmd="${1:-start}"
case "$cmd" in
start | stop | status) shift || true ;;
-h | --help)
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
*) cmd=start ;;
esac

dir="${1:-${CLICKHOUSE_DIR:-/tmp/docflow-clickhouse}}"
tcp_port="${CLICKHOUSE_TCP_PORT:-19000}"
http_port="${CLICKHOUSE_HTTP_PORT:-18123}"
pidfile="$dir/clickhouse-server.pid"

say() { echo "clickhouse.sh: $*"; }

answers() {
  clickhouse-client --host 127.0.0.1 --port "$tcp_port" -q 'SELECT 1' >/dev/null 2>&1
}

running_pid() {
  [ -s "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    say "no server running from $dir"
    rm -f "$pidfile"
    return 0
  fi
  say "stopping pid $pid"
  kill "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid still alive after 10 s; sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  say "stopped"
}

write_config() {
  mkdir -p "$dir/data/tmp" "$dir/data/user_files" "$dir/data/format_schemas" "$dir/log"
  # users.xml: the default user without a password, local connections only.
  cat >"$dir/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>2000000000</max_memory_usage>
      <use_uncompressed_cache>0</use_uncompressed_cache>
      <load_balancing>random</load_balancing>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>::1</ip><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration>
        <queries>0</queries><errors>0</errors><result_rows>0</result_rows>
        <read_rows>0</read_rows><execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
EOF
  cat >"$dir/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>$dir/log/clickhouse-server.log</log>
    <errorlog>$dir/log/clickhouse-server.err.log</errorlog>
    <size>10M</size>
    <count>2</count>
  </logger>
  <tcp_port>$tcp_port</tcp_port>
  <http_port>$http_port</http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/data/tmp/</tmp_path>
  <user_files_path>$dir/data/user_files/</user_files_path>
  <format_schema_path>$dir/data/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <!-- Parts replaced by merges are deleted after 30 s rather than 8 min:
       the bench waits for their deletion before timing queries. -->
  <merge_tree>
    <old_parts_lifetime>30</old_parts_lifetime>
  </merge_tree>
</yandex>
EOF
}

wait_answer() {
  for i in $(seq 1 150); do
    answers && return 0
    # a daemon that has already exited will not answer: stop waiting
    if [ "$i" -gt 10 ] && ! running_pid >/dev/null; then
      return 1
    fi
    sleep 0.2
  done
  return 1
}

# launch [user]: starts the daemon, as the given user when one is named.
launch() {
  local args=(--config-file="$dir/config.xml" --pid-file="$pidfile" --daemon
    -- --tcp_port="$tcp_port" --http_port="$http_port")
  if [ -n "${1:-}" ]; then
    say "running as user $1: clickhouse-server ${args[*]}"
    chown -R "$1:" "$dir"
    runuser -u "$1" -- clickhouse-server "${args[@]}"
  else
    say "running: clickhouse-server ${args[*]}"
    clickhouse-server "${args[@]}"
  fi
}

start() {
  if answers; then
    say "already answering on 127.0.0.1:$tcp_port"
    return 0
  fi
  if ! command -v clickhouse-server >/dev/null 2>&1; then
    say "clickhouse-server not installed; installing Debian's packages"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null ||
      { $sudo apt-get update -qq && $sudo apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null; }
  fi
  running_pid >/dev/null && stop # a stale server that does not answer
  say "config and data under $dir (tcp $tcp_port, http $http_port)"
  write_config
  launch ""
  if wait_answer; then
    say "answering on 127.0.0.1:$tcp_port"
    return 0
  fi
  # NOTE: 18.16 runs as root, but some builds refuse to; retry as the
  # package's service user, which then needs to own the directory.
  if [ "$(id -u)" -eq 0 ] && id clickhouse >/dev/null 2>&1; then
    say "no answer as root; retrying as the clickhouse user"
    running_pid >/dev/null && stop
    launch clickhouse
    if wait_answer; then
      say "answering on 127.0.0.1:$tcp_port"
      return 0
    fi
  fi
  say "server did not answer on port $tcp_port; last log lines:"
  tail -n 20 "$dir/log/clickhouse-server.err.log" 2>/dev/null || true
  return 1
}

case "$cmd" in
start) start ;;
stop) stop ;;
status)
  if answers; then
    say "answering on 127.0.0.1:$tcp_port"
  else
    say "not answering on 127.0.0.1:$tcp_port"
    exit 1
  fi
  ;;
esac
