#!/usr/bin/env python3
#===- fp_train_catbabi.py - fp-train on catbAbI files written here ---------===#
#
# bAbI cannot be downloaded here, so the test writes the 60 files of an
# en-valid-10k directory in bAbI's format: stories of people moving between
# rooms, each move followed by "Where is X?" and its one-word answer. A short
# FP-Mamba run with fp-train must lower the training loss and the validation
# loss, report the accuracy at the questions (RA accuracy) per bAbI task in
# metrics.jsonl and eval.json, keep best.pt and evaluate it rather than the
# last step's parameters; a malformed line
# is refused with its file and line and exit status 2. The seed is
# FP_TEST_SEED's, by default 1 (runtime/test/TestSeed.h).
#
# usage: fp_train_catbabi.py FP_TRAIN WORK_DIR
#
#===------------------------------------------------------------------------===#

import json
import os
import random
import shutil
import subprocess
import sys

PEOPLE = ["Mary", "John", "Daniel", "Sandra"]
ROOMS = ["bathroom", "hallway", "garden", "office", "kitchen", "bedroom"]
VERBS = ["went to", "moved to", "journeyed to", "travelled to"]


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


def story(rng):
    """One story in bAbI's format: moves, each followed by a question about
    the person who moved (the answer is the room of the move)."""
    lines, where = [], {}
    for _ in range(rng.randint(2, 5)):
        person, room = rng.choice(PEOPLE), rng.choice(ROOMS)
        where[person] = room
        lines.append(f"{len(lines) + 1} {person} {rng.choice(VERBS)} the "
                     f"{room}.")
        lines.append(f"{len(lines) + 1} Where is {person}? \t{room}\t"
                     f"{len(lines)}")
    return "\n".join(lines) + "\n"


def write_babi(directory, seed):
    os.makedirs(directory)
    rng = random.Random(seed)
    for task in range(1, 21):
        for split, count in (("train", 40), ("valid", 6), ("test", 6)):
            with open(f"{directory}/qa{task}_{split}.txt", "w") as f:
                f.write("".join(story(rng) for _ in range(count)))


def run(binary, args):
    print("$ fp-train " + " ".join(args), flush=True)
    return subprocess.run([binary] + args, capture_output=True, text=True,
                          timeout=600)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    seed = test_seed()
    data, out = f"{work}/babi", f"{work}/run"
    write_babi(data, seed)
    failures = []

    result = run(binary, [
        "--task", "catbabi", "--data", data, "--model", "reference:fp_mamba",
        "--d-model", "32", "--d-state", "8", "--mixer", "householder",
        "--context-len", "48", "--batch", "16", "--steps", "130",
        "--lr", "3e-3", "--eval-every", "40", "--log-every", "20",
        "--eval-count", "64", "--seed", str(seed), "--threads", "2",
        "--progress", "lines", "--out", out])
    print(result.stderr[-3000:])
    if result.returncode != 0:
        print(f"FAIL: fp-train exited with {result.returncode}")
        return 1
    with open(f"{out}/metrics.jsonl") as f:
        records = [json.loads(line) for line in f]
    train = [r["loss"] for r in records if r["kind"] == "train"]
    val = [r for r in records if r["kind"] == "val"]
    print("training loss per window:", " ".join(f"{x:.3f}" for x in train))
    print("validation loss:", " ".join(f"{r['loss']:.3f}" for r in val))
    # Six rooms answer every question: a model that learned only that an
    # answer is a room has ln 6 = 1.79; the initial loss is about ln 40.
    if not (train[-1] < 0.6 * train[0] and train[-1] < 1.79):
        failures.append(f"the training loss did not fall below ln 6: "
                        f"{train[0]:.3f} -> {train[-1]:.3f}")
    if len(val) != 3 or not val[-1]["loss"] < val[0]["loss"]:
        failures.append("the validation loss did not fall over 3 validations")
    for record in val:
        groups = record.get("group_accuracy", {})
        if sorted(groups) != sorted(f"qa{t}" for t in range(1, 21)):
            failures.append(f"validation at step {record['step']}: "
                            f"group_accuracy has {sorted(groups)}")

    with open(f"{out}/eval.json") as f:
        evaluation = json.load(f)
    entry = evaluation["lengths"][0]
    groups = entry.get("group_accuracy", {})
    print("test RA accuracy:", f"{entry['token_accuracy']:.3f}",
          "per task:", " ".join(f"{k} {v:.2f}" for k, v in groups.items()))
    if len(groups) != 20 or any(v is None for v in groups.values()):
        failures.append("eval.json lacks an accuracy for every bAbI task")
    # The last validation is at step 120 of 130: the final evaluation runs
    # on best.pt's parameters, not the last step's.
    best = min(val, key=lambda r: r["loss"])
    if "evaluating the parameters of step" not in result.stderr:
        failures.append("the final evaluation did not load best.pt")
    if evaluation.get("evaluated_step") != best["step"]:
        failures.append(f"eval.json evaluated step "
                        f"{evaluation.get('evaluated_step')}, the lowest "
                        f"validation loss is at step {best['step']}")
    if not os.path.isfile(f"{out}/best.pt"):
        failures.append("best.pt was not written")

    # A malformed line: the file, the line and exit status 2.
    with open(f"{data}/qa5_test.txt", "a") as f:
        f.write("7 Where is Mary?\n")
    bad = run(binary, ["--task", "catbabi", "--data", data, "--steps", "1",
                       "--progress", "none", "--out", f"{work}/bad"])
    print(bad.stderr.strip())
    if bad.returncode != 2 or "qa5_test.txt:" not in bad.stderr:
        failures.append(f"a malformed line: exit {bad.returncode}, expected "
                        "2 with the file and line")

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
