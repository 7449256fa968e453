#===- python/fpc/reference.py - Weights in the reference code's naming ---===#
#
# The Python reference implementation of Fixed-Point RNNs (its FP-Mamba,
# FP-RNN and Mamba modules, the mixers and the LM wrapper) names and shapes
# some weights differently from fpc's manifests. naming_table() derives, for
# a compiled layer or model, one row per parameter from the rules below;
# to_reference() (export) and from_reference() (import) both read that one
# table, so a state dict goes through import and export unchanged.
#
# The rules (docs/python.md has them as a table):
#   weight normalisation  X.weight_g [out]  <-> X.parametrizations.weight
#                                               .original0 [out, 1]
#                         X.weight_v        <-> X.parametrizations.weight
#                                               .original1
#   causal convolutions   weight [C, K]     <-> weight [C, 1, K]
#   skip                  D_skip            <-> D           (FP-Mamba, Mamba)
#   FP-RNN modules        io_proj, out_proj, out_norm, conv_mix, conv_b,
#                         conv_lambda, conv_x, readout_conv <-> input_trans,
#                         output_trans, output_norm, conv1d_mixer, conv1d_b,
#                         conv1d_lambda, conv1d_x, conv1d_c
#   mixers                Kronecker theta_proj, gate_proj <-> uv_project, diag;
#                         Monarch theta_proj, alpha_proj <-> uv_project, alpha;
#                         SelectiveDense theta_proj <-> proj;
#                         mixture m<i> <-> mixers.<i>;
#                         Householder and DPLR: the same names
#   compiled mixer        the reference's FP-RNN compiles its mixer with
#                         torch.compile, so its keys read mixer._orig_mod.…
#                         (export writes it for FP-RNN; import accepts it
#                         anywhere, as a leading module. or _orig_mod.)
#   language model        embedding.weight, layers.<i>.…, norm_f.weight
#                         <-> backbone.…; lm_head.weight, the tied head, is
#                         written equal to the embedding and checked on import
#
#===------------------------------------------------------------------------===#

import collections
import os
from typing import Dict, List, NamedTuple, Optional, Union

import torch

from .errors import FpcError, WeightsError
from .layer import CompiledLayer
from .model import CompiledModel

_FP_RNN_MODULES = {
    "io_proj": "input_trans", "out_proj": "output_trans",
    "out_norm": "output_norm", "conv_mix": "conv1d_mixer",
    "conv_b": "conv1d_b", "conv_lambda": "conv1d_lambda", "conv_x": "conv1d_x",
    "readout_conv": "conv1d_c",
}
_CONVOLUTIONS = {"conv1d", "conv_mix", "conv_b", "conv_lambda", "conv_x",
                 "readout_conv"}
_MIXER_MODULES = {
    "kronecker": {"theta_proj": "uv_project", "gate_proj": "diag"},
    "monarch": {"theta_proj": "uv_project", "alpha_proj": "alpha"},
    "selective_dense": {"theta_proj": "proj"},
    "householder": {"u_proj": "u_proj", "alpha_proj": "alpha_proj"},
}


class Row(NamedTuple):
    """One parameter: its fpc name and shape, its reference key and shape,
    and how the values change on the way ("same", "gain": [out] <->
    [out, 1], "conv": [C, K] <-> [C, 1, K])."""
    fpc: str
    fpc_shape: tuple
    reference: str
    reference_shape: tuple
    transform: str


def _layer_kind(names: set) -> str:
    if "io_proj.weight" in names:
        return "fp_rnn"
    if "bc_y_proj.weight_v" in names:
        return "fp_mamba"
    if "A_log" in names:
        return "mamba"
    raise FpcError("the layer is none of FP-Mamba, FP-RNN and Mamba, so it "
                   "has no reference counterpart")


def _mixer_kind(prefix: str, shapes: Dict[str, tuple], width: int) -> str:
    """The kind of the mixer whose parameters start with `prefix`."""
    children = {name[len(prefix):].split(".")[0] for name in shapes
                if name.startswith(prefix)}
    if not children:
        return "identity"
    if all(child[:1] == "m" and child[1:].isdigit() for child in children):
        return "mixture"
    for kind, modules in _MIXER_MODULES.items():
        if children == set(modules):
            if kind == "householder":
                u_rows = shapes[prefix + "u_proj.weight_v"][0]
                alpha_rows = shapes[prefix + "alpha_proj.weight_v"][0]
                if u_rows != alpha_rows * width:
                    raise FpcError(
                        f"'{prefix[:-1]}' is a block Householder mixer "
                        f"({alpha_rows} gains for {u_rows // width} "
                        "reflections), which the reference code does not "
                        "have")
            return kind
    raise FpcError(f"the mixer '{prefix[:-1]}' (modules "
                   f"{', '.join(sorted(children))}) has no reference "
                   "counterpart")


def _mixer_renames(prefix: str, reference_prefix: str, shapes, width,
                   renames: Dict[str, str]):
    """Fills `renames` (fpc module path -> reference module path) for the
    mixer at `prefix`."""
    kind = _mixer_kind(prefix, shapes, width)
    if kind == "mixture":
        factors = sorted({name[len(prefix):].split(".")[0] for name in shapes
                          if name.startswith(prefix)},
                         key=lambda child: int(child[1:]))
        for child in factors:
            _mixer_renames(f"{prefix}{child}.",
                           f"{reference_prefix}mixers.{child[1:]}.", shapes,
                           width, renames)
        return
    for module, reference in _MIXER_MODULES.get(kind, {}).items():
        renames[prefix + module] = reference_prefix + reference


def _layer_rows(shapes: Dict[str, tuple],
                compiled_mixer: Optional[bool]) -> List[Row]:
    names = set(shapes)
    kind = _layer_kind(names)
    if kind == "fp_rnn":
        width = shapes["io_proj.weight"][0] // 2
    else:
        width = shapes["A_log"][0]
    if compiled_mixer is None:
        compiled_mixer = kind == "fp_rnn"
    renames: Dict[str, str] = {}
    if kind == "fp_rnn":
        renames.update(_FP_RNN_MODULES)
    if any(name.startswith("mixer.") for name in names):
        _mixer_renames("mixer.", "mixer._orig_mod." if compiled_mixer
                       else "mixer.", shapes, width, renames)
    rows = []
    for name, shape in shapes.items():
        module, _, leaf = name.rpartition(".")
        reference_module = renames.get(module, module)
        if reference_module == module and module.startswith("mixer.") \
                and compiled_mixer:
            reference_module = "mixer._orig_mod." + module[len("mixer."):]
        transform, reference_shape = "same", tuple(shape)
        if leaf == "weight_g":
            reference_leaf = "parametrizations.weight.original0"
            transform, reference_shape = "gain", tuple(shape) + (1,)
        elif leaf == "weight_v":
            reference_leaf = "parametrizations.weight.original1"
        elif name == "D_skip":
            reference_leaf = "D"
        else:
            reference_leaf = leaf
        if leaf == "weight" and module in _CONVOLUTIONS:
            transform = "conv"
            reference_shape = (shape[0], 1, shape[1])
        reference = (f"{reference_module}.{reference_leaf}" if reference_module
                     else reference_leaf)
        rows.append(Row(name, tuple(shape), reference, reference_shape,
                        transform))
    return rows


def naming_table(module: Union[CompiledLayer, CompiledModel],
                 compiled_mixer: Optional[bool] = None) -> List[Row]:
    """The table of `module`'s parameters in both namings. `compiled_mixer`
    says whether the reference's keys carry `mixer._orig_mod.` (None: as
    the reference builds the layer, FP-RNN yes, FP-Mamba no)."""
    if isinstance(module, CompiledLayer):
        return _layer_rows({param.name: tuple(param.shape)
                            for param in module.info.params}, compiled_mixer)
    if not isinstance(module, CompiledModel):
        raise FpcError("naming_table takes an fpc.CompiledLayer or "
                       "fpc.CompiledModel")
    if module.norm_f is None or hasattr(module.norm_f, "bias"):
        raise FpcError("the reference's language model ends with an RMSNorm;"
                       f" this model's final norm is "
                       f"'{module.info.final_norm}'")
    if module.lm_head is not None:
        raise FpcError("the reference's language model ties its head to the "
                       "embedding; this model's is untied")
    dim = tuple(module.embedding.weight.shape)
    rows = [Row("embedding.weight", dim, "backbone.embedding.weight", dim,
                "same")]
    for i, block in enumerate(module.layers):
        prefix = f"layers.{i}."
        width = (module.info.d_model,)
        rows.append(Row(prefix + "norm.weight", width,
                        f"backbone.{prefix}norm.weight", width, "same"))
        for row in naming_table(block.mixer, compiled_mixer):
            rows.append(row._replace(
                fpc=f"{prefix}mixer.{row.fpc}",
                reference=f"backbone.{prefix}mixer.{row.reference}"))
    norm = (module.info.d_model,)
    rows.append(Row("norm_f.weight", norm, "backbone.norm_f.weight", norm,
                    "same"))
    return rows


def _to_reference(tensor: torch.Tensor, transform: str) -> torch.Tensor:
    if transform == "gain":
        return tensor.reshape(-1, 1)
    if transform == "conv":
        return tensor.unsqueeze(1)
    return tensor


def _from_reference(tensor: torch.Tensor, transform: str) -> torch.Tensor:
    if transform == "gain":
        return tensor.reshape(-1)
    if transform == "conv":
        return tensor.squeeze(1)
    return tensor


def to_reference(module: Union[CompiledLayer, CompiledModel],
                 compiled_mixer: Optional[bool] = None
                 ) -> "collections.OrderedDict[str, torch.Tensor]":
    """`module`'s weights as a state dict in the reference code's naming
    (copies, on the CPU, in the module's dtype)."""
    own = dict(module.named_parameters())
    state = collections.OrderedDict()
    for row in naming_table(module, compiled_mixer):
        state[row.reference] = _to_reference(
            own[row.fpc].detach().cpu().clone(), row.transform)
    if isinstance(module, CompiledModel):
        state["lm_head.weight"] = state["backbone.embedding.weight"].clone()
    return state


def _normalised(key: str) -> str:
    """A key without the wrappers the reference's scripts may add: leading
    module. (DDP) and _orig_mod. (torch.compile), and a compiled mixer's
    _orig_mod."""
    while True:
        for prefix in ("module.", "_orig_mod."):
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        else:
            break
    return key.replace("mixer._orig_mod.", "mixer.")


def _unwrapped(state) -> Dict[str, torch.Tensor]:
    if isinstance(state, (str, os.PathLike)):
        state = torch.load(os.fspath(state), map_location="cpu")
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            inner = state.get(key)
            if isinstance(inner, dict) and inner and all(
                    isinstance(value, torch.Tensor)
                    for value in inner.values()):
                return inner
        if all(isinstance(value, torch.Tensor) for value in state.values()):
            return state
    raise WeightsError("expected a state dict of tensors (or a checkpoint "
                       "holding one under 'state_dict' or 'model')")


def from_reference(module: Union[CompiledLayer, CompiledModel], state
                   ) -> None:
    """Loads weights named as the reference code names them (a state dict,
    a checkpoint dict holding one, or a file torch.load reads) into
    `module`: all of them, converted to its dtype and device, or none, with
    a WeightsError listing every missing, unexpected and mis-shaped
    tensor."""
    given = {_normalised(key): value for key, value in
             _unwrapped(state).items()}
    rows = naming_table(module, compiled_mixer=False)
    expected = {row.reference: row for row in rows}
    head = given.pop("lm_head.weight", None)
    missing = [key for key in expected if key not in given]
    unexpected = [key for key in given if key not in expected]
    misshaped = [f"{key} {list(given[key].shape)} (expected "
                 f"{list(expected[key].reference_shape)})"
                 for key in expected if key in given
                 and tuple(given[key].shape) != expected[key].reference_shape]
    if isinstance(module, CompiledModel) and head is not None \
            and "backbone.embedding.weight" in given \
            and not torch.equal(head, given["backbone.embedding.weight"]):
        unexpected.append("lm_head.weight (differs from the embedding, but "
                          "the head is tied)")
    if isinstance(module, CompiledLayer) and head is not None:
        unexpected.append("lm_head.weight")
    problems = []
    for title, names in (("missing", missing), ("unexpected", unexpected),
                         ("mis-shaped", misshaped)):
        if names:
            shown = ", ".join(names[:12])
            more = f" and {len(names) - 12} more" if len(names) > 12 else ""
            problems.append(f"{title} ({len(names)}): {shown}{more}")
    if problems:
        raise WeightsError("the reference state dict does not fit the "
                           "model, so nothing was loaded: "
                           + "; ".join(problems))
    own = dict(module.named_parameters())
    with torch.no_grad():
        for row in rows:
            own[row.fpc].copy_(_from_reference(given[row.reference],
                                               row.transform))
