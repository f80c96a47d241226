#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (FUZZTIME,
# default 4s), a few at a time (FUZZ_JOBS, default 2), and fails when one
# fails, naming the input that failed (docs/testing.md).
#
# `go test -fuzz` takes one package and one target per run, and building
# a package's instrumented test binary costs more than fuzzing it for a
# few seconds, so each package with a target is built once
# (`go test -c -fuzz`), its targets listed by the binary itself
# (-test.list '^Fuzz'), and each target run by that binary from the
# package's folder, as `go test` would run it: the committed corpus in
# testdata/fuzz/FuzzXxx, what fuzzing found before in the Go build
# cache's fuzz folder, a failing input written to testdata/fuzz/FuzzXxx.
#
#   FUZZTIME=60s bash scripts/fuzz.sh          # longer (make fuzz)
#   FUZZ_TARGETS='FuzzCheckURL|FuzzExecute' bash scripts/fuzz.sh
#   FUZZ_PACKAGES='./graphql ./http' bash scripts/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-4s}
JOBS=${FUZZ_JOBS:-2}
TARGETS=${FUZZ_TARGETS:-.}
# A target that outlives its time by this much is hung: its binary is
# stopped with a stack dump, and the run fails.
GRACE=${FUZZ_GRACE:-180s}

start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache="$($GO env GOCACHE)/fuzz"

if [ -n "${FUZZ_PACKAGES:-}" ]; then
  read -r -a pkgs <<<"$FUZZ_PACKAGES"
else
  # The folders holding a test file that declares a fuzz target.
  mapfile -t pkgs < <(grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=testdata \
    --exclude-dir=.git '^func Fuzz' . | xargs -n1 dirname | sort -u)
fi
if [ "${#pkgs[@]}" -eq 0 ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi

# to_seconds turns a Go duration of whole s/m units (4s, 60s, 2m) into
# seconds, for the hang timeout; other spellings count as a minute.
to_seconds() {
  case "$1" in
    *m) echo $((${1%m} * 60)) ;;
    *s) echo "${1%s}" ;;
    *) echo 60 ;;
  esac
}
timeout_s=$(($(to_seconds "$FUZZTIME") + $(to_seconds "$GRACE")))

# pkg is the package argument of a folder: "." or "./graphql".
pkg() { if [ "$1" = . ]; then echo .; else echo "./$1"; fi; }

# Build each package's fuzz binary, FUZZ_JOBS at a time.
echo "==> fuzz: building ${#pkgs[@]} packages' fuzz binaries"
build() {
  local dir=$1 name=$2
  $GO list -f '{{.ImportPath}}' "$dir" >"$work/$name.path" 2>"$work/$name.build" &&
    $GO test -c -fuzz=. -ldflags=-w -o "$work/$name.test" "$dir" >>"$work/$name.build" 2>&1
}
declare -A name_of
for dir in "${pkgs[@]}"; do
  dir=${dir#./}
  name=root
  [ "$dir" = . ] || name=$(echo "$dir" | tr '/.' '__')
  name_of[$dir]=$name
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  build "$(pkg "$dir")" "$name" &
done
wait
failed=()
for dir in "${!name_of[@]}"; do
  name=${name_of[$dir]}
  if [ ! -x "$work/$name.test" ]; then
    echo "fuzz: $(pkg "$dir") does not build:" >&2
    cat "$work/$name.build" >&2
    failed+=("$(pkg "$dir") (build)")
  fi
done

# run_target runs one target from its package's folder; its output goes
# to a log, shown when it fails.
run_target() {
  local dir=$1 name=$2 target=$3 log=$4 path
  path=$(cat "$work/$name.path")
  (cd "$dir" && timeout --signal=QUIT --kill-after=10 "$timeout_s" "$work/$name.test" \
    -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$FUZZTIME" -test.parallel=1 \
    -test.fuzzcachedir="$cache/$path") >"$log" 2>&1
  echo $? >"$log.rc"
}

n=0
declare -a runs
for dir in "${!name_of[@]}"; do
  name=${name_of[$dir]}
  [ -x "$work/$name.test" ] || continue
  for target in $(cd "$dir" && "$work/$name.test" -test.list '^Fuzz' | grep -E "$TARGETS"); do
    log="$work/$name.$target.log"
    runs+=("$dir $target $log")
    n=$((n + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    run_target "$dir" "$name" "$target" "$log" &
  done
done
echo "==> fuzz: running $n targets for $FUZZTIME each, $JOBS at a time"
wait

for r in "${runs[@]}"; do
  read -r dir target log <<<"$r"
  rc=$(cat "$log.rc" 2>/dev/null || echo 1)
  # NOTE: on a loaded machine Go's fuzzing coordinator may end a run
  # with "context deadline exceeded" and no input (a worker slow to stop
  # at the deadline): that is no finding, and the target runs once more.
  if [ "$rc" != 0 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'testdata/fuzz/' "$log"; then
    echo "fuzz: $target ($(pkg "$dir")) stopped late without an input; running it again"
    run_target "$dir" "${name_of[$dir]}" "$target" "$log"
    rc=$(cat "$log.rc" 2>/dev/null || echo 1)
  fi
  if [ "$rc" != 0 ]; then
    echo "--- FAIL: $target ($(pkg "$dir"))" >&2
    tail -n 40 "$log" >&2
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      echo "    hung: stopped after ${timeout_s}s" >&2
    fi
    input=$(grep -o 'testdata/fuzz/[^ ]*' "$log" | tail -1)
    if [ -n "$input" ]; then
      echo "    failing input: $dir/$input" >&2
      echo "    re-run: go test -run '$target/$(basename "$input")' $(pkg "$dir")" >&2
    fi
    failed+=("$target ($(pkg "$dir"))")
  fi
done

secs=$(($(date +%s) - start))
if [ "$n" -eq 0 ]; then
  failed+=("no target ran")
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of $n failed in ${secs}s: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $n targets passed, $FUZZTIME each, in ${secs}s"
