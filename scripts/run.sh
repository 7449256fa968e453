#!/usr/bin/env bash
# The main job, on a small default. Installs missing dependencies, builds
# fpc, then runs what the compiler can do today on the FP-Mamba model of
# models/fp_mamba_householder1.fp: compile the .fp source to the fp dialect,
# inline the fixed-point map and its mixer, and hoist the
# iteration-invariant work out of fp.fixed_point. Every stage is written to
# $FP_OUT (default: out/main).
#
# Code generation (model.so) is not built yet; fp-train trains the eager
# reference models (README, "Training"). This script grows into "compile
# the default model and train it on a small task" once compiled models can
# train.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
out=${FP_OUT:-$root/out/main}
model=${1:-$root/models/fp_mamba_householder1.fp}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
mkdir -p "$out"
fp_opt="$build/bin/fp-opt"
fpc="$build/bin/fpc"
name=$(basename "$model" .fp)

# Number of ops inside the first fp.fixed_point body of a printed module.
body_ops() {
  awk '/fp.fixed_point/ {inside=1; next} inside && /fp.yield/ {print n; exit}
       inside && /=|fp\./ {n++}' "$1"
}

echo "== compile $model to the fp dialect"
"$fpc" "$model" --emit=mlir -o "$out/$name.0-parsed.mlir"
echo "== inline the fixed-point map"
"$fp_opt" "$out/$name.0-parsed.mlir" --inline --canonicalize --cse \
  -o "$out/$name.1-inlined.mlir"
echo "== hoist loop-invariant work out of fp.fixed_point"
"$fp_opt" "$out/$name.1-inlined.mlir" --loop-invariant-code-motion --cse \
  --symbol-dce -o "$out/$name.2-hoisted.mlir"

before=$(body_ops "$out/$name.1-inlined.mlir")
after=$(body_ops "$out/$name.2-hoisted.mlir")
echo
echo "fixed-point body: $before ops before hoisting, $after after" \
     "($((before - after)) now run once per call instead of once per iteration)"
echo "stages written to $out/"
echo "not yet available: code generation (fpc -o model.so), fp-bench;" \
     "fp-train trains the eager reference models (see README, Training)"
