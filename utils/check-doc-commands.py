#!/usr/bin/env python3
"""Runs the quick commands the docs show, as written, and fails if one fails.

usage: check-doc-commands.py SOURCE_DIR BUILD_DIR

Reads every ```sh block of README.md, docs/*.md and */README.md and runs
each command that starts with build/bin/fpc, build/bin/fp-opt or
build/bin/fp-translate (the compiler's, seconds each), with build/bin
replaced by BUILD_DIR/bin, in a scratch directory that links the source
tree's models/ and test/ (so relative paths read as from the repository
root). Lines continued with a backslash are joined; a trailing comment is
dropped. Placeholders in the docs' synopses (`model.fp`, `[-o out.mlir]`) are
not runnable commands and are skipped: a command runs only if every path it
names under models/ exists. Training commands (fp-train, minutes each) are
not run here; their flags are checked by fp-train's own tests.
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

TOOLS = ("build/bin/fpc", "build/bin/fp-opt", "build/bin/fp-translate")


def commands(path):
    """The (line number, command) of each quick command in path's sh blocks."""
    found = []
    inside = False
    pending, start = "", 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if stripped.startswith("```"):
                inside = stripped == "```sh" and not inside
                continue
            if not inside:
                continue
            text = re.sub(r"\s+#.*$", "", stripped) if "#" in stripped else stripped
            if stripped.startswith("$ "):
                text = text[2:]
            if not pending:
                start = number
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            text = pending + text
            pending = ""
            if text.startswith(TOOLS):
                found.append((start, text))
    return found


def runnable(command, source):
    """Whether every models/ path the command names exists (not a synopsis)."""
    if "[" in command or "..." in command:
        return False
    for word in shlex.split(command):
        if word.startswith("models/") and not os.path.exists(
                os.path.join(source, word)):
            return False
    return True


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, build = sys.argv[1], sys.argv[2]
    pages = [os.path.join(source, "README.md")]
    pages += sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    pages += sorted(glob.glob(os.path.join(source, "*", "README.md")))
    failed = ran = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("models", "test"):
            os.symlink(os.path.join(source, name), os.path.join(scratch, name))
        for page in pages:
            for number, command in commands(page):
                where = f"{os.path.relpath(page, source)}:{number}"
                if not runnable(command, source):
                    print(f"skip {where}: {command} (a synopsis)")
                    continue
                argv = shlex.split(command)
                argv[0] = os.path.join(build, argv[0][len("build/"):])
                result = subprocess.run(argv, cwd=scratch, capture_output=True,
                                        text=True, timeout=300)
                ran += 1
                if result.returncode != 0:
                    failed += 1
                    print(f"FAIL {where}: {command} (exit {result.returncode})")
                    print(result.stderr[-2000:])
                else:
                    print(f"ok   {where}: {command}")
    print(f"{ran} documented commands run, {failed} failed")
    if ran == 0:
        print("no documented command found: the extraction is broken")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
