#===- python/fpc/weights.py - Loading state dicts all or nothing ---------===#
#
# load_state_dict checks every tensor before it copies any: the missing,
# unexpected and mis-shaped ones are listed together in one WeightsError and
# the module is left as it was.
#
#===------------------------------------------------------------------------===#

from typing import Dict, List

import torch

from .errors import WeightsError


def _listing(title: str, names: List[str]) -> str:
    shown = ", ".join(names[:20])
    more = f" and {len(names) - 20} more" if len(names) > 20 else ""
    return f"{title} ({len(names)}): {shown}{more}"


def check_state_dict(module: torch.nn.Module,
                     state: Dict[str, torch.Tensor]) -> None:
    """Raises WeightsError listing what does not fit `module`."""
    own = dict(module.named_parameters())
    own.update(dict(module.named_buffers()))
    missing = [name for name in own if name not in state]
    unexpected = [name for name in state if name not in own]
    misshaped = [f"{name} {list(state[name].shape)} (expected "
                 f"{list(own[name].shape)})"
                 for name in own if name in state
                 and tuple(state[name].shape) != tuple(own[name].shape)]
    problems = []
    if missing:
        problems.append(_listing("missing", missing))
    if unexpected:
        problems.append(_listing("unexpected", unexpected))
    if misshaped:
        problems.append(_listing("mis-shaped", misshaped))
    if problems:
        raise WeightsError("the state dict does not fit the model, so "
                           "nothing was loaded: " + "; ".join(problems))


def load_state_dict(module: torch.nn.Module,
                    state: Dict[str, torch.Tensor]) -> None:
    """Copies `state` into `module`'s parameters and buffers (converting
    dtype and device), all of them or none."""
    check_state_dict(module, state)
    own = dict(module.named_parameters())
    own.update(dict(module.named_buffers()))
    with torch.no_grad():
        for name, tensor in own.items():
            tensor.copy_(state[name])
