#===- python/fpc/manifest.py - A model library's manifest ----------------===#
#
# The JSON manifest a model.so carries (docs/abi.md), parsed into plain
# dataclasses. The library's own checksum has vouched for the text, so this
# checks the fields the package reads, with messages that name the field.
#
#===------------------------------------------------------------------------===#

import dataclasses
import json
from typing import Dict, List, Optional

from . import _abi
from .errors import ManifestError


@dataclasses.dataclass
class InitSpec:
    kind: str
    args: Dict[str, float]
    of: str = ""


@dataclasses.dataclass
class ParamInfo:
    name: str
    shape: List[int]
    init: InitSpec
    weight_decay: bool = True
    # Not trained: a buffer, given to no optimiser (docs/abi.md).
    frozen: bool = False


@dataclasses.dataclass
class ChunkState:
    name: str
    shape: List[int]


@dataclasses.dataclass
class LayerInfo:
    name: str
    d_model: int
    entry_points: Dict[str, str]
    params: List[ParamInfo]
    backward_targets: List[str]
    solver: Optional[dict]
    chunk_states: List[ChunkState]

    def has_backward(self, target: str) -> bool:
        return target in self.backward_targets

    def has_chunked_forward(self) -> bool:
        return bool(self.entry_points.get("forward_chunk"))

    def param(self, name: str) -> ParamInfo:
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(f"layer '{self.name}' has no parameter '{name}'")


@dataclasses.dataclass
class ModelInfo:
    name: str
    vocab: int
    d_model: int
    stack: List[str]
    final_norm: str
    tied_head: bool
    norm_eps: float
    pad_vocab_multiple: int


@dataclasses.dataclass
class Manifest:
    abi_version: int
    generator: str
    source: str
    targets: List[str]
    dtypes: List[str]
    layers: List[LayerInfo]
    model: Optional[ModelInfo]

    def layer(self, name: str) -> LayerInfo:
        for layer in self.layers:
            if layer.name == name:
                return layer
        known = ", ".join(f"'{layer.name}'" for layer in self.layers)
        raise KeyError(f"the library has no layer '{name}'; it has {known}")


class _Reader:
    """Reads fields of one JSON object, failing with the field's path."""

    def __init__(self, value, path):
        if not isinstance(value, dict):
            raise ManifestError(f"{path or 'the manifest'} must be an object")
        self.value, self.path = value, path

    def _where(self, key):
        return f"{self.path}.{key}" if self.path else key

    def get(self, key, kinds, default=dataclasses.MISSING):
        if key not in self.value:
            if default is dataclasses.MISSING:
                raise ManifestError(f"missing field '{self._where(key)}'")
            return default
        value = self.value[key]
        # JSON has no separate booleans among numbers in Python's eyes.
        if isinstance(value, bool) and bool not in kinds:
            value = None
        if not isinstance(value, kinds):
            names = " or ".join(kind.__name__ for kind in kinds)
            raise ManifestError(
                f"field '{self._where(key)}' must be {names}, got "
                f"{json.dumps(self.value[key])}")
        return value

    def child(self, key, default=dataclasses.MISSING):
        value = self.get(key, (dict,), default)
        return None if value is None else _Reader(value, self._where(key))

    def list_of(self, key, default=dataclasses.MISSING):
        return self.get(key, (list,), default)


def _extents(values, where):
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
               for v in values):
        raise ManifestError(f"{where} must hold positive integers, got "
                            f"{json.dumps(values)}")
    return list(values)


def _layer(value, path) -> LayerInfo:
    reader = _Reader(value, path)
    params = []
    for i, item in enumerate(reader.list_of("params")):
        param = _Reader(item, f"{path}.params[{i}]")
        init = param.child("init")
        args = {key: float(v) for key, v in init.value.items()
                if key not in ("kind", "of") and isinstance(v, (int, float))}
        params.append(ParamInfo(
            name=param.get("name", (str,)),
            shape=_extents(param.list_of("shape"), f"{path}.params[{i}].shape"),
            init=InitSpec(init.get("kind", (str,)), args,
                          init.get("of", (str,), "")),
            weight_decay=param.get("weight_decay", (bool,), True),
            frozen=param.get("frozen", (bool,), False)))
    chunk = reader.child("chunk", None)
    states = []
    if chunk is not None:
        for i, item in enumerate(chunk.list_of("states")):
            state = _Reader(item, f"{path}.chunk.states[{i}]")
            states.append(ChunkState(
                state.get("name", (str,)),
                _extents(state.list_of("shape"),
                         f"{path}.chunk.states[{i}].shape")))
    entry = reader.child("entry_points")
    for role in ("buffer_sizes", "forward", "backward"):
        entry.get(role, (str,))
    solver = reader.child("solver", None)
    return LayerInfo(
        name=reader.get("name", (str,)),
        d_model=reader.get("d_model", (int,)),
        entry_points={k: v for k, v in entry.value.items()
                      if isinstance(v, str)},
        params=params,
        backward_targets=list(reader.list_of("backward_targets", [])),
        solver=None if solver is None else dict(solver.value),
        chunk_states=states)


def parse_manifest(text: str) -> Manifest:
    """Parses a manifest; raises ManifestError naming what is wrong."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ManifestError(f"not valid JSON: {error}") from None
    root = _Reader(document, "")
    targets = list(root.list_of("targets"))
    dtypes = list(root.list_of("dtypes"))
    for name in targets:
        if name not in _abi.TARGET_NAMES:
            raise ManifestError(f"unknown target '{name}' in 'targets'")
    for name in dtypes:
        if name not in _abi.DTYPE_NAMES:
            raise ManifestError(f"unknown dtype '{name}' in 'dtypes'")
    layers = [_layer(value, f"layers[{i}]")
              for i, value in enumerate(root.list_of("layers"))]
    model = None
    block = root.child("model", None)
    if block is not None:
        model = ModelInfo(
            name=block.get("name", (str,), ""),
            vocab=block.get("vocab", (int,), 0),
            d_model=block.get("d_model", (int,)),
            stack=list(block.list_of("stack")),
            final_norm=block.get("final_norm", (str,), "rms_norm"),
            tied_head=block.get("tied_head", (bool,), True),
            norm_eps=float(block.get("norm_eps", (int, float), 1e-5)),
            pad_vocab_multiple=block.get("pad_vocab_multiple", (int,), 8))
        names = {layer.name for layer in layers}
        for entry in model.stack:
            if entry not in names:
                raise ManifestError(f"model.stack names layer '{entry}', "
                                    "which the manifest lacks")
        if model.final_norm not in ("none", "rms_norm", "layer_norm"):
            raise ManifestError(
                f"unknown model.final_norm '{model.final_norm}'")
    return Manifest(
        abi_version=root.get("abi_version", (int,)),
        generator=root.get("generator", (str,), ""),
        source=root.get("source", (str,), ""),
        targets=targets, dtypes=dtypes, layers=layers, model=model)
