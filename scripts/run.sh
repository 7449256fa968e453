#!/usr/bin/env bash
# The main job, on a small default. Installs missing dependencies, builds
# everything, then takes the FP-Mamba model of
# models/fp_mamba_kronecker.fp (width FP_D_MODEL, default 64) through the
# compiler: the .fp source to the fp dialect, the fixed-point map and its
# mixer inlined, the iteration-invariant work hoisted out of
# fp.fixed_point, and `fpc --backward` builds the model library with its
# derived backward. fp-bench runs one compiled layer against the eager
# reference on the same weights and input (B = 16, T = 17); fp-train trains
# the compiled model on the A5 word problem at training length 4 for
# FP_STEPS steps (default 1500) on the CPU (the compiled backward runs on
# the host), evaluates it up to length 12, and fp-plot draws accuracy,
# fixed-point iterations and loss. Every stage is written to $FP_OUT
# (default: out/main).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
out=${FP_OUT:-$root/out/main}
model=${1:-$root/models/fp_mamba_kronecker.fp}
d_model=${FP_D_MODEL:-64}
steps=${FP_STEPS:-1500}

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

echo "== build the model library with its backward (fpc --backward, host)"
"$fpc" "$model" --backward --set d_model="$d_model" --dump-dir "$out" \
  -o "$out/$name.so"
echo "== compiled layer vs eager reference (fp-bench)"
"$build/bin/fp-bench" --model "$out/$name.so" --batch 16 --seq-len 17 \
  --repeats 3
echo "== train the compiled model on A5, training length 4 (fp-train)"
rm -rf "$out/train"
"$build/bin/fp-train" --model "$out/$name.so" --task a5 --train-len 4 \
  --eval-min-len 1 --eval-max-len 12 --eval-step 1 --lr 3e-3 \
  --steps "$steps" --eval-every 500 --eval-count 256 --max-iter 4 \
  --max-iter-eval 200 --seed 1 --progress lines --out "$out/train"
"$build/bin/fp-plot" "$out/train" --names "$name (compiled)" \
  --title "A5, train length 4" -o "$out/plots"
echo "stages, run and plots written to $out/"
