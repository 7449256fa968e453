#===- python/fpc/model.py - A library's language model -------------------===#
#
# CompiledModel assembles the manifest's model (docs/spec.md §6) around
# CompiledLayers as the C++ runtime's CompiledModel does, with the same
# parameter names (those of fp-train's checkpoint.pt) and, from the same
# seed, the same initial values: token embedding [V_pad, D] ~ N(0, 0.02²),
# one pre-norm residual block per `model.stack` entry
# (r <- r + layer(RMSNorm(r))), the final norm, and a head tied to the
# embedding (or its own weight, U(±1/√D)); every `out_proj.weight` divided
# by √(number of blocks) after its own initialisation.
#
#===------------------------------------------------------------------------===#

import math
from typing import List, Optional, Union

import torch

from .errors import FpcError
from .layer import CompiledLayer, open_library
from .library import Library


class RMSNorm(torch.nn.Module):
    """x · rsqrt(mean(x²) + eps) · weight, as the runtime's ref::RMSNorm."""

    def __init__(self, features: int, eps: float, dtype: torch.dtype):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


class LayerNorm(torch.nn.Module):
    def __init__(self, features: int, eps: float, dtype: torch.dtype):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(features, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.size(-1),), self.weight,
                                              self.bias, self.eps)


class _Block(torch.nn.Module):
    def __init__(self, mixer: CompiledLayer, norm: RMSNorm):
        super().__init__()
        self.mixer = mixer
        self.norm = norm


class _Holder(torch.nn.Module):
    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = torch.nn.Parameter(weight)


class CompiledModel(torch.nn.Module):
    """The language model of a library's manifest: tokens [B, T] (int64)
    to logits [B, T, V_pad]. `vocab_size` (before padding) defaults to the
    manifest's `model.vocab`."""

    def __init__(self, library: Union[str, Library],
                 vocab_size: Optional[int] = None, *, seed: int = 0,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        library = open_library(library)
        model = library.manifest.model
        if model is None:
            raise FpcError(f"'{library.path}' describes no model (its "
                           "manifest has no 'model'); load a layer with "
                           "fpc.CompiledLayer, or compile a file with a "
                           "`model` block")
        object.__setattr__(self, "library", library)
        object.__setattr__(self, "info", model)
        self.vocab_size = vocab_size or model.vocab
        if self.vocab_size <= 0:
            raise FpcError(f"model library '{library.path}' names no "
                           "vocabulary size; pass vocab_size")
        multiple = model.pad_vocab_multiple
        self.padded_vocab = -(-self.vocab_size // multiple) * multiple

        generator = torch.Generator().manual_seed(seed)
        self.embedding = _Holder(
            torch.empty(self.padded_vocab, model.d_model, dtype=torch.float64)
            .normal_(0.0, 0.02, generator=generator).to(dtype))
        blocks = []
        for name in model.stack:
            mixer = CompiledLayer(library, name, generator=generator,
                                  dtype=dtype)
            blocks.append(_Block(mixer, RMSNorm(model.d_model, model.norm_eps,
                                                dtype)))
        self.layers = torch.nn.ModuleList(blocks)
        if model.final_norm == "rms_norm":
            self.norm_f = RMSNorm(model.d_model, model.norm_eps, dtype)
        elif model.final_norm == "layer_norm":
            self.norm_f = LayerNorm(model.d_model, model.norm_eps, dtype)
        else:
            self.norm_f = None
        if model.tied_head:
            self.lm_head = None
        else:
            bound = 1.0 / math.sqrt(model.d_model)
            self.lm_head = _Holder(
                torch.empty(self.padded_vocab, model.d_model,
                            dtype=torch.float64)
                .uniform_(-bound, bound, generator=generator).to(dtype))
        with torch.no_grad():
            scale = math.sqrt(len(blocks))
            for block in blocks:
                if block.mixer.has_parameter("out_proj.weight"):
                    block.mixer.parameter("out_proj.weight").div_(scale)

    @property
    def blocks(self) -> List[CompiledLayer]:
        """The compiled layers, bottom to top."""
        return [block.mixer for block in self.layers]

    def head_weight(self) -> torch.Tensor:
        return (self.embedding.weight if self.lm_head is None
                else self.lm_head.weight)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        residual = torch.nn.functional.embedding(tokens, self.embedding.weight)
        for block in self.layers:
            residual = residual + block.mixer(block.norm(residual))
        out = residual if self.norm_f is None else self.norm_f(residual)
        return torch.matmul(out, self.head_weight().t())

    def forward_chunk(self, tokens: torch.Tensor, states=None):
        """Logits of the chunk `tokens` [B, T] of sequences whose earlier
        tokens `states` (one list per layer; None at the start) summarise,
        and the states after it. Without gradient."""
        if states is None:
            states = [None] * len(self.layers)
        if len(states) != len(self.layers):
            raise FpcError(f"forward_chunk: expected one state per layer "
                           f"({len(self.layers)}), got {len(states)}")
        with torch.no_grad():
            residual = torch.nn.functional.embedding(tokens,
                                                     self.embedding.weight)
            after = []
            for block, state in zip(self.layers, states):
                out, state = block.mixer.forward_chunk(block.norm(residual),
                                                       state)
                residual = residual + out
                after.append(state)
            out = residual if self.norm_f is None else self.norm_f(residual)
            return torch.matmul(out, self.head_weight().t()), after
