#===- python/fpc/checkpoint.py - fp-train's run directories --------------===#
#
# checkpoint.pt is a LibTorch archive (docs/training.md): a TorchScript
# module whose attributes hold the format tag and the configuration, and
# whose submodule `model` holds every parameter and buffer under the names
# the C++ model registered them with, which CompiledModel shares.
#
#===------------------------------------------------------------------------===#

import collections
import json
import os
from typing import Dict, Optional

import torch

from .errors import FpcError
from .model import CompiledModel

CHECKPOINT_FORMAT = "fpc-checkpoint-1"


def _archive(path: str):
    if not os.path.isfile(path):
        raise FpcError(f"cannot read checkpoint '{path}': no such file")
    try:
        archive = torch.jit.load(path, map_location="cpu")
    except (RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error) else ""
        raise FpcError(f"cannot read checkpoint '{path}': not a LibTorch "
                       f"archive ({first})") from None
    tag = getattr(archive, "format", None)
    if tag != CHECKPOINT_FORMAT:
        raise FpcError(f"'{path}' is not an fp-train checkpoint (format "
                       f"{tag!r}, expected '{CHECKPOINT_FORMAT}')")
    return archive


def load_checkpoint(path: str) -> Dict[str, torch.Tensor]:
    """The model's parameters and buffers stored in an fp-train
    checkpoint.pt, as a state dict (names as the model registered them)."""
    archive = _archive(os.fspath(path))
    state = collections.OrderedDict()
    for name, tensor in archive.model.named_parameters():
        state[name] = tensor.detach().clone()
    for name, tensor in archive.model.named_buffers():
        state[name] = tensor.detach().clone()
    return state


def checkpoint_config(path: str) -> dict:
    """The training configuration stored with the checkpoint."""
    return json.loads(_archive(os.fspath(path)).config)


def load_run(directory: str, library: Optional[str] = None) -> CompiledModel:
    """The compiled model of an fp-train run directory with the weights of
    its checkpoint.pt, in evaluation mode with the run's solver settings.
    `library` replaces the model library the run names (config.json's
    `model.source`), e.g. one compiled for another target. For a run
    trained with --dtype bf16 the layers compute in bf16; call the model
    under torch.autocast(device, dtype=torch.bfloat16) as fp-train did."""
    directory = os.fspath(directory)
    config_path = os.path.join(directory, "config.json")
    try:
        with open(config_path) as file:
            config = json.load(file)
    except OSError as error:
        raise FpcError(f"cannot read '{config_path}': "
                       f"{error.strerror}") from None
    except ValueError as error:
        raise FpcError(f"'{config_path}' is not valid JSON: {error}") from None
    model_config = config.get("model", {})
    if model_config.get("kind") != "compiled":
        raise FpcError(f"the run in '{directory}' trained "
                       f"'{model_config.get('source', '?')}', not a compiled "
                       "model library; fpc loads compiled models only")
    dtype = {"f32": torch.float32, "f64": torch.float64}.get(
        model_config.get("dtype", "f32"), torch.float32)
    model = CompiledModel(library or model_config["source"],
                          model_config.get("vocab_size"), dtype=dtype)
    # A --dtype bf16 run keeps f32 weights and computes in bf16: the
    # layers cast per call; the embedding, norms and head follow autocast,
    # which the caller enables as fp-train did (torch.autocast).
    if model_config.get("autocast") == "bf16":
        for block in model.blocks:
            block.compute_dtype = torch.bfloat16
    # Settings of the run that differ from a layer's compiled ones become
    # its overrides, as fp-train's makeCompiledModel makes them.
    overrides = (("max_iter_train", "train_iteration_cap"),
                 ("max_iter_eval", "eval_iteration_cap"),
                 ("tolerance", "tolerance"),
                 ("train_quantile", "train_quantile"))
    solver = model_config.get("solver", {})
    for block in model.blocks:
        compiled = block.info.solver
        if compiled is None:
            continue
        for field, attribute in overrides:
            if solver.get(field, compiled[field]) != compiled[field]:
                setattr(block, attribute, solver[field])
    from .weights import load_state_dict  # noqa: E402 (cycle)
    load_state_dict(model, load_checkpoint(os.path.join(directory,
                                                        "checkpoint.pt")))
    return model.eval()
