"""This project's own Triton kernels (package ``qsnn_kernels/``) as subjects, judged by the specs like any library.

CUDA cells run the compiled kernels; CPU cells run the same kernel source through Triton's interpreter
(correctness only, small drawn shapes), so every change to kernel logic is checked on a machine without a GPU.
A missing Triton makes every cell ``skip``; ``QSNN_KERNELS_INTERPRET=0`` turns the CPU cells into ``skip``.
"""

from __future__ import annotations

from typing import Iterator

from hypothesis import strategies as st
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import load_parameters

#: This project's own kernels run in Triton (its interpreter on the CPU); the GPU machine brings its own Triton.
TRITON = Library("triton", "triton", "3.9.0", gpu=False)
LIBRARY = "kernels"
REQUIRES = ("triton",)
_SRC = "qsnn_kernels/"

_ZERO_VALUES = st.sampled_from([1.0, -1.0])  # a packed bit has no 0
_BINARY_INPUTS = st.sampled_from(["ste", "clipped_ste", "approx_sign", "hardtanh_ste"])  # "none" is a float layer


def _devices() -> frozenset[str]:
    """cuda always; cpu where Triton's interpreter can run the kernels (qsnn_kernels._runtime.interpreter_problem)."""
    from qsnn_kernels._runtime import interpreter_problem

    return frozenset({"cuda"}) if interpreter_problem() else frozenset({"cpu", "cuda"})


def _build_pack(example: Example) -> nn.Module:
    from qsnn_kernels.binary import PackSigns

    h = example.hyper
    return PackSigns(dim=h["dim"], bit_order=h["bit_order"], pad=h["pad"])


def _build_matmul(example: Example) -> nn.Module:
    from qsnn_kernels.binary import BinaryMatmul

    n, k = example.params["w"].shape
    return load_parameters(BinaryMatmul(k, n, zero_value=example.hyper["zero_value"]), dict(example.params))


def _build_linear(example: Example) -> nn.Module:
    from qsnn_kernels.binary import BinaryLinear

    h = example.hyper
    n, k = example.params["weight"].shape
    module = BinaryLinear(k, n, bias="bias" in example.params, input_quant=h["input_quant"],
                          threshold=h["threshold"], zero_value=h["zero_value"], weight_scaling=h["weight_scaling"])
    return load_parameters(module, dict(example.params))


def _build_conv(example: Example) -> nn.Module:
    from qsnn_kernels.binary import BinaryConv2d

    h = example.hyper
    cout, cin_g, k, _ = example.params["weight"].shape
    module = BinaryConv2d(cin_g * h["groups"], cout, k, stride=h["stride"], padding=h["padding"],
                          dilation=h["dilation"], groups=h["groups"], bias="bias" in example.params,
                          pad_value=h["pad_value"], input_quant=h["input_quant"], threshold=h["threshold"],
                          zero_value=h["zero_value"], weight_scaling=h["weight_scaling"])
    return load_parameters(module, dict(example.params))


def _build_leaky(example: Example) -> nn.Module:
    from qsnn_kernels.lif import Leaky

    h = example.hyper
    module = Leaky(reset_mechanism=h["reset_mechanism"], reset_delay=h["reset_delay"], surrogate=h["surrogate"],
                   surrogate_alpha=h["surrogate_alpha"])
    return load_parameters(module, dict(example.params))


def _build_sj_lif(example: Example) -> nn.Module:
    from qsnn_kernels.lif import SJLIF

    h = example.hyper
    return SJLIF(h["tau"], decay_input=h["decay_input"], v_threshold=h["v_threshold"], v_reset=h["v_reset"],
                 detach_reset=h["detach_reset"], surrogate=h["surrogate"], surrogate_alpha=h["surrogate_alpha"])


# --- known failures ----------------------------------------------------------------------------------------------

_NO_JVP = ("the backward is an autograd.Function (setup_context + backward, the spec's STE/surrogate formula) "
           "without a jvp staticmethod, so forward-mode AD raises; none is defined because dynamo refuses an "
           "autograd.Function with a custom jvp (graph break gb0144), which would cost the compile cells, and the "
           "fused LIF would need a forward-mode kernel of its own")
_FUNCTION = "https://pytorch.org/docs/stable/notes/extending.html#forward-mode-ad"


_NO_ONNX = Known("onnx", cause="onnx-export-failed", link="https://pytorch.org/docs/stable/onnx_dynamo.html",
                 reason="the kernels are custom ops (qsnn_kernels::*) with fake implementations, so torch.export "
                        "captures them, but they register no ONNX translation (nor a decomposition into aten ops): "
                        "torch.onnx.export finds no ONNX function for them",
                 reproducer="reproducers/kernels/onnx_custom_op_no_translation.py")


def _known(*, differentiable: bool = True) -> tuple[Known, ...]:
    """Every kernel's entries: no ONNX translation (the onnx column applies to each of them), and no jvp."""
    if not differentiable:  # integer words (bit packing): there is no jvp to ask for
        return (_NO_ONNX,)
    return (Known("jvp", cause="jvp-unsupported", reason=_NO_JVP, link=_FUNCTION,
                  reproducer="reproducers/kernels/jvp_autograd_function_without_jvp.py"), _NO_ONNX)


#: Inapplicable by design, for every kernel subject.
NOT_APPLICABLE = {
    "jit_script": "the modules call autograd.Function.apply (the spec's STE/surrogate backward around a custom op), "
                  "which TorchScript cannot compile; TorchScript is in maintenance mode and torch.export is the "
                  "supported path (as for the specs' own row)",
    "benchmark:cpu": "on CPU the kernels run in Triton's interpreter, a correctness path thousands of times slower "
                     "than compiled code: their speed is measured on CUDA only (reports/bench/baseline-cuda.json)",
}


def subjects() -> Iterator[Subject]:
    # On cpu every example runs through Triton's interpreter (seconds each): 2 examples per cell in the ci profile
    # instead of 5; the kernels' own tests (suites/kernels/) draw many more shapes against the specs.
    common = dict(library=LIBRARY, requires=REQUIRES, devices=_devices(), not_applicable=NOT_APPLICABLE,
                  examples_scale={"cpu": 0.4})
    yield Subject(id="kernels.pack_signs", spec="packing.pack_signs", build=_build_pack,
                  fixed={"word_bits": 32}, known=_known(differentiable=False), **common)
    yield Subject(id="kernels.binary_matmul", spec="packing.binary_matmul", build=_build_matmul,
                  fixed={"word_bits": 32, "bit_order": "lsb", "zero_value": _ZERO_VALUES}, param_map={"w": "w"},
                  known=_known(), **common)
    yield Subject(id="kernels.binary_linear", spec="layer.binary_linear", build=_build_linear,
                  fixed={"input_quant": _BINARY_INPUTS, "zero_value": _ZERO_VALUES, "bias": True},
                  param_map={"weight": "weight", "bias": "bias"}, known=_known(), **common)
    yield Subject(id="kernels.binary_conv2d", spec="layer.binary_conv2d", build=_build_conv,
                  fixed={"input_quant": _BINARY_INPUTS, "zero_value": _ZERO_VALUES, "bias": True},
                  param_map={"weight": "weight", "bias": "bias"}, known=_known(), **common)
    # the LIF kernels take float32, float64 and bfloat16 and raise a TypeError naming them for any other dtype
    lif = dict(common, not_applicable={**NOT_APPLICABLE, "half": "the LIF kernels take float32, float64 or bfloat16 "
                                       "input and say so (TypeError) for float16 (qsnn_kernels/lif.py)"})
    yield Subject(id="kernels.leaky", spec="neuron.leaky", build=_build_leaky,
                  param_map={"beta": "beta", "threshold": "threshold", "graded_spikes_factor": "graded_spikes_factor"},
                  known=_known(), **lif)
    yield Subject(id="kernels.sj_lif", spec="neuron.sj_lif", build=_build_sj_lif, known=_known(), **lif)
