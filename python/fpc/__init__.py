#===- python/fpc/__init__.py - fpc's compiled models in PyTorch ----------===#
#
# The fpc package loads a model library built by `fpc` (model.so) into
# PyTorch through its C ABI, with ctypes: no compiled extension, so one
# model.so serves any PyTorch version. docs/python.md has the guide.
#
#   layer = fpc.load("model.so", "fp_mamba")   # a torch.nn.Module
#   model = fpc.load("model.so", vocab_size=257)
#
#===------------------------------------------------------------------------===#

from typing import Optional, Union

import torch

from ._abi import ABI_VERSION
from .checkpoint import checkpoint_config, load_checkpoint, load_run
from .errors import (FpcError, LibraryError, LoadError, ManifestError,
                     WeightsError)
from .layer import CompiledLayer
from .library import Library
from .model import CompiledModel
from .reference import from_reference, naming_table, to_reference
from .weights import load_state_dict

__all__ = [
    "ABI_VERSION", "CompiledLayer", "CompiledModel", "FpcError",
    "Library", "LibraryError", "LoadError", "ManifestError", "WeightsError",
    "checkpoint_config", "from_reference", "load", "load_checkpoint",
    "load_run", "load_state_dict", "naming_table", "to_reference",
]


def load(path: Union[str, Library], layer: Optional[str] = None, *,
         vocab_size: Optional[int] = None, seed: int = 0,
         dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """A module over the model library at `path`: the layer named `layer`;
    without one, the library's language model where its manifest describes
    one (vocabulary from `vocab_size` or the manifest), else its only
    layer. Parameters are drawn with `seed` as the C++ runtime draws them."""
    library = path if isinstance(path, Library) else Library(path)
    if layer is not None:
        return CompiledLayer(library, layer, seed=seed, dtype=dtype)
    model = library.manifest.model
    if model is not None and (vocab_size or model.vocab):
        return CompiledModel(library, vocab_size, seed=seed, dtype=dtype)
    if len(library.manifest.layers) == 1:
        return CompiledLayer(library, seed=seed, dtype=dtype)
    if model is not None:
        raise FpcError(f"'{library.path}' describes a model without a "
                       "vocabulary size; pass vocab_size, or name a layer")
    names = ", ".join(f"'{info.name}'" for info in library.manifest.layers)
    raise FpcError(f"'{library.path}' has several layers ({names}); name "
                   "the one to load")
