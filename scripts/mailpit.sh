#!/usr/bin/env bash
# Builds Mailpit (a real SMTP server with a REST API to read what arrived)
# once into $HOME/.cache/docflow-test-bin/mailpit-VERSION/, where the mail
# tests find it. Skips the build when the binary is already there; the
# build takes minutes on a small machine.
#
#   scripts/mailpit.sh          build (idempotent); prints the binary's path
#   MAILPIT_VERSION=v1.33.1 scripts/mailpit.sh
set -euo pipefail

version="${MAILPIT_VERSION:-v1.33.1}"
dir="$HOME/.cache/docflow-test-bin/mailpit-$version"
bin="$dir/mailpit"
say() { echo "mailpit.sh: $*" >&2; }

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { say "go not found; the Mailpit tests will skip"; exit 1; }
mkdir -p "$dir"
say "building github.com/axllent/mailpit@$version (a few minutes)"
GOBIN="$dir" nice -n 10 go install "github.com/axllent/mailpit@$version"
echo "$bin"
