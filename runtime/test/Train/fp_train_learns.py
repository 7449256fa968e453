#!/usr/bin/env python3
#===- fp_train_learns.py - A short training run must learn -----------------===#
#
# Trains a 1-layer LSTM on parity (training lengths 3–12) for 3000 steps with
# fp-train and requires sequence accuracy >= 0.95 at every evaluated length
# (12 and 24, i.e. twice the training length). The seed is FP_TEST_SEED's
# (a number, or "random" for a fresh one, as in the soak runs), by default 1,
# as for every randomised test (runtime/test/TestSeed.h).
#
# usage: fp_train_learns.py FP_TRAIN WORK_DIR
#
#===------------------------------------------------------------------------===#

import json
import os
import random
import shutil
import subprocess
import sys


def test_seed():
    """The seed of runtime/test/TestSeed.h: FP_TEST_SEED, else 1."""
    text = os.environ.get("FP_TEST_SEED", "")
    if text == "random":
        seed = random.randrange(1, 2**31)
    elif text:
        if not text.isdigit():
            sys.exit(f"FP_TEST_SEED={text}: expected a non-negative integer "
                     "or 'random'")
        seed = int(text)
    else:
        seed = 1
    print(f"[   seed   ] {seed} (FP_TEST_SEED={seed} reproduces)", flush=True)
    return seed


def main():
    binary, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    seed = test_seed()
    args = [
        "--task", "parity", "--model", "reference:lstm", "--d-model", "64",
        "--train-len", "12", "--train-min-len", "3",
        "--eval-min-len", "12", "--eval-max-len", "24", "--eval-step", "12",
        "--steps", "3000", "--lr", "3e-3", "--batch", "64",
        "--seed", str(seed), "--threads", "1", "--progress", "none",
        "--out", work,
    ]
    print("$ fp-train " + " ".join(args), flush=True)
    result = subprocess.run([binary] + args, capture_output=True, text=True,
                            timeout=600)
    print(result.stdout[-2000:], result.stderr[-2000:])
    if result.returncode != 0:
        print(f"FAIL: fp-train exited with {result.returncode}")
        return 1
    with open(f"{work}/eval.json") as f:
        evaluation = json.load(f)
    lengths = evaluation["lengths"]
    failed = False
    for entry in lengths:
        accuracy = entry["sequence_accuracy"]
        print(f"length {entry['length']}: sequence accuracy {accuracy:.4f}")
        if accuracy < 0.95:
            failed = True
    if len(lengths) != 2 or failed:
        print(f"FAIL: seed {seed}: expected sequence accuracy >= 0.95 at "
              f"lengths 12 and 24")
        return 1
    print(f"seed {seed}: learned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
