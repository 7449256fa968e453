"""Replays .fp inputs through `fp-translate --import-fp`.

Every input must either translate (exit 0) or be rejected with a located
diagnostic (exit 1 and `file:line:col: error:` on stderr). Anything else --
a crash, an abort, another exit code, an error without a location -- fails.

usage: check-no-crash.py <fp-translate> <input or directory>...
"""
import os
import re
import subprocess
import sys

LOCATED = re.compile(r":\d+:\d+: error: ")


def inputs(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".fp"):
                    yield os.path.join(path, name)
        else:
            yield path


def main():
    tool, paths = sys.argv[1], sys.argv[2:]
    failures, count = 0, 0
    for path in inputs(paths):
        count += 1
        proc = subprocess.run([tool, "--import-fp", path, "-o", os.devnull],
                              capture_output=True, text=True, errors="replace",
                              timeout=60)
        ok = proc.returncode == 0 or (proc.returncode == 1 and
                                      LOCATED.search(proc.stderr))
        if not ok:
            failures += 1
            print(f"FAIL {path}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    print(f"{count} inputs, {failures} failures")
    return 1 if failures or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
