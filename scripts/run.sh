#!/usr/bin/env bash
# The main job, on a small default. Installs missing dependencies and builds
# the four tools it runs (fpc, fp-opt, fp-bench, fp-train), then:
#
# 1. takes the FP-Mamba model of models/fp_mamba_householder1.fp (one
#    Householder reflection: a channel mixer with eigenvalue −1) through the
#    compiler: the .fp source to the fp dialect, the fixed-point map and its
#    mixer inlined, the iteration-invariant work hoisted out of
#    fp.fixed_point; `fpc --backward` builds the model library with its
#    derived backward (width FP_D_MODEL, default 64), and the Mamba baseline
#    of models/mamba.fp (two diagonal layers) the same way;
# 2. fp-bench runs one compiled FP-Mamba layer against the eager reference
#    on the same weights and input (B = 16, T = 17; both solves converge);
# 3. fp-train trains both compiled models on parity (training lengths 3–12,
#    FP_STEPS steps, default 1000, seed FP_SEED, default 1) on the CPU, the
#    two runs side by side, evaluates them up to length 36 (3×), prints the
#    sequence accuracy per length side by side, and fp-plot draws both in
#    one plot: a state-tracking task that a diagonal recurrence fits at the
#    training lengths but cannot carry past them.
#
# Every stage is written to $FP_OUT (default: out/main).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FP_BUILD_DIR:-$root/build}
out=${FP_OUT:-$root/out/main}
model=$root/models/fp_mamba_householder1.fp
baseline=$root/models/mamba.fp
d_model=${FP_D_MODEL:-64}
steps=${FP_STEPS:-1000}
seed=${FP_SEED:-1}
start=$(date +%s)

bash "$root/scripts/install-deps.sh"
FP_TARGETS="fpc fp-opt fp-bench fp-train" bash "$root/scripts/build.sh"
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

echo "== build the model libraries with their backward (fpc --backward, host)"
"$fpc" "$model" --backward --set d_model="$d_model" --dump-dir "$out" \
  -o "$out/$name.so"
"$fpc" "$baseline" --backward --set d_model="$d_model" -o "$out/mamba.so"
echo "== compiled layer vs eager reference (fp-bench)"
"$build/bin/fp-bench" --model "$out/$name.so" --batch 16 --seq-len 17 \
  --repeats 3

echo "== train FP-Mamba and Mamba on parity, training lengths 3-12 (fp-train)"
train() { # train NAME LIBRARY
  rm -rf "$out/train-$1"
  "$build/bin/fp-train" --model "$2" --task parity --train-min-len 3 \
    --train-len 12 --eval-min-len 4 --eval-max-len 36 --eval-step 4 \
    --steps "$steps" --eval-every 250 --eval-count 256 \
    --max-iter 12 --max-iter-eval 200 --seed "$seed" --threads 1 \
    --progress none --out "$out/train-$1" >"$out/train-$1.log" 2>&1 ||
    { cat "$out/train-$1.log" >&2; return 1; }
}
train fp_mamba "$out/$name.so" &
fp_mamba_job=$!
train mamba "$out/mamba.so" &
mamba_job=$!
wait $fp_mamba_job
wait $mamba_job

python3 - "$out/train-fp_mamba/eval.json" "$out/train-mamba/eval.json" <<'EOF'
import json
import sys

runs = [json.load(open(path))["lengths"] for path in sys.argv[1:]]
print("sequence accuracy on parity (trained on lengths 3-12):")
print(f"{'length':>6}  {'FP-Mamba H1':>11}  {'Mamba':>6}  fp iterations")
for fp, mamba in zip(*runs):
    print(f"{fp['length']:>6}  {fp['sequence_accuracy']:>11.3f}  "
          f"{mamba['sequence_accuracy']:>6.3f}  {fp['fp_iters_mean']:.1f}")
EOF
"$build/bin/fp-plot" "$out/train-fp_mamba" "$out/train-mamba" \
  --names "FP-Mamba H1 (compiled)" "Mamba (compiled)" \
  --title "Parity, train lengths 3-12" -o "$out/plots"
echo "stages, runs and plots written to ${out#"$root"/}/ in $(( $(date +%s) - start )) s"
