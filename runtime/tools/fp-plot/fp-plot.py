#!/usr/bin/env python3
#===- fp-plot - Plot fp-train runs -----------------------------------------===#
#
# Renders PNGs comparing one or more fp-train run directories:
#
#   accuracy_vs_length.png       sequence and token accuracy per evaluated
#                                length (plus the task's extra metric when a
#                                run has one), the training length marked
#   fp_iterations_vs_length.png  fixed-point iterations per length, mean
#                                (solid) and max (dashed)
#   loss.png                     training loss (and validation loss) vs step
#   perplexity_vs_tokens.png     language models (fp-train --task lm) only:
#                                validation perplexity vs tokens trained on
#
# usage: fp-plot DIR... -o OUTDIR [--names NAME...] [--title TEXT]
#
# Reads DIR/eval.json (required), DIR/metrics.jsonl and DIR/config.json
# (optional); docs/training.md describes them. Needs matplotlib (Debian:
# python3-matplotlib; when the python3 on PATH lacks it, fp-plot re-runs
# itself under /usr/bin/python3); draws with the Agg backend, no display.
#
# Exit status: 0 done, 1 unexpected error, 2 bad arguments or a directory
# that is not a finished run, 3 matplotlib missing.
#
#===------------------------------------------------------------------------===#

import argparse
import json
import math
import os
import sys


class PlotError(Exception):
    """A problem with the arguments or the runs; exit status 2."""


def fail(message, status):
    print(f"fp-plot: error: {message}", file=sys.stderr)
    sys.exit(status)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as error:
        raise PlotError(f"{path}: not valid JSON ({error})")


def read_metrics(path):
    """The records of a metrics.jsonl; a half-written last line is skipped."""
    records = []
    if not os.path.exists(path):
        return records
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "step" in record:
                records.append(record)
    return records


class Run:
    def __init__(self, directory, name):
        self.directory = directory
        self.name = name
        eval_path = os.path.join(directory, "eval.json")
        if not os.path.isdir(directory):
            raise PlotError(f"'{directory}' is not a directory")
        if not os.path.exists(eval_path):
            raise PlotError(
                f"'{directory}' has no eval.json (not an fp-train run, or "
                f"one that has not finished; 'fp-train --resume "
                f"{directory}' completes it)")
        self.eval = read_json(eval_path)
        if not isinstance(self.eval, dict) or not isinstance(
                self.eval.get("lengths"), list):
            raise PlotError(f"{eval_path}: no 'lengths' list")
        self.lengths = self.eval["lengths"]
        for entry in self.lengths:
            if "length" not in entry:
                raise PlotError(f"{eval_path}: an entry without 'length'")
        self.train_length = self.eval.get("train_length") or None
        self.metrics = read_metrics(os.path.join(directory, "metrics.jsonl"))

    def series(self, key):
        """(lengths, values) of `key` over the evaluated lengths, nulls
        dropped."""
        xs, ys = [], []
        for entry in self.lengths:
            value = entry.get(key)
            if value is not None and not (isinstance(value, float)
                                          and math.isnan(value)):
                xs.append(entry["length"])
                ys.append(value)
        return xs, ys


def run_names(directories):
    """Legend names: the shortest path suffixes that tell the runs apart."""
    parts = [os.path.normpath(os.path.abspath(d)).split(os.sep)
             for d in directories]
    for depth in range(1, max(len(p) for p in parts) + 1):
        names = [os.sep.join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return [str(i) for i in range(len(directories))]


def mark_train_lengths(axes, runs):
    lengths = sorted({r.train_length for r in runs if r.train_length})
    for i, length in enumerate(lengths):
        axes.axvline(length, color="0.4", linestyle=":", linewidth=1.2,
                     label="training length" if i == 0 else None)


def plot_accuracy(plt, runs, path, title):
    has_extra = any(run.series("extra")[0] for run in runs)
    panels = [("sequence_accuracy", "sequence accuracy"),
              ("token_accuracy", "token accuracy")]
    if has_extra:
        panels.append(("extra", "extra metric"))
    figure, axes = plt.subplots(1, len(panels),
                                figsize=(5.5 * len(panels), 4.2),
                                squeeze=False)
    for (key, label), ax in zip(panels, axes[0]):
        for run in runs:
            xs, ys = run.series(key)
            ax.plot(xs, ys, marker="o", markersize=3, label=run.name)
        mark_train_lengths(ax, runs)
        ax.set_xlabel("length")
        ax.set_ylabel(label)
        if key != "extra":
            ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="small")
    figure.suptitle(title or "accuracy vs length")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_iterations(plt, runs, path, title):
    figure, ax = plt.subplots(figsize=(6.5, 4.2))
    any_fixed_point = False
    for run in runs:
        xs, means = run.series("fp_iters_mean")
        max_xs, maxes = run.series("fp_iters_max")
        if not any(means):
            continue
        any_fixed_point = True
        line, = ax.plot(xs, means, marker="o", markersize=3,
                        label=f"{run.name} (mean)")
        ax.plot(max_xs, maxes, linestyle="--", color=line.get_color(),
                label=f"{run.name} (max)")
    mark_train_lengths(ax, runs)
    if not any_fixed_point:
        ax.text(0.5, 0.5, "no run has fixed-point layers",
                transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("length")
    ax.set_ylabel("fixed-point iterations")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title or "fixed-point iterations vs length")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_loss(plt, runs, path, title):
    figure, ax = plt.subplots(figsize=(6.5, 4.2))
    losses = []
    drawn = False
    for run in runs:
        train = [r for r in run.metrics
                 if r.get("kind", "train") == "train"
                 and r.get("loss") is not None]
        val = [r for r in run.metrics
               if r.get("kind") == "val" and r.get("loss") is not None]
        if not train and not val:
            continue
        drawn = True
        color = None
        if train:
            line, = ax.plot([r["step"] for r in train],
                            [r["loss"] for r in train],
                            label=f"{run.name} (train)")
            color = line.get_color()
        if val:
            ax.plot([r["step"] for r in val], [r["loss"] for r in val],
                    linestyle="--", marker="o", markersize=3, color=color,
                    label=f"{run.name} (validation)")
        losses += [r["loss"] for r in train + val]
    if not drawn:
        ax.text(0.5, 0.5, "no metrics.jsonl records", transform=ax.transAxes,
                ha="center", va="center")
    elif min(losses) > 0 and max(losses) > 10 * min(losses):
        # A log scale only pays off over an order of magnitude.
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(True, alpha=0.3, which="both")
    if drawn:
        ax.legend(fontsize="small")
    ax.set_title(title or "loss")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def perplexity_series(run):
    """(tokens, perplexities) of a run's validation records; empty for a
    run that is not a language model."""
    points = [(r["tokens_seen"], r["perplexity"]) for r in run.metrics
              if r.get("kind") == "val" and r.get("perplexity") is not None
              and r.get("tokens_seen") is not None]
    return [t for t, _ in points], [p for _, p in points]


def plot_perplexity(plt, runs, path, title):
    figure, ax = plt.subplots(figsize=(6.5, 4.2))
    values = []
    for run in runs:
        tokens, perplexities = perplexity_series(run)
        if not tokens:
            continue
        ax.plot(tokens, perplexities, marker="o", markersize=3,
                label=run.name)
        values += perplexities
    if min(values) > 0 and max(values) > 10 * min(values):
        ax.set_yscale("log")
    ax.set_xlabel("tokens trained on")
    ax.set_ylabel("validation perplexity")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize="small")
    ax.set_title(title or "validation perplexity")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


SYSTEM_PYTHON = "/usr/bin/python3"


def import_pyplot(argv):
    """matplotlib.pyplot on the Agg backend. When this interpreter lacks
    matplotlib (say, a pyenv or virtualenv python3 first on PATH), runs
    fp-plot again under the system's python3, where Debian's
    python3-matplotlib lives."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        pass
    if (os.environ.get("FP_PLOT_SYSTEM_PYTHON") != "1"
            and os.access(SYSTEM_PYTHON, os.X_OK)
            and os.path.realpath(sys.executable)
            != os.path.realpath(SYSTEM_PYTHON)):
        os.environ["FP_PLOT_SYSTEM_PYTHON"] = "1"
        sys.stdout.flush()
        os.execv(SYSTEM_PYTHON,
                 [SYSTEM_PYTHON, os.path.abspath(__file__)] + list(argv))
    fail("matplotlib is not installed (Debian: apt-get install "
         "python3-matplotlib)", 3)


def main(argv):
    parser = argparse.ArgumentParser(
        prog="fp-plot",
        description="Plot accuracy and fixed-point iterations vs length, "
                    "loss curves, and language models' validation "
                    "perplexity vs tokens, of fp-train run directories.")
    parser.add_argument("runs", nargs="+", metavar="DIR",
                        help="fp-train run directories (with eval.json)")
    parser.add_argument("-o", "--out", required=True, metavar="OUTDIR",
                        help="directory for the PNGs (created if missing)")
    parser.add_argument("--names", nargs="+", metavar="NAME",
                        help="legend names, one per DIR (default: the "
                             "shortest path suffixes that differ)")
    parser.add_argument("--title", help="a title prefix for every figure")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:
        # argparse has printed its message; bad arguments exit with 2.
        sys.exit(2 if exit.code else 0)

    try:
        if args.names and len(args.names) != len(args.runs):
            raise PlotError(f"--names gives {len(args.names)} names for "
                            f"{len(args.runs)} runs")
        names = args.names or run_names(args.runs)
        runs = [Run(d, n) for d, n in zip(args.runs, names)]
    except PlotError as error:
        fail(str(error), 2)

    plt = import_pyplot(argv)

    os.makedirs(args.out, exist_ok=True)
    prefix = f"{args.title}: " if args.title else ""
    outputs = [
        ("accuracy_vs_length.png", plot_accuracy, "accuracy vs length"),
        ("fp_iterations_vs_length.png", plot_iterations,
         "fixed-point iterations vs length"),
        ("loss.png", plot_loss, "loss"),
    ]
    if any(perplexity_series(run)[0] for run in runs):
        outputs.append(("perplexity_vs_tokens.png", plot_perplexity,
                        "validation perplexity vs tokens"))
    for filename, plot, title in outputs:
        path = os.path.join(args.out, filename)
        plot(plt, runs, path, prefix + title)
        print(path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as error:
        fail(str(error), 1)
