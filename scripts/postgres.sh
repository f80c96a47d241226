#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for docflow:
# starts the local cluster if it is down, installs PostgreSQL from Debian's
# packages if it is missing (trusting local connections, for development).
set -euo pipefail

ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }

if command -v pg_isready >/dev/null && ready; then
  echo "postgres: running on 127.0.0.1:5432"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

if ! command -v pg_lsclusters >/dev/null; then
  echo "postgres: not installed; installing from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq postgresql >/dev/null
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  hba=/etc/postgresql/$ver/main/pg_hba.conf
  # Development setup: trust local TCP connections as the spec'd default URL expects.
  $SUDO sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/' "$hba"
fi

ver=$(ls /etc/postgresql | sort -V | tail -1)
echo "postgres: starting cluster $ver/main"
$SUDO pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
for _ in $(seq 1 30); do
  ready && { echo "postgres: ready"; exit 0; }
  sleep 1
done
echo "postgres: did not become ready on 127.0.0.1:5432; see /var/log/postgresql/" >&2
exit 1
