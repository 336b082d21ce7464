"""bitorch-engine 0.1.0 subjects: its two CPU layers, ``BinaryLinearCPP`` and ``BinaryConv2dCPP`` (C++/OpenMP
XNOR-popcount kernels, built from the sdist by ``scripts/install-libraries.sh``).

Adapter conventions (bitorch-engine's, mapped onto the specs):
- both layers count their input width in 32-bit words: ``BinaryLinearCPP(input_features, out_features)`` holds a
  weight ``(out, input_features * 32)`` and ``BinaryConv2dCPP(in_channels, ...)`` one of ``(out, in_channels * 32,
  k * k)`` (the adapter loads the spec's ``(out, in, k, k)`` weight row-major into it), so the examples draw 32 or 64
  input features / channels (the spec's shape keys ``in_features`` / ``in_channels``);
- ``BinaryLinearCPP.forward`` takes ``[batch, K]`` only (``m = x.size(0)``, ``k = x.size(1)``): ``inner_dim=False``;
- the kernels set a bit for ``x >= 0``: sign(0) = +1 (``zero_value=1.0``), for inputs and weights alike; no scale
  (``weight_scaling="none"``), no bias;
- ``BinaryConv2dCPP``'s im2col writes a 0 bit (-1) for a padded pixel: the spec's ``pad_value=-1.0``; no groups;
- neither layer has a backward (inference kernels); the gradient spec is the one of bitorch's ``QLinear`` /
  ``QConv2d`` with sign quantization (clipped STE, threshold 1), whose trained weights these layers are built to
  run (``BinaryLinearCPP.create_clone_from``). The checks of gradients fail (``backward-raised``); the forward
  checks of every transform are judged (the harness keeps a backward's failure for the gradient checks), and
  ``suites/libraries/test_bitorch_engine_adapters.py`` judges the forward against the spec under ``no_grad`` too;
- CPU only (``RuntimeMode.CPU``: the C++ code reads host memory through ``data_ptr``): no cuda cells.

Findings outside the matrix, pinned by strict xfail tests in ``suites/libraries/test_bitorch_engine_adapters.py``
(the matrix's examples avoid them: a heap overflow is no outcome, and the spec draws no such shape):
- memory safety: the packing loop ``_get_binary_col_unrolled`` writes four words per step, past the end of its
  buffer when the number of columns is not a multiple of 4: ``BinaryLinearCPP`` with ``out_features % 4 != 0``,
  ``BinaryConv2dCPP``'s 1x1 / stride 1 / unpadded path with ``H * W % 4 != 0`` (glibc aborts with "free(): invalid
  next size" on some shapes). The rows therefore draw 4 or 8 output features and input sides 2, 4 or 6 (3 only where
  the kernel's reach raises it, on the im2col path), so that a matrix run cannot corrupt a worker's heap;
- ``BinaryConv2dCPP``'s output size ignores ``dilation`` (``(H - k + 2p) / s + 1``) while its im2col applies it: a
  dilated conv returns too many rows and columns (the row fixes ``dilation=1``);
- ``BinaryConv2dCPP`` takes the output's width from the input's height: a non-square input gets a square output
  (the spec draws square inputs only).

bitorch-engine is imported only inside ``build``. Evidence links point at the repository's files; the code judged is
the 0.1.0 sdist (sha256-pinned in ``scripts/install-libraries.sh``), whose files sit at the same paths.
"""

from __future__ import annotations

from typing import Iterator

from hypothesis import strategies as st
from torch import nn

from ..core.types import Example, Known, Library, Subject
from . import load_parameters as _load

#: No wheel exists: scripts/install-libraries.sh builds its two CPU extensions from the pinned sdist (not on the GPU).
LIBRARY = Library("bitorch_engine", "bitorch-engine", "0.1.0", gpu=False,
                  sdist_sha256="b8b39acdc6d958035be0b88456d4812a3c1960e29710e1fd475ee8067894256f")
REQUIRES = ("bitorch_engine",)
SOURCE = "https://github.com/hpi-xnor/bitorch-engine/blob/main/bitorch_engine"
_LINEAR_SRC = f"{SOURCE}/layers/qlinear/binary/cpp"
_CONV_SRC = f"{SOURCE}/layers/qconv/binary/cpp"

#: One or two 32-bit words of input features / channels (the layers' ``input_features`` / ``in_channels``).
_WORDS = st.sampled_from([32, 64])
#: Output features in multiples of 4, input sides of 2, 4, 6: see "memory safety" above.
_OUT_FEATURES = st.sampled_from([4, 8])
_SIDES = st.sampled_from([2, 4, 6])


# ------------------------------------------------------------------------------------------------ adapters


def build_binary_linear(example: Example) -> nn.Module:
    from bitorch_engine.layers.qlinear.binary.cpp import BinaryLinearCPP

    out_features, in_features = example.params["weight"].shape
    return _load(BinaryLinearCPP(in_features // 32, out_features), {"weight": example.params["weight"]})


def build_binary_conv2d(example: Example) -> nn.Module:
    from bitorch_engine.layers.qconv.binary.cpp import BinaryConv2dCPP

    h = example.hyper
    weight = example.params["weight"]
    out_channels, in_channels, kernel, _ = weight.shape
    layer = BinaryConv2dCPP(in_channels // 32, out_channels, kernel, stride=h["stride"], padding=h["padding"],
                            dilation=h["dilation"])
    # The layer's weight is (out, in, k*k): the same values, row-major over (kh, kw).
    return _load(layer, {"weight": weight.reshape(out_channels, in_channels, kernel * kernel)})


# ------------------------------------------------------------------------------------------------ known failures

_NO_BACKWARD = "backward-raised"
_NO_SETUP_CONTEXT = "autograd-function-without-setup_context"
_PYBIND_BREAK = "graph-break:Dynamo does not know how to trace the builtin  bitorch_engine.extensions.binary_"
_SKIPPED_CALL = "graph-break:Attempted to call function marked as skipped"


def _known(function: str, layer: str, kernel: str, script: str) -> tuple[Known, ...]:
    """The findings shared by both layers: ``function`` is the layer's autograd.Function, ``layer`` / ``kernel`` the
    links to the Python file that defines it and to the C++ source of its forward, ``script`` the layer's prefix of
    the reproducers' paths."""
    no_backward = (f"{function} is an autograd.Function with a forward only (an inference kernel: no backward, no "
                   f"vjp), so any backward through the layer raises NotImplementedError; the forward checks of every "
                   f"transform are judged without it")
    untraced = (f"{function}.forward calls the pybind11 extension's forward directly (not a registered custom op), "
                f"which dynamo cannot trace: fullgraph=True fails at the call")
    return (
        *(Known(transform="eager", dtype=dtype, cause="forward-raised", link=kernel,
                reproducer=f"{script}_float64_bfloat16.py",
                reason=f"the C++ forward reads input and weight through data_ptr<float>() and allocates a float32 "
                       f"output: {dtype} raises 'expected scalar type Float but found {name}'")
          for dtype, name in (("float64", "Double"), ("bfloat16", "BFloat16"))),
        Known(transform="strided_input", check="preserves_forward", cause="transform-changed-forward", link=kernel,
              reproducer=f"{script}_strided_input.py",
              reason="the C++ forward reads the input through data_ptr<float>() as if it were contiguous, and no "
                     "one calls .contiguous(): a strided view (a slice of a larger tensor) is read as the values "
                     "around it"),
        Known(transform="compile_inductor", cause=_PYBIND_BREAK, link=layer, reason=untraced,
              reproducer=f"{script}_compile_graph_break.py"),
        *(Known(transform=t, check="no_graph_breaks", cause=_SKIPPED_CALL, also=(_PYBIND_BREAK,), link=layer,
                reason=untraced + " (dynamo's explanation names the skipped call)",
                reproducer=f"{script}_compile_graph_break.py")
          for t in ("compile_aot_eager", "compile_dynamic")),
        *(Known(transform=t, check="preserves_forward", cause=_PYBIND_BREAK, link=layer, reason=untraced,
                reproducer=f"{script}_compile_graph_break.py")
          for t in ("compile_aot_eager", "compile_dynamic")),
        *(Known(transform=t, cause=_NO_SETUP_CONTEXT, link=layer, reproducer=f"{script}_vmap.py",
                reason=f"{function} is an autograd.Function written forward(ctx, ...) without setup_context, which "
                       f"torch.func requires (vmap, grad, jvp, per-sample gradients; Opacus has no grad sampler for "
                       f"the layer and takes its functorch path in both modes); the script shows it under vmap, "
                       f"for inference")
          for t in ("vmap", "grad", "jvp", "per_sample_grad", "opacus_*")),
        Known(transform="export", cause="export-failed", link=layer,
              reproducer=f"{script}_export.py",
              reason=f"torch.export traces with fake tensors, which hold no data; {function}.forward hands them to the "
                     f"pybind11 extension, whose C++ code reads data_ptr() ('The tensor has a non-zero number of "
                     f"elements, but its data is not allocated yet'): the kernel is not registered as a custom op"),
        Known(transform="onnx", cause="onnx-export-failed", link=layer, reproducer=f"{script}_export.py",
              reason=f"torch.onnx.export starts with torch.export, which fails: {function}.forward hands its fake "
                     f"tensors to the pybind11 extension, whose C++ code reads data_ptr() (the kernel is not "
                     f"registered as a custom op)"),
        *(Known(transform=transform, cause="conversion-failed", link=kernel, reproducer=f"{script}_float64_bfloat16.py",
                reason=f"the C++ forward reads input and weight through data_ptr<float>() and allocates a float32 "
                       f"output: the layer built in float32 and converted by {transform} raises 'expected scalar "
                       f"type Float but found {name}'")
          for transform, name in (("to_float64", "Double"), ("half", "Half"))),
        *(Known(transform="*", check=check, cause=_NO_BACKWARD, link=layer, reason=no_backward,
                reproducer="reproducers/bitorch_engine/layers_have_no_backward.py")
          for check in ("grad_matches_spec", "preserves_grad")),
    )


# ------------------------------------------------------------------------------------------------ declarations

_LAYER = dict(input_quant="clipped_ste", threshold=1.0, zero_value=1.0, weight_scaling="none", bias=False)


def _subject(name: str, spec: str, build, **fields) -> Subject:
    return Subject(id=f"bitorch_engine.{name}", spec=spec, build=build, library=LIBRARY.name, requires=REQUIRES,
                   devices=frozenset({"cpu"}), param_map={"weight": "weight"}, **fields)


def subjects() -> Iterator[Subject]:
    yield _subject("BinaryLinearCPP", "layer.binary_linear", build_binary_linear,
                   fixed=dict(_LAYER, in_features=_WORDS, out_features=_OUT_FEATURES, inner_dim=False),
                   known=_known("BinaryLinearForward", f"{_LINEAR_SRC}/layer.py", f"{_LINEAR_SRC}/binary_linear.cpp",
                                "reproducers/bitorch_engine/binary_linear"))
    yield _subject("BinaryConv2dCPP", "layer.binary_conv2d", build_binary_conv2d,
                   fixed=dict(_LAYER, in_channels=_WORDS, size=_SIDES, groups=1, dilation=1, pad_value=-1.0),
                   known=_known("BinaryConv2dForward", f"{_CONV_SRC}/layer.py", f"{_CONV_SRC}/binary_conv.cpp",
                                "reproducers/bitorch_engine/binary_conv2d"))
