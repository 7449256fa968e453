#!/usr/bin/env python3
#===- fp_plot_test.py - fp-plot on fake runs -------------------------------===#
#
# Writes two small fake run directories (one with fixed-point iterations and
# an extra metric, one baseline without), renders them with fp-plot and
# checks that the three PNGs exist and are PNG images; two fake language
# model runs add the perplexity plot; then checks the
# errors for a directory without eval.json and for bad arguments. Exits 77
# (skipped) when fp-plot reports that matplotlib is missing (exit 3). fp-plot
# runs as an executable, so that it picks its interpreter as a user's shell
# would.
#
# usage: fp_plot_test.py FP_PLOT WORK_DIR
#
#===------------------------------------------------------------------------===#

import json
import os
import shutil
import subprocess
import sys

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def fake_lm_run(directory, scale):
    """A language model's run: validation records with perplexity and the
    tokens trained on."""
    os.makedirs(directory)
    with open(os.path.join(directory, "eval.json"), "w") as f:
        json.dump({"task": "lm", "model": "reference:fp_mamba", "step": 40,
                   "train_length": 64, "eval_count": 8, "tokens_seen": 40960,
                   "lengths": [{"length": 64, "loss": 1.5, "perplexity": 4.48,
                                "bits_per_byte": 2.16, "sequences": 8,
                                "tokens": 512}]}, f)
    with open(os.path.join(directory, "metrics.jsonl"), "w") as f:
        for step in range(10, 50, 10):
            f.write(json.dumps({"step": step, "kind": "train",
                                "loss": scale * 3 / step}) + "\n")
            f.write(json.dumps({"step": step, "kind": "val",
                                "loss": scale * 3.5 / step,
                                "perplexity": 2.0 + scale * 40 / step,
                                "tokens_seen": step * 1024}) + "\n")


def fake_run(directory, fixed_point, extra):
    os.makedirs(directory)
    lengths = []
    for i, length in enumerate([4, 8, 12, 16]):
        lengths.append({
            "length": length, "sequence_accuracy": 1.0 - 0.2 * i,
            "token_accuracy": 1.0 - 0.1 * i, "loss": 0.1 * (i + 1),
            "extra": (0.9 - 0.1 * i) if extra else None,
            "fp_iters_mean": (3.0 + i) if fixed_point else 0.0,
            "fp_iters_max": (5 + i) if fixed_point else 0,
            "sequences": 8, "tokens": 8 * length})
    with open(os.path.join(directory, "eval.json"), "w") as f:
        json.dump({"task": "a5", "model": "reference:lstm", "step": 20,
                   "train_length": 8, "eval_count": 8, "lengths": lengths}, f)
    with open(os.path.join(directory, "metrics.jsonl"), "w") as f:
        for step in range(2, 22, 2):
            f.write(json.dumps({"step": step, "kind": "train",
                                "loss": 2.0 / step, "lr": 1e-3}) + "\n")
            if step % 10 == 0:
                f.write(json.dumps({"step": step, "kind": "val",
                                    "loss": 2.5 / step}) + "\n")
        f.write('{"step": 22, "ki')  # a half-written line


def main():
    fp_plot, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fake_run(os.path.join(work, "runs", "fp_mamba"), True, True)
    fake_run(os.path.join(work, "runs", "lstm"), False, False)
    out = os.path.join(work, "plots")

    result = subprocess.run(
        [fp_plot, os.path.join(work, "runs", "fp_mamba"),
         os.path.join(work, "runs", "lstm"), "-o", out],
        capture_output=True, text=True, timeout=100)
    print(result.stdout, result.stderr)
    if result.returncode == 3 and "matplotlib is not installed" in \
            result.stderr:
        print("matplotlib is not installed (python3-matplotlib); skipping")
        return 77
    check(result.returncode == 0, "fp-plot succeeds")
    for name in ["accuracy_vs_length.png", "fp_iterations_vs_length.png",
                 "loss.png"]:
        path = os.path.join(out, name)
        check(os.path.exists(path), f"{name} is written")
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            check(data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000,
                  f"{name} is a PNG image")
        check(path in result.stdout, f"{name} is reported")

    check(not os.path.exists(os.path.join(out, "perplexity_vs_tokens.png")),
          "no perplexity plot without a language model")

    # Language models: validation perplexity against tokens.
    fake_lm_run(os.path.join(work, "runs", "lm_a"), 1.0)
    fake_lm_run(os.path.join(work, "runs", "lm_b"), 2.0)
    lm_out = os.path.join(work, "lm-plots")
    result = subprocess.run(
        [fp_plot, os.path.join(work, "runs", "lm_a"),
         os.path.join(work, "runs", "lm_b"), "-o", lm_out],
        capture_output=True, text=True, timeout=100)
    path = os.path.join(lm_out, "perplexity_vs_tokens.png")
    check(result.returncode == 0 and path in result.stdout,
          f"fp-plot draws language models: {result.stderr}")
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
        check(data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000,
              "perplexity_vs_tokens.png is a PNG image")

    not_a_run = os.path.join(work, "empty")
    os.makedirs(not_a_run)
    result = subprocess.run([fp_plot, not_a_run, "-o", out],
                            capture_output=True, text=True, timeout=100)
    check(result.returncode == 2, "a directory without eval.json exits 2")
    check("has no eval.json" in result.stderr
          and "Traceback" not in result.stderr,
          f"clear message for a missing eval.json: {result.stderr!r}")

    result = subprocess.run([fp_plot, not_a_run],
                            capture_output=True, text=True, timeout=100)
    check(result.returncode == 2 and "-o" in result.stderr,
          "a missing -o exits 2 with argparse's message")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
