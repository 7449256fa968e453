#!/usr/bin/env python3
#===- tools/train-lm-summary.py - gpu-check's LM training as a table ------===#
#
# Tabulates the train-lm stage of tools/gpu-check.sh: tokens/s, peak device
# memory and fixed-point iterations of the compiled and the eager LM run,
# and of the compiled run in an NCCL process group of one process where
# there is one. OUT holds lm-compiled/, lm-eager/ and lm-compiled-nccl/,
# fp-train run directories whose
# metrics.jsonl has one training record per step (--log-every 1). The first
# step (CUDA and cuBLAS set-up, the allocator's first growth) is left out of
# the means where a later one exists.
#
# usage: train-lm-summary.py OUT BATCH ACCUM
#
#===------------------------------------------------------------------------===#

import json
import pathlib
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: train-lm-summary.py OUT BATCH ACCUM")
    out, batch, accum = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    print("12-layer FP-Mamba LM (D 768, Householder r = 2), bf16, context "
          f"2048, batch {batch} in {accum} micro-batches; means over the "
          "steps after the first")
    print()
    # Runs from different initial weights may iterate differently, so the
    # rate is also given per fixed-point iteration (token-iterations/s).
    print("| model | steps timed | tokens/s | peak MiB | fp iterations "
          "| k token-iterations/s |")
    print("|---|---|---|---|---|---|")
    rates = {}
    for model in ("compiled", "eager", "compiled-nccl"):
        path = out / f"lm-{model}" / "metrics.jsonl"
        if model == "compiled-nccl" and not path.parent.exists():
            continue
        try:
            records = [json.loads(line)
                       for line in path.read_text().splitlines() if line]
        except (OSError, ValueError) as error:
            print(f"| {model} | no metrics ({error}) | - | - | - | - |")
            continue
        train = [r for r in records if r.get("kind") == "train"]
        if not train:
            print(f"| {model} | no training records | - | - | - | - |")
            continue
        timed = train[1:] or train
        rate = sum(r["tokens_per_s"] for r in timed) / len(timed)
        peaks = [r["peak_mem_mib"] for r in train if "peak_mem_mib" in r]
        peak = f"{max(peaks):.0f}" if peaks else "-"
        iters = sum(r["fp_iters_mean"] for r in timed) / len(timed)
        rates[model] = rate
        print(f"| {model} | {len(timed)} | {rate:.0f} | {peak} | "
              f"{iters:.1f} | {rate * iters / 1000:.1f} |")
    print()
    if "compiled" in rates and rates.get("eager", 0) > 0:
        print(f"compiled / eager tokens/s: "
              f"{rates['compiled'] / rates['eager']:.2f}x")
    if rates.get("compiled", 0) > 0 and "compiled-nccl" in rates:
        print(f"compiled in an NCCL group of one / without a group, "
              f"tokens/s: {rates['compiled-nccl'] / rates['compiled']:.2f}x")


if __name__ == "__main__":
    main()
