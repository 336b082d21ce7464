"""Subject declarations: one module per library (plus ``specs`` for the specs themselves).

Each module exposes ``subjects() -> Iterable[Subject]`` and imports its library lazily, inside ``build``.
"""

import torch
from torch import nn


def load_parameters(module: nn.Module, values: dict[str, torch.Tensor]) -> nn.Module:
    """Copy a drawn example's tensors into ``module``'s parameters, addressed by dotted path (adapters' shared step)."""
    with torch.no_grad():
        for path, value in values.items():
            target = module.get_parameter(path)
            target.copy_(value.to(target.dtype))
    return module
