#!/usr/bin/env bash
# The main job, on a small default. Installs missing dependencies, builds
# everything, then takes the FP-Mamba model of
# models/fp_mamba_householder1.fp (width FP_D_MODEL, default 128) through
# the compiler: the .fp source to the fp dialect, the fixed-point map and its
# mixer inlined, the iteration-invariant work hoisted out of fp.fixed_point,
# host code generated and compiled into a model library; then fp-bench runs
# one compiled layer against the eager reference on the same weights and
# input (B = 16, T = 17). Every stage is written to $FP_OUT (default:
# out/main).
#
# Compiled models have no backward yet; fp-train trains the eager reference
# models (README, "Training"). This script grows into "compile the default
# model and train it on a small task" once compiled models can train.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
out=${FP_OUT:-$root/out/main}
model=${1:-$root/models/fp_mamba_householder1.fp}
d_model=${FP_D_MODEL:-128}

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

echo "== build the model library (fpc, host target)"
"$fpc" "$model" --set d_model="$d_model" --dump-dir "$out" -o "$out/$name.so"
echo "== compiled layer vs eager reference (fp-bench)"
"$build/bin/fp-bench" --model "$out/$name.so" --batch 16 --seq-len 17 \
  --repeats 3
echo "stages written to $out/"
