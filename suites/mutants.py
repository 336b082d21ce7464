"""Mutants: deliberately broken implementations, one per way real libraries break. Each must be caught by the
intended check with the intended cause (suites/test_mutants.py); together they cover every check.

They are subjects like any other, built on the specs' own functions with one defect each, and are registered
only by the mutant tests (never part of the published matrix).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import NamedTuple

import torch
from torch import nn

from conformance.core.types import CallProtocol, Example, Subject
from conformance.subjects.reference import SpecModule
from qsnn_reference import binary, fp8, neurons, packing, quant, surrogate


class Mutant(NamedTuple):
    subject: Subject
    transform: str
    check: str
    cause: str  # the cause the check must report ("graph-break:" matches any graph-break reason)
    defect: str
    dtype: str = "float32"
    device: str = "cpu"  # cuda mutants run where a GPU is (the GPU run), and skip elsewhere


# ------------------------------------------------------------------------------------------------ modules


class SignZeroWrong(nn.Module):
    """sign(0) = -1 where the spec (zero_value=+1) says +1: torch.sign-style conventions leaking in."""

    def forward(self, x):
        return quant.sign_ste(x, zero_value=-1.0)


class SteWithoutClipping(nn.Module):
    """Clipped STE spec'd, plain identity STE implemented: the gradient is not cancelled for |x| > threshold."""

    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0)


class WrongBitOrder(nn.Module):
    """Packs MSB-first where the spec says LSB-first."""

    def __init__(self, hyper):
        super().__init__()
        self.hyper = dict(hyper, bit_order="msb" if hyper["bit_order"] == "lsb" else "lsb")

    def forward(self, x):
        return packing.pack_signs(x, **self.hyper)


class WrongPastFirstWord(nn.Module):
    """Packs the first word of a row right and every later one shifted by a bit (an offset slip after the first
    word): only rows longer than one word show it."""

    def __init__(self, hyper):
        super().__init__()
        self.hyper = dict(hyper)

    def forward(self, x):
        words = packing.pack_signs(x, **self.hyper)
        dim = self.hyper["dim"] % words.dim()
        later = torch.arange(words.shape[dim]).reshape([-1 if d == dim else 1 for d in range(words.dim())]) > 0
        return torch.where(later, words << 1, words)


def reset_from_current_step(example: Example) -> nn.Module:
    """Leaky neuron that resets from the current step's spike instead of the previous one (reset order)."""
    return SpecModule(neurons.leaky, example.params, dict(example.hyper, reset_delay=not example.hyper["reset_delay"]))


class WrongSurrogateSlope(nn.Module):
    """fast_sigmoid with the slope halved: forward identical, gradient wrong."""

    def __init__(self, hyper):
        super().__init__()
        self.hyper = dict(hyper, alpha=hyper["alpha"] * 0.5)

    def forward(self, x):
        return surrogate.fast_sigmoid(x, **self.hyper)


class _PassesFarInputs(torch.autograd.Function):
    """fast_sigmoid's spike whose gradient is right for |x| <= 10 and 1 (straight through) beyond it."""

    @staticmethod
    def forward(x, alpha):
        return (x > 0).to(x.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.alpha = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        right = surrogate.fast_sigmoid_grad(x, alpha=ctx.alpha)
        return grad * torch.where(x.abs() > 10, torch.ones_like(x), right), None


class SurrogateInFloat32(nn.Module):
    """fast_sigmoid computed in float32 whatever the input's dtype, the result cast back: right to float32's
    precision, wrong for a float64 cell."""

    def __init__(self, hyper):
        super().__init__()
        self.hyper = dict(hyper)

    def forward(self, x):
        return surrogate.fast_sigmoid(x.float(), **self.hyper).to(x.dtype)


class WrongFarFromThreshold(nn.Module):
    """A defect no draw in [-3, 3] reaches: only the edge examples (|x| up to 1e4) show it."""

    def __init__(self, hyper):
        super().__init__()
        self.alpha = hyper["alpha"]

    def forward(self, x):
        return _PassesFarInputs.apply(x, self.alpha)


class _OldStyleSign(torch.autograd.Function):
    """A custom Function written the pre-2.0 way: forward(ctx, ...) and no setup_context (as bitorch's,
    hpi-xnor/bitorch#4)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad):
        return grad


class NoSetupContext(nn.Module):
    def forward(self, x):
        return _OldStyleSign.apply(x)


class ItemInForward(nn.Module):
    """Reads a tensor value into Python (``.item()``) in forward, like bitorch-engine's ``scale_a.item()`` in
    BinaryConv2dCutlass."""

    def __init__(self, weight):
        super().__init__()
        self.scale = nn.Parameter(torch.ones((), dtype=weight.dtype))

    def forward(self, x):
        factor = self.scale.item()
        if factor == 0.0:  # lazy, data-dependent initialisation as in bitorch-engine (``if not scale_a.is_nonzero()``)
            self.scale.data.fill_(1.0)
        return quant.sign_ste(x, zero_value=1.0) * factor


class _LayerContainer:
    """bitorch's LayerContainer pattern: a plain object delegating attribute access with ``__getattr__``."""

    def __init__(self, layer):
        self._layer_implementation = layer

    def __getattr__(self, item):
        if item == "_layer_implementation":
            return self.__dict__[item]
        return getattr(self._layer_implementation, item)

    def __call__(self, *args):
        return self._layer_implementation(*args)


class GetattrDelegation(nn.Module):
    def __init__(self, hyper):
        super().__init__()
        self.container = _LayerContainer(SpecModule(quant.sign_ste, {}, hyper))

    def forward(self, x):
        return self.container(x)


class ClosureAttribute(nn.Module):
    """Stores a lambda on the module (unpicklable)."""

    def __init__(self):
        super().__init__()
        self.quantize = lambda x: quant.sign_ste(x, zero_value=1.0)

    def forward(self, x):
        return self.quantize(x)


class HiddenStateNotReset(SpecModule):
    """Leaky neuron keeping its membrane between calls (no reset at the start of forward)."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)
        self.carry = None

    def forward(self, x):
        if self.carry is not None and self.carry.shape == x.shape[1:]:
            x = torch.cat([x[:1] + self.carry, x[1:]])
        spk = super().forward(x)
        self.carry = x[-1].detach().clone()
        return spk


class PersistentLeaky(SpecModule):
    """A leaky neuron (``neurons.leaky``) fed a chunk of time steps per call, keeping its membrane between calls until
    ``reset()``: the clean persistent neuron the three mutants below break (tests/test_mutants checks it passes)."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)
        self.mem: torch.Tensor | None = None

    def reset(self) -> None:
        self.mem = None

    def remember(self, mem: torch.Tensor) -> torch.Tensor:
        return mem

    def step_parameters(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in self.param_names}

    def forward(self, x):
        spikes = []
        params = self.step_parameters()
        hyper = {k: v for k, v in self.hyper.items() if k != "time_dim"}
        for x_t in x.unbind(0):
            mem = torch.zeros_like(x_t) if self.mem is None else self.mem
            spk, _, (mem,) = neurons._leaky_core(x_t, (mem,), **params, **hyper)
            self.mem = self.remember(mem)
            spikes.append(spk)
        return torch.stack(spikes)


class ResetsEveryCall(PersistentLeaky):
    """Starts every call from rest: fed one step per call, it forgets the membrane between the steps."""

    def forward(self, x):
        self.reset()
        return super().forward(x)


class ForgetsStateWhenCopied(PersistentLeaky):
    """A copy (deepcopy, pickle) starts every call from rest: the copy loses the state between calls."""

    forgets = False

    def __setstate__(self, state):
        super().__setstate__(state)
        self.forgets = True

    def forward(self, x):
        if self.forgets:
            self.reset()
        return super().forward(x)


class DropsHeldStateWhenCopied(PersistentLeaky):
    """Its ``__getstate__`` leaves the held membrane out (deepcopy and pickle go through it): a copy taken in the middle
    of a sequence starts the rest of it from rest, while a copy of a reset module is exact."""

    def __getstate__(self):
        return {**super().__getstate__(), "mem": None}


class TakesStateFromOriginal(PersistentLeaky):
    """Its ``__getstate__`` hands the held membrane to the copy and resets its own (a snapshot that moves the state):
    the copy continues the sequence, the original restarts it from rest."""

    def __getstate__(self):
        state = dict(super().__getstate__())
        self.mem = None
        return state


class BreaksGraphOnceUsed(PersistentLeaky):
    """Counts its resets (state its reset leaves, as a calibration counter does) and, once reset before, takes a side
    path that prints: compiled after use, its graph breaks where a fresh module's does not."""

    def __init__(self, example: Example):
        super().__init__(example)
        self.resets = 0

    def reset(self) -> None:
        super().reset()
        self.resets += 1

    def forward(self, x):
        if self.resets > 1:
            print(end="")  # a side path only a used module takes
        return super().forward(x)


class _MembraneStore(nn.Module):
    """Holds the membrane in a buffer, overwritten in place at every step, and returns the buffer itself."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mem", torch.zeros(0))

    def forward(self, mem: torch.Tensor) -> torch.Tensor:
        if self.mem.shape != mem.shape:
            self.mem = torch.zeros_like(mem)
        with torch.no_grad():
            self.mem.copy_(mem)
        return self.mem


class ReturnsStateBuffer(PersistentLeaky):
    """Keeps the membrane in a submodule that returns its own state buffer (as a neuron returning ``mem`` does)."""

    def __init__(self, example: Example):
        super().__init__(example)
        self.store = _MembraneStore()

    def reset(self) -> None:
        super().reset()
        self.store.mem = torch.zeros(0)

    def remember(self, mem: torch.Tensor) -> torch.Tensor:
        return self.store(mem)


class StoresInput(nn.Module):
    """Keeps the last input as hidden state, so a vmap leaves a batched tensor inside the module."""

    def forward(self, x):
        self.last_input = x
        return quant.sign_ste(x, zero_value=1.0)


class _InputLog:
    """A plain object a layer keeps its inputs in (a cache, a recorder)."""

    def __init__(self):
        self.entries: dict[str, list[torch.Tensor]] = {"inputs": []}


class StoresInputOutOfSight(nn.Module):
    """Keeps the last input in a plain object under a private attribute (``self._log.entries['inputs'][-1]``), where a
    walk of the module's public tensor attributes does not look: a vmap leaves a batched tensor there."""

    def __init__(self):
        super().__init__()
        self._log = _InputLog()

    def forward(self, x):
        self._log.entries["inputs"][:] = [x]
        return quant.sign_ste(x, zero_value=1.0)


class StoresInputOnClass(nn.Module):
    """Keeps the last input in a dict held by the class, shared by every instance: a vmap leaves a batched tensor
    there."""

    last: dict[str, torch.Tensor] = {}

    def forward(self, x):
        type(self).last["input"] = x
        return quant.sign_ste(x, zero_value=1.0)


class _Doubler(nn.Module):
    def forward(self, x):
        return x * 2.0


class LeavesGlobalHook(nn.Module):
    """Installs a process-wide forward hook on every call and never removes it (a profiling hook left behind, or
    torch 2.11's failed export): every later module in the process runs it."""

    def forward(self, x):
        nn.modules.module.register_module_forward_hook(lambda module, args, out: None)
        return quant.sign_ste(x, zero_value=1.0)


class OverwritesHookedOutput(nn.Module):
    """A submodule's output is modified in place afterwards (what ReLU(inplace=True) does to hooked features)."""

    def __init__(self):
        super().__init__()
        self.pre = _Doubler()

    def forward(self, x):
        doubled = self.pre(x)
        doubled.mul_(0.5)
        return quant.sign_ste(doubled, zero_value=1.0)


class CountsCalls(SpecModule):
    """Advances a step counter in every forward call: recomputation under checkpoint advances it twice."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.steps += x.shape[0]
        return super().forward(x)


class MarksSwappedParameters(SpecModule):
    """Writes to a buffer only while its parameters are not its own (a cache keyed on the parameter objects), so a
    functional_call leaves the module in a state no eager forward would."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)
        self.register_buffer("swapped", torch.zeros(()))
        self._own_ids = {name: id(p) for name, p in self.named_parameters()}

    def forward(self, x):
        if any(id(getattr(self, name)) != own for name, own in self._own_ids.items()):
            self.swapped += 1.0
        return super().forward(x)


class UnwrapsOnEval(nn.Module):
    """A wrapper whose eval() returns what it wraps: ``model = model.eval()`` silently drops the wrapper."""

    def __init__(self):
        super().__init__()
        self.inner = _SignModule()

    def forward(self, x):
        return self.inner(x)

    def eval(self):
        super().eval()
        return self.inner


class _SignModule(nn.Module):
    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0)


class _NegatedSignNoBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return -torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))


class ForwardOnlyWrongForward(nn.Module):
    """An inference kernel (no backward) whose forward is wrong: its gradient checks fail on the missing backward,
    and its forward must still be judged (and fail as a forward mismatch, not be hidden behind the backward)."""

    def forward(self, x):
        return _NegatedSignNoBackward.apply(x)


class WrongDtype(nn.Module):
    """Always returns float32, whatever the input dtype."""

    def forward(self, x):
        return quant.sign_ste(x.float(), zero_value=1.0)


class ShallowCopy(nn.Module):
    """A ``__deepcopy__`` that shares parameters with the original (the copy is not independent)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = nn.Parameter(torch.ones((), dtype=torch.float32) * 1.5)

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * (self.scale / 1.5)

    def __deepcopy__(self, memo):
        clone = copy.copy(self)
        clone._parameters = dict(self._parameters)
        return clone


class DataDependentBranch(nn.Module):
    """Takes a Python branch on tensor data: jit.trace freezes the branch of the tracing input."""

    def forward(self, x):
        if bool(x.sum() > 0):
            return quant.sign_ste(x, zero_value=1.0)
        return quant.sign_ste(x, zero_value=1.0) * 0.5


class InplaceOnSavedOutput(nn.Module):
    """Returns a tensor autograd saved for backward (sigmoid's output): a downstream in-place op breaks backward."""

    def forward(self, x):
        return torch.sigmoid(x)


# ------------------------------------------------------------------------------------------------ subjects


class ReversedOnCuda(nn.Module):
    """A CUDA kernel with its comparison reversed: right on the CPU, -sign(x) on the GPU."""

    def forward(self, x):
        y = quant.sign_ste(x, zero_value=1.0)
        return -y if x.is_cuda else y


class AutocastForgetsScale(nn.Module):
    """A separate mixed-precision fast path that drops the output scaling the float32 path applies."""

    def forward(self, x):
        y = quant.sign_ste(x, zero_value=1.0)
        return y * 0.5 if torch.is_autocast_enabled(x.device.type) else y


class SignPart(nn.Module):
    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0)


class SharesDefaultPart(nn.Module):
    """A sign layer whose part is a default argument, evaluated once when the class is defined: every instance holds
    the same part (as ``surrogate_function=Sigmoid()`` in a signature does)."""

    def __init__(self, part: nn.Module = SignPart()):
        super().__init__()
        self.part = part

    def forward(self, x):
        return self.part(x)


class SharesDefaultScale(nn.Module):
    """A sign layer whose output scale is a parameter over a default argument's tensor, wrapped without a copy (as
    ``spike_threshold=torch.tensor(1.0)`` in a signature, then ``nn.Parameter(spike_threshold)``): every instance's
    parameter is the same memory."""

    def __init__(self, scale: torch.Tensor = torch.tensor(1.0)):
        super().__init__()
        self.scale = nn.Parameter(scale, requires_grad=False)

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * self.scale


class SharesClassScale(nn.Module):
    """A sign layer whose output scale is a tensor its class holds, in a settings object: every instance computes with
    that one tensor, and an in-place change to one layer's scale changes every layer's output."""

    class _Settings:
        def __init__(self):
            self.scale = torch.ones(())

    settings = _Settings()

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * self.settings.scale


@dataclasses.dataclass
class ZeroValue:
    value: float = 1.0


class SharesDefaultSetting(nn.Module):
    """A sign layer whose setting is a mutable object from a default argument (as ``reset_fn=MembraneSubtract()``):
    setting a field on one instance's object sets every instance's."""

    def __init__(self, setting: ZeroValue = ZeroValue()):
        super().__init__()
        self.setting = setting

    def forward(self, x):
        return quant.sign_ste(x, zero_value=self.setting.value)


class ExportPathDropsZeroValue(nn.Module):
    """A separate path for export (``torch.compiler.is_exporting()``, as layers that swap their STE for a traceable
    op do) that maps sign(0) to 0 where the eager path gives +1: the exported model differs on exact zeros."""

    def forward(self, x):
        return torch.sign(x) if torch.compiler.is_exporting() else quant.sign_ste(x, zero_value=1.0)


class NoExportPath(nn.Module):
    """A layer whose forward refuses to be exported (as a kernel without a traceable implementation does)."""

    def forward(self, x):
        if torch.compiler.is_exporting():
            raise RuntimeError("this layer's kernel has no implementation for export")
        return quant.sign_ste(x, zero_value=1.0)


class ExportPathWithoutReset(SpecModule):
    """A leaky neuron whose export path (``torch.compiler.is_exporting()``) never resets the membrane: the exported
    graph runs and spikes, and from the first spike on it spikes otherwise."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        params = {name: getattr(self, name) for name in self.param_names}
        hyper = dict(self.hyper, reset_mechanism="none") if torch.compiler.is_exporting() else self.hyper
        return neurons.leaky(x, **params, **hyper)


class ExportsUnknownOp(nn.Module):
    """A layer whose export path writes a custom operator (``mutants::Sign``) that no ONNX runtime implements."""

    def forward(self, x):
        if torch.compiler.is_exporting():
            return torch.onnx.ops.symbolic("mutants::Sign", [x], dtype=x.dtype, shape=x.shape, version=1)
        return quant.sign_ste(x, zero_value=1.0)


class LsqHalfAway(nn.Module):
    """LSQ rounding half away from zero (``floor(|v| + 0.5)``) where the spec rounds half to even: right everywhere
    but on the rounding ties, which the drawn examples keep a tenth of a step away from."""

    def __init__(self, example: Example):
        super().__init__()
        self.step = nn.Parameter(example.params["step"].clone())
        self.hyper = dict(example.hyper)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qn, qp = quant._lsq_range(self.hyper["bits"], self.hyper["signed"])
        v = (x / self.step).clamp(-qn, qp)
        return torch.sign(v) * torch.floor(v.abs() + 0.5) * self.step


class FakeQuantizeTiesUp(nn.Module):
    """torch.fake_quantize_per_tensor_affine rounding ties up (``floor(v + 0.5)``) where torch's kernel rounds half to
    even: right everywhere but on the .5 ties, which only the edge examples reach (the draws stay a tenth of a step
    away). The straight-through gradient is kept."""

    def __init__(self, example: Example):
        super().__init__()
        self.hyper = dict(example.hyper)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.hyper
        scale = torch.tensor(h["scale"], dtype=torch.float32)
        q = torch.floor(x * (1.0 / scale) + 0.5) + h["zero_point"]
        y = (q.clamp(h["quant_min"], h["quant_max"]) - h["zero_point"]) * scale
        inside = (q >= h["quant_min"]) & (q <= h["quant_max"])
        return y.detach() + torch.where(inside, x - x.detach(), torch.zeros_like(x))


class MinmaxWeightLinear(nn.Module):
    """``affine.minmax_weight_linear`` with one defect: ``integer_zero_point`` rounds the shift to an integer code
    (quanto's optional ``zeropoint=True``) where the float shift is spec'd, or ``straight_through=False`` gives the
    weight no gradient (the quantized weight detached) where the straight-through one is spec'd."""

    def __init__(self, example: Example, *, integer_zero_point: bool = False, straight_through: bool = True):
        super().__init__()
        self.weight = nn.Parameter(example.params["weight"].clone())
        self.bias = nn.Parameter(example.params["bias"].clone())
        self.hyper = dict(example.hyper)
        self.integer_zero_point, self.straight_through = integer_zero_point, straight_through

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from qsnn_reference import affine

        h = self.hyper
        quantized = affine.minmax_fake_quantize_weight(self.weight, **h)
        if self.integer_zero_point:
            scale, shift = affine.minmax_weight_qparams(self.weight, **h)
            rows = self.weight.detach().float().reshape(scale.shape[0], -1)
            zero_point = torch.round(shift / scale)
            codes = torch.clamp(torch.round(rows / scale) + zero_point, 0, 2 ** h["bits"] - 1)
            quantized = (scale * (codes - zero_point)).reshape(self.weight.shape)
        weight = self.weight + (quantized.to(self.weight.dtype) - self.weight).detach()
        return nn.functional.linear(x, weight if self.straight_through else weight.detach(), self.bias)


class Linear4bitDefect(nn.Module):
    """``blockwise.linear_4bit`` with one defect: ``code_off_by_one`` holds the code book's second-largest entry one
    code down (NF4's 0.7230 read as 0.5626), or ``offset_dropped`` double-quantizes the absmax without subtracting
    (and adding back) their mean, as a port that skips the offset would."""

    def __init__(self, example: Example, *, code_off_by_one: bool = False, offset_dropped: bool = False):
        super().__init__()
        self.weight = nn.Parameter(example.params["weight"].clone(), requires_grad=False)
        self.bias = nn.Parameter(example.params["bias"].clone())
        self.hyper = dict(example.hyper)
        self.code_off_by_one, self.offset_dropped = code_off_by_one, offset_dropped

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from qsnn_reference import blockwise

        h = self.hyper
        code = blockwise.code_book(h["quant_type"])
        if self.code_off_by_one:
            ordered = torch.sort(code).values
            code = torch.where(code == ordered[-2], ordered[-3], code)
        flat = self.weight.detach().reshape(-1).float()
        absmax, scaled = blockwise._blocks(flat, h["blocksize"])
        ordered = torch.sort(code).values
        values = ordered[blockwise._nearest_sorted(scaled, ordered)]
        if h["compress_statistics"] and self.offset_dropped:
            codes, scales = blockwise.quantize_8bit_blockwise(absmax)
            absmax = blockwise.dequantize_8bit_blockwise(codes, scales)
        elif h["compress_statistics"]:
            absmax = blockwise.double_quantized_absmax(absmax)
        weight = (values * absmax.repeat_interleave(h["blocksize"])[: flat.numel()]).reshape(self.weight.shape)
        return nn.functional.linear(x, weight.to(x.dtype), self.bias.to(x.dtype))


class LsqWithIdleDither(nn.Module):
    """LSQ that adds a dither whose amplitude is set to 0: the values are the spec's, but forward draws random
    numbers, which ``torch.func.vmap`` refuses by default (``randomness="error"``), so per-sample gradients fail."""

    def __init__(self, example: Example):
        super().__init__()
        self.step = nn.Parameter(example.params["step"].clone())
        self.hyper = dict(example.hyper)
        self.dither = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.dither * torch.rand_like(x)
        return quant.lsq(x, self.step, **self.hyper)


class SignByDivision(nn.Module):
    """Binarized weights with sign(x) computed as x / |x|: right for every nonzero weight, NaN at an exact zero
    (which the spec maps to zero_value), and the drawn weights are never exactly zero."""

    def __init__(self, example: Example):
        super().__init__()
        self.hyper = dict(example.hyper)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return quant.binarize_weight(x, **self.hyper).abs() * (x / x.abs())


class RunningShift(nn.Module):
    """Subtracts a running mean of its training inputs, updated on every training call before use (as a quantizer
    that collects statistics does), kept in a registered buffer: the state_dict carries what use changed. The
    control of the state_dict comparison: its next call after use differs from a fresh module's first call."""

    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.running = 0.5 * self.running + 0.5 * x.detach().mean()
        return x - self.running


class RunningShiftInPlace(RunningShift):
    """RunningShift updating its buffer in place, as BatchNorm does: running its export updates the source's
    buffer (torch.export shares it) with exactly the eager update. The control of ``export_path_updates_statistics``."""

    def _momentum(self) -> float:
        return 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            m = self._momentum()
            self.running.mul_(1 - m).add_(m * x.detach().mean())
        return x - self.running


class ExportPathUpdatesStatisticsOtherwise(RunningShiftInPlace):
    """Its export path (``torch.compiler.is_exporting()``) updates the running mean with another momentum: running
    the exported module leaves the source's buffer at a value no eager forward gives."""

    def _momentum(self) -> float:
        return 0.9 if torch.compiler.is_exporting() else 0.5


class RunningShiftOutsideStateDict(RunningShift):
    """The running mean kept as a plain attribute: load_state_dict cannot restore it."""

    def __init__(self):
        nn.Module.__init__(self)
        self.running = torch.zeros(())


class RunningShiftResetOnCopy(RunningShift):
    """A deepcopy starts its running mean afresh (a ``__deepcopy__`` that rebuilds the module from its arguments)."""

    def __deepcopy__(self, memo):
        return type(self)()


class CountsStepsPersistent(PersistentLeaky):
    """A persistent neuron that counts its steps in a buffer: recomputation under checkpoint counts them twice."""

    def __init__(self, example: Example):
        super().__init__(example)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.steps += x.shape[0]
        return super().forward(x)


class ClipsInputInPlace(nn.Module):
    """Clips its input to [-1, 1] in place, outside autograd, before the sign (a copy saved): the output and the
    identity STE's gradient are right, and the caller's tensor is clipped."""

    def forward(self, x):
        with torch.no_grad():
            x.clamp_(-1.0, 1.0)
        return quant.sign_ste(x, zero_value=1.0)


class ReadsMemoryAsContiguous(nn.Module):
    """A sign kernel that reads its input's memory as if it were contiguous (as C++ code through ``data_ptr`` does):
    right on a contiguous input, wrong on a strided view."""

    def forward(self, x):
        memory = torch.as_strided(x, (x.numel(),), (1,), x.storage_offset())
        return quant.sign_ste(memory, zero_value=1.0).view(x.shape)


class _SignWithOwnJvp(torch.autograd.Function):
    """sign(x) (+1 at 0) with the straight-through gradient in backward, and a forward-mode rule of its own that
    doubles the tangent: the two modes of autograd disagree (a ``jvp`` written apart from ``backward``)."""

    @staticmethod
    def forward(x):
        return quant.sign_ste(x, zero_value=1.0).detach()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad

    @staticmethod
    def jvp(ctx, tangent):
        return 2 * tangent


class JvpDisagreesWithBackward(nn.Module):
    def forward(self, x):
        return _SignWithOwnJvp.apply(x)


class CompilePathDropsZeroValue(nn.Module):
    """A separate path under ``torch.compile`` (``torch.compiler.is_compiling()``, as layers that swap a custom
    kernel for plain ops there do) that maps sign(0) to 0 where the eager path gives +1."""

    def forward(self, x):
        return torch.sign(x) if torch.compiler.is_compiling() else quant.sign_ste(x, zero_value=1.0)


class ScriptPathDropsZeroValue(nn.Module):
    """A separate path for TorchScript (``torch.jit.is_scripting()``) that maps sign(0) to 0 where eager gives +1."""

    def forward(self, x):
        if torch.jit.is_scripting():
            return torch.sign(x)
        return quant.sign_ste(x, zero_value=1.0)


class UnpicklableOnceUsed(nn.Module):
    """Keeps a closure made at its first call (a lazily built helper): a fresh module pickles, a used one cannot."""

    def forward(self, x):
        if not hasattr(self, "describe"):
            self.describe = lambda: f"sign layer, first called on {tuple(x.shape)}"
        return quant.sign_ste(x, zero_value=1.0)


class DecayAsBuffer(SpecModule):
    """A leaky neuron whose decay, which the subject declares trainable, is a registered buffer: computed right, and no
    gradient can reach it."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, example.params, example.hyper)
        beta = self._parameters.pop("beta")
        self.register_buffer("beta", beta.detach())


class KeepsFirstParameters(PersistentLeaky):
    """Takes its parameters at the first call and keeps those tensors (a cache filled once): a fresh module under
    functional_call keeps the tensors it was lent, and a used one goes on computing with its own first parameters
    where functional_call gives others."""

    def step_parameters(self) -> dict[str, torch.Tensor]:
        if not hasattr(self, "kept"):
            self.kept = super().step_parameters()
        return self.kept


class IgnoresThresholdOnLoad(SpecModule):
    """A ``_load_from_state_dict`` that keeps its own threshold whatever the state_dict holds (a key silently
    ignored): a strict load raises nothing and the loaded module computes with the value it was built with."""

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        state_dict[prefix + "threshold"] = self.threshold.detach().clone()
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class CopiesOnAssign(SpecModule):
    """A ``_load_from_state_dict`` that copies into its own parameters even under ``assign=True`` (it drops the
    flag): the module computes right, but holds none of the loaded tensors (a subclass weight would be lost)."""

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, dict(local_metadata, assign_to_params_buffers=False),
                                      *args, **kwargs)


class TiedThreshold(SpecModule):
    """Its threshold also held as a second parameter over the same memory (tied weights): torch.save keeps the
    sharing, safetensors refuses to write shared tensors. Built in float32 (the cell's dtype): a conversion would
    untie them."""

    def __init__(self, example: Example):
        super().__init__(neurons.leaky, {k: v.float() for k, v in example.params.items()}, example.hyper)
        self.threshold_alias = nn.Parameter(self.threshold.data)


class _Setting:
    """A plain object kept in the state_dict (extra state): not among torch.load(weights_only=True)'s globals."""

    def __init__(self, zero_value: float):
        self.zero_value = zero_value


class SettingInExtraState(nn.Module):
    """A sign layer that saves its setting as an object of its own class in the state_dict (``get_extra_state``):
    ``torch.load(weights_only=True)``, torch's default since 2.6, refuses to read it back."""

    def __init__(self):
        super().__init__()
        self.setting = _Setting(1.0)

    def get_extra_state(self):
        return self.setting

    def set_extra_state(self, state):
        self.setting = state

    def forward(self, x):
        return quant.sign_ste(x, zero_value=self.setting.zero_value)


class ScaleNotFollowingTo(nn.Module):
    """A sign layer whose output scale is a plain tensor attribute (not a buffer): ``.double()`` and ``.half()``
    leave it in float32."""

    def __init__(self):
        super().__init__()
        self.scales = [torch.ones(())]

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0) * self.scales[0]


class TakesFloat32Only(nn.Module):
    """A sign layer whose forward refuses any input but float32 (a float32-only kernel) without declaring it."""

    def forward(self, x):
        if x.dtype != torch.float32:
            raise TypeError(f"takes float32 input, got {x.dtype}")
        return quant.sign_ste(x, zero_value=1.0)


class TilesTimeFromRest(SpecModule):
    """A leaky neuron run in tiles of 8 time steps, each from rest (a fused kernel that does not carry the membrane
    from one tile to the next): right on sequences of up to 8 steps."""

    def forward(self, x):
        params = {name: getattr(self, name) for name in self.param_names}
        return torch.cat([self.fn(tile, **params, **self.hyper) for tile in x.split(8, dim=0)])


class AccumulatesInInt8(SpecModule):
    """A binary linear layer whose XNOR-popcount sum is kept in an 8-bit accumulator that wraps past +-127 (the STE
    gradients as spec'd): right wherever |sum| < 128, as for every K under 128 and for random signs of a wider K
    (their sums stay near sqrt(K))."""

    def forward(self, x):
        y = super().forward(x)  # weight_scaling "none", no bias: y is the sum of +-1 products
        wrapped = torch.remainder(y + 128, 256) - 128
        return y + (wrapped - y).detach()


class PacksFirst256Bits(nn.Module):
    """A packer that keeps the first 256 bits of a row (a fixed 256-bit buffer) and leaves later words 0."""

    def __init__(self, hyper):
        super().__init__()
        self.hyper = dict(hyper)

    def forward(self, x):
        words = packing.pack_signs(x, **self.hyper)
        dim = self.hyper["dim"] % words.dim()
        index = torch.arange(words.shape[dim]).reshape([-1 if d == dim else 1 for d in range(words.dim())])
        return torch.where(index * self.hyper["word_bits"] >= 256, torch.zeros_like(words), words)


def _subject(name: str, spec: str, build, *, fixed=None, param_map=None, protocol=None) -> Subject:
    return Subject(id=f"mutant.{name}", spec=spec, build=build, fixed=fixed or {}, param_map=param_map or {},
                   library="mutants", protocol=protocol)


# ------------------------------------------------------------------------------------------------ modes and batches


class CountsInputsInEval(nn.Module):
    """A running mean of its inputs updated on every forward, eval mode included (a BatchNorm that forgot
    ``if self.training``): the output is the sign's, but inference moves the statistics."""

    def __init__(self, track_in_eval: bool = True):
        super().__init__()
        self.track_in_eval = track_in_eval
        self.register_buffer("running_mean", torch.zeros(()))

    def forward(self, x):
        if self.training or self.track_in_eval:
            with torch.no_grad():
                self.running_mean.mul_(0.9).add_(0.1 * x.detach().mean().to(self.running_mean.dtype))
        return quant.sign_ste(x, zero_value=1.0)


class EvalPathDropsZeroValue(nn.Module):
    """An inference path of its own in eval mode that computes sign(0) = -1 (the training path is right)."""

    def forward(self, x):
        return quant.sign_ste(x, zero_value=1.0 if self.training else -1.0)


class ClipsInputInPlaceInEval(nn.Module):
    """An eval-mode fast path that clips the caller's input in place before the sign (the output is right)."""

    def forward(self, x):
        if not self.training:
            with torch.no_grad():
                x.clamp_(-1.0, 1.0)
        return quant.sign_ste(x, zero_value=1.0)


class TrainForgetsChildren(nn.Module):
    """``train()`` overridden to set its own flag only (``eval()`` recurses through ``nn.Module``): after
    ``model.eval(); model.train()`` its part stays in eval mode, where that part computes sign(0) = -1."""

    def __init__(self):
        super().__init__()
        self.part = EvalPathDropsZeroValue()

    def forward(self, x):
        return self.part(x)

    def train(self, mode: bool = True):
        if not mode:
            return super().train(False)
        self.training = True
        return self


class CentresOverBatch(SpecModule):
    """A binary linear layer that subtracts its output's mean over the batch (BatchNorm's centring in training mode):
    each sample's output depends on the others of its batch."""

    def forward(self, x):
        y = super().forward(x)
        return y - y.mean(dim=0, keepdim=True)


# ------------------------------------------------------------------------------------------------ NIR exchange
# A toy library whose network (Linear + an Euler LIF at dt) is exactly what NIR's equations say: its exchange is
# correct (the control), and the mutants break its exporter or its importer.
TOY_DT = 1e-3


class ToyLifNet(nn.Module):
    """Linear(4, 3), then ``v += dt / tau * (v_leak - v + r I)``, a spike where ``v > v_threshold`` and ``v = v_reset``
    there (``resets=False``: no reset)."""

    def __init__(self, linear: nn.Linear, tau, r, v_threshold, v_reset, resets: bool = True):
        super().__init__()
        self.linear = linear
        self.tau, self.r, self.v_threshold, self.v_reset = (torch.as_tensor(v, dtype=linear.weight.dtype)
                                                           for v in (tau, r, v_threshold, v_reset))
        self.resets = resets

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v, spikes = None, []
        for current in self.linear(x):
            v = torch.zeros_like(current) if v is None else v
            v = v + TOY_DT / self.tau * (-v + self.r * current)
            spike = v > self.v_threshold
            v = torch.where(spike, self.v_reset, v) if self.resets else v
            spikes.append(spike.to(current.dtype))
        return torch.stack(spikes)


def _toy_network(example: Example) -> nn.Module:
    from conformance.subjects import Network, network_linear

    ones = torch.ones(3)
    return Network(ToyLifNet(network_linear(example), 2 * TOY_DT * ones, 2 * ones, ones, 0 * ones),
                   lambda net, x: net(x))


def _toy_export(tau_unit: float, scalar_params: bool = False, neuron: str = "LIF", transposed: bool = False):
    """``scalar_params``: the LIF's parameters written once for all its neurons (0-d arrays, as norse's and sinabs'
    exporters write scalar parameters), unchecked: the file cannot be read back (nir.read infers the types).
    ``neuron``: the NIR node type the neuron is written as (``Threshold``: one the reference defines no semantics for).
    ``transposed``: the weight written as (in, out), so the graph declares 3 inputs where the network takes 4."""
    def export(net: ToyLifNet, x: torch.Tensor):
        import nir

        weight, bias = net.linear.weight.detach().numpy(), net.linear.bias.detach().numpy()
        params = dict(tau=net.tau.numpy() * tau_unit, r=net.r.numpy(), v_leak=0 * net.r.numpy(),
                      v_threshold=net.v_threshold.numpy(), v_reset=net.v_reset.numpy())
        if transposed:
            weight, bias = weight.T.copy(), bias[:1].repeat(weight.shape[1])
            params = {k: v[:1].repeat(weight.shape[0]) for k, v in params.items()}
        if neuron == "Threshold":
            params = dict(threshold=params["v_threshold"])
        if not scalar_params:
            return nir.NIRGraph.from_list(nir.Affine(weight=weight, bias=bias), getattr(nir, neuron)(**params))
        nodes = {"input": nir.Input(input_type={"input": torch.tensor(weight.shape[1:]).numpy()}),
                 "affine": nir.Affine(weight=weight, bias=bias),
                 "lif": nir.LIF(**{k: v[0] for k, v in params.items()}),
                 "output": nir.Output(output_type={"output": torch.tensor(weight.shape[:1]).numpy()})}
        return nir.NIRGraph(nodes=nodes, edges=[("input", "affine"), ("affine", "lif"), ("lif", "output")],
                            type_check=False)

    return export


def _raises(*args):
    raise RuntimeError("the converter does not support this network")


def _toy_load(resets: bool, runs: bool = True):
    """``runs=False``: the imported network is built, and raises when it is run."""
    def load(graph, dt: float, x: torch.Tensor):
        affine = next(n for n in graph.nodes.values() if type(n).__name__ == "Affine")
        lif = next(n for n in graph.nodes.values() if type(n).__name__ == "LIF")
        linear = nn.Linear(*affine.weight.shape[::-1]).to(x.dtype)
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(affine.weight))
            linear.bias.copy_(torch.as_tensor(affine.bias))
        return ToyLifNet(linear, lif.tau, lif.r, lif.v_threshold, lif.v_reset, resets=resets) if runs else _raises

    return load


def _toy_subject(name: str, *, tau_unit: float = 1.0, resets: bool = True, scalar_params: bool = False,
                 export_raises: bool = False, import_raises: bool = False, runs: bool = True, neuron: str = "LIF",
                 transposed: bool = False) -> Subject:
    """A toy network subject whose library (``mutants.<name>``) has the NIR exchange built as asked."""
    from conformance.transforms.nir import Exchange, register_exchange

    library = f"mutants.{name}"
    export = _raises if export_raises else _toy_export(tau_unit, scalar_params, neuron, transposed)
    load = _raises if import_raises else _toy_load(resets, runs)
    register_exchange(Exchange(library, TOY_DT, export, load))
    return Subject(id=f"mutant.{name}", spec="model.snn_network", build=_toy_network, library=library,
                   formats=frozenset({"nir"}), dtypes=frozenset({"float32"}))


#: the correct toy exchange, the control of the NIR mutants
NIR_CONTROL = _toy_subject("nir_toy")


_SIGN = {"zero_value": 1.0}
_LEAKY = {"reset_mechanism": "subtract", "reset_delay": True, "surrogate": "fast_sigmoid", "time_dim": 0}
_MINMAX_INT4 = {"bits": 4, "symmetric": False, "group_size": 4}
_NF4_DOUBLE_QUANT = {"quant_type": "nf4", "compress_statistics": True, "blocksize": 64}


def _persistent(name: str, module) -> Subject:
    """A leaky neuron subject whose call protocol builds ``module`` (the one-call view is the spec itself)."""
    return _subject(name, "neuron.leaky", lambda ex: SpecModule(neurons.leaky, ex.params, ex.hyper),
                    fixed={**_LEAKY, "min_steps": 3}, param_map={"beta": "beta", "threshold": "threshold"},
                    protocol=CallProtocol(module))


#: the clean persistent neuron, the control of the three state mutants
PERSISTENT = _persistent("persistent_leaky", PersistentLeaky)


#: the subjects of two mutant cells each
KEEPS_FIRST = _persistent("keeps_first_parameters", KeepsFirstParameters)
RETURNS_STATE_BUFFER = _persistent("returns_state_buffer", ReturnsStateBuffer)
COMPILE_PATH = _subject("compile_path_drops_zero_value", "quant.sign_ste", lambda ex: CompilePathDropsZeroValue(),
                        fixed=_SIGN)

#: the size-edge mutants (sequences past a tile of 8 steps, sums past an 8-bit accumulator, rows past 256 bits):
#: caught only by the spec's size_edges (suites/test_size_edges.py)
TILES_TIME_FROM_REST = _subject("tiles_time_from_rest", "neuron.leaky",
                                lambda ex: TilesTimeFromRest(neurons.leaky, ex.params, ex.hyper), fixed=dict(_LEAKY),
                                param_map={"beta": "beta", "threshold": "threshold"})
ACCUMULATES_IN_INT8 = _subject("accumulates_in_int8", "layer.binary_linear",
                               lambda ex: AccumulatesInInt8(binary.binary_linear, ex.params, ex.hyper),
                               fixed={"input_quant": "ste", "weight_scaling": "none", "bias": False, "zero_value": 1.0},
                               param_map={"weight": "weight"})
PACKS_FIRST_256_BITS = _subject("packs_first_256_bits", "packing.pack_signs", lambda ex: PacksFirst256Bits(ex.hyper))

MUTANTS: tuple[Mutant, ...] = (
    Mutant(_subject("sign_zero_wrong", "quant.sign_ste", lambda ex: SignZeroWrong(), fixed=_SIGN),
           "eager", "forward_matches_spec", "forward-mismatch", "sign(0) = -1 instead of +1"),
    Mutant(_subject("ste_without_clipping", "quant.sign_clipped_ste",
                    lambda ex: SteWithoutClipping(ex.hyper["threshold"]),
                    fixed={"zero_value": 1.0, "threshold": 0.5}),
           "eager", "grad_matches_spec", "grad-mismatch", "identity STE where clipped STE is spec'd"),
    Mutant(_subject("wrong_bit_order", "packing.pack_signs", lambda ex: WrongBitOrder(ex.hyper),
                    fixed={"bit_order": "lsb"}),
           "eager", "forward_matches_spec", "forward-mismatch", "MSB-first packing where LSB-first is spec'd"),
    Mutant(_subject("wrong_past_first_word", "packing.pack_signs", lambda ex: WrongPastFirstWord(ex.hyper),
                    fixed={"word_bits": 32}),
           "eager", "forward_matches_spec", "forward-mismatch", "words after the first of a row packed a bit off"),
    Mutant(_subject("rounds_ties_up", "quant.uniform",
                    lambda ex: SpecModule(quant.uniform_quantize, {}, dict(ex.hyper, rounding="half_up")),
                    fixed={"rounding": "half_even", "channel_dim": None}),
           "eager", "forward_matches_spec", "forward-mismatch", "ties rounded up where half-to-even is spec'd"),
    Mutant(_subject("fake_quantize_ties_up", "affine.fake_quantize", FakeQuantizeTiesUp, fixed={"axis": None}),
           "eager", "forward_matches_spec", "forward-mismatch", "fake quantization rounding .5 ties up, not to even"),
    Mutant(_subject("fp8_scale_without_floor", "fp8.weight_only_linear",
                    lambda ex: SpecModule(fp8.weight_only_linear, ex.params, {**ex.hyper, "eps": 0.0}),
                    param_map={"bias": "bias"}),
           "eager", "forward_matches_spec", "forward-mismatch",
           "the fp8 weight's scale amax / max_finite with no lower bound (torchao's rule): a zero row's codes are "
           "0 / 0 = NaN"),
    Mutant(_subject("minmax_integer_zero_point", "affine.minmax_weight_linear",
                    lambda ex: MinmaxWeightLinear(ex, integer_zero_point=True), fixed=_MINMAX_INT4,
                    param_map={"weight": "weight", "bias": "bias"}),
           "eager", "forward_matches_spec", "forward-mismatch",
           "int4 weights with the shift rounded to an integer zero point, where the float shift is spec'd"),
    Mutant(_subject("minmax_weight_without_ste", "affine.minmax_weight_linear",
                    lambda ex: MinmaxWeightLinear(ex, straight_through=False), fixed=_MINMAX_INT4,
                    param_map={"weight": "weight", "bias": "bias"}),
           "eager", "grad_matches_spec", "grad-mismatch",
           "the quantized weight detached: no gradient for the float weight, where straight through is spec'd"),
    Mutant(_subject("nf4_code_off_by_one", "blockwise.linear_4bit",
                    lambda ex: Linear4bitDefect(ex, code_off_by_one=True), fixed=_NF4_DOUBLE_QUANT,
                    param_map={"bias": "bias"}),
           "eager", "forward_matches_spec", "forward-mismatch",
           "an NF4 code book entry one code off (0.7230 read as 0.5626)"),
    Mutant(_subject("double_quant_without_offset", "blockwise.linear_4bit",
                    lambda ex: Linear4bitDefect(ex, offset_dropped=True), fixed=_NF4_DOUBLE_QUANT,
                    param_map={"bias": "bias"}),
           "eager", "forward_matches_spec", "forward-mismatch",
           "the absmax double-quantized without the mean offset, where bitsandbytes subtracts and adds it back"),
    Mutant(_subject("sign_by_division", "quant.binarize_weight", SignByDivision),
           "eager", "forward_matches_spec", "forward-mismatch", "sign(0) as 0 / 0 = NaN"),
    Mutant(_subject("lsq_rounds_half_away", "quant.lsq", LsqHalfAway, param_map={"step": "step"}),
           "eager", "forward_matches_spec", "forward-mismatch", "LSQ ties rounded away from zero, not to even"),
    Mutant(_subject("reset_order", "neuron.leaky", reset_from_current_step, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "eager", "forward_matches_spec", "forward-mismatch", "reset from the current instead of the previous step"),
    Mutant(_subject("wrong_surrogate_slope", "surrogate.fast_sigmoid", lambda ex: WrongSurrogateSlope(ex.hyper)),
           "eager", "grad_matches_spec", "grad-mismatch", "surrogate slope halved"),
    Mutant(_subject("surrogate_in_float32", "surrogate.fast_sigmoid", lambda ex: SurrogateInFloat32(ex.hyper)),
           "eager", "grad_matches_spec", "grad-mismatch", "computes in float32 in a float64 cell", "float64"),
    Mutant(_subject("wrong_far_from_threshold", "surrogate.fast_sigmoid",
                    lambda ex: WrongFarFromThreshold(ex.hyper), fixed={"strict": True}),
           "eager", "grad_matches_spec", "grad-mismatch", "surrogate gradient wrong only for |x| > 10"),
    Mutant(_subject("no_setup_context", "quant.sign_ste", lambda ex: NoSetupContext(), fixed=_SIGN),
           "grad", "preserves_grad", "autograd-function-without-setup_context",
           "autograd.Function without setup_context under torch.func.grad"),
    Mutant(_subject("item_in_forward", "quant.sign_ste", lambda ex: ItemInForward(ex.x), fixed=_SIGN,
                    param_map={}),
           "compile_aot_eager", "no_graph_breaks", "graph-break:", ".item() feeding Python control flow"),
    Mutant(_subject("getattr_delegation", "quant.sign_ste",
                    lambda ex: GetattrDelegation(ex.hyper), fixed=_SIGN),
           "deepcopy", "preserves_forward", "deepcopy-getattr-recursion", "__getattr__ delegation (LayerContainer)"),
    Mutant(_subject("closure_attribute", "quant.sign_ste", lambda ex: ClosureAttribute(), fixed=_SIGN),
           "pickle", "preserves_forward", "pickle-failed", "a lambda stored on the module"),
    Mutant(_subject("hidden_state_not_reset", "neuron.leaky",
                    HiddenStateNotReset, fixed=dict(_LEAKY)),
           "eager", "deterministic", "nondeterministic", "membrane kept between calls"),
    Mutant(_persistent("resets_every_call", ResetsEveryCall),
           "eager", "calls_compose", "state-lost-between-calls", "starts every call from rest (forgets the state "
           "between calls fed one step each)"),
    Mutant(_persistent("forgets_state_when_copied", ForgetsStateWhenCopied),
           "deepcopy", "preserves_forward", "state-lost-between-calls", "the copy resets its state on every call"),
    Mutant(_persistent("drops_held_state_when_copied", DropsHeldStateWhenCopied),
           "deepcopy", "continues_mid_sequence", "copy-lost-state",
           "__getstate__ drops the held membrane: a copy taken mid-sequence restarts from rest"),
    Mutant(_persistent("takes_state_from_original", TakesStateFromOriginal),
           "pickle", "continues_mid_sequence", "copy-changed-original",
           "__getstate__ moves the held membrane to the copy: the original restarts mid-sequence from rest"),
    Mutant(_subject("decay_as_buffer", "neuron.leaky", DecayAsBuffer, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "eager", "grad_matches_spec", "parameter-not-trainable",
           "the decay the subject declares trainable is a buffer"),
    Mutant(RETURNS_STATE_BUFFER,
           "eager", "returns_no_state", "output-aliases-state", "a submodule returns its own membrane buffer"),
    Mutant(_subject("stores_input", "quant.sign_ste", lambda ex: StoresInput(), fixed=_SIGN),
           "vmap", "no_state_leak", "state-leak", "hidden state mutated under vmap (batched tensor left behind)"),
    Mutant(_subject("stores_input_out_of_sight", "quant.sign_ste", lambda ex: StoresInputOutOfSight(), fixed=_SIGN),
           "vmap", "no_state_leak", "state-leak", "a batched tensor left in a plain object under a private attribute"),
    Mutant(_subject("stores_input_on_class", "quant.sign_ste", lambda ex: StoresInputOnClass(), fixed=_SIGN),
           "vmap", "no_state_leak", "state-leak", "a batched tensor left in a dict the class holds"),
    Mutant(_subject("leaves_global_hook", "quant.sign_ste", lambda ex: LeavesGlobalHook(), fixed=_SIGN),
           "functional_call", "no_state_leak", "state-leak", "a global module hook installed and left behind"),
    Mutant(_subject("marks_swapped_parameters", "neuron.leaky", MarksSwappedParameters, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "functional_call", "no_state_leak", "state-leak", "a buffer written only while the parameters are swapped"),
    Mutant(_subject("statistics_outside_state_dict", "model.image_classifier",
                    lambda ex: RunningShiftOutsideStateDict()),
           "state_dict", "preserves_forward", "transform-changed-forward",
           "running statistics kept outside the state_dict: a loaded copy does not compute what the source does"),
    Mutant(_subject("statistics_lost_by_deepcopy", "model.image_classifier", lambda ex: RunningShiftResetOnCopy()),
           "deepcopy_used", "preserves_forward", "transform-changed-forward",
           "a deepcopy of a used module starts its running statistics afresh"),
    Mutant(_subject("unwraps_on_eval", "quant.sign_ste", lambda ex: UnwrapsOnEval(), fixed=_SIGN),
           "module_contract", "module_contract", "module-method-returned-other", "eval() returns the wrapped module"),
    Mutant(_subject("forward_only_wrong_forward", "quant.sign_ste", lambda ex: ForwardOnlyWrongForward(),
                    fixed=_SIGN),
           "eager", "forward_matches_spec", "forward-mismatch", "an inference kernel (no backward) computing -sign(x)"),
    Mutant(_subject("overwrites_hooked_output", "quant.sign_ste", lambda ex: OverwritesHookedOutput(), fixed=_SIGN),
           "forward_hooks", "hook_capture_intact", "hook-capture-mutated", "a hooked submodule's output is "
           "overwritten in place"),
    Mutant(_subject("counts_calls", "neuron.leaky", CountsCalls, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "checkpoint", "state_matches_eager", "state-advanced-twice", "state advanced again by recomputation"),
    Mutant(_subject("wrong_dtype", "quant.sign_ste", lambda ex: WrongDtype(), fixed=_SIGN),
           "eager", "output_dtype", "dtype-mismatch", "always returns float32", "float64"),
    Mutant(_subject("shallow_copy", "quant.sign_ste", lambda ex: ShallowCopy(None), fixed=_SIGN),
           "deepcopy", "copy_independent", "copy-shares-state", "__deepcopy__ shares the parameters"),
    Mutant(_subject("data_dependent_branch", "quant.sign_ste", lambda ex: DataDependentBranch(), fixed=_SIGN),
           "jit_trace", "preserves_forward", "transform-changed-forward", "Python branch on tensor data, frozen by "
           "tracing"),
    Mutant(_subject("inplace_on_saved_output", "surrogate.sigmoid", lambda ex: InplaceOnSavedOutput()),
           "forward_hooks", "preserves_grad", "inplace-modified-saved-tensor",
           "returns a tensor saved for backward; the downstream in-place op breaks backward"),
    Mutant(_subject("reversed_on_cuda", "quant.sign_ste", lambda ex: ReversedOnCuda(), fixed=_SIGN),
           "cpu_vs_cuda", "preserves_forward", "transform-changed-forward", "CUDA path computes -sign(x)",
           device="cuda"),
    Mutant(_subject("autocast_forgets_scale", "quant.sign_ste", lambda ex: AutocastForgetsScale(), fixed=_SIGN),
           "autocast_bf16", "preserves_forward", "transform-changed-forward",
           "mixed-precision path drops the output scaling", device="cuda"),
    Mutant(_persistent("breaks_graph_once_used", BreaksGraphOnceUsed), "compile_aot_eager_used", "no_graph_breaks",
           "graph-break:", "a side path taken only after use breaks the compiled graph"),
    Mutant(_subject("shares_default_part", "quant.sign_ste", lambda ex: SharesDefaultPart(), fixed=_SIGN),
           "module_contract", "independent_builds", "module-shared-between-builds",
           "every instance holds the one part its default argument made"),
    Mutant(_subject("shares_default_tensor", "quant.sign_ste", lambda ex: SharesDefaultScale(), fixed=_SIGN),
           "module_contract", "independent_builds", "tensor-shared-between-builds",
           "every instance's parameter wraps the one tensor its default argument made"),
    Mutant(_subject("shares_class_tensor", "quant.sign_ste", lambda ex: SharesClassScale(), fixed=_SIGN),
           "module_contract", "independent_builds", "tensor-shared-between-builds",
           "every instance computes with the one scale tensor its class holds"),
    Mutant(_subject("shares_default_object", "quant.sign_ste", lambda ex: SharesDefaultSetting(), fixed=_SIGN),
           "module_contract", "independent_builds", "object-shared-between-builds",
           "every instance holds the one mutable setting its default argument made"),
    Mutant(_subject("export_path_updates_statistics", "model.image_classifier",
                    lambda ex: ExportPathUpdatesStatisticsOtherwise()),
           "export", "no_state_leak", "state-leak",
           "the export path updates the shared running mean with another momentum than the eager forward"),
    Mutant(_subject("export_path_drops_zero_value", "quant.sign_ste", lambda ex: ExportPathDropsZeroValue(),
                    fixed=_SIGN),
           "onnx", "preserves_forward", "transform-changed-forward",
           "the exported path computes sign(0) = 0 where the module gives +1"),
    Mutant(_toy_subject("nir_tau_in_steps", tau_unit=1 / TOY_DT), "nir_graph", "nir_graph_matches_module",
           "nir-graph-changed-forward", "the exporter writes tau in time steps where NIR declares seconds"),
    Mutant(_toy_subject("nir_import_drops_reset", resets=False), "nir_roundtrip", "preserves_forward",
           "transform-changed-forward", "the importer builds the neuron without its reset"),
    Mutant(_toy_subject("nir_export_raises", export_raises=True), "nir_graph", "nir_graph_matches_module",
           "nir-export-failed", "the exporter raises on the network"),
    Mutant(_toy_subject("nir_scalar_params", scalar_params=True), "nir_roundtrip", "preserves_forward",
           "nir-file-changed-graph", "the exporter writes scalar neuron parameters: the file cannot be read back"),
    Mutant(_toy_subject("nir_import_raises", import_raises=True), "nir_roundtrip", "preserves_forward",
           "nir-import-failed", "the importer raises on the graph"),
    Mutant(_toy_subject("nir_imported_raises", runs=False), "nir_roundtrip", "preserves_forward",
           "nir-run-failed", "the imported network raises when run"),
    Mutant(_toy_subject("nir_threshold_node", neuron="Threshold"), "nir_graph", "nir_graph_matches_module",
           "nir-graph-unsupported", "the exporter writes the neuron as a node type without reference semantics"),
    Mutant(_toy_subject("nir_weight_transposed", transposed=True), "nir_graph", "nir_graph_matches_module",
           "nir-reference-failed", "the exporter writes the weight transposed: the graph cannot take the input"),
    Mutant(_subject("no_export_path", "quant.sign_ste", lambda ex: NoExportPath(), fixed=_SIGN),
           "onnx", "preserves_forward", "onnx-export-failed", "the layer has no path for export (it raises there)"),
    Mutant(_subject("export_path_without_reset", "neuron.leaky", ExportPathWithoutReset, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "onnx", "preserves_forward", "transform-changed-forward",
           "the neuron's export path drops the membrane reset: the exported graph spikes otherwise"),
    Mutant(_subject("exports_unknown_op", "quant.sign_ste", lambda ex: ExportsUnknownOp(), fixed=_SIGN),
           "onnx", "preserves_forward", "onnx-run-failed",
           "the export path writes an operator of its own domain, which onnxruntime does not know"),
    Mutant(_subject("clips_input_in_place", "quant.sign_ste", lambda ex: ClipsInputInPlace(), fixed=_SIGN),
           "eager", "input_intact", "input-modified", "clips the caller's input in place"),
    Mutant(_subject("reads_memory_as_contiguous", "quant.sign_ste", lambda ex: ReadsMemoryAsContiguous(),
                    fixed=_SIGN),
           "strided_input", "preserves_forward", "transform-changed-forward",
           "reads the input's memory as if it were contiguous"),
    Mutant(_subject("jvp_disagrees_with_backward", "quant.sign_ste", lambda ex: JvpDisagreesWithBackward(),
                    fixed=_SIGN),
           "jvp", "preserves_grad", "transform-changed-grad", "a forward-mode rule that doubles the tangent"),
    Mutant(COMPILE_PATH, "compile_inductor", "preserves_forward", "transform-changed-forward",
           "the compiled path computes sign(0) = 0 where the module gives +1"),
    Mutant(COMPILE_PATH, "compile_dynamic", "preserves_forward", "transform-changed-forward",
           "the compiled path computes sign(0) = 0 where the module gives +1"),
    Mutant(_subject("script_path_drops_zero_value", "quant.sign_ste", lambda ex: ScriptPathDropsZeroValue(),
                    fixed=_SIGN),
           "jit_script", "preserves_forward", "transform-changed-forward",
           "the scripted path computes sign(0) = 0 where the module gives +1"),
    Mutant(_subject("unpicklable_once_used", "quant.sign_ste", lambda ex: UnpicklableOnceUsed(), fixed=_SIGN),
           "pickle_used", "preserves_forward", "pickle-failed", "a closure kept from the first call"),
    Mutant(KEEPS_FIRST, "functional_call", "no_state_leak", "state-leak",
           "keeps the tensors functional_call lent it for its first call"),
    Mutant(KEEPS_FIRST, "functional_call_used", "preserves_grad", "transform-changed-grad",
           "used, computes with the parameters of its first call, not the ones functional_call gives"),
    Mutant(_persistent("counts_steps_persistent", CountsStepsPersistent), "checkpoint_used", "state_matches_eager",
           "state-advanced-twice", "a step counter advanced again by recomputation"),
    Mutant(_subject("lsq_with_idle_dither", "quant.lsq", LsqWithIdleDither, param_map={"step": "step"}),
           "per_sample_grad", "preserves_grad", "per-sample-grad-failed",
           "draws random numbers in forward (a dither of amplitude 0), which vmap refuses"),
    Mutant(RETURNS_STATE_BUFFER, "forward_hooks_used", "preserves_grad", "inplace-modified-saved-tensor",
           "the membrane buffer a submodule returns is overwritten in place while backward still needs it"),
    Mutant(_subject("ignores_threshold_on_load", "neuron.leaky", lambda ex: IgnoresThresholdOnLoad(
                        neurons.leaky, ex.params, ex.hyper), fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "save_load", "preserves_forward", "transform-changed-forward",
           "a _load_from_state_dict that keeps its own threshold: the saved one is silently ignored"),
    Mutant(_subject("copies_on_assign", "neuron.leaky", lambda ex: CopiesOnAssign(neurons.leaky, ex.params,
                                                                                   ex.hyper), fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "load_assign", "preserves_forward", "assign-not-loaded",
           "a _load_from_state_dict that copies into its own parameters under assign=True"),
    Mutant(_subject("tied_threshold", "neuron.leaky", TiedThreshold, fixed=dict(_LEAKY),
                    param_map={"beta": "beta", "threshold": "threshold"}),
           "safetensors", "preserves_forward", "safetensors-refused",
           "two parameters over one memory (tied weights), which safetensors refuses to write"),
    Mutant(_subject("setting_in_extra_state", "quant.sign_ste", lambda ex: SettingInExtraState(), fixed=_SIGN),
           "save_load", "preserves_forward", "weights-only-load-failed",
           "an object of its own class in the state_dict, which torch.load(weights_only=True) refuses"),
    Mutant(_subject("scale_not_following_to", "quant.sign_ste", lambda ex: ScaleNotFollowingTo(), fixed=_SIGN),
           "to_float64", "forward_matches_spec", "conversion-incomplete",
           "a plain tensor attribute in a list that .double() leaves in float32"),
    Mutant(_subject("takes_float32_only", "quant.sign_ste", lambda ex: TakesFloat32Only(), fixed=_SIGN),
           "to_float64", "forward_matches_spec", "conversion-failed",
           "a float32-only forward that refuses the converted module's input, not declared"),
    Mutant(_subject("scale_not_following_half", "quant.sign_ste", lambda ex: ScaleNotFollowingTo(), fixed=_SIGN),
           "half", "grad_matches_spec", "conversion-incomplete",
           "a plain tensor attribute in a list that .half() leaves in float32"),
    Mutant(TILES_TIME_FROM_REST, "eager", "forward_matches_spec", "forward-mismatch",
           "runs time in tiles of 8 steps, each from rest: the membrane is lost at step 9"),
    Mutant(ACCUMULATES_IN_INT8, "eager", "forward_matches_spec", "forward-mismatch",
           "an 8-bit popcount accumulator that wraps past +-127"),
    Mutant(PACKS_FIRST_256_BITS, "eager", "forward_matches_spec", "forward-mismatch",
           "a 256-bit row buffer: the words past it stay 0"),
    Mutant(_subject("counts_inputs_in_eval", "quant.sign_ste", lambda ex: CountsInputsInEval(), fixed=_SIGN),
           "eval", "eval_keeps_state", "state-changed-in-eval",
           "running statistics updated by a forward in eval mode"),
    Mutant(_subject("eval_path_drops_zero_value", "quant.sign_ste", lambda ex: EvalPathDropsZeroValue(), fixed=_SIGN),
           "eval", "preserves_forward", "transform-changed-forward", "eval mode's own path computes sign(0) = -1"),
    Mutant(_subject("clips_input_in_place_in_eval", "quant.sign_ste", lambda ex: ClipsInputInPlaceInEval(),
                    fixed=_SIGN),
           "eval", "input_intact", "input-modified", "an eval-mode path that clips the caller's input in place"),
    Mutant(_subject("train_forgets_children", "quant.sign_ste", lambda ex: TrainForgetsChildren(), fixed=_SIGN),
           "module_contract", "module_contract", "mode-not-propagated",
           "a train() override that leaves its submodules in eval mode"),
    Mutant(_subject("train_forgets_children_forward", "quant.sign_ste", lambda ex: TrainForgetsChildren(),
                    fixed=_SIGN),
           "module_contract", "preserves_forward", "transform-changed-forward",
           "after eval() and train() a submodule still computes in eval mode (the chain's modes are not put back)"),
    Mutant(_subject("centres_over_batch", "layer.binary_linear",
                    lambda ex: CentresOverBatch(binary.binary_linear, ex.params, ex.hyper),
                    fixed={"bias": True}, param_map={"weight": "weight", "bias": "bias"}),
           "vmap", "samples_independent", "batch-coupled", "an output centred over the batch (vmap runs each alone)"),
    Mutant(_subject("centres_over_batch_per_sample", "layer.binary_linear",
                    lambda ex: CentresOverBatch(binary.binary_linear, ex.params, ex.hyper),
                    fixed={"bias": True}, param_map={"weight": "weight", "bias": "bias"}),
           "per_sample_grad", "samples_independent", "batch-coupled",
           "an output centred over the batch, whose per-sample gradients do not exist"),
)

#: transforms (fnmatch patterns) no mutant fails, and why: each runs another project's code on the module, or the
#: code of a transform that has a mutant, where no defect of a module's own is modelled
WITHOUT_MUTANT = {
    "autocast_fp16": "autocast_bf16's code in float16 on CUDA; autocast_forgets_scale runs in the GPU run",
    "bdpy_features*": "bdpy's own feature extractor: what it shows on a correct module is bdpy's (known failures "
                      "with reproducers); hook_capture_intact and preserves_grad fail on forward_hooks' mutants",
    "brevitas_*": "brevitas' own ONNX exporters, which take brevitas layers only; preserves_forward through ONNX "
                  "fails on the onnx mutants",
    "nir_to:*": "a library's NIR importer given a correct graph: what it shows is the library's; every cause of the "
                "exchange has a mutant of the toy library",
    "opacus_*": "Opacus' per-sample engine: what it shows is Opacus'; the same comparison with the loop fails on "
                "per_sample_grad's mutant",
    "jit_script_used": "no module here that keeps state between calls can be scripted (TorchScript refuses the "
                       "forward of each): jit_script's own mutant runs its code",
    "module_contract_used": "the chain ends in the dtype and device it started from and a persistent neuron is reset "
                            "before each sequence: no defect that a use leaves and the chain shows is modelled",
}
