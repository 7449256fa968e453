#!/usr/bin/env bash
# Configure (once) and build fpc. Usage: scripts/build.sh [extra cmake args]
# Environment: FP_BUILD_DIR (default: build), FP_JOBS (default: nproc),
# FP_TARGETS (default: every target; e.g. "fpc fp-train" builds those alone).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
jobs=${FP_JOBS:-$(nproc)}

if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja "$@"
fi
# shellcheck disable=SC2086 # FP_TARGETS is a list of target names
ninja -C "$build" -j "$jobs" ${FP_TARGETS:-}
