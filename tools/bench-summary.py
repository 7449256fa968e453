#!/usr/bin/env python3
#===- tools/bench-summary.py - fp-bench runs as one Markdown table ---------===#
#
# Reads a log of fp-bench runs, each preceded by a header line
#
#   == NAME, MODE[, NOTE]: COMMAND
#
# (what tools/gpu-check.sh's bench stage writes) and prints one Markdown
# table row per timed table of each run: the configuration, the median times
# of the compiled layer and the eager reference and their ratio, the
# iterations, kernels per iteration, host syncs and peak memory of both, the
# largest relative difference of that table's result (forward output, or the
# larger of the input's and the parameters' gradients), for the forward the compiled solver step's share of
# its roofline, the schedule the compiled calls ran (fused or split), and the
# whole call on the roofline: the bound of the compiled call's launches, the
# compiled call's share of it and the largest speedup over the eager call
# that bound allows. Figures a run did not print are '-'; a run that printed
# no table is listed with its first error line.
#
# usage: bench-summary.py LOG          (or - for standard input)
#
#===------------------------------------------------------------------------===#

import re
import sys

COLUMNS = ("configuration", "table", "compiled ms", "eager ms", "speedup",
           "iterations", "kernels/iter.", "host syncs", "peak MiB",
           "max rel. diff.", "step / roofline", "schedule",
           "call / roofline")


def split_runs(text):
    """(header, body) per run."""
    runs, header, body = [], None, []
    for line in text.splitlines():
        if line.startswith("== "):
            if header is not None:
                runs.append((header, body))
            header, body = line[3:], []
        elif header is not None:
            body.append(line)
    if header is not None:
        runs.append((header, body))
    return runs


def parse_run(body):
    """The tables of one run: {"forward"|"training step": {"compiled": row,
    "eager": row}}, the differences, the roofline line's figures, the
    compiled schedule and the whole calls' roofline figures per table."""
    tables, current = {}, None
    differences, roofline, error, schedule = {}, None, None, None
    calls = {}
    for line in body:
        if line.startswith("forward (no gradients)"):
            current = tables.setdefault("forward", {})
        elif line.startswith("training step (forward"):
            current = tables.setdefault("training step", {})
        elif not line.strip():
            current = None
        fields = line.split()
        if current is not None and len(fields) == 8 and fields[0] in (
                "compiled", "eager"):
            current[fields[0]] = dict(zip(
                ("median", "min", "iterations", "per_iteration", "kernels",
                 "syncs", "peak"), fields[1:]))
        match = re.match(r"\s+(forward output|training-step dL/dx|"
                         r"training-step dL/dparams)\s+(\S+)( \(\S+\))?$",
                         line)
        if match:
            key = "forward" if match.group(1) == "forward output" \
                else "training step"
            known = differences.get(key)
            if known is None or float(match.group(2)) > float(known):
                differences[key] = match.group(2)
        match = re.search(r"step time ([\d.]+) ms .*: ([\d.]+)% of the roofline",
                          line)
        if match:
            roofline = f"{match.group(2)}% of {match.group(1)} ms"
        # A row of the whole-call roofline: call, steps, GFLOP, GB, bound
        # ms, GEMMs ms, compiled ms, share of the bound, eager ms, eager /
        # bound.
        match = re.match(r"  (forward|training step)\s+\d+\s+[\d.]+\s+"
                         r"[\d.]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+"
                         r"([\d.]+)%\s+[\d.]+\s+([\d.]+)×$", line)
        if match:
            calls[match.group(1)] = (f"{match.group(3)}% of {match.group(2)} "
                                     f"ms, eager/bound {match.group(4)}×")
        match = re.match(r"\s+compiled schedule: (\S+)", line)
        if match:
            schedule = match.group(1)
        if error is None and line.startswith("fp-bench: ") and (
                "error" in line or "cannot" in line or "failed" in line):
            error = line
    return tables, differences, roofline, error, schedule, calls


def pair(rows, key):
    compiled = rows.get("compiled", {}).get(key, "-")
    eager = rows.get("eager", {}).get(key, "-")
    return f"{compiled} / {eager}"


def summarize(text):
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for header, body in split_runs(text):
        name = header.split(":", 1)[0]
        tables, differences, roofline, error, schedule, calls = parse_run(
            body)
        if not tables:
            cells = [name, error or "no table printed"] + ["-"] * (
                len(COLUMNS) - 2)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        for table, rows in tables.items():
            compiled = rows.get("compiled", {}).get("median")
            eager = rows.get("eager", {}).get("median")
            speedup = "-"
            if compiled and eager and float(compiled) > 0:
                speedup = f"{float(eager) / float(compiled):.2f}×"
            cells = [name, table, compiled or "-", eager or "-", speedup,
                     pair(rows, "iterations"), pair(rows, "kernels"),
                     pair(rows, "syncs"), pair(rows, "peak"),
                     differences.get(table, "-"),
                     (roofline or "-") if table == "forward" else "-",
                     schedule or "-", calls.get(table, "-")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        print("usage: bench-summary.py LOG (or - for standard input)",
              file=sys.stderr)
        return 2
    try:
        if sys.argv[1] == "-":
            text = sys.stdin.read()
        else:
            with open(sys.argv[1], encoding="utf-8") as log:
                text = log.read()
    except OSError as error:
        print(f"bench-summary.py: cannot read {sys.argv[1]}: "
              f"{error.strerror}", file=sys.stderr)
        return 1
    sys.stdout.write(summarize(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
