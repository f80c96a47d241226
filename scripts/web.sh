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
