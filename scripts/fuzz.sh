#!/usr/bin/env bash
# Fuzzes the .fp frontend with libFuzzer for a bounded time.
#
#   scripts/fuzz.sh [seconds]     (default 600)
#
# Builds frontend/fuzz (clang, libFuzzer) in $FP_FUZZ_BUILD_DIR
# (default build-fuzz), seeds the corpus with every .fp file of the project,
# and runs for the given time on one core. A crashing input is written to
# test/Frontend/fuzz-regressions/ (where the lit suite replays every input
# there on each test run) and the script exits 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
build=${FP_FUZZ_BUILD_DIR:-$root/build-fuzz}
corpus=${FP_FUZZ_CORPUS:-$build/corpus}
regressions=$root/test/Frontend/fuzz-regressions

command -v clang++ >/dev/null || {
  echo "fuzz: clang++ not found (apt-get install clang)" >&2
  exit 1
}
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DFP_BUILD_RUNTIME=OFF -DFP_ENABLE_CUDA=OFF -DFP_ENABLE_FUZZER=ON
fi
ninja -C "$build" fp-fuzz-frontend

mkdir -p "$corpus" "$regressions"
# Seeds: the models, the library and the frontend tests.
find "$root/models" "$root/test/Frontend" -name '*.fp' -exec cp {} "$corpus/" \;

crashes=$(mktemp -d)
trap 'rm -rf "$crashes"' EXIT
echo "fuzz: running for ${seconds}s on corpus $corpus"
status=0
# Imports in generated inputs resolve relative to the working directory.
(cd "$crashes" && "$build/bin/fp-fuzz-frontend" "$corpus" \
  -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$crashes/" -print_final_stats=1) || status=$?
found=0
for f in "$crashes"/crash-* "$crashes"/timeout-* "$crashes"/oom-* \
         "$crashes"/leak-*; do
  [[ -e $f ]] || continue
  cp "$f" "$regressions/$(basename "$f").fp"
  echo "fuzz: saved $(basename "$f") to $regressions" >&2
  found=1
done
if [[ $status -ne 0 || $found -ne 0 ]]; then
  echo "fuzz: FAILED (exit $status); add the saved inputs to git" >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds}s"
