"""Binary layers: linear and conv2d on binarized inputs and weights, and bitorch-engine's binary conv.

Gradients are the STEs of the quantizers in :mod:`qsnn_reference.quant` composed with autograd through the float
linear/conv, except :func:`bie_binary_conv2d`, whose hand-written backward (not the derivative of its
forward) is reproduced by an ``autograd.Function``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from qsnn_reference import _validate
from qsnn_reference.quant import (
    WEIGHT_SCALINGS,
    _sign,
    approx_sign,
    binarize_weight,
    sign_clipped_ste,
    sign_hardtanh_ste,
    sign_ste,
)

INPUT_QUANTS = ("none", "ste", "clipped_ste", "approx_sign", "hardtanh_ste")
PAD_VALUES = (0.0, -1.0, 1.0)


def _quantize_input(x: torch.Tensor, input_quant: str, threshold: float | None, zero_value: float) -> torch.Tensor:
    if input_quant == "none":
        return x
    if input_quant == "ste":
        return sign_ste(x, zero_value=zero_value)
    if input_quant == "clipped_ste":
        return sign_clipped_ste(x, threshold=threshold, zero_value=zero_value)
    if input_quant == "approx_sign":
        return approx_sign(x, zero_value=zero_value)
    return sign_hardtanh_ste(x, zero_value=zero_value)


def _check_common(input_quant: str, threshold: float | None, zero_value: float, weight_scaling: str) -> None:
    _validate.one_of("input_quant", input_quant, INPUT_QUANTS)
    if threshold is not None:
        _validate.in_range("threshold", threshold, 0.0)
    _validate.one_of("zero_value", zero_value, (-1.0, 0.0, 1.0))
    _validate.one_of("weight_scaling", weight_scaling, WEIGHT_SCALINGS)


def binary_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                  input_quant: str = "ste", threshold: float | None = 1.0, zero_value: float = 1.0,
                  weight_scaling: str = "none") -> torch.Tensor:
    """A linear layer on binarized input and weight.

    Forward:  ``y = Q(x) @ B(W).T + b`` with ``Q`` by ``input_quant``: ``"none"`` (identity, a float first
              layer), ``"ste"`` (:func:`sign_ste`), ``"clipped_ste"`` (:func:`sign_clipped_ste` with
              ``threshold``, inclusive), ``"approx_sign"``, ``"hardtanh_ste"``; and
              ``B(W) = binarize_weight(W, scaling=weight_scaling)`` (a constant scale). ``sign(0) = zero_value``
              for both.
    Backward: autograd through the linear map with each quantizer's STE: ``dL/dx = Q'(x) * (dL/dy @ B(W))``,
              ``dL/dW = a * (dL/dy^T @ Q(x))`` with ``a`` the weight scale (1 for ``"none"``),
              ``dL/db = sum of dL/dy over leading dims``.
    Dtype:    follows ``x``; ``weight`` and ``bias`` are cast to it.
    Shape:    ``x`` ``[..., K]``, ``weight`` ``[N, K]``, ``bias`` ``[N]`` -> ``[..., N]``.
    """
    _check_common(input_quant, threshold, zero_value, weight_scaling)
    _validate.ndim_at_least("x", x, 1)
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"weight must be [N, K] with K = x.shape[-1] = {x.shape[-1]}, got {tuple(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
    wb = binarize_weight(weight.to(x.dtype), scaling=weight_scaling, zero_value=zero_value)
    return F.linear(_quantize_input(x, input_quant, threshold, zero_value), wb,
                    None if bias is None else bias.to(x.dtype))


def _check_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride: int, padding: int,
                dilation: int, groups: int) -> None:
    _validate.integer("stride", stride, min_value=1)
    _validate.integer("padding", padding, min_value=0)
    _validate.integer("dilation", dilation, min_value=1)
    _validate.integer("groups", groups, min_value=1)
    if x.dim() not in (3, 4):
        raise ValueError(f"x must be [N, C, H, W] or [C, H, W], got shape {tuple(x.shape)}")
    if weight.dim() != 4 or weight.shape[0] % groups or weight.shape[1] * groups != x.shape[-3]:
        raise ValueError(f"weight must be [C_out, C_in / groups, kH, kW] with C_in = {x.shape[-3]}, "
                         f"groups = {groups}; got {tuple(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")


def binary_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, stride: int = 1,
                  padding: int = 0, dilation: int = 1, groups: int = 1, pad_value: float = 0.0,
                  input_quant: str = "ste", threshold: float | None = 1.0, zero_value: float = 1.0,
                  weight_scaling: str = "none") -> torch.Tensor:
    """A 2-D convolution on binarized input and weight.

    Forward:  ``y = conv2d(pad(Q(x), padding, value=pad_value), B(W), b, stride, padding=0, dilation, groups)``:
              the input is binarized *first* and then padded with ``pad_value`` (0.0 as ``F.conv2d``'s zero
              padding of a binarized input; -1.0 or +1.0 as packed binary kernels, which cannot store 0).
              ``Q``, ``B``, ``zero_value``, ``weight_scaling`` as in :func:`binary_linear`.
    Backward: autograd through the convolution with the quantizers' STEs; the padding is a constant (no
              gradient flows to it).
    Dtype:    follows ``x``; ``weight``/``bias`` are cast to it.
    Shape:    ``[N, C_in, H, W]`` (or unbatched ``[C_in, H, W]``) -> ``[N, C_out, H_out, W_out]``.
    """
    _check_common(input_quant, threshold, zero_value, weight_scaling)
    _validate.one_of("pad_value", pad_value, PAD_VALUES)
    _check_conv(x, weight, bias, stride, padding, dilation, groups)
    xb = _quantize_input(x, input_quant, threshold, zero_value)
    if padding:
        xb = F.pad(xb, (padding,) * 4, value=pad_value)
    wb = binarize_weight(weight.to(x.dtype), scaling=weight_scaling, zero_value=zero_value)
    return F.conv2d(xb, wb, None if bias is None else bias.to(x.dtype), stride=stride, padding=0,
                    dilation=dilation, groups=groups)


# ----------------------------------------------------------------------------------------------- bitorch-engine

def bie_init_scale_a(x: torch.Tensor, *, symmetric: bool = True) -> torch.Tensor:
    """bitorch-engine's lazy initial activation scale (``set_activation`` when ``scale_a`` is zero):
    ``2 * mean|x|`` (symmetric) or ``4 * mean|x|``, over the whole *unshifted* input (before ``bias_a``).
    A statistic over the batch, so not per-sample."""
    _validate.one_of("symmetric", symmetric, (True, False))
    return (2 if symmetric else 4) * x.abs().mean()


def nv_int8_levels(t: torch.Tensor) -> torch.Tensor:
    """bitorch-engine's ``nv_tensor_quant(t)[0]``: ``clamp(round(t * 127 / amax), -127, 127)`` with
    ``amax = max(t)`` (the *signed* maximum, as its ``torch.amax(inputs)``; not ``max|t|``), computed in
    float32 for bfloat16/float16 and cast back. Returns the integer *levels*, not dequantized values.
    Undefined for ``amax <= 0`` (the library raises for amax < 0 and produces NaN/inf for 0)."""
    low = t.dtype in (torch.bfloat16, torch.float16)
    u = t.float() if low else t
    levels = torch.clamp(torch.round(u * (127.0 / u.amax())), -127, 127)
    return levels.to(t.dtype)


def bie_binary_conv2d_grad(x: torch.Tensor, weight: torch.Tensor, scale_a: torch.Tensor, grad_output: torch.Tensor,
                           *, scale_w: float = 1.0, stride: int = 1, padding: int = 0, dilation: int = 1,
                           quantize_grad_weight: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """bitorch-engine ``BinaryConv2dForward.backward``; ``x`` is the *shifted* input ``x + bias_a``.

    ``grad_input = conv2d_input(x.shape, sign(W) * scale_w, g) * 1[-1 <= x / scale_a <= 1]``;
    ``grad_weight = conv2d_weight(sign(x) * scale_a, W.shape, g)``, then ``nv_int8_levels`` if asked;
    ``grad_scale_a = sum(grad_input * sign(x)) / sqrt(x.numel())`` with the *masked* grad_input.
    ``sign`` here is ``torch.sign`` (0 at 0), as in bitorch-engine's backward.
    """
    input_sign = torch.sign(x)
    wt = torch.sign(weight.to(grad_output.dtype)) * scale_w
    conv = dict(stride=stride, padding=padding, dilation=dilation)
    grad_input = torch.nn.grad.conv2d_input(x.shape, wt, grad_output, **conv)
    grad_weight = torch.nn.grad.conv2d_weight(input_sign * scale_a, weight.shape, grad_output, **conv)
    q = x / scale_a
    grad_input = torch.where((q >= -1) & (q <= 1), grad_input, torch.zeros_like(grad_input))
    grad_scale_a = torch.sum(grad_input * input_sign * (1.0 / math.sqrt(x.numel())))
    if quantize_grad_weight:
        grad_weight = nv_int8_levels(grad_weight)
    return grad_input, grad_weight, grad_scale_a.reshape(scale_a.shape)


class BieBinaryConv2dFunction(torch.autograd.Function):
    """The forward of bitorch-engine's CUTLASS binary conv and its hand-written backward.

    No ``jvp``: the backward is not the transpose of any linear map (the int8 gradient quantization), so
    there is no forward-mode formula consistent with it.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(x, weight, scale_a, scale_w, stride, padding, dilation, quantize_grad_weight, zero_value, pad_value):
        xb = _sign(x, zero_value)
        if padding:
            xb = F.pad(xb, (padding,) * 4, value=pad_value)
        out = F.conv2d(xb, _sign(weight.to(x.dtype), zero_value), stride=stride, dilation=dilation)
        out = out * (scale_a * scale_w)
        # Cast only when needed: a same-dtype .to() returns an alias of the intermediate, and torch 2.11's compiled
        # autograd.Function then routes the incoming gradient to the wrong output slot: d/dx all zeros under
        # torch.compile (aot_eager and inductor, CPU and CUDA; measured on the H200; torch 2.13 is right). Same
        # family as pytorch/pytorch#180642 (an alias of an intermediate returned from forward).
        return out if out.dtype == x.dtype else out.to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, scale_a, scale_w, stride, padding, dilation, quantize_grad_weight, _, _ = inputs
        ctx.save_for_backward(x, weight, scale_a)
        ctx.options = dict(scale_w=scale_w, stride=stride, padding=padding, dilation=dilation,
                           quantize_grad_weight=quantize_grad_weight)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, scale_a = ctx.saved_tensors
        grad_input, grad_weight, grad_scale_a = bie_binary_conv2d_grad(x, weight, scale_a, grad_output,
                                                                       **ctx.options)
        return grad_input, grad_weight.to(weight.dtype), grad_scale_a, None, None, None, None, None, None, None


def bie_binary_conv2d(x: torch.Tensor, weight: torch.Tensor, scale_a: torch.Tensor, bias_a: torch.Tensor, *,
                      scale_w: float = 1.0, stride: int = 1, padding: int = 0, dilation: int = 1,
                      quantize_grad_weight: bool = True, zero_value: float = 1.0,
                      pad_value: float = 0.0) -> torch.Tensor:
    """bitorch-engine's ``BinaryConv2dCutlass`` in training mode (``bitorch_engine/layers/qconv/binary/cutlass/
    layer.py`` on its main branch, https://github.com/hpi-xnor/bitorch-engine), ``scale_a`` taken as given
    (its lazy data-dependent initialisation is :func:`bie_init_scale_a`, a separate step).

    Forward:  ``xs = x + bias_a`` (per input channel, ``set_activation``);
              ``y = conv2d(pad(sign(xs), pad_value), sign(W), stride, dilation) * (scale_a * scale_w)``.
              ``sign(0) = zero_value`` in the forward (the CUTLASS kernel's choice is not visible in that file;
              bitorch-engine's reference packer sets the bit for ``x >= 0``, i.e. +1); the kernel's padding
              value is likewise a parameter (0.0 matches the zero-padded convolutions of its backward).
    Backward: its hand-written formulas (:func:`bie_binary_conv2d_grad`), all on the shifted ``xs``:
              ``dL/dxs = conv2d_input(sign(W) * scale_w, g) * 1[|xs / scale_a| <= 1]``;
              ``dL/dx = dL/dxs``; ``dL/dbias_a = sum of dL/dxs over N, H, W`` (autograd of the shift);
              ``dL/dW = conv2d_weight(sign(xs) * scale_a, g)``, replaced by its int8 levels
              ``clamp(round(. * 127 / max(.)), -127, 127)`` when ``quantize_grad_weight`` (not dequantized,
              signed max: see :func:`nv_int8_levels`);
              ``dL/dscale_a = sum(dL/dxs * sign(xs)) / sqrt(xs.numel())``; ``sign`` is torch.sign (0 at 0);
              scale_w gets no gradient (a frozen parameter in the library). Not the derivative of the forward.
    Dtype:    follows ``x``; weight/scale_a/bias_a are cast to it.
    Shape:    ``x`` ``[N, C_in, H, W]``, ``weight`` ``[C_out, C_in, kH, kW]`` (groups = 1), ``scale_a`` ``()``,
              ``bias_a`` ``[C_in]``.
    Per-sample: ``1/sqrt(numel)`` and the int8 ``max`` are over the whole batch, so per-sample gradients of a
              batch of more than one differ from the batch gradient's parts.
    """
    _validate.in_range("scale_w", scale_w)
    _validate.one_of("quantize_grad_weight", quantize_grad_weight, (True, False))
    _validate.one_of("zero_value", zero_value, (-1.0, 0.0, 1.0))
    _validate.one_of("pad_value", pad_value, PAD_VALUES)
    _check_conv(x, weight, None, stride, padding, dilation, 1)
    if tuple(bias_a.shape) != (x.shape[-3],):
        raise ValueError(f"bias_a must have shape ({x.shape[-3]},), got {tuple(bias_a.shape)}")
    if scale_a.dim() != 0:
        raise ValueError(f"scale_a must be a 0-d tensor, got shape {tuple(scale_a.shape)}")
    _validate.positive("scale_a", scale_a)
    xs = x + bias_a.to(x.dtype)[:, None, None]
    return BieBinaryConv2dFunction.apply(xs, weight.to(x.dtype), scale_a.to(x.dtype), float(scale_w), stride,
                                         padding, dilation, quantize_grad_weight, float(zero_value),
                                         float(pad_value))
