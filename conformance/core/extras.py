"""The optional tools behind the package's extras (``pip install 'qsnn-conformance[report]'``): imported when first
used, so ``import conformance``, its pytest plugin and ``conformance.api`` need none of them. A missing one ends the
command with one line naming the extra that installs it."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

#: The extra (pyproject.toml [project.optional-dependencies]) that installs each optional module.
EXTRA_OF_MODULE = {
    "xdist": "parallel",
    "pytest_benchmark": "bench",
    "tabulate": "report",
    "nir": "nir",
    "nirtorch": "nir",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "onnxscript": "onnx",
    "safetensors": "safetensors",
}


def install_hint(module: str) -> str:
    """What to install for ``module``: ``pip install 'qsnn-conformance[<extra>]'``."""
    return f"pip install 'qsnn-conformance[{EXTRA_OF_MODULE[module]}]'"


def optional_module(name: str) -> ModuleType:
    """Import the optional module ``name``; when it is missing, one line on stderr and exit status 2 (only the
    command-line tools reach the optional modules: the report, the expectations, the benchmark)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"conformance: {name} is not installed; install it with {install_hint(name)}", file=sys.stderr)
        raise SystemExit(2) from None


def tabulate(*args, **kwargs) -> str:
    """``tabulate.tabulate``, imported on first use (the ``report`` extra)."""
    return optional_module("tabulate").tabulate(*args, **kwargs)
