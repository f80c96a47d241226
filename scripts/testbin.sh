#!/usr/bin/env bash
# Builds the Go servers the tests talk to, once per machine, into
# $HOME/.cache/docflow-test-bin/<name>-<version>/ (outside the clone, keyed by
# version), so `make test` rebuilds nothing when the binary is there.
#   scripts/testbin.sh          build every missing test server
#   scripts/testbin.sh path X   print where server X's binary lives
set -euo pipefail

CACHE="${DOCFLOW_TEST_BIN:-$HOME/.cache/docflow-test-bin}"

# name module version binary [builder]
# The builder is "install" (go install module@version) unless named.
SERVERS=(
  "mailpit github.com/axllent/mailpit v1.33.1 mailpit"
  "gotify github.com/gotify/server/v2 v2.6.1 gotify gotify"
  "versitygw github.com/versity/versitygw/cmd/versitygw v1.8.0 versitygw"
)
# ntfy (heckel.io/ntfy/v2) is not here: the Go module proxy refuses it
# (403), so its tests skip and say so (internal/testsupport/ntfy).

# install: a module whose main package builds as published.
build_install() {
  local module="$1" version="$2" out="$3"
  GOBIN="$out" GOFLAGS=-buildvcs=false nice -n 10 go install "$module@$version"
}

# gotify: the published module embeds its web UI's build folder, which is
# not in the module (the UI is built with yarn upstream), and uses cgo
# SQLite. Build a copy of the module source with a placeholder UI: the
# REST API the tests use is complete without it.
build_gotify() {
  local module="$1" version="$2" out="$3" bin="$4"
  local src work
  src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { echo "testbin: $module@$version not downloaded" >&2; return 1; }
  work=$(mktemp -d)
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  mkdir -p "$work/ui/build/static"
  printf "/* placeholder */\n" > "$work/ui/build/static/placeholder.css"
  printf '<!doctype html><title>gotify</title><p>Web UI not built (test server).</p>\n' > "$work/ui/build/index.html"
  printf '{}\n' > "$work/ui/build/manifest.json"
  printf '{}\n' > "$work/ui/build/asset-manifest.json"
  local rc=0
  (cd "$work" && CGO_ENABLED=1 GOFLAGS="-buildvcs=false -mod=mod" nice -n 10 \
    go build -ldflags "-X main.Version=${version#v} -X main.Mode=prod" -o "$out/$bin" .) || rc=$?
  rm -rf "$work"
  return $rc
}

build_one() {
  local name="$1" module="$2" version="$3" bin="$4" builder="${5:-install}"
  local dir="$CACHE/$name-$version"
  if [ -x "$dir/$bin" ]; then
    echo "testbin: $name $version present"
    return 0
  fi
  echo "testbin: building $name $version (several minutes, once per machine)"
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  "build_$builder" "$module" "$version" "$dir.tmp" "$bin"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "testbin: $name $version built in $dir"
}

if [ "${1:-}" = "path" ]; then
  want="${2:-}"
  for s in "${SERVERS[@]}"; do
    # shellcheck disable=SC2086
    set -- $s
    if [ "$1" = "$want" ]; then echo "$CACHE/$1-$3/$4"; exit 0; fi
  done
  echo "testbin: unknown server $want" >&2
  exit 2
fi

for s in "${SERVERS[@]}"; do
  # shellcheck disable=SC2086
  build_one $s
done
