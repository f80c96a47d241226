#!/usr/bin/env bash
# Fetches libchdb.so (a current ClickHouse engine as a library, from the npm
# package @chdb/lib-linux-x64-gnu) into $HOME/.cache/docflow-test-bin/chdb-VERSION/,
# where the analytics tests find it to check the ClickHouse SQL against a
# current engine. Skips the download when the library is already there.
#
#   scripts/chdb.sh          fetch (idempotent); prints the library's path
#   CHDB_VERSION=26.5.3 scripts/chdb.sh
set -euo pipefail

version="${CHDB_VERSION:-26.5.3}"
dir="$HOME/.cache/docflow-test-bin/chdb-$version"
lib="$dir/libchdb.so"
say() { echo "chdb.sh: $*" >&2; }

if [ -s "$lib" ]; then
  echo "$lib"
  exit 0
fi
case "$(uname -sm)" in
"Linux x86_64") ;;
*)
  say "no prebuilt libchdb for $(uname -sm); the current-engine check will skip"
  exit 1
  ;;
esac
command -v npm >/dev/null || { say "npm not found; the current-engine check will skip"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
say "fetching @chdb/lib-linux-x64-gnu@$version from the npm registry"
(cd "$tmp" && npm pack --silent "@chdb/lib-linux-x64-gnu@$version" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp"
found="$(find "$tmp/package" -name 'libchdb.so' | head -n 1)"
[ -n "$found" ] || { say "libchdb.so not in the package"; exit 1; }
mkdir -p "$dir"
mv "$found" "$lib.part" && mv "$lib.part" "$lib"
say "installed $lib"
echo "$lib"
