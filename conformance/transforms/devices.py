"""Other devices and precisions: the same module on CUDA against the CPU, and under autocast (CUDA cells only)."""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch

from .harness import FORWARD_GRAD, Context, Transform, TransformRun, build, eager, run_forward_backward, stage

#: where these transforms stand in the table (and the report's columns)
ORDER = 70


def cpu_vs_cuda(ctx: Context) -> TransformRun:
    """The subject on CUDA computes what the same subject computes on the CPU (same input, same parameters, same
    cotangent): forward and gradients of the two devices must agree. In float32 on both, as every cell: torch's
    TF32 default for cuDNN convolutions rounds their operands to 10 mantissa bits (3.5e-4 relative on the spec's own
    binary conv2d with 33 channels on an H100), a precision torch chooses, not the subject."""
    result = eager(ctx)
    with stage("cpu_baseline"):
        result.against = eager(dataclasses.replace(ctx, device=torch.device("cpu")))
    return result


def _autocast_transform(name: str, amp_dtype: torch.dtype) -> Callable[[Context], TransformRun]:
    def transform(ctx: Context) -> TransformRun:
        module = build(ctx)

        def call(x: torch.Tensor) -> torch.Tensor:
            with torch.autocast(ctx.device.type, dtype=amp_dtype):
                return module(x)

        result = run_forward_backward(ctx, call, module, name=name)
        result.against = eager(ctx)
        return result

    transform.__name__ = name
    transform.__doc__ = (f"Forward under torch.autocast({amp_dtype}) (mixed precision), backward outside it: output "
                         f"and gradients agree with the float32 module within {amp_dtype}'s rounding.")
    return transform


autocast_bf16 = _autocast_transform("autocast_bf16", torch.bfloat16)
autocast_fp16 = _autocast_transform("autocast_fp16", torch.float16)


TRANSFORMS = (
    Transform("cpu_vs_cuda", cpu_vs_cuda, FORWARD_GRAD, devices=("cuda",), compares_with="cpu", protocol=True),
    Transform("autocast_bf16", autocast_bf16, FORWARD_GRAD, devices=("cuda",), compute_dtype="bfloat16",
              protocol=True),
    Transform("autocast_fp16", autocast_fp16, FORWARD_GRAD, devices=("cuda",), compute_dtype="float16",
              protocol=True),
)
