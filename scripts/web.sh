#!/usr/bin/env bash
# Builds the front-end assets the binary embeds: installs the /ops page's
# chart library (uPlot) from npm with its lock file and copies the files the
# page loads into http/static/vendor (git-ignored; see its README.md).
# Skips the install when the copied files are newer than the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

src=web/ops
out=http/static/vendor
files=(uPlot.iife.min.js uPlot.min.css)

# GraphiQL for /graphql (web/graphiql): its UMD bundle and React's, copied
# flat into the same folder; skipped while newer than their lock file.
gq=web/graphiql
gq_files=(graphiql/graphiql.min.js graphiql/graphiql.min.css react/umd/react.production.min.js
  react-dom/umd/react-dom.production.min.js)
gq_fresh=1
for f in "${gq_files[@]}"; do
  if [ ! -f "$out/${f##*/}" ] || [ "$gq/package-lock.json" -nt "$out/${f##*/}" ]; then gq_fresh=0; fi
done
if [ "$gq_fresh" = 0 ] && command -v npm >/dev/null 2>&1; then
  echo "web: npm ci in $gq"
  (cd "$gq" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  for f in "${gq_files[@]}"; do cp "$gq/node_modules/$f" "$out/${f##*/}"; done
  cp "$gq/node_modules/graphiql/LICENSE" "$out/graphiql.LICENSE"
  echo "web: copied GraphiQL into $out"
elif [ "$gq_fresh" = 0 ]; then
  echo "web: npm not found; /graphql will say GraphiQL is missing" >&2
fi

fresh=1
for f in "${files[@]}" uPlot.LICENSE; do
  if [ ! -f "$out/$f" ] || [ "$src/package-lock.json" -nt "$out/$f" ]; then fresh=0; fi
done
if [ "$fresh" = 1 ]; then
  echo "web: chart library up to date"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "web: npm not found (apt-get install npm); /ops will say its chart library is missing" >&2
  exit 1
fi
echo "web: npm ci in $src"
(cd "$src" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
for f in "${files[@]}"; do
  cp "$src/node_modules/uplot/dist/$f" "$out/$f"
done
cp "$src/node_modules/uplot/LICENSE" "$out/uPlot.LICENSE"
echo "web: copied ${files[*]} into $out"
