#!/usr/bin/env bash
# The opt-in soak runs, never run by CI (docs/testing.md). Builds first, then:
#
#   1. the exhaustive checks that scripts/test.sh leaves out: lit tests marked
#      `REQUIRES: soak` (FP_SOAK=1) and ctest tests labelled `soak` (their
#      model libraries built first: target FpSoakModels);
#   2. ROUNDS times (default 3) every randomised test on fresh seeds
#      (FP_TEST_SEED=random): the lit suite and ctest (a test per CPU, as
#      scripts/test.sh runs it), soak tests excluded.
#
# Each failure prints the seed it ran with; FP_TEST_SEED=<seed> replays it.
# Usage: scripts/soak.sh [ROUNDS]. Prints a summary line per step and exits
# non-zero if any step failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
rounds=${1:-3}
case $rounds in
  '' | *[!0-9]*) echo "soak: ROUNDS must be a number, got '$rounds'" >&2; exit 2 ;;
esac

bash "$root/scripts/build.sh" || { echo "soak: build failed" >&2; exit 1; }
# The libraries only the soak tests read (not part of the default build).
if ninja -C "$build" -t query FpSoakModels >/dev/null 2>&1; then
  ninja -C "$build" FpSoakModels || { echo "soak: build failed" >&2; exit 1; }
fi
lit=$(grep -m1 '^FP_LIT:' "$build/CMakeCache.txt" | cut -d= -f2)
# The rounds run ctest as scripts/test.sh does, a test per CPU (FP_TEST_JOBS
# overrides it); the exhaustive tests, each long and large, one at a time.
jobs=${FP_TEST_JOBS:-$(nproc)}
logs=$(mktemp -d)
summary=()
status=0

# run NAME COMMAND...: runs one step with its log under $logs, and records
# the outcome (and on failure the seeds the failing tests printed).
run() {
  local name=$1
  shift
  echo "== soak: $name"
  if "$@" >"$logs/$name.log" 2>&1; then
    summary+=("$name: passed")
  else
    status=1
    summary+=("$name: FAILED (log: $logs/$name.log)")
    grep -E '^\[   seed   \]|^\*\*\*\*\*\*\*\*\*\* TEST|FAILED|Failed Tests' \
      "$logs/$name.log" | tail -40
  fi
}

# lit has no "only tests that require a feature" option: run the soak-only
# tests by name.
soak_lit=$(grep -rl '^// REQUIRES:.*\bsoak\b' "$root/test" | sed "s|$root/test/||")
if [ -n "$soak_lit" ]; then
  # shellcheck disable=SC2086
  run exhaustive-lit env FP_SOAK=1 "$lit" -sv "$build/test" \
    --filter "$(echo $soak_lit | tr ' ' '|')"
fi
if ctest --test-dir "$build" -N -L soak | grep -q 'Total Tests: [1-9]'; then
  run exhaustive-ctest ctest --test-dir "$build" -L soak --output-on-failure
fi
for round in $(seq 1 "$rounds"); do
  run "round$round-lit" env FP_TEST_SEED=random "$lit" -sv "$build/test"
  run "round$round-ctest" env FP_TEST_SEED=random \
    ctest --test-dir "$build" -LE soak -j "$jobs" --output-on-failure
done

echo "== soak: summary"
printf '%s\n' "${summary[@]}"
exit $status
