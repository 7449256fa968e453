#!/usr/bin/env python3
"""Fails if generated code uses a kernel-library name Kernels.h does not list.

usage: check-kernel-api.py [--header KERNELS_H] SOURCE...
       check-kernel-api.py [--header KERNELS_H] --fpc FPC --models MODELS_DIR

Kernels.h's leading comment is the contract between fpc's emitters and the
kernel library (runtime/include/fp/Runtime/Kernels/): every name generated
code uses from the library, one entry line each, `//   NAME  what it is`.
This script collects the names emitted code uses, spelled as it spells them:
kernels::NAME (the alias of fp::host or fp::cuda, nested names such as
kernels::Reduction::Sum kept whole), fp::fused::NAME, fp::host::NAME,
fp::cuda::NAME and fp::NAME (fp::host and fp::cuda themselves as the alias'
target), and lists each one Kernels.h has no entry for, with where it is
used.

The sources are either the files and directories given (every file under a
directory), or what FPC emits for every MODELS_DIR/*.fp, with
`-I MODELS_DIR/lib`: the host unit (--emit=host --target=all, a superset of
the CPU-only unit) and the CUDA unit (--emit=cuda), each for the schedules
utils/snapshot-emitted.sh takes (--backward alone, with --no-fuse,
--no-fuse-scans and --save-products; --element-type=f64).

Exit status: 0 when every name is listed, 1 when one is not, 2 when the
sources cannot be read or fpc fails.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

DEFAULT_HEADER = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, "runtime",
    "include", "fp", "Runtime", "Kernels", "Kernels.h"))

# The schedules whose emitted code is checked, as utils/snapshot-emitted.sh
# takes them.
SCHEDULES = [
    ["--backward"],
    ["--backward", "--no-fuse"],
    ["--backward", "--no-fuse-scans"],
    ["--backward", "--save-products"],
    ["--element-type=f64"],
]

# A use: kernels:: or fp:: and the names after it, nested ones kept whole.
USE = re.compile(r"(?<![\w:])((?:kernels|fp)(?:::\w+)+)")
# An entry of the contract: a comment line indented by two spaces or more,
# the qualified name, two spaces or more, what it is.
ENTRY = re.compile(r"^//\s{2,}((?:kernels|fp)(?:::\w+)+)\s{2,}\S")


def contract(header):
    """The names Kernels.h's leading comment has an entry for."""
    names = set()
    with open(header, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("//"):
                break
            match = ENTRY.match(line)
            if match:
                names.add(match.group(1))
    return names


def uses(text):
    """(name, line number) of each name the code uses, comments aside."""
    for number, line in enumerate(text.split("\n"), 1):
        code = line.split("//", 1)[0]
        for match in USE.finditer(code):
            yield match.group(1), number


def directory_sources(paths):
    """(label, text) of every file among paths, directories walked."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, name) for name in sorted(names)]
        else:
            files.append(path)
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            yield path, f.read()


def emitted_sources(fpc, models):
    """(label, text) of every unit fpc emits for the models."""
    sources = sorted(glob.glob(os.path.join(models, "*.fp")))
    if not sources:
        raise RuntimeError(f"no models in {models}")
    for source in sources:
        for schedule in SCHEDULES:
            for unit in (["--emit=host", "--target=all"], ["--emit=cuda"]):
                command = [fpc, source, "-I", os.path.join(models, "lib")]
                command += schedule + unit + ["-o", "-"]
                result = subprocess.run(command, capture_output=True,
                                        text=True)
                if result.returncode != 0:
                    raise RuntimeError(f"{' '.join(command)} failed:\n"
                                       f"{result.stderr}")
                label = f"{os.path.basename(source)} {' '.join(schedule)} "
                label += " ".join(unit)
                yield label, result.stdout


def main():
    parser = argparse.ArgumentParser(
        description="Checks emitted code against Kernels.h's contract.")
    parser.add_argument("--header", default=DEFAULT_HEADER,
                        help="the Kernels.h to read (default: this tree's)")
    parser.add_argument("--fpc", help="emit the sources with this fpc")
    parser.add_argument("--models", help="the models fpc compiles")
    parser.add_argument("sources", nargs="*",
                        help="emitted sources, or directories of them")
    args = parser.parse_args()
    if bool(args.fpc) != bool(args.models) or bool(args.fpc) == bool(
            args.sources):
        parser.error("give either SOURCE... or --fpc and --models")

    try:
        documented = contract(args.header)
        if not documented:
            raise RuntimeError(f"{args.header} lists no names")
        if args.fpc:
            sources = emitted_sources(args.fpc, args.models)
        else:
            sources = directory_sources(args.sources)
        first_use = {}
        units = 0
        for label, text in sources:
            units += 1
            for name, number in uses(text):
                first_use.setdefault(name, f"{label}:{number}")
    except (OSError, RuntimeError) as error:
        print(f"check-kernel-api: {error}", file=sys.stderr)
        return 2

    missing = sorted(set(first_use) - documented)
    for name in missing:
        print(f"check-kernel-api: {name} is not in {args.header}'s contract "
              f"(used at {first_use[name]})")
    if missing:
        print(f"check-kernel-api: {len(missing)} of {len(first_use)} names "
              f"undocumented")
        return 1
    print(f"check-kernel-api: all {len(first_use)} names of {units} "
          f"source{'s' if units != 1 else ''} documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
