#!/usr/bin/env python3
#===- fp_bench_test.py - fp-bench end to end -------------------------------===#
#
# Runs the fp-bench binary as a user would: command-line mistakes (exit 2, one
# line on stderr), a missing library and a library without a reference
# (exit 1, a message naming the problem), and, given a directory of compiled
# models, a short training-mode run of fp_mamba_householder1 in f64 whose
# tables are checked: the forward and the training step of both
# implementations timed, the same iterations, outputs and input gradients
# within 1e-8, and on the CPU no kernel counts or peak memory claimed; its
# roofline section (one line per launch that adds up to the step, measured
# ceilings, a measured step time), the whole forward call and training step
# on the roofline (which follow from --cost-only's launches outside the loop
# and the steps the call ran) and --cost-only's figures, which follow from
# the manifest's counts; tools/bench-summary.py's table of that run;
# and a bf16 run: 2-byte elements in the roofline with the host's f32 GEMM
# ceiling, and both bf16 sides compared with the eager reference in f32.
#
# usage: fp_bench_test.py FP_BENCH FIXTURE_LIBRARY [MODELS_DIR]
#
#===------------------------------------------------------------------------===#

import importlib.util
import os
import re
import subprocess
import sys

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def run(binary, args, timeout=300):
    result = subprocess.run([binary] + args, capture_output=True, text=True,
                            timeout=timeout)
    print(f"$ fp-bench {' '.join(args)}\n-> exit {result.returncode}")
    if result.stdout:
        print(result.stdout.rstrip())
    if result.stderr:
        print(result.stderr.rstrip())
    return result


def expect_error(binary, args, code, fragment):
    result = run(binary, args)
    check(result.returncode == code,
          f"{args}: exit {result.returncode}, expected {code}")
    lines = result.stderr.strip().splitlines()
    check(len(lines) == 1, f"{args}: expected one line on stderr, got {lines}")
    check(fragment in result.stderr,
          f"{args}: stderr lacks '{fragment}': {result.stderr!r}")
    check(result.stdout == "", f"{args}: unexpected stdout {result.stdout!r}")


def parse_launches(text):
    """The launch lines of a step table: (name, [MFLOP, MB, intensity,
    bound ms]) with '-' read as 0."""
    launches = []
    for line in text.splitlines():
        match = re.match(r"  (fp\.\w+|arith\.\w+|step \(\d+ launches\))"
                         r"\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", line)
        if match:
            name = "step" if match.group(1).startswith("step") else match.group(1)
            values = [0.0 if v == "-" else float(v) for v in match.groups()[1:]]
            launches.append((name, values))
        elif launches:
            break
    return launches


def check_step_sums(launches):
    """The step line is the sum of the launch lines (to print rounding)."""
    *parts, (_, step) = launches
    for column, label, tolerance in ((0, "MFLOP", 3e-3), (1, "MB", 3e-3),
                                     (3, "bound ms", 3e-4)):
        total = sum(values[column] for _, values in parts)
        check(abs(total - step[column]) <= tolerance * len(parts),
              f"the step's {label} {step[column]} is the launches' sum {total}")


def parse_outside(text):
    """--cost-only's lines of the launches outside the loop: {part:
    (launches, MFLOP, MB)}."""
    parts = {}
    for match in re.finditer(r"^  (forward|backward)\s+(\d+) launches\s+"
                             r"(\S+) MFLOP\s+(\S+) MB$", text, re.M):
        parts[match.group(1)] = (int(match.group(2)), float(match.group(3)),
                                 float(match.group(4)))
    return parts


def parse_calls(text):
    """The whole-call roofline rows: {call: [steps, GFLOP, GB, bound ms,
    GEMMs ms, compiled ms, % of bound, eager ms, eager / bound]}."""
    calls = {}
    for match in re.finditer(r"^  (forward|training step)\s+(\d+)\s+(\S+)\s+"
                             r"(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)%\s+"
                             r"(\S+)\s+(\S+)×$", text, re.M):
        calls[match.group(1)] = [float(v) for v in match.groups()[1:]]
    return calls


def check_calls(calls, sections, outside, step_mflop):
    """The whole-call rows follow from --cost-only's counts (the launches
    outside the loop plus the steps the call ran; a training step adds the
    backward's) and from the run's own tables."""
    check(set(calls) == {"forward", "training step"},
          f"a whole-call roofline row per table: {sorted(calls)}")
    expected = {}
    if "forward" in outside and step_mflop is not None and "forward" in calls:
        expected["forward"] = (outside["forward"][1] +
                               calls["forward"][0] * step_mflop)
    if {"forward", "backward"} <= set(outside) and step_mflop is not None \
            and "training step" in calls:
        expected["training step"] = (outside["forward"][1] +
                                     calls["training step"][0] * step_mflop +
                                     outside["backward"][1])
    for call, table in (("forward", "forward"), ("training step", "step")):
        if call not in calls:
            continue
        steps, gflop, _, bound, gemms, compiled, share, eager, ratio = \
            calls[call]
        rows = sections.get(table, {})
        if set(rows) == {"compiled", "eager"}:
            check(steps >= float(rows["compiled"][2]),
                  f"{call}: the steps are at least the mean iterations")
            check(abs(compiled - float(rows["compiled"][0])) <= 1e-3 and
                  abs(eager - float(rows["eager"][0])) <= 1e-3,
                  f"{call}: the row's times are the table's medians")
        check(0 < gemms <= bound, f"{call}: 0 < GEMMs <= bound")
        check(abs(share - 100 * bound / compiled) <= 0.1 + 1e-3 * share,
              f"{call}: the share is bound / compiled: {calls[call]}")
        check(abs(ratio - eager / bound) <= 0.01 + 1e-3 * ratio,
              f"{call}: eager/bound is eager / bound: {calls[call]}")
        if call in expected:
            check(abs(gflop * 1e3 - expected[call]) <= 0.06,
                  f"{call}: {gflop} GFLOP is the launches outside the loop "
                  f"plus the steps: {expected[call] / 1e3}")


def check_summary(log, sections, fraction):
    """tools/bench-summary.py turns the run into one row per table with the
    run's own figures."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "..", "tools", "bench-summary.py")
    spec = importlib.util.spec_from_file_location("bench_summary", path)
    summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summary)
    rows = [line.split(" | ") for line in summary.summarize(log).splitlines()
            if line.startswith("| householder1, train |")]
    check([row[1] for row in rows] == ["forward", "training step"],
          f"the summary has a row per table: {rows}")
    names = {"forward": "forward", "training step": "step"}
    for row in rows:
        table = sections.get(names[row[1]], {})
        if set(table) != {"compiled", "eager"}:
            continue
        compiled, eager = table["compiled"][0], table["eager"][0]
        check(row[2:4] == [compiled, eager],
              f"{row[1]}: the summary's times are the run's: {row}")
        check(row[4] == f"{float(eager) / float(compiled):.2f}×",
              f"{row[1]}: the summary's speedup is eager / compiled: {row}")
        check(row[5] == f"{table['compiled'][2]} / {table['eager'][2]}",
              f"{row[1]}: the summary's iterations are the run's: {row}")
        check(re.fullmatch(r"\d\.\d{3}e[-+]\d\d", row[9]) is not None,
              f"{row[1]}: the summary has the difference: {row}")
    if rows and fraction is not None:
        check(rows[0][10].startswith(fraction.group(1) + "% of "),
              f"the forward row has the roofline share: {rows[0]}")
    schedule = re.search(r"compiled schedule: (\S+)", log)
    check(schedule is not None and schedule.group(1) == "fused",
          "a CPU run says it ran the fused schedule")
    for row in rows:
        check(row[11] == schedule.group(1),
              f"{row[1]}: the summary names the schedule: {row}")
        check(re.fullmatch(r"[\d.]+% of [\d.]+ ms, eager/bound [\d.]+×",
                           row[12].rstrip(" |")) is not None,
              f"{row[1]}: the summary has the whole call on the roofline: "
              f"{row}")


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    binary, fixture = sys.argv[1], sys.argv[2]
    models = sys.argv[3] if len(sys.argv) == 4 else os.environ.get(
        "FP_TEST_MODELS_DIR", "")

    result = run(binary, ["--help"])
    check(result.returncode == 0 and result.stdout.startswith("usage: "),
          "--help prints the usage and exits 0")

    expect_error(binary, [], 2, "--model PATH is required")
    expect_error(binary, ["--model", "x.so", "--batch", "0"], 2,
                 "--batch must be at least 1, got 0")
    expect_error(binary, ["--model", "x.so", "--seq-len", "ten"], 2,
                 "--seq-len needs an integer, got 'ten'")
    expect_error(binary, ["--model", "x.so", "--dtype", "f16"], 2,
                 "--dtype is 'f32', 'f64' or 'bf16', got 'f16'")
    expect_error(binary, ["--model", "x.so", "--mode", "test"], 2,
                 "--mode is 'eval' or 'train', got 'test'")
    expect_error(binary, ["--model", "x.so", "--warmup", "-1"], 2,
                 "--warmup must be at least 0, got -1")
    expect_error(binary, ["--model", "x.so", "--kernels", "-1"], 2,
                 "--kernels must be at least 0, got -1")
    expect_error(binary, ["--model", "x.so", "--repeat", "3"], 2,
                 "unknown option '--repeat'")
    expect_error(binary, ["--model", "x.so", "--model", "y.so"], 2,
                 "--model is given twice")
    expect_error(binary, ["--model", "x.so", "--threads"], 2,
                 "--threads needs a value")
    expect_error(binary, ["--model", "x.so", "extra"], 2,
                 "unexpected argument 'extra'")
    expect_error(binary, ["--model", "x.so", "--device", "gpu"], 2,
                 "--device is 'cpu' or 'cuda', got 'gpu'")
    expect_error(binary, ["--model", "x.so", "--steps", "3"], 2,
                 "--steps and --ceilings go with --cost-only")
    expect_error(binary, ["--model", "x.so", "--cost-only", "--ceilings",
                          "1e12,1e13"], 2, "--ceilings needs --steps")
    expect_error(binary, ["--model", "x.so", "--cost-only", "--steps", "3",
                          "--ceilings", "1e12"], 2,
                 "--ceilings is COPY_BYTES_PER_S,GEMM_FLOPS_PER_S (two "
                 "positive numbers, e.g. 2.955e12,51.7e12), got '1e12'")
    expect_error(binary, ["--model", "x.so", "--cost-only", "--steps", "3",
                          "--ceilings", "1e12,0"], 2,
                 "got '1e12,0'")
    expect_error(binary, ["--model", "x.so", "--cost-only", "--steps", "-1"],
                 2, "--steps must be at least 0, got -1")
    for extra in ([], ["--device", "cuda", "--dtype", "bf16"],
                  ["--device", "cuda", "--dtype", "f64"]):
        expect_error(binary, ["--model", "x.so", "--tf32"] + extra, 2,
                     "--tf32 goes with --device cuda and --dtype f32")

    missing = os.path.join(os.path.dirname(fixture), "no_such_model.so")
    expect_error(binary, ["--model", missing], 1,
                 f"cannot load model library '{missing}': no such file")
    expect_error(binary, ["--model", fixture], 1,
                 "names no model, so its reference is unknown; pass "
                 "--reference NAME")
    expect_error(binary, ["--model", fixture, "--reference", "gru"], 1,
                 "no reference for model 'gru'")
    # Without CUDA in LibTorch the device is refused first; with it, the
    # fixture is (it names no model).
    result = run(binary, ["--model", fixture, "--device", "cuda"])
    check(result.returncode == 1 and (
        "this LibTorch has no CUDA support" in result.stderr
        or "names no model" in result.stderr),
        "--device cuda is refused without CUDA, or the fixture is")

    result = run(binary, ["--model", fixture, "--cost-only"])
    check(result.returncode == 0 and "gives no solver step cost" in result.stdout,
          "--cost-only says when a library gives no step cost")

    library = os.path.join(models, "fp_mamba_householder1.so") if models else ""
    if library and os.path.exists(library):
        # Householder r = 1, D = 512: the merged GEMM maps 1024 features to
        # 1024 + 1 + 32, padded to 1064 (fp-merge-linears' row multiple; 2 ·
        # 1024 FLOPs each), and moves 2088 elements per token (y in, the map
        # out; the fused kernel reads the map one token back) and its
        # 1064 × 1024 weights; B · T = 10, 8-byte elements.
        result = run(binary, ["--model", library, "--cost-only", "--batch",
                              "2", "--seq-len", "5", "--dtype", "f64"])
        check(result.returncode == 0, "--cost-only exits 0")
        launches = parse_launches(result.stdout)
        check([name for name, _ in launches] ==
              ["fp.linear", "fp.kernel", "fp.solver_relax", "step"],
              f"--cost-only lists the three launches and the step: {launches}")
        if len(launches) == 4:
            linear = launches[0][1]
            check(abs(linear[0] - 2 * 1024 * 1064 * 10 / 1e6) < 2e-3,
                  f"the GEMM's MFLOP: {linear[0]}")
            check(abs(linear[1] - (2088 * 10 + 1064 * 1024) * 8 / 1e6) < 2e-3,
                  f"the GEMM's MB: {linear[1]}")
            check_step_sums(launches)
        step_mflop = launches[-1][1][0] if launches else None
        # The launches outside the loop, forward and backward; the forward
        # starts with in_proj's GEMM (2 · 512 · 2048 FLOPs per token).
        outside = parse_outside(result.stdout)
        check(set(outside) == {"forward", "backward"} and
              all(launches > 0 for launches, _, _ in outside.values()),
              f"--cost-only lists the launches outside the loop: {outside}")
        if "forward" in outside:
            check(outside["forward"][1] > 2 * 512 * 2048 * 10 / 1e6,
                  f"the forward outside the loop has in_proj's FLOPs at "
                  f"least: {outside['forward']}")
        # --steps totals a call of that many steps; --ceilings bounds it.
        result = run(binary, ["--model", library, "--cost-only", "--batch",
                              "2", "--seq-len", "5", "--dtype", "f64",
                              "--steps", "3", "--ceilings", "1e11,1e12"])
        check(result.returncode == 0, "--cost-only --steps exits 0")
        totals = dict((m.group(1), [float(v) for v in m.groups()[1:]])
                      for m in re.finditer(
                          r"^  (forward call|training step) of 3 solver "
                          r"steps: (\S+) GFLOP, (\S+) GB, bound (\S+) ms "
                          r"\(GEMMs (\S+) ms\)$", result.stdout, re.M))
        check(set(totals) == {"forward call", "training step"},
              f"--steps prints a forward call and a training step: {totals}")
        if set(totals) == {"forward call", "training step"} and \
                set(outside) == {"forward", "backward"} and \
                step_mflop is not None:
            forward = outside["forward"][1] + 3 * step_mflop
            training = forward + outside["backward"][1]
            for name, expected in (("forward call", forward),
                                   ("training step", training)):
                gflop, _, bound, gemms = totals[name]
                check(abs(gflop * 1e3 - expected) <= 0.06,
                      f"{name}: {gflop} GFLOP is the launches outside the "
                      f"loop plus 3 steps: {expected / 1e3}")
                check(0 < gemms <= bound,
                      f"{name}: 0 < GEMMs <= bound: {totals[name]}")

        result = run(binary, ["--model", library, "--batch", "2",
                              "--seq-len", "5", "--dtype", "f64", "--mode", "train",
                              "--repeats", "2", "--warmup", "1",
                              "--threads", "1", "--seed", "7"])
        check(result.returncode == 0, "a real run exits 0")
        # Sections: "forward ..." and "training step ...", each a table with
        # a compiled and an eager row.
        sections, current = {}, None
        for line in result.stdout.splitlines():
            if line.startswith("forward"):
                current = sections.setdefault("forward", {})
            elif line.startswith("training step"):
                current = sections.setdefault("step", {})
            fields = line.split()
            if current is not None and fields and fields[0] in ("compiled",
                                                                 "eager"):
                current[fields[0]] = fields[1:]
        check(set(sections) == {"forward", "step"},
              f"a forward and a training-step table: {sorted(sections)}")
        for section, rows in sections.items():
            check(set(rows) == {"compiled", "eager"},
                  f"{section}: a compiled and an eager row: {rows}")
            if set(rows) != {"compiled", "eager"}:
                continue
            for name, fields in rows.items():
                median, minimum, iterations, per = map(float, fields[:4])
                check(0 < minimum <= median,
                      f"{section} {name}: 0 < min <= median")
                check(iterations >= 2,
                      f"{section} {name}: at least two iterations")
                check(abs(per - median / iterations) <= 1e-3 * median,
                      f"{section} {name}: time per iteration is median / "
                      "iterations")
                check(fields[4:] == ["-", "-", "-"],
                      f"{section} {name}: no kernel, sync or memory figures "
                      f"on the CPU: {fields[4:]}")
            check(rows["compiled"][2] == rows["eager"][2],
                  f"{section}: both take the same iterations")
        for label in ("forward output", "training-step dL/dx",
                      "training-step dL/dparams"):
            difference = re.search(label + r"\s+(\S+)", result.stdout)
            check(difference is not None and float(difference.group(1)) <= 1e-8,
                  f"{label}: compiled and eager agree in f64")
        check(len(re.findall(r"speedup \d+\.\d+x", result.stdout)) == 2,
              "a speedup per table")
        check("not counted (counted on CUDA only)" in result.stdout,
              "the CPU run says why nothing is counted")
        check("1 threads" in result.stdout, "--threads 1 is in effect")
        buffers = re.search(r"buffers of the compiled layer \(buffer_sizes, "
                            r"MiB\): forward workspace ([\d.]+), saved for the backward "
                            r"([\d.]+), backward workspace ([\d.]+)",
                            result.stdout)
        check(buffers is not None and
              all(float(size) > 0 for size in buffers.groups()),
              "the run gives the compiled layer's buffer sizes, none empty "
              f"for a layer with a backward: {buffers and buffers.groups()}")
        roofline = result.stdout[result.stdout.find("roofline of one"):]
        launches = parse_launches(roofline)
        check(len(launches) == 4 and launches[-1][0] == "step",
              f"the roofline lists three launches and the step: {launches}")
        if launches:
            check_step_sums(launches)
            check(launches[-1][1][3] > 0, "the step's bound is positive")
        check(re.search(r"ceilings measured on this CPU: copy \d+\.\d GB/s "
                        r"\(256 MiB buffer\), f64 matrix product "
                        r"\d+\.\d GFLOP/s \(1024³\)", roofline) is not None,
              "the roofline gives the measured ceilings")
        fraction = re.search(r"([\d.]+)% of the roofline", roofline)
        check(fraction is not None and float(fraction.group(1)) > 0
              or "step time: not measurable" in roofline,
              "the roofline gives the measured step against its bound")
        check_calls(parse_calls(roofline), sections, outside, step_mflop)
        check_summary("== householder1, train: fp-bench ...\n" + result.stdout,
                      sections, fraction)

        # bf16: the compiled layer computes in bf16 over the f32 weights, the
        # eager reference under autocast; both against the f32 reference.
        result = run(binary, ["--model", library, "--batch", "2",
                              "--seq-len", "5", "--dtype", "bf16", "--mode",
                              "train", "--repeats", "1", "--warmup", "0",
                              "--threads", "1", "--seed", "7"])
        check(result.returncode == 0, "a bf16 run exits 0")
        check("bf16: f32 weights and input; compiled computes in bf16 (cast "
              "per call), eager under autocast to bf16" in result.stdout,
              "the bf16 run says what each side computes in")
        # A parameter gradient sums over every token, where bf16's rounding
        # may cancel less kindly: the compiled one within 5% of the f32
        # reference's or twice the eager bf16 one's distance.
        parameters = re.search(r"training-step dL/dparams compiled (\S+) "
                               r"\(\S+\), eager (\S+) \(\S+\)",
                               result.stdout)
        check(parameters is not None and float(parameters.group(1)) <=
              max(0.05, 2 * float(parameters.group(2))),
              "bf16: the compiled parameter gradients are as close to the "
              "f32 reference's as the eager bf16 ones: "
              f"{parameters and parameters.groups()}")
        for label in ("forward output", "training-step dL/dx"):
            figures = re.search(label + r"\s+compiled (\S+), eager (\S+)",
                                result.stdout)
            check(figures is not None,
                  f"bf16: {label} against the f32 reference is reported")
            if figures:
                # bf16 rounds at 2^-9 relative; a few roundings through 3
                # solver steps stay within a few percent.
                check(float(figures.group(1)) <= 0.05,
                      f"bf16: the compiled {label} is within 5% of the f32 "
                      f"reference: {figures.group(1)}")
        launches = parse_launches(result.stdout[
            result.stdout.find("roofline of one"):])
        check(len(launches) == 4,
              f"bf16: the roofline lists three launches and the step: "
              f"{launches}")
        if len(launches) == 4:
            check(abs(launches[0][1][1] - (2088 * 10 + 1064 * 1024) * 2 / 1e6)
                  < 2e-3, f"bf16: the GEMM moves 2-byte elements: "
                          f"{launches[0][1]}")
        check("f32 matrix product" in result.stdout and
              "(the host's bf16 GEMMs run in f32)" in result.stdout,
              "bf16 on the CPU: the GEMM ceiling is the f32 one the host uses")
    elif library:
        check(False, f"{library} is missing; build the target FpTestModels")
    else:
        print("no compiled models: the real run is skipped")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("all fp-bench checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
