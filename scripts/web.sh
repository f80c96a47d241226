#!/usr/bin/env bash
# Builds the front-end assets the binary embeds: installs the /ops page's
# chart library (uPlot) and the /docs page's renderer (Swagger UI) from npm
# with their lock files and copies the files the pages load into
# http/static/vendor (git-ignored; see its README.md).
# Skips the install when the copied files are newer than the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

# The /docs page's renderer of /openapi.json (Swagger UI, Apache-2.0), in
# its own block: built whether or not the chart library below is fresh.
(
  src=web/apidocs
  out=http/static/vendor
  files=(swagger-ui-bundle.js swagger-ui.css)
  fresh=1
  for f in "${files[@]}" swagger-ui.LICENSE; do
    if [ ! -f "$out/$f" ] || [ "$src/package-lock.json" -nt "$out/$f" ]; then fresh=0; fi
  done
  if [ "$fresh" = 1 ]; then
    echo "web: API reference renderer up to date"
    exit 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "web: npm not found (apt-get install npm); /docs will list the routes without its renderer" >&2
    exit 1
  fi
  echo "web: npm ci in $src"
  (cd "$src" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  for f in "${files[@]}"; do
    cp "$src/node_modules/swagger-ui-dist/$f" "$out/$f"
  done
  cp "$src/node_modules/swagger-ui-dist/LICENSE" "$out/swagger-ui.LICENSE"
  echo "web: copied ${files[*]} into $out"
)

src=web/ops
out=http/static/vendor
files=(uPlot.iife.min.js uPlot.min.css)

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
