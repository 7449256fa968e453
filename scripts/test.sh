#!/usr/bin/env bash
# Run every test that needs no GPU: the lit suite (compiler) and ctest (unit
# tests of the compiler and the runtime, docs freshness), on the fixed seed of
# every randomised test (FP_TEST_SEED overrides it). The exhaustive checks
# (`REQUIRES: soak` in lit, label `soak` in ctest) are left to
# scripts/soak.sh (docs/testing.md). Installs missing dependencies and builds
# first. ctest runs as many tests at once as there are CPUs (FP_TEST_JOBS
# overrides it). Prints each runner's counts and a total; exits non-zero on
# any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}

bash "$root/scripts/install-deps.sh" || exit 1
bash "$root/scripts/build.sh" || { echo "test: build failed" >&2; exit 1; }

status=0
lit_passed=0 lit_failed=0 lit_unsupported=0
if [ -f "$build/test/lit.site.cfg.py" ]; then
  echo "== lit"
  lit_log=$(mktemp)
  lit=$(grep -m1 '^FP_LIT:' "$build/CMakeCache.txt" | cut -d= -f2)
  "$lit" -sv "$build/test" 2>&1 | tee "$lit_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  # lit's summary lines read "  Passed: 4 (100.00%)", or with the labels
  # padded when several kinds are listed: "  Passed     : 35 (72.92%)".
  count() {
    sed -nE "s/^ +($1) *: +([0-9]+).*/\2/p" "$lit_log" | awk '{s+=$1} END {print s+0}'
  }
  lit_passed=$(count 'Passed')
  lit_failed=$(count 'Failed|Unresolved|Timed Out|Unexpectedly Passed')
  lit_unsupported=$(count 'Unsupported')
  rm -f "$lit_log"
fi

echo "== ctest"
ctest_log=$(mktemp)
jobs=${FP_TEST_JOBS:-$(nproc)}
ctest --test-dir "$build" -LE soak -j "$jobs" --output-on-failure 2>&1 | tee "$ctest_log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
ctest_total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -1)
ctest_failed=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$ctest_log" | tail -1)
ctest_total=${ctest_total:-0} ctest_failed=${ctest_failed:-0}
# ctest counts a skipped test (one that needs a GPU, say) as not failed and
# lists it under "The following tests did not run".
ctest_skipped=$(grep -c '(Skipped)$' "$ctest_log")
ctest_passed=$((ctest_total - ctest_failed - ctest_skipped))
rm -f "$ctest_log"

echo "== summary"
echo "lit: $lit_passed passed, $lit_failed failed, $lit_unsupported unsupported"
echo "ctest: $ctest_passed passed, $ctest_failed failed, $ctest_skipped skipped"
echo "$((lit_passed + ctest_passed)) passed, $((lit_failed + ctest_failed)) failed"
exit $status
