"""Prints `MODEL: N launches per solver step` for each layer of the model
library manifest on standard input (its iteration_cost), and exits 1 when a
layer's step launches more than LIMIT kernels.

usage: launches.py MODEL LIMIT < manifest.json
"""

import json
import sys

model, limit = sys.argv[1], int(sys.argv[2])
manifest = json.load(sys.stdin)
worst = 0
for layer in manifest["layers"]:
    launches = layer.get("iteration_cost", {}).get("launches", [])
    ops = ", ".join(launch["op"] for launch in launches)
    print(f"{model}: layer {layer['name']}: {len(launches)} launches per "
          f"solver step ({ops})")
    worst = max(worst, len(launches))
if worst > limit:
    print(f"{model}: {worst} launches per solver step, more than {limit}",
          file=sys.stderr)
    sys.exit(1)
