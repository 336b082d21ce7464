"""HQQ 0.2.8.post1 (half-quadratic quantization) subjects: ``HQQLinear`` as its README shows it,
``HQQLinear(linear, quant_config=BaseQuantizeConfig(nbits=4, group_size=64), compute_dtype=..., device=...)``, here
with ``compute_dtype=torch.float32`` and ``device="cpu"`` on a float32 ``nn.Linear`` (``axis=1``, the config's
default: groups of 64 consecutive weights along the input dim).

- ``[4bit,g64]``: the README's config as it is: 4-bit codes, the zero rounded (``round_zero``, the config's choice for
  4 bits) and HQQ's optimizer on (``optimize=True``: it moves each group's zero from the min/max rule's to lower
  the weight's error). The optimizer's result is no function a spec can state; its starting point is. The subject
  draws weights on the 4-bit grid with power-of-two scales (``on_grid``), where the min/max rule gives the weight
  back and the optimizer keeps it: the spec ``halfquadratic.minmax_weight_linear`` holds there. What holds for any
  weight (the codes in range, the scale the min/max rule's, the forward ``x @ ((W_q - zero) * scale).T + bias`` from
  the layer's own stored meta) is judged by ``suites/libraries/test_hqq_adapters.py``. 4-bit codes are packed two
  groups to a byte (the first half of the groups with the second): with an odd number of groups HQQLinear raises
  when built or called, so the subject draws ``in_features`` 128 (two groups per output channel); the finding is a
  strict xfail test there.
- ``[8bit,g64,optimize=False]``: ``BaseQuantizeConfig(nbits=8, group_size=64)`` with its ``weight_quant_params
  ["optimize"]`` set to False (as HQQ does itself for weights it has dequantized, ``hqq/backends/torchao.py``):
  exactly the spec's min/max rule on any weight, with a float (unrounded) zero; ``in_features`` 64 or 128.

The layer keeps its weight as packed ``W_q`` (a Parameter without gradient), its scales and zeros in a plain dict
(``meta``) and its bias as a plain tensor: no parameter of the spec is a parameter of the module, so the gradient
judged is the input's. HQQ is imported only inside ``build``; it needs numpy and termcolor at import (its other
declared dependencies, transformers, accelerate, huggingface_hub, einops and tqdm, only for whole models). No wheel
exists: the set-up builds the pinned sdist with ``DISABLE_CUDA=1`` (without it, its ``setup.py`` runs a CUDA build of
its ATen extension on every egg_info); the ATen/CUDA backend is absent, the layer computes with its PyTorch backend.
CPU and float32 only: ``.half()``, ``.double()`` and ``.to()`` of an HQQLinear return it unchanged (HQQ's "TODO").
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import float_linear

LIBRARY = Library("hqq", "hqq", "0.2.8.post1", no_deps=True, dependencies=("numpy", "termcolor"), gpu=False,
                  sdist_sha256="8fa34c074df43b32acf10173abbc7dfdeff1ae529b673acfc2628a1c9c61fc8a")
REQUIRES = ("hqq",)
SOURCE = "https://github.com/mobiusml/hqq/blob/master/hqq"  # no release tag; the reproducers are the evidence
FLOAT32 = frozenset({"float32"})
CPU = frozenset({"cpu"})
#: The README's group size; the spec's ``in_features`` is one or two groups of it.
GROUP_SIZE = 64
#: 4-bit codes are packed two groups to a byte, the first half of the groups with the second: with an odd number of
#: groups HQQLinear raises when it is built or called (docs/quantization.md). Two groups per output channel.
EVEN_GROUPS = 2 * GROUP_SIZE


def build_hqq_linear(nbits: int, *, optimize: bool):
    """A builder of ``HQQLinear`` from the example's float32 ``nn.Linear`` with ``BaseQuantizeConfig(nbits,
    group_size=64)``, its optimizer on or off."""

    def build(example: Example) -> nn.Module:
        from hqq.core.quantize import BaseQuantizeConfig, HQQLinear

        config = BaseQuantizeConfig(nbits=nbits, group_size=GROUP_SIZE)
        config["weight_quant_params"]["optimize"] = optimize
        return HQQLinear(float_linear(example), quant_config=config, compute_dtype=torch.float32, device="cpu")

    build.__name__ = f"build_hqq_linear_{nbits}bit" + ("" if optimize else "_no_optimize")
    return build


_REPRODUCERS = "reproducers/hqq"
_QUANTIZE = f"{SOURCE}/core/quantize.py"
_BIAS = "HQQLinear keeps the bias as linear.bias.clone() taken outside no_grad (HQQLinear.initialize): a plain " \
        "tensor attribute that requires grad and is no graph leaf"
_MATMUL = "HQQLinear's forward (its default PyTorch backend) is HQQMatmulNoCacheMul.apply, an autograd.Function " \
          "with setup_context and backward only"
KNOWN = (
    *(Known(transform, cause="deepcopy-non-leaf", link=_QUANTIZE,
            reason=_BIAS + ", which torch's Tensor.__deepcopy__ refuses ('Only Tensors created explicitly by the "
                           "user (graph leaves) support the deepcopy protocol')",
            reproducer=f"{_REPRODUCERS}/deepcopy_bias_not_a_leaf.py") for transform in ("deepcopy", "deepcopy_used")),
    Known("jit_trace", cause="jit-unsupported", link=_QUANTIZE,
          reason=_BIAS + ", which the tracer refuses to record as a constant ('Cannot insert a Tensor that requires "
                         "grad as a constant')",
          reproducer=f"{_REPRODUCERS}/jit_trace_bias_not_a_leaf.py"),
    Known("jit_script", cause="jit-unsupported", link=_QUANTIZE,
          reason="HQQLinear.dequantize collects the meta keys it drops in a Python set (del_keys = set()), which "
                 "TorchScript cannot compile ('Set aren't supported')",
          reproducer=f"{_REPRODUCERS}/jit_script_dequantize_set.py"),
    Known("vmap", cause="autograd-function-no-vmap-rule", link=_QUANTIZE,
          reason=_MATMUL + ": no vmap staticmethod and no generate_vmap_rule, so torch.func.vmap refuses it",
          reproducer=f"{_REPRODUCERS}/vmap_matmul_function.py"),
    Known("jvp", cause="jvp-unsupported", link=_QUANTIZE,
          reason=_MATMUL + ": no jvp, so forward-mode AD (torch.func.jvp) raises",
          reproducer=f"{_REPRODUCERS}/jvp_matmul_function.py"),
    Known("safetensors", cause="state-dict-mismatch", link=_QUANTIZE,
          reason="HQQLinear's own load_state_dict assigns state_dict['W_q'] to its registered Parameter W_q: a "
                 "state_dict of plain tensors, as safetensors reads it back, raises TypeError ('cannot assign "
                 "torch.ByteTensor as parameter W_q'); torch.save keeps the Parameter, so save_load passes",
          reproducer=f"{_REPRODUCERS}/load_state_dict_plain_tensor_weight.py"),
)


def subjects() -> Iterator[Subject]:
    common = dict(spec="halfquadratic.minmax_weight_linear", library=LIBRARY.name, requires=REQUIRES,
                  dtypes=FLOAT32, devices=CPU, known=KNOWN)
    yield Subject(id="hqq.HQQLinear[4bit,g64]", build=build_hqq_linear(4, optimize=True),
                  fixed=dict(nbits=4, group_size=GROUP_SIZE, round_zero=True, on_grid=True, in_features=EVEN_GROUPS),
                  **common)
    yield Subject(id="hqq.HQQLinear[8bit,g64,optimize=False]", build=build_hqq_linear(8, optimize=False),
                  fixed=dict(nbits=8, group_size=GROUP_SIZE, round_zero=False), **common)
