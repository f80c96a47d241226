#!/usr/bin/env bash
# Builds the front-end assets the binary embeds, each from npm with its lock
# file (git-ignored output; see http/static/vendor/README.md and
# http/static/app/README.md):
#   - the /ops page's chart library (uPlot) from web/ops, copied into
#     http/static/vendor;
#   - the /docs page's renderer of /openapi.json (Swagger UI) from
#     web/apidocs, copied into http/static/vendor;
#   - the web application (web/app: the documents pages and the admin
#     pages), built with Vite into http/static/app.
# Each part is skipped when its output is newer than its sources.
set -euo pipefail
cd "$(dirname "$0")/.."

need_npm() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "web: npm not found (apt-get install npm); $1" >&2
    exit 1
  fi
}

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

# --- /ops chart library -----------------------------------------------------
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
else
  need_npm "/ops will say its chart library is missing"
  echo "web: npm ci in $src"
  (cd "$src" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  for f in "${files[@]}"; do
    cp "$src/node_modules/uplot/dist/$f" "$out/$f"
  done
  cp "$src/node_modules/uplot/LICENSE" "$out/uPlot.LICENSE"
  echo "web: copied ${files[*]} into $out"
fi

# --- the web application ----------------------------------------------------
app=web/app
appout=http/static/app
stamp="$appout/index.html"
if [ -f "$stamp" ] && [ -z "$(find "$app" -path "$app/node_modules" -prune -o -type f -newer "$stamp" -print | head -1)" ]; then
  echo "web: application up to date"
  exit 0
fi
need_npm "the pages will say how to build them"
if [ ! -d "$app/node_modules" ] || [ "$app/package-lock.json" -nt "$app/node_modules/.package-lock.json" ]; then
  echo "web: npm ci in $app"
  # The bundler's native binary is an optional dependency: no install
  # scripts are needed.
  (cd "$app" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# Clear the previous build but keep the folder's committed README.md.
find "$appout" -mindepth 1 ! -name README.md -delete
echo "web: vite build in $app"
(cd "$app" && npx --no-install vite build --logLevel warn)
echo "web: built the application into $appout"
