"""The registries: specs, subjects, transforms, checks, and the cells they span.

Declare (in ``specs/``, ``subjects/``, ``transforms/``, ``checks/``), register (here), call (suites, report).
Third-party packages add subjects through the ``conformance.subjects`` entry point group: each entry point names a
callable returning an iterable of :class:`~conformance.core.types.Subject`.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
from functools import lru_cache
from typing import Iterable, Iterator

import torch

from .checks import CHECKS
from .core.escape import terminal_text, visible
from .core.settings import UsageError
from .core.types import Cell, Known, Spec, Subject
from .transforms import TRANSFORMS, Transform

ENTRY_POINT_GROUP = "conformance.subjects"


def subject_modules() -> list[str]:
    """Every module of ``conformance.subjects``: each exposes ``subjects() -> Iterable[Subject]``. Importing one
    never imports its library under test (that happens in ``build``), so a missing library only skips its cells."""
    import pkgutil

    from . import subjects as package

    return [f"{package.__name__}.{info.name}" for info in sorted(pkgutil.iter_modules(package.__path__),
                                                                   key=lambda i: (i.name != "reference", i.name))]


DEVICES = ("cpu", "cuda")


@lru_cache(maxsize=None)
def specs() -> dict[str, Spec]:
    from .specs import SPECS

    found: dict[str, Spec] = {}
    for spec in SPECS:
        if spec.id in found:
            raise ValueError(f"duplicate spec id {spec.id!r}")
        found[spec.id] = spec
    return found


@lru_cache(maxsize=None)
def subjects() -> dict[str, Subject]:
    declared: dict[str, Subject] = {}
    for subject, where in _declared_subjects():
        if subject.id in declared:
            if declared[subject.id] == subject:
                continue
            raise UsageError(f"subject {subject.id!r} is declared twice, differently: in {_DECLARED_AT[subject.id]} "
                             f"and in {where}")
        validate(subject)
        declared[subject.id] = subject
        _DECLARED_AT.setdefault(subject.id, where)
    return {sid: subject.replace(known=subject.known + _ADDED_KNOWN[sid]) if sid in _ADDED_KNOWN else subject
            for sid, subject in declared.items()}


#: Subjects registered at run time by a library's own test suite (see conformance.api.parametrize_with_checks).
_REGISTERED: dict[str, Subject] = {}
#: Where a registered subject is defined, as ``python -m conformance.cell --load`` takes it (a file or module).
_ORIGINS: dict[str, str] = {}
#: Where each subject was first declared (a module, an entry point or a file), for the message of a conflict.
_DECLARED_AT: dict[str, str] = {}
#: Known failures a test suite adds to a subject declared elsewhere (parametrize_with_checks(known=...)).
_ADDED_KNOWN: dict[str, tuple[Known, ...]] = {}


def register(subject: Subject, *, origin: str | None = None) -> Subject:
    """Add a subject outside the declared modules (a third-party test suite's own layers). ``origin`` is where it
    is defined (a ``.py`` file or an importable module, optionally ``:object``): the reproduce command of its
    cells loads it from there. Registering an equal declaration again (the entry point's subject, declared again
    in a test file) is allowed; a different one with the same id is a one-line error naming both places."""
    where = origin or "a call of conformance.registry.register"
    existing = declaration(subject.id)
    if existing is not None and existing != subject:
        raise UsageError(f"subject {subject.id!r} is declared twice, differently: in {_DECLARED_AT.get(subject.id)} "
                         f"and in {where} (declare it once; conformance.api.subject({subject.id!r}) returns the "
                         "registered one)")
    if existing is None:
        validate(subject)
        _REGISTERED[subject.id] = subject
        _DECLARED_AT[subject.id] = where
        subjects()[subject.id] = subject.replace(known=subject.known + _ADDED_KNOWN.get(subject.id, ()))
    if origin:
        _ORIGINS[subject.id] = origin
    return subjects()[subject.id]


def declaration(subject_id: str) -> Subject | None:
    """The subject as it was declared, without the known failures a test suite added (None if unknown)."""
    found = subjects().get(subject_id)
    added = _ADDED_KNOWN.get(subject_id, ())
    return found.replace(known=found.known[:len(found.known) - len(added)]) if found and added else found


def add_known(subject_id: str, entries: Iterable[Known]) -> Subject:
    """Add known failures to a registered subject (those of a test suite, for a subject declared by its package's
    entry point); an entry already there is not added twice."""
    declared = declaration(subject_id)
    if declared is None:
        raise UsageError(f"known failures for {subject_id!r}, which is not a registered subject")
    for entry in entries:
        if not isinstance(entry, Known):
            raise UsageError(f"known failures of {subject_id!r} must be conformance.api.Known, got "
                             f"{type(entry).__name__}")
        if entry not in _ADDED_KNOWN.get(subject_id, ()):
            _ADDED_KNOWN[subject_id] = _ADDED_KNOWN.get(subject_id, ()) + (entry,)
    subjects()[subject_id] = declared.replace(known=declared.known + _ADDED_KNOWN.get(subject_id, ()))
    return subjects()[subject_id]


def declared_in_suite(subject_id: str) -> bool:
    """Whether a subject is one of this suite's own (conformance/subjects/), not a package's or a test file's."""
    return _DECLARED_AT.get(subject_id, "").startswith(f"module {__package__}.subjects.")


def origin(subject_id: str) -> str | None:
    """Where a subject registered at run time is defined (None for declared and entry-point subjects, which
    every process finds by itself)."""
    return _ORIGINS.get(subject_id)


def validate(subject: Subject) -> None:
    """Reject a malformed declaration when it is declared, not cell by cell at run time: an id that cannot be a
    matrix coordinate, an unknown spec, a ``fixed`` key the spec does not have."""
    if not isinstance(subject.id, str) or not subject.id.strip() or subject.id != subject.id.strip():
        raise UsageError(f"subject id {subject.id!r} must be a non-empty string without surrounding whitespace")
    # Refused rather than escaped where shown: pytest and xdist print node ids, which hold the subject id, in places
    # no plugin escapes (the xdist_group suffix "@subject|transform" of FAILED and -v lines), and an id
    # is a coordinate copied into expectations and shell commands: one that hides or reorders its own text cannot
    # be shown as itself anywhere. visible(one_line=True) changes exactly these characters.
    if visible(subject.id, one_line=True) != subject.id:
        raise UsageError(f"subject id '{terminal_text(subject.id)}' contains a control, line-break or text-direction "
                         "character (shown escaped): declare an id that shows as itself")
    if subject.spec not in specs():
        raise UsageError(f"subject {subject.id!r} claims unknown spec {subject.spec!r}; known: "
                         f"{', '.join(sorted(specs()))}")
    if subject.protocol is not None and specs()[subject.spec].time_dim is None:
        raise UsageError(f"subject {subject.id!r} declares a call protocol, but spec {subject.spec!r} has no time "
                         "axis to feed one step per call")
    try:
        specs()[subject.spec].examples(**subject.fixed)
    except (TypeError, ValueError) as error:
        raise UsageError(f"subject {subject.id!r}: {error}") from None


def _declared_subjects() -> Iterator[tuple[Subject, str]]:
    """Every declared subject with where it is declared."""
    for name in subject_modules():
        yield from ((subject, f"module {name}") for subject in importlib.import_module(name).subjects())
    yield from _entry_point_subjects()
    yield from ((subject, _DECLARED_AT[subject.id]) for subject in _REGISTERED.values())


def _entry_point_subjects() -> Iterator[tuple[Subject, str]]:
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = list(entry.load()())
        except Exception as error:  # noqa: BLE001 - any error of a third party's code
            raise UsageError(f"entry point {entry.name} = {entry.value} (group {ENTRY_POINT_GROUP}) failed: "
                             f"{type(error).__name__}: {error}; fix or uninstall "
                             f"{getattr(entry.dist, 'name', 'its package')}") from None
        bad = [item for item in found if not isinstance(item, Subject)]
        if bad:
            raise UsageError(f"entry point {entry.name} = {entry.value} (group {ENTRY_POINT_GROUP}) returned "
                             f"{type(bad[0]).__name__}, not conformance.api.Subject")
        where = f"entry point {entry.name} = {entry.value} of {getattr(entry.dist, 'name', 'a package')}"
        yield from ((subject, where) for subject in found)


def transforms() -> dict[str, Transform]:
    return {t.id: t for t in TRANSFORMS}


def suite_description() -> dict:
    """What the report shows of the suite itself, written beside every run's records (records.io.SUITE_FILE): the
    transforms in table order and the docstrings of transforms and checks."""
    return {"transforms": [{"id": t.id, "doc": t.fn.__doc__ or ""} for t in TRANSFORMS],
            "checks": {name: check.fn.__doc__ or "" for name, check in CHECKS.items()}}


def missing_requirement(names: Iterable[str]) -> str | None:
    """The first importable module among ``names`` that is not installed, or None. A dotted name under a namespace
    package (``optimum.quanto``: ``optimum`` holds no code of its own, other distributions share it) is looked up
    whole; other names by their top-level package, whose import may run code."""
    for name in names:
        top = importlib.util.find_spec(name.split(".")[0])
        if top is None:
            return name
        if "." in name and top.origin is None and importlib.util.find_spec(name) is None:
            return name
    return None


def checks_of(transform: Transform) -> tuple[str, ...]:
    """The checks that judge ``transform``: those it lists, then those that name it (``Check.applies_to``)."""
    extra = tuple(name for name, check in CHECKS.items() if name not in transform.checks
                  and any(fnmatch.fnmatchcase(transform.id, pattern) for pattern in check.applies_to))
    return transform.checks + extra


def cells(subject_ids: Iterable[str] | None = None, *, devices: Iterable[str] = DEVICES,
          transform_ids: Iterable[str] | None = None) -> list[Cell]:
    """Every cell of the matrix for the given subjects (all registered ones by default), in a stable order."""
    chosen = list(subject_ids) if subject_ids is not None else list(subjects())
    wanted = set(transform_ids) if transform_ids is not None else None
    out = []
    for sid in chosen:
        for transform in TRANSFORMS:
            if wanted is not None and transform.id not in wanted:
                continue
            for check in checks_of(transform):
                for device in devices:
                    if device not in transform.devices:
                        continue  # e.g. CPU/CUDA agreement and autocast cells exist on cuda only
                    for dtype in transform.dtypes:
                        out.append(Cell(sid, transform.id, check, device, dtype))
    return out


def not_applicable(cell: Cell, subject: Subject, spec: Spec, transform: Transform) -> str | None:
    """Why a cell is inapplicable by design (recorded as ``skip`` with this reason), or None."""
    for key in (f"{cell.transform}:{cell.check}", cell.transform, cell.check):
        if key in subject.not_applicable:
            return subject.not_applicable[key]
    if transform.applies is not None:
        reason = transform.applies(subject, spec)
        if reason:
            return reason
    if transform.compares_with and transform.compares_with not in subject.devices:
        where = transform.compares_with.upper()
        return f"{subject.id} does not run on the {where} here, so there is no {where} result to agree with"
    if spec.fn is None and cell.check in ("forward_matches_spec", "grad_matches_spec"):
        return f"{spec.id} is an opaque model without a spec: judged by what transforms preserve"
    if CHECKS[cell.check].needs_protocol and subject.protocol is None:
        return f"{subject.id} keeps no state between calls (it declares no call protocol)"
    if (CHECKS[cell.check].needs_grad or transform.needs_grad) and not spec.differentiable:
        return f"spec {spec.id} defines no gradient"
    if transform.needs_params and not subject.param_map:
        return "the subject has no trainable parameters (per-sample gradients are about parameters)"
    if subject.releases is not None and not in_release(subject.library, subject.releases[0]):
        return (f"{subject.library} {installed_release(subject.library)} is not among the releases "
                f"{subject.releases[0]} that have {subject.id}: {subject.releases[1]}")
    if cell.dtype not in subject.dtypes:
        return f"{subject.id} does not claim {cell.dtype} support"
    if cell.device not in subject.devices:
        return f"{subject.id} does not claim {cell.device} support"
    return None


def for_this_torch(entry: Known) -> bool:
    """Whether a known failure applies to the installed torch release (its ``torch`` glob)."""
    return entry.torch == "*" or fnmatch.fnmatchcase(torch.__version__, entry.torch)


@lru_cache(maxsize=None)
def installed_release(library: str) -> str | None:
    """The installed release of a declared library (None when it is not installed or not declared)."""
    import importlib.metadata

    from .libraries import declared

    distribution = next((lib.distribution for lib in declared() if lib.name == library), None)
    try:
        return importlib.metadata.version(distribution) if distribution else None
    except importlib.metadata.PackageNotFoundError:
        return None


def in_release(library: str, pattern: str) -> bool:
    """Whether the installed release of ``library`` matches the glob ``pattern`` ("*" always does)."""
    if pattern == "*":
        return True
    release = installed_release(library)
    return release is not None and fnmatch.fnmatchcase(release, pattern)


@lru_cache(maxsize=None)
def cpu_features() -> frozenset[str]:
    """This machine's CPU feature flags (Linux: the ``flags`` line of /proc/cpuinfo), and ``torch:<capability>``:
    the kernel set torch dispatches to, ``torch.backends.cpu.get_cpu_capability()`` lowercased (``torch:avx512``,
    ``torch:avx2``, ...), which libraries such as bitsandbytes follow."""
    flags = {f"torch:{torch.backends.cpu.get_cpu_capability().lower()}"}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            line = next((line for line in info if line.startswith(("flags", "Features"))), "")
        flags.update(line.split(":", 1)[1].split() if ":" in line else ())
    except OSError:
        pass
    return frozenset(flags)


def for_this_cpu(entry: Known) -> bool:
    """Whether a known failure applies to this machine's CPU (its ``cpu`` glob matches one of its feature flags)."""
    return entry.cpu == "*" or any(fnmatch.fnmatchcase(flag, entry.cpu) for flag in cpu_features())


def for_this_release(entry: Known, subject: Subject) -> bool:
    """Whether a known failure applies to the installed torch and library releases and to this CPU (its ``torch``,
    ``releases`` and ``cpu`` globs)."""
    return for_this_torch(entry) and in_release(subject.library, entry.releases) and for_this_cpu(entry)


def depends_on_cpu(cell: Cell) -> bool:
    """Whether a known failure declared for some CPU features only (``Known.cpu``) covers ``cell``: its outcome
    then depends on the machine's CPU (an unknown subject or transform: False)."""
    subject, transform = subjects().get(cell.subject), transforms().get(cell.transform)
    if subject is None or transform is None:
        return False
    return any(entry.cpu != "*" and fnmatch.fnmatchcase(cell.transform, entry.transform)
               and fnmatch.fnmatchcase(cell.check, entry.check) and fnmatch.fnmatchcase(cell.device, entry.device)
               and fnmatch.fnmatchcase(cell.dtype, entry.dtype) for entry in known_entries(subject, transform))


def _covers(entry: Known, cell: Cell, subject: Subject) -> bool:
    return (fnmatch.fnmatchcase(cell.transform, entry.transform) and fnmatch.fnmatchcase(cell.check, entry.check)
            and fnmatch.fnmatchcase(cell.device, entry.device) and fnmatch.fnmatchcase(cell.dtype, entry.dtype)
            and for_this_release(entry, subject))


def known_entries(subject: Subject, transform: Transform) -> tuple[Known, ...]:
    """The known failures that may cover a cell of ``subject`` x ``transform``: the subject's own first, then the
    findings the transform declares on it."""
    found = subject.known
    if transform.known is not None:
        found += transform.known(subject, specs()[subject.spec])
    return found


def known_failure(cell: Cell, subject: Subject) -> Known | None:
    """The first known failure that covers ``cell``, or None."""
    entries = known_entries(subject, transforms()[cell.transform])
    return next((entry for entry in entries if _covers(entry, cell, subject)), None)


def unmatched_known(all_cells: Iterable[Cell]) -> list[tuple[str, Known]]:
    """Known-failure entries that cover no cell: each is an error (stale data). A subject's entry must cover one of
    its cells; a transform's entry one cell of a subject it is declared on."""
    by_subject: dict[str, list[Cell]] = {}
    for cell in all_cells:
        by_subject.setdefault(cell.subject, []).append(cell)
    stale = []
    for sid, its_cells in by_subject.items():
        subject = subjects()[sid]
        for entry in subject.known:
            if for_this_release(entry, subject) and not any(_covers(entry, c, subject) for c in its_cells):
                stale.append((sid, entry))
    for transform in TRANSFORMS:
        if transform.known is None:
            continue
        declared: dict[Known, bool] = {}  # entry -> covers a cell of a subject it is declared on
        for sid, its_cells in by_subject.items():
            subject = subjects()[sid]
            for entry in transform.known(subject, specs()[subject.spec]):
                if for_this_release(entry, subject):
                    declared[entry] = declared.get(entry, False) or any(_covers(entry, c, subject) for c in its_cells)
        stale += [(f"transform {transform.id}", entry) for entry, used in declared.items() if not used]
    return stale


def parse_cell_id(cell_id: str) -> Cell:
    """The cell of an id ``subject|transform|check|device|dtype``. Split from the right: only the subject id,
    which comes from a third party, may itself contain ``|`` (or ``[``, ``]``, ``@``, spaces, any letter)."""
    parts = cell_id.rsplit("|", 4)
    if len(parts) != 5 or not all(parts):
        raise UsageError(f"a cell id is 'subject|transform|check|device|dtype', got {cell_id!r}")
    return Cell(*parts)


def check_cell_exists(cell: Cell) -> None:
    """Raise a one-line UsageError unless ``cell`` is a coordinate of the matrix, naming the valid choices of the
    first coordinate that is wrong."""
    import difflib

    def unknown(what: str, value: str, valid: Iterable[str]) -> UsageError:
        valid = sorted(valid)
        near = difflib.get_close_matches(value, valid, n=3)
        hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
        shown = ", ".join(valid) if len(valid) <= 40 else ", ".join(valid[:40]) + f", ... ({len(valid)} in all)"
        return UsageError(f"unknown {what}: {value!r}{hint}; valid: {shown}")

    if cell.subject not in subjects():
        raise unknown("subject", cell.subject, subjects())
    transform = transforms().get(cell.transform)
    if transform is None:
        raise unknown("transform", cell.transform, transforms())
    if cell.check not in checks_of(transform):
        raise unknown(f"check for transform {cell.transform!r}", cell.check, checks_of(transform))
    if cell.device not in transform.devices:
        raise unknown(f"device for transform {cell.transform!r}", cell.device, transform.devices)
    if cell.dtype not in transform.dtypes:
        raise unknown(f"dtype for transform {cell.transform!r}", cell.dtype, transform.dtypes)
