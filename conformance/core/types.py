"""The few records the framework is built from. All frozen: a declaration never changes after import.

Spec      what an op or neuron must compute (a pure function in ``qsnn_reference/``) and how to draw inputs.
Example   one drawn input: the tensor ``x``, the learnable tensors ``params`` and the plain ``hyper``.
Subject   one implementation under test: a factory that builds a fresh ``nn.Module`` for an Example.
Known     one known failure: which cells it covers, why, and the evidence.
Library   one library under test (or that a transform drives): its name, pinned release and how it is installed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import torch


class Example(NamedTuple):
    """One input to a spec, drawn in float64 on the CPU.

    ``x`` is the data input, ``params`` are the tensors a module would hold as parameters (their gradients
    are part of the spec), ``hyper`` are plain Python values (floats, ints, strings, bools).
    The spec is called as ``spec.fn(x, **params, **hyper)``.
    """

    x: torch.Tensor
    params: Mapping[str, torch.Tensor]
    hyper: Mapping[str, Any]

    def describe(self) -> str:
        """A short, human-readable summary used in reports and reproduce notes."""

        def tensor(t: torch.Tensor) -> str:
            values = t.detach().flatten()[:6].tolist()
            more = ", ..." if t.numel() > 6 else ""
            shown = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in values)
            return f"tensor(shape={tuple(t.shape)}, [{shown}{more}])"

        parts = [f"x={tensor(self.x)}"]
        parts += [f"{k}={tensor(v)}" for k, v in self.params.items()]
        parts += [f"{k}={v!r}" for k, v in self.hyper.items()]
        return "Example(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Spec:
    """The definition of one op or neuron.

    id:            stable name, e.g. ``"sign.clipped_ste"``, ``"neuron.leaky"``.
    fn:            the reference, ``fn(x, **params, **hyper) -> Tensor``; autograd through it is the gradient spec.
                   ``None`` for an opaque model (e.g. a library's ResNet): no spec, only the transform checks apply.
    examples:      ``examples(**fixed) -> SearchStrategy[Example]``; a keyword fixes a hyperparameter (a value
                   or a strategy), so a subject that supports only some conventions draws only those.
    margin:        optional ``margin(example) -> Tensor`` shaped like the output: the signed distance of the
                   quantity that decides each discrete output element to its decision boundary (membrane minus
                   threshold for spikes, the input for sign). Used for tie-aware comparison.
    time_dim:      for sequence models, the time axis of x and output (a flip at step t may change later steps).
    batch_dim:     the axis that vmap and per-sample gradients map over.
    output_dtype:  ``None`` when the output dtype follows the input's, else the fixed output dtype.
    differentiable: False when the spec has no gradient (e.g. bit packing).
    edges:         optional ``edges(**fixed) -> list[Example]``: fixed examples over the edges of the spec's domain
                   (values exactly on its decision points, large magnitudes, extreme hyperparameters), checked in
                   every cell before the drawn ones, so that a cell's evidence is not only what a few random draws
                   reached. A fixed value is used as given; a fixed strategy gives its simplest value.
    size_edges:    optional, like ``edges``: examples past the sizes a kernel tiles or accumulates in (sequences of 7
                   to 33 steps, K over several 64-bit words with a tail, rows whose signs all agree or all disagree
                   with the weights), checked after the others only by the checks against the spec in transforms
                   that do not compile (a longer sequence is a longer compiled graph), so they cost little.
    """

    id: str
    fn: Callable[..., torch.Tensor] | None
    examples: Callable[..., Any]
    margin: Callable[[Example], torch.Tensor] | None = None
    time_dim: int | None = None
    batch_dim: int = 0
    output_dtype: torch.dtype | None = None
    differentiable: bool = True
    doc: str = ""
    edges: Callable[..., list[Example]] | None = None
    size_edges: Callable[..., list[Example]] | None = None

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass(frozen=True)
class Known:
    """A known failure: data, not code. Patterns are ``fnmatch`` globs over the cell coordinates.

    Strict: a cell it covers that passes is reported ``xpass`` and fails the run; an entry that covers no
    collected cell is an error. ``cause`` (when given) must equal the classified cause of the failure,
    otherwise the failure is reported as a new one. ``also`` lists other causes the same finding shows on some
    examples (which one a cell reports depends on the example drawn first), each to be explained in ``reason``.
    ``torch`` is a glob over ``torch.__version__`` for failures that depend on the torch release (dynamo's graph
    breaks change between releases); an entry for another release is not applied here and is not stale here.
    ``releases`` is a glob over the installed release of the subject's library, for failures of some releases only
    (the history view runs earlier ones): an entry for another release is, likewise, neither applied nor stale.
    ``cpu`` is a glob over this machine's CPU features (``registry.cpu_features()``: /proc/cpuinfo's flags and
    torch's kernel set, e.g. ``"torch:avx512"``), for
    failures of a kernel a library picks by CPU feature: an entry for a feature this machine lacks is neither applied
    nor stale here, and the cells it covers are not compared with the expectations (their outcome depends on the CPU).
    ``reproducer`` is the path, from the suite's root, of a standalone script (the library and torch, nothing of
    this project) that shows the failure by failing (reproducers/README.md); every entry has one.
    """

    transform: str
    check: str = "*"
    reason: str = ""
    link: str = ""
    cause: str | None = None
    device: str = "*"
    dtype: str = "*"
    also: tuple[str, ...] = ()
    torch: str = "*"
    releases: str = "*"
    reproducer: str = ""
    cpu: str = "*"

    def explains(self, cause: str | None) -> bool:
        """Whether a failure classified as ``cause`` is this known failure."""
        return self.cause is None or cause == self.cause or cause in self.also


@dataclass(frozen=True)
class CallProtocol:
    """How a subject whose state persists between calls is driven, as its users drive it.

    build:  ``build(example) -> nn.Module``: the module as a user holds it, whose ``forward`` takes a chunk of the
            sequence (the time axis kept) and continues from the state the previous call left; it holds
            ``example.params`` as ``Subject.build``'s module does, under the same parameter paths.
    reset:  the name of the method a user calls on that module between sequences (the library's ``reset()``,
            ``reset_states()``, ``reset_mem()``, or an adapter's method that calls it).

    Every transform that yields a module feeds it the example's sequence one time step per call (at least three:
    the subject fixes ``min_steps``), resetting it first where the transformed module still has the method, and
    compares call by call. The subject's own ``build`` stays the one-call view (a whole sequence from rest) that
    the batch transforms (vmap, per-sample gradients, jvp) use.
    """

    build: Callable[[Example], torch.nn.Module]
    reset: str = "reset"


@dataclass(frozen=True)
class Subject:
    """One implementation under test.

    id:        stable matrix row name, ``<library>.<Layer>[<variant>]``.
    spec:      the id of the Spec it claims to implement.
    build:     ``build(example) -> nn.Module``: a fresh module configured from ``example.hyper`` whose
               parameters hold ``example.params`` (cast to float32 on the CPU); its ``forward(x)`` returns
               the spec's output. The adapter that maps a library's conventions onto the spec lives here.
    fixed:     hyperparameters this subject supports only one way (value or strategy), passed to
               ``spec.examples``.
    param_map: spec parameter name -> dotted name of the module's parameter holding it.
    library:   the distribution under test (``"reference"`` for the specs).
    requires:  importable modules needed to build it; when one is missing the cells are ``skip``.
    devices / dtypes: where it claims to work.
    known:     known failures.
    not_applicable: ``{transform or check: reason}`` for cells that are inapplicable by design.
    examples_scale: ``{device: factor}``: fewer hypothesis examples per cell on that device (at least one), for
               subjects whose every example is expensive there (the kernels run in Triton's interpreter on cpu).
    protocol:  for a subject whose state persists between calls: how it is driven across calls (CallProtocol).
    releases:  ``(glob, reason)``: the releases of its library that have it (a glob over the installed release), and
               why others do not; in another release its cells are ``skip`` with that reason (the history view).
    formats:   exchange formats its library exports it to (``"nir"``: the NIR transforms, transforms/nir.py).
    eval_hyper: the spec's hyperparameters that ``eval()`` changes, and to what (bitsandbytes' Linear8bitLt quantizes
               its input in eval mode only): the ``eval`` column judges the module in eval mode against one built
               with them. Empty: eval mode computes what training mode computes.
    """

    id: str
    spec: str
    build: Callable[[Example], torch.nn.Module]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    param_map: Mapping[str, str] = field(default_factory=dict)
    library: str = "reference"
    requires: tuple[str, ...] = ()
    devices: frozenset[str] = frozenset({"cpu", "cuda"})
    dtypes: frozenset[str] = frozenset({"float32", "float64", "bfloat16"})
    known: tuple[Known, ...] = ()
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    examples_scale: Mapping[str, float] = field(default_factory=dict)
    protocol: CallProtocol | None = None
    releases: tuple[str, str] | None = None
    formats: frozenset[str] = frozenset()
    eval_hyper: Mapping[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> "Subject":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Cell:
    """One coordinate of the matrix. ``id`` is what pytest, the records, the report and the expectations key on."""

    subject: str
    transform: str
    check: str
    device: str = "cpu"
    dtype: str = "float32"

    @property
    def id(self) -> str:
        return f"{self.subject}|{self.transform}|{self.check}|{self.device}|{self.dtype}"


@dataclass(frozen=True)
class Library:
    """A library the suite tests or drives, declared once (in its adapter or transform module): the set-up installs
    it from this (``python -m conformance.libraries``), records name its installed version.

    name:         the ``library`` of its subjects, which is also the module it imports as.
    distribution: its name on the package index.
    version:      the pinned release.
    no_deps:      installed without its declared dependencies (they would pull torchvision/torchaudio or hardware
                  tooling); ``dependencies`` lists what it really imports.
    dependencies: requirements to install beside it whenever it is installed without its own (on the CPU when
                  ``no_deps``, always on the GPU machine, which installs every library without dependencies).
    sdist_sha256: built from its source distribution by the set-up's script of that name instead of installed
                  (no wheel exists); the hash pins the archive.
    gpu:          installed by ``scripts/gpu-run.sh`` (False where the GPU image cannot run it).
    history:      earlier releases whose matrix is recorded too, each in its own environment (``noxfile.py``,
                  records under ``reports/history/``): the report's history view shows where an outcome changed.
    """

    name: str
    distribution: str
    version: str
    no_deps: bool = False
    dependencies: tuple[str, ...] = ()
    sdist_sha256: str | None = None
    gpu: bool = True
    history: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def at(self, version: str) -> "Library":
        """This library pinned to another release."""
        return dataclasses.replace(self, version=version)
