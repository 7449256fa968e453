#!/usr/bin/env python3
"""Barriers per token of the fused kernel a layer's fixed-point loop launches.

Reads a CUDA unit (`fpc model.fp --emit=cuda -o model.cu`), finds the fused
kernel the first layer's solver loop launches (`fp.kernel` inside
`solver.loop`) and counts the block barriers one token of it passes: each
`team.sync()` of its body, the launcher's after each token, and one per
team-wide reduction (a chain's row sum, a uniform row sum, and the norms of
one row longer than a warp's four passes, 128 elements, which the whole
team computes: l2norm and rmsNorm one, layerNorm two). Norms of shorter
rows reduce within a warp, without a block barrier.

usage: utils/count-barriers.py model.cu
"""
import re
import sys


def count(source):
    cuda = source[source.index("namespace layer_"):]
    forward = cuda[cuda.index("void forward("):]
    loop = forward[forward.index(".loop("):]
    kernel = re.search(r"Kernel(\d+)<Real>", loop).group(1)
    body = cuda[cuda.index("struct Kernel%s {" % kernel):]
    body = body[body.index("void operator()"):]
    body = body[:body.index("\n    }\n")]
    syncs = body.count("team.sync();")
    reductions = body.count("team.sum(") + body.count("rowSum<")
    for name, barriers in (("l2norm", 1), ("layerNorm", 2), ("rmsNorm", 1)):
        pattern = (r"fp::fused::%s\(team, [^,]+, (?:[^,]+, [^,]+, )?(\d+), "
                   r"(\d+)," % name)
        for match in re.finditer(pattern, body):
            rows, width = int(match.group(1)), int(match.group(2))
            if rows == 1 and width > 128:
                reductions += barriers
    return syncs, reductions


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    with open(sys.argv[1]) as unit:
        source = unit.read()
    try:
        syncs, reductions = count(source)
    except (ValueError, AttributeError):
        sys.exit("count-barriers: %s: no fixed-point loop launching a fused "
                 "kernel in this CUDA unit" % sys.argv[1])
    print("%d barriers per token: %d team.sync(), 1 after the token, "
          "%d in reductions" % (syncs + 1 + reductions, syncs, reductions))


if __name__ == "__main__":
    main()
