#!/usr/bin/env bash
# Runs the test suite STRESS_RUNS times (default 3) beside a CPU-burning
# load, and fails when any run failed, naming the tests that failed in
# each run (docs/testing.md, "Under load").
#
# A test that waits for a guessed time passes on an idle machine and fails
# when the machine is busy; this is where such a test shows itself. The
# load is STRESS_BURNERS busy processes (default one per core), each at
# nice 19 so the machine stays usable; the tests run at normal priority
# beside them, as they would beside a build or another suite on a shared
# machine. Each run is `go test -race -ldflags=-w -json -count=1 -p 4
# -parallel 4` (STRESS_PROCS, STRESS_PARALLEL) read by
# internal/testsummary, as `make test` runs it; the burners are stopped
# however the script ends.
#
#   bash scripts/stress.sh                                  # make test-stress
#   STRESS_PKGS='./storage/postgres ./http' STRESS_RUNS=5 bash scripts/stress.sh
#   STRESS_RUN='TestOutbox' STRESS_PKGS=./storage/postgres bash scripts/stress.sh
#   STRESS_BURNERS=0 bash scripts/stress.sh                 # no load: the suite's own
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
RUNS=${STRESS_RUNS:-3}
BURNERS=${STRESS_BURNERS:-$(nproc)}
PKGS=${STRESS_PKGS:-./...}
RUN=${STRESS_RUN:-}
TIMEOUT=${STRESS_TIMEOUT:-90m}

case "$RUNS$BURNERS" in
  *[!0-9]*) echo "stress: STRESS_RUNS and STRESS_BURNERS take a whole number" >&2; exit 2 ;;
esac

# Job control: each run and each burner is a process group of its own,
# so an interrupted script stops a run's go test and test binaries too.
set -m
work=$(mktemp -d)
burners=()
job=
stop_burners() {
  local pid
  for pid in "${burners[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${burners[@]}"; do
    wait "$pid" 2>/dev/null
  done
  burners=()
}
cleanup() {
  if [ -n "$job" ]; then
    kill -TERM -- "-$job" 2>/dev/null
    wait "$job" 2>/dev/null
  fi
  stop_burners
  rm -rf "$work"
}
trap cleanup EXIT
# A signal ends the script through the EXIT trap: the run under way and
# the burners are stopped.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# Compile the tests before the load starts (-exec true: built, not run),
# so a compile error shows at once and the runs reuse the compiled
# packages.
read -r -a pkgs <<<"$PKGS"
echo "==> building the tests of ${pkgs[*]}"
if ! $GO test -race -ldflags=-w -count=1 -exec true "${pkgs[@]}" >"$work/build" 2>&1; then
  cat "$work/build"
  echo "stress: the packages do not build" >&2
  exit 1
fi

echo "==> starting $BURNERS CPU burner(s) at nice 19"
for ((i = 0; i < BURNERS; i++)); do
  # A shell loop of builtins: busy on one core, nothing else.
  nice -n 19 bash -c 'while :; do :; done' &
  burners+=("$!")
done

# The packages and tests at once of make test (TEST_PROCS, TEST_PARALLEL).
args=(-race -ldflags=-w -json -count=1 -timeout "$TIMEOUT" -p "${STRESS_PROCS:-4}" -parallel "${STRESS_PARALLEL:-4}")
if [ -n "$RUN" ]; then
  args+=(-run "$RUN")
fi

failed_runs=0
status=()
for ((run = 1; run <= RUNS; run++)); do
  echo "==> run $run of $RUNS: go test ${args[*]} ${pkgs[*]}"
  start=$(date +%s)
  # In the background, waited for: a signal is handled at once, not
  # after the run.
  {
    $GO test "${args[@]}" "${pkgs[@]}" 2>&1 | $GO run ./internal/testsummary -since "$start" | tee "$work/run$run"
    echo "${PIPESTATUS[1]}" >"$work/status$run"
  } &
  job=$!
  wait "$job"
  job=
  status[run]=$(cat "$work/status$run" 2>/dev/null || echo 1)
  if [ "${status[run]}" -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
  fi
done

stop_burners

echo
echo "==> $RUNS run(s) beside $BURNERS burner(s) of $(nproc) core(s)"
for ((run = 1; run <= RUNS; run++)); do
  # testsummary names each failed test "--- FAIL <package> <test>" and a
  # package that failed outside its tests (a panic, the timeout, a build
  # error) "FAIL <package>".
  mapfile -t failures < <(grep '^--- FAIL ' "$work/run$run" | grep -v '^--- FAIL package ' | cut -c10- | sort -u)
  mapfile -t pkgfail < <(sed -n -e 's/^FAIL \([^ ]*\) .*/\1/p' "$work/run$run" | sort -u)
  total=$(tail -n 1 "$work/run$run")
  if [ "${status[run]}" -eq 0 ]; then
    echo "run $run: ok ($total)"
    continue
  fi
  echo "run $run: FAILED ($total)"
  for f in "${failures[@]}"; do
    echo "    $f"
  done
  # A package that failed with no test failed in it: a panic, the
  # timeout, a build error (its output is above).
  for p in "${pkgfail[@]}"; do
    printf '%s\n' "${failures[@]}" | grep -qF "$p " || echo "    $p (the package failed outside its tests)"
  done
done
if [ "$failed_runs" -gt 0 ]; then
  echo "stress: $failed_runs of $RUNS run(s) failed"
  exit 1
fi
echo "stress: all $RUNS run(s) passed"
