#!/usr/bin/env bash
# Builds the Go servers the tests talk to, once per machine, into
# $HOME/.cache/docflow-test-bin/<name>-<version>/ (outside the clone, keyed by
# version), so `make test` rebuilds nothing when the binary is there.
#   scripts/testbin.sh          build every missing test server
#   scripts/testbin.sh path X   print where server X's binary lives
set -euo pipefail

CACHE="${DOCFLOW_TEST_BIN:-$HOME/.cache/docflow-test-bin}"

# name module version binary
SERVERS=(
  "mailpit github.com/axllent/mailpit v1.33.1 mailpit"
)

build_one() {
  local name="$1" module="$2" version="$3" bin="$4"
  local dir="$CACHE/$name-$version"
  if [ -x "$dir/$bin" ]; then
    echo "testbin: $name $version present"
    return 0
  fi
  echo "testbin: building $name $version (several minutes, once per machine)"
  mkdir -p "$dir.tmp"
  GOBIN="$dir.tmp" GOFLAGS=-buildvcs=false nice -n 10 go install "$module@$version"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "testbin: $name $version built in $dir"
}

if [ "${1:-}" = "path" ]; then
  for s in "${SERVERS[@]}"; do
    set -- $s "$2"
    if [ "$1" = "$5" ]; then echo "$CACHE/$1-$3/$4"; exit 0; fi
  done
  echo "testbin: unknown server $2" >&2
  exit 2
fi

for s in "${SERVERS[@]}"; do
  # shellcheck disable=SC2086
  build_one $s
done
