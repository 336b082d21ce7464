"""This project's own fast kernels (Triton): packed binary GEMM/conv and fused multi-step LIF neurons.

They are subjects of the matrix like any library (``conformance/subjects/kernels.py``) and judged by the same specs.
Importing this package never imports Triton: kernels are built on first use, compiled for CUDA tensors and run
through Triton's interpreter for CPU tensors (correctness only; see :mod:`qsnn_kernels._runtime`).

>>> from kernels import binary, lif  # doctest: +SKIP
>>> binary.binary_linear(x, w, weight_scaling="channel")  # doctest: +SKIP
"""

from ._runtime import device_unsupported, triton_missing

__all__ = ["device_unsupported", "triton_missing"]
