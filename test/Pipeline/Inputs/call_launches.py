"""Checks a library manifest's call_cost against the host C++ that fpc emits
for the same model: per layer, the launches of the forward outside its
solver loop and of the backward (the `kernels::` calls that run work, one
statement each) must be as many as the manifest lists, in the same order of
ops where the emitted code names them. Prints one line per layer and exits
1 on a mismatch.

usage: call_launches.py MODEL manifest.json host.cpp
"""

import json
import re
import sys

# `kernels::` statements that launch nothing.
NOT_LAUNCHES = {"Scope", "layoutBuffers", "Solver", "GradientSum"}
CALL = re.compile(r"^\s+kernels::(\w+)\s*[<(]")


def emitted_launches(source, function):
    """The launching kernels:: calls of `function` outside solver loops."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if re.match(rf"\s+void {function}\(", line))
    indent = len(lines[start]) - len(lines[start].lstrip())
    calls, in_loop = [], False
    for line in lines[start + 1:]:
        if line.startswith(" " * indent + "}") and \
                len(line) - len(line.lstrip()) == indent:
            break
        if re.search(r"\.loop\(\[&\] \{$", line):
            in_loop = True
            continue
        if in_loop:
            if re.match(r"^\s+\}\);$", line):
                in_loop = False
            continue
        match = CALL.match(line)
        if match and match.group(1) not in NOT_LAUNCHES:
            calls.append(match.group(1))
    return calls


def main():
    model, manifest_path, host_path = sys.argv[1:4]
    manifest = json.load(open(manifest_path))
    source = open(host_path).read()
    layers = manifest["layers"]
    # One namespace per layer: split the source at each layer's namespace.
    failed = False
    for layer in layers:
        name = layer["name"]
        begin = source.index(f"namespace layer_{name} {{")
        end = source.index(f"}} // namespace layer_{name}", begin)
        unit = source[begin:end]
        cost = layer.get("call_cost")
        if cost is None:
            print(f"{model}: layer {name}: no call_cost")
            failed = True
            continue
        for part, function in (("forward", "forward"),
                               ("backward", "backward")):
            if part not in cost:
                continue
            listed = len(cost[part]["launches"])
            emitted = emitted_launches(unit, function)
            status = "ok" if listed == len(emitted) else "MISMATCH"
            print(f"{model}: layer {name}: {part} {listed} launches listed, "
                  f"{len(emitted)} emitted: {status}")
            if listed != len(emitted):
                failed = True
                print(f"  listed:  {[l['op'] for l in cost[part]['launches']]}")
                print(f"  emitted: {emitted}")
    sys.exit(1 if failed else 0)


main()
