"""Settings of a run read from the environment, and the error a bad one raises. Imports nothing heavy: the pytest
plugin reads these in every session, including sessions that run no cell.

- ``CONFORMANCE_PROFILE``: the hypothesis profile of the cells (``PROFILES``, default ``ci``).
- ``CONFORMANCE_CELL_TIMEOUT``: seconds before a cell is stopped and recorded as ``timeout`` (default 300).
- ``CONFORMANCE_DIR``: the one directory the kit writes into (:func:`output_dir`, default ``.conformance``).
- ``CONFORMANCE_CACHE_DIR``: compile caches (default ``<output dir>/cache``).
"""

from __future__ import annotations

import os
from pathlib import Path


class UsageError(ValueError):
    """Bad input from a user (an unknown id, a malformed declaration, a broken entry point, a bad setting): one
    line that says what is wrong and what is valid. Command-line tools print it and exit 2; the pytest plugin
    reports it as pytest's usage error."""


#: Hypothesis profiles: examples per cell, fewer for compiling transforms (compilation dominates), fewer again for
#: the costly ones (Transform.costly: inductor's code generation, dynamic-shape capture, an ONNX export: seconds per
#: example; with one, it is the spec's first edge example, else a drawn one). ``long_draws``: the cells that judge the
#: spec's size edges also draw sizes past a kernel's tiles (strategies.long_draws); ci has the size edges only.
PROFILES = {
    "ci": dict(max_examples=5, compile_examples=2, costly_examples=1, derandomize=True, database=None,
               long_draws=False),
    "dev": dict(max_examples=20, compile_examples=4, costly_examples=2, derandomize=False, long_draws=True),
    "thorough": dict(max_examples=150, compile_examples=15, costly_examples=8, derandomize=False, long_draws=True),
}
DEFAULT_TIMEOUT_S = 300.0


def profile_name() -> str:
    """The hypothesis profile of this run; an unknown name is a UsageError."""
    name = os.environ.get("CONFORMANCE_PROFILE", "ci")
    if name not in PROFILES:
        raise UsageError(f"CONFORMANCE_PROFILE={name!r} is not a profile; valid: {', '.join(PROFILES)}")
    return name


def cell_timeout_s() -> float:
    """Seconds a cell may run before the in-process alarm stops it; not a positive number is a UsageError."""
    value = os.environ.get("CONFORMANCE_CELL_TIMEOUT", "")
    try:
        seconds = float(value) if value else DEFAULT_TIMEOUT_S
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise UsageError(f"CONFORMANCE_CELL_TIMEOUT={value!r} must be a positive number of seconds")
    return seconds


def hard_limit_s(limit: float) -> float:
    """When a cell that the in-process alarm did not stop (a hang in C code) is given up: its process is ended.
    The slack lets the alarm land after a long C call (an inductor compile step takes up to ~20 s, inside the 30 s
    slack of any limit from 15 s, the default 300 s included); small limits (tests) get proportionally small slack
    (a hang in C under a 2 s limit costs 7 s, 13 s before 2026-12-07: the system tests wait it out several times)."""
    return limit * 1.5 + min(30.0, 2 * limit)


_CONFIGURED = False


#: The kit's output directory under pytest's rootdir (or the working directory) unless configured otherwise.
OUTPUT_DIR_NAME = ".conformance"


def output_dir(root: Path | None = None, name: str = OUTPUT_DIR_NAME) -> Path:
    """The one directory the kit writes into (records, compile caches), absolute: ``CONFORMANCE_DIR`` when set and
    not empty, else ``<root or cwd>/<name>``. The plugin sets ``CONFORMANCE_DIR`` from its rootdir and its
    ``conformance_dir`` ini option (its workers and forked children read it from there)."""
    chosen = os.environ.get("CONFORMANCE_DIR") or Path(root or Path.cwd()) / name
    return Path(chosen).resolve()


def claim_output_dir(directory: Path) -> None:
    """Create ``directory``; one this call creates gets a ``.gitignore`` of ``*`` (as pytest's own cache does), so
    the kit's output never shows in ``git status``. A directory that exists already is left as it is."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".gitignore").write_text("# written by qsnn-conformance: its output is never committed\n*\n",
                                          encoding="utf-8")


def cache_dir(root: Path | None = None) -> Path:
    """The suite's cache directory, absolute: ``CONFORMANCE_CACHE_DIR`` when set and not empty, else
    ``<output dir>/cache`` (:func:`output_dir`)."""
    chosen = os.environ.get("CONFORMANCE_CACHE_DIR") or output_dir(root) / "cache"
    return Path(chosen).resolve()


def configure_process(root: Path | None = None) -> None:
    """One torch thread per process (xdist oversubscription is a 10-50x slowdown; strict tolerances need a fixed
    reduction order) and compile caches in a known directory (:func:`cache_dir`), kept between runs. Done once per
    process, before its first cell. (Hypothesis keeps its own ``.hypothesis``, which ignores itself in git.)"""
    global _CONFIGURED
    if _CONFIGURED:
        return
    _CONFIGURED = True
    claim_output_dir(output_dir(root))
    cache = cache_dir(root)
    os.environ["CONFORMANCE_CACHE_DIR"] = str(cache)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(cache / "triton"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    # On CUDA, cuDNN may pick non-deterministic algorithms (atomic adds in convolution backward): two runs of the
    # same module then differ in the last bits, which a "transform preserves the gradient" check would charge to
    # the transform (seen on Resnet18V2's hooks/functional_call/state_dict cells on the H200).
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # float32 cells compute in float32: cuDNN's TF32 default (10-bit mantissa) makes two ways of computing the same
    # convolution differ by ~1e-3 (the spec's own binary_conv2d failed jvp, and cpu_vs_cuda with 33 channels, on an
    # H100): a precision torch chooses, not the subject's.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if hasattr(torch, "set_num_interop_threads"):
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass  # already set once in this process


def register_hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    for name, options in PROFILES.items():
        kwargs = dict(max_examples=options["max_examples"], derandomize=options["derandomize"], deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        if "database" in options:
            kwargs["database"] = options["database"]
        settings.register_profile(f"conformance-{name}", **kwargs)
