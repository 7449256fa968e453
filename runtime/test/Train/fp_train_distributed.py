#!/usr/bin/env python3
#===- fp_train_distributed.py - fp-train in several processes ------------===#
#
# Runs fp-train as a user would with --nproc-per-node 2 (two Gloo processes
# on this machine) and checks, on the same seed:
#   - 2 processes x batch B/2 train what 1 process x batch B trains (the
#     gradients summed after the backward, and during it with
#     --overlap-allreduce on): f64
#     parameters after 20 steps within 1e-10 relative, for the reference
#     FP-Mamba and for a compiled model library (each solve runs a fixed
#     number of steps, so that it does not depend on which samples share a
#     process: the stop rule's quantile is per process, as in the
#     reference); metrics.jsonl written once, with the same steps;
#   - a worker killed mid-run: the other exits non-zero within the timeout,
#     the launcher names the rank; --resume from the last checkpoint ends
#     where an uninterrupted run ends; a worker that stops answering: the
#     other fails after --dist-timeout and the job ends;
#   - one process with --dist-backend gloo (a process group of one) trains
#     what one process without a group trains, and records the wait;
#   - refusals: another world size on --resume, a batch that does not
#     split, --nproc-per-node under an outer launcher, --dist-backend nccl
#     on the CPU.
#
# usage: fp_train_distributed.py PYTHON_WITH_TORCH FP_TRAIN WORK_DIR [LIBRARY]
#
# (This script needs no torch itself; PYTHON_WITH_TORCH reads checkpoints.)
#
#===------------------------------------------------------------------------===#

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

FAILURES = []
SEED = os.environ.get("FP_TEST_SEED", "3")


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def run(binary, args, timeout=600, env=None):
    result = subprocess.run([binary] + args, capture_output=True, text=True,
                            timeout=timeout, env=env)
    print(f"$ fp-train {' '.join(args)}\n-> exit {result.returncode}")
    if result.stderr:
        print(result.stderr.rstrip()[-2000:])
    return result


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def max_relative_difference(torch_python, first, second):
    """The largest ||a - b|| / ||b|| over the parameters of two runs'
    checkpoints, and the number of parameters (-1: unreadable)."""
    script = (
        "import sys, torch\n"
        "a = dict(torch.jit.load(sys.argv[1]).model.named_parameters())\n"
        "b = dict(torch.jit.load(sys.argv[2]).model.named_parameters())\n"
        "assert a.keys() == b.keys(), (a.keys(), b.keys())\n"
        "print(max(float((a[k] - b[k]).norm() / b[k].norm().clamp_min(1e-300))"
        " for k in a), len(a))\n")
    result = subprocess.run(
        [torch_python, "-c", script, os.path.join(first, "checkpoint.pt"),
         os.path.join(second, "checkpoint.pt")], capture_output=True,
        text=True)
    if result.returncode != 0:
        print(result.stderr)
        return float("inf"), -1
    value, count = result.stdout.split()
    return float(value), int(count)


def train_records(directory):
    with open(os.path.join(directory, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "train"]


def metric_steps(directory):
    with open(os.path.join(directory, "metrics.jsonl")) as f:
        return [(r["step"], r["kind"]) for r in map(json.loads, f)]


def same_training(binary, torch_python, work, name, model_args):
    common = ["--task", "parity", "--batch", "8", "--steps", "20",
              "--dtype", "f64", "--max-iter", "3", "--max-iter-eval", "3",
              "--tolerance", "1e-300", "--eval-every", "10",
              "--eval-count", "16", "--eval-batch", "4", "--eval-min-len",
              "24", "--eval-max-len", "24", "--log-every", "5", "--threads", "1", "--progress",
              "none", "--seed", SEED] + model_args
    one = os.path.join(work, f"{name}-1")
    two = os.path.join(work, f"{name}-2")
    check(run(binary, common + ["--out", one]).returncode == 0,
          f"{name}: the one-process run failed")
    check(run(binary, common + ["--out", two, "--nproc-per-node",
                                "2"]).returncode == 0,
          f"{name}: the two-process run failed")
    # Again with the sums started from the backward's hooks.
    overlapped = os.path.join(work, f"{name}-2-overlapped")
    check(run(binary, common + ["--out", overlapped, "--nproc-per-node", "2",
                                "--overlap-allreduce", "on"]).returncode == 0,
          f"{name}: the two-process run with --overlap-allreduce on failed")
    # One process in a process group of one.
    grouped = os.path.join(work, f"{name}-1-grouped")
    env = dict(os.environ, MASTER_PORT=free_port())
    check(run(binary, common + ["--out", grouped, "--dist-backend", "gloo"],
              env=env).returncode == 0,
          f"{name}: the one-process run with --dist-backend gloo failed")
    for other, how in ((two, "2 processes"),
                       (overlapped, "2 processes overlapping the sums"),
                       (grouped, "1 process in a Gloo group")):
        difference, count = max_relative_difference(torch_python, one, other)
        print(f"{name}, {how}: {count} parameters, largest relative "
              f"difference {difference:.2e} after 20 steps")
        check(count > 0 and difference <= 1e-10,
              f"{name}: {how} differ from 1 by {difference:.2e} (> 1e-10)")
    check(metric_steps(one) == metric_steps(two),
          f"{name}: metrics.jsonl records differ: {metric_steps(one)} vs "
          f"{metric_steps(two)}")
    with open(os.path.join(two, "config.json")) as f:
        check(json.load(f)["runtime"]["world_size"] == 2,
              f"{name}: config.json does not record world_size 2")
    waits = [record.get("allreduce_wait_ms") for record in
             train_records(two)]
    check(waits and all(isinstance(w, float) and w >= 0 for w in waits),
          f"{name}: the two-process run's train records lack "
          f"allreduce_wait_ms: {waits}")
    check(all("allreduce_wait_ms" not in record
              for record in train_records(one)),
          f"{name}: the one-process run records allreduce_wait_ms")
    check(all("allreduce_wait_ms" in record
              for record in train_records(grouped)),
          f"{name}: the run in a group of one lacks allreduce_wait_ms")
    with open(os.path.join(grouped, "config.json")) as f:
        runtime = json.load(f)["runtime"]
        check(runtime["dist_backend"] == "gloo" and
              runtime["world_size"] == 1,
              f"{name}: config.json of the grouped run says {runtime}")


def signal_second_worker(binary, args, ready, sent, name):
    """Starts fp-train with `args` (a job of two), waits until the file
    `ready` exists and is not empty, sends signal `sent` to rank 1 (the
    second worker the launcher started) and waits for the launcher.
    Returns its exit status, its stderr and the seconds it took to end."""
    process = subprocess.Popen([binary] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while (not os.path.exists(ready) or os.path.getsize(ready) == 0) \
            and time.time() < deadline and process.poll() is None:
        time.sleep(0.01)
    check(os.path.exists(ready), f"{name}: no {os.path.basename(ready)} "
          "was written")
    children = []
    tasks = f"/proc/{process.pid}/task"
    for task in os.listdir(tasks):
        with open(os.path.join(tasks, task, "children")) as f:
            children += [int(pid) for pid in f.read().split()]
    check(len(children) == 2,
          f"{name}: the launcher has {len(children)} workers")
    os.kill(max(children), sent)  # rank 1 was started second
    started = time.time()
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    took = time.time() - started
    print(stderr.rstrip()[-2000:])
    print(f"{name}: the launcher exited {process.returncode} after "
          f"{took:.1f} s")
    check(process.returncode not in (0, None),
          f"{name}: the launcher exited 0")
    return process.returncode, stderr, took


def killed_worker(binary, torch_python, work):
    # A constant learning rate, so that --steps may change on --resume
    # without changing the steps already taken.
    common = ["--task", "parity", "--model", "reference:lstm", "--d-model",
              "64", "--batch", "16", "--schedule", "constant", "--warmup", "0",
              "--checkpoint-every", "5", "--eval-every", "0", "--log-every", "1",
              "--threads",
              "1", "--progress", "none", "--seed", SEED, "--nproc-per-node",
              "2", "--dist-timeout", "20"]
    killed = os.path.join(work, "killed")
    _, stderr, took = signal_second_worker(
        binary, common + ["--steps", "100000", "--out", killed],
        os.path.join(killed, "checkpoint.pt"), signal.SIGKILL,
        "killed rank 1")
    check(took < 20 + 30, f"the job took {took:.1f} s to stop")
    check("worker rank 1" in stderr and "killed by signal 9" in stderr,
          "the launcher does not name the killed rank")
    check("rank 0 of 2" in stderr, "rank 0 does not report the failure")
    with open(os.path.join(killed, "metrics.jsonl")) as f:
        done = max([json.loads(line)["step"] for line in f] or [0])
    print(f"killed after step {done}")
    check(done < 40, f"the run reached step {done} before the kill")

    resumed = run(binary, ["--resume", killed, "--steps", "40",
                           "--nproc-per-node", "2", "--progress", "none"])
    check(resumed.returncode == 0, "the resumed run failed")
    straight = os.path.join(work, "straight")
    check(run(binary, common + ["--steps", "40", "--out", straight])
          .returncode == 0, "the uninterrupted run failed")
    difference, count = max_relative_difference(torch_python, killed,
                                                straight)
    print(f"resumed vs uninterrupted: largest relative difference "
          f"{difference:.2e}")
    check(count > 0 and difference == 0,
          f"the resumed run differs from the uninterrupted one by "
          f"{difference:.2e}")

    other = run(binary, ["--resume", killed, "--steps", "45",
                         "--progress", "none"])
    check(other.returncode == 2 and "trains in 2 process(es)" in other.stderr,
          "a resume in another world size is not refused")


def hung_worker(binary, work):
    """A worker that stops answering (SIGSTOP): the other fails after
    --dist-timeout, and the launcher stops the job."""
    hung = os.path.join(work, "hung")
    _, stderr, took = signal_second_worker(
        binary,
        ["--task", "parity", "--model", "reference:lstm", "--d-model", "64",
         "--batch", "16", "--steps", "100000", "--schedule", "constant",
         "--warmup", "0", "--log-every", "1", "--threads", "1", "--progress",
         "none", "--seed", SEED, "--nproc-per-node", "2", "--dist-timeout",
         "5", "--out", hung],
        os.path.join(hung, "metrics.jsonl"), signal.SIGSTOP,
        "stopped rank 1")
    check(took < 5 + 15, f"the job took {took:.1f} s to stop")
    check("did not answer within --dist-timeout (5 s)" in stderr,
          "rank 0 does not report the timeout")


def refusals(binary, work):
    result = run(binary, ["--task", "parity", "--model", "reference:lstm",
                          "--batch", "5", "--nproc-per-node", "2", "--out",
                          os.path.join(work, "odd")])
    check(result.returncode != 0 and "does not split into 2 processes"
          in result.stderr, "an odd batch is not refused")
    env = dict(os.environ, WORLD_SIZE="2", RANK="0")
    result = run(binary, ["--task", "parity", "--model", "reference:lstm",
                          "--nproc-per-node", "2", "--out",
                          os.path.join(work, "nested")], env=env)
    check(result.returncode == 2 and "WORLD_SIZE is set" in result.stderr,
          "--nproc-per-node under an outer launcher is not refused")
    env = dict(os.environ, WORLD_SIZE="2", RANK="2")
    result = run(binary, ["--task", "parity", "--out",
                          os.path.join(work, "badrank")], env=env)
    check(result.returncode == 2 and "RANK=2" in result.stderr,
          "a RANK outside the world is not refused")
    result = run(binary, ["--task", "parity", "--dist-backend", "nccl",
                          "--out", os.path.join(work, "nccl-on-cpu")])
    check(result.returncode == 2 and
          "--dist-backend nccl sums tensors on CUDA devices" in result.stderr,
          "--dist-backend nccl on the CPU is not refused")


def main():
    torch_python, binary, work = sys.argv[1:4]
    library = sys.argv[4] if len(sys.argv) > 4 else ""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    same_training(binary, torch_python, work, "reference",
                  ["--model", "reference:fp_mamba", "--d-model", "16",
                   "--layers", "1"])
    if library and os.path.exists(library):
        same_training(binary, torch_python, work, "compiled",
                      ["--model", library])
    else:
        print(f"no compiled library at '{library}': the compiled model's "
              "comparison is skipped")
    killed_worker(binary, torch_python, work)
    hung_worker(binary, work)
    refusals(binary, work)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
