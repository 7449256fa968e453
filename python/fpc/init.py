#===- python/fpc/init.py - Parameters from the manifest's initialisers ---===#
#
# The initialisers of docs/abi.md, drawn as the C++ runtime draws them
# (runtime/lib/Compiled/ParamInit.cpp): in f64 on the CPU from one
# generator, in manifest order, a parameter that another's `of` names drawn
# first. PyTorch's CPU generator is the same in Python and in LibTorch, so a
# layer made here with a seed holds the values CompiledLayer(seed) holds.
#
#===------------------------------------------------------------------------===#

import math
from typing import Dict, List

import torch

from .errors import FpcError
from .manifest import LayerInfo, ParamInfo

KINDS = ("zeros", "ones", "constant", "uniform", "normal", "fan_in_uniform",
         "s4d_real", "dt_bias", "row_norm", "log_uniform", "eye",
         "orthogonal")


class InitError(FpcError):
    """A manifest initialiser this package cannot apply."""


class _Call:
    def __init__(self, layer: LayerInfo, param: ParamInfo):
        self.layer, self.param, self.used = layer, param, set()

    def fail(self, what: str):
        raise InitError(f"layer '{self.layer.name}', parameter "
                        f"'{self.param.name}': initialiser "
                        f"'{self.param.init.kind}' {what}")

    def required(self, name: str) -> float:
        if name not in self.param.init.args:
            self.fail(f"needs the argument '{name}'")
        self.used.add(name)
        return self.param.init.args[name]

    def optional(self, name: str, fallback: float) -> float:
        if name not in self.param.init.args:
            return fallback
        self.used.add(name)
        return self.param.init.args[name]

    def finish(self, takes_of: bool = False):
        for name in self.param.init.args:
            if name not in self.used:
                self.fail(f"takes no argument '{name}'")
        if not takes_of and self.param.init.of:
            self.fail(f"reads no other parameter, but names "
                      f"'{self.param.init.of}'")

    def last_extent(self) -> int:
        if not self.param.shape:
            self.fail("needs a parameter with at least one dimension")
        return self.param.shape[-1]


def _draw(layer, param, generator, resolve) -> torch.Tensor:
    call = _Call(layer, param)
    kind, shape = param.init.kind, param.shape
    f64 = torch.float64
    if kind in ("zeros", "ones"):
        call.finish()
        return (torch.zeros if kind == "zeros" else torch.ones)(shape,
                                                                dtype=f64)
    if kind == "constant":
        value = call.required("value")
        call.finish()
        return torch.full(shape, value, dtype=f64)
    if kind == "uniform":
        low, high = call.required("low"), call.required("high")
        call.finish()
        if not low <= high:
            call.fail(f"needs low <= high, got low {low} and high {high}")
        return torch.empty(shape, dtype=f64).uniform_(low, high,
                                                      generator=generator)
    if kind == "log_uniform":
        low, high = call.required("low"), call.required("high")
        call.finish()
        if not (low > 0 and low <= high):
            call.fail(f"needs 0 < low <= high, got low {low} and high {high}")
        return torch.log(torch.empty(shape, dtype=f64).uniform_(
            low, high, generator=generator))
    if kind == "normal":
        std = call.required("std")
        mean = call.optional("mean", 0.0)
        call.finish()
        if not std >= 0:
            call.fail(f"needs std >= 0, got {std}")
        return torch.empty(shape, dtype=f64).normal_(mean, std,
                                                     generator=generator)
    if kind == "fan_in_uniform":
        scale = call.optional("scale", 1.0)
        call.finish()
        bound = scale / math.sqrt(call.last_extent())
        return torch.empty(shape, dtype=f64).uniform_(-bound, bound,
                                                      generator=generator)
    if kind == "s4d_real":
        call.finish()
        states = call.last_extent()
        return torch.log(torch.arange(1, states + 1, dtype=f64)).expand(
            shape).contiguous()
    if kind == "dt_bias":
        dt_min, dt_max = call.required("dt_min"), call.required("dt_max")
        floor = call.required("floor")
        call.finish()
        if not (dt_min > 0 and dt_min <= dt_max and floor >= 0):
            call.fail("needs 0 < dt_min <= dt_max and floor >= 0")
        dt = torch.exp(torch.rand(shape, generator=generator, dtype=f64)
                       * (math.log(dt_max) - math.log(dt_min))
                       + math.log(dt_min)).clamp_min(floor)
        # softplus^-1(a) = a + log(1 - e^-a).
        return dt + torch.log(-torch.expm1(-dt))
    if kind in ("eye", "orthogonal"):
        value = call.required("value") if kind == "eye" else 0.0
        call.finish()
        if len(shape) != 2 or shape[0] != shape[1]:
            call.fail("needs a square matrix")
        if kind == "eye":
            return torch.eye(shape[0], dtype=f64) * value
        # PyTorch's orthogonal parametrisation of a default Linear: the Q of
        # a fan-in uniform draw, with R's diagonal made positive.
        bound = 1.0 / math.sqrt(shape[1])
        q, r = torch.linalg.qr(torch.empty(shape, dtype=f64).uniform_(
            -bound, bound, generator=generator))
        signs = torch.sign(r.diagonal())
        signs[signs == 0] = 1
        return (q * signs.unsqueeze(0)).contiguous()
    if kind == "row_norm":
        call.finish(takes_of=True)
        if not param.init.of:
            call.fail("needs 'of', the parameter whose rows it measures")
        source = resolve(param.init.of)
        if source.dim() == 0:
            call.fail(f"needs '{param.init.of}' to have a dimension")
        norms = source.norm(2, dim=-1)
        if list(norms.shape) != list(shape):
            call.fail(f"of '{param.init.of}' {list(source.shape)} gives "
                      f"shape {list(norms.shape)}, but the parameter is "
                      f"{list(shape)}")
        return norms
    raise InitError(f"layer '{layer.name}', parameter '{param.name}': "
                    f"unknown initialiser '{kind}'; this package knows "
                    + ", ".join(KINDS))


def init_layer_params(layer: LayerInfo, generator: torch.Generator,
                      dtype: torch.dtype = torch.float32) -> List[torch.Tensor]:
    """The layer's parameters in manifest order, drawn from `generator`."""
    index = {param.name: i for i, param in enumerate(layer.params)}
    values: Dict[int, torch.Tensor] = {}
    in_progress = set()

    def init(i: int) -> torch.Tensor:
        if i in values:
            return values[i]
        param = layer.params[i]
        if i in in_progress:
            raise InitError(f"layer '{layer.name}', parameter '{param.name}':"
                            " its initialiser depends on itself through "
                            "'of' references")
        in_progress.add(i)

        def resolve(name):
            if name not in index:
                raise InitError(f"layer '{layer.name}', parameter "
                                f"'{param.name}': 'of' names parameter "
                                f"'{name}', which the layer lacks")
            return init(index[name])

        values[i] = _draw(layer, param, generator, resolve)
        in_progress.discard(i)
        return values[i]

    with torch.no_grad():
        for i in range(len(layer.params)):
            init(i)
        return [values[i].to(dtype).contiguous()
                for i in range(len(layer.params))]
