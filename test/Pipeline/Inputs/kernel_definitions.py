"""Reads a host or CUDA unit that fpc emitted on standard input and prints
`MODEL UNIT: D definitions, A aliases` for its kernels' function objects
(`struct KernelN { ... };`, `using KernelN = ...;`). Exits 1 when two
definitions have the same text but their names, which fpc writes as one
definition and aliases of it, or when an alias names a function object the
unit does not define.

usage: kernel_definitions.py MODEL UNIT < unit
"""

import re
import sys

model, unit = sys.argv[1], sys.argv[2]
lines = sys.stdin.read().split("\n")
STRUCT = re.compile(r"^  struct ((?:Backward|Chunk)?Kernel\d+) \{$")
ALIAS = re.compile(r"^  using ((?:Backward|Chunk)?Kernel\d+) = (::\S+)<Real>;$")
NAMESPACE = re.compile(r"^namespace (\S+) \{$")

scope = None
by_text = {}
defined = set()
aliases = []
failed = False
i = 0
while i < len(lines):
    line = lines[i]
    if match := NAMESPACE.match(line):
        scope = match.group(1)
    elif match := ALIAS.match(line):
        aliases.append(match.group(2))
    elif match := STRUCT.match(line):
        end = lines.index("  };", i)
        name = f"::{scope}::{match.group(1)}"
        text = "\n".join(lines[i + 1:end])
        if text in by_text:
            print(f"{model} {unit}: {name} is written as {by_text[text]}",
                  file=sys.stderr)
            failed = True
        by_text.setdefault(text, name)
        defined.add(name)
        i = end
    i += 1
for target in aliases:
    if target not in defined:
        print(f"{model} {unit}: an alias of {target}, which is not defined",
              file=sys.stderr)
        failed = True
print(f"{model} {unit}: {len(defined)} definitions, {len(aliases)} aliases")
sys.exit(1 if failed else 0)
