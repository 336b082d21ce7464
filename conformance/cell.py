"""Re-run one cell alone and show what it found: ``python -m conformance.cell 'subject|transform|check|device|dtype'``.

This is the reproduce command printed in every record and failure. Subjects that a test suite declared (through
``conformance.api.parametrize_with_checks``) are loaded from the file or module named by ``--load``, as the
recorded command does. Exit status: 0 pass, xfail or skip; 1 any other outcome; 2 bad usage.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

from .core.escape import terminal_text, visible
from .core.settings import PROFILES, UsageError, configure_process, profile_name
from .core.usage import OneLineParser


def load_subjects(where: str) -> None:
    """Import ``where`` (``path/to/file.py`` or ``package.module``, optionally ``:object``) so that the subjects it
    declares are registered; an ``object`` that is a Subject, an iterable of them or a callable returning them is
    registered too."""
    from . import registry
    from .core.types import Subject

    where = _below_a_parent(where)
    target, _, name = where.partition(":") if not Path(where).is_file() else (where, "", "")
    if target.endswith(".py") or Path(target).is_file():
        path = Path(target)
        if not path.is_file():
            raise UsageError(f"--load {where!r}: no such file")
        sys.path.insert(0, str(path.resolve().parent))
        spec = importlib.util.spec_from_file_location(f"_conformance_loaded_{path.stem}", path)
        if spec is None:
            raise UsageError(f"--load {where!r}: not a Python file (a .py file or a module name)")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001 - the user's file
            raise UsageError(f"--load {where!r} failed: {type(error).__name__}: {error}") from None
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as error:
            raise UsageError(f"--load {where!r}: cannot import {target!r}: {error}") from None
    if not name:
        return
    if not hasattr(module, name):
        raise UsageError(f"--load {where!r}: {target!r} has no {name!r}")
    found = getattr(module, name)
    try:
        found = found() if callable(found) and not isinstance(found, Subject) else found
        found = [found] if isinstance(found, Subject) else list(found)
    except Exception as error:  # noqa: BLE001 - the user's object
        raise UsageError(f"--load {where!r}: {name!r} gives no subjects: {type(error).__name__}: {error}") from None
    for subject in found:
        if not isinstance(subject, Subject):
            raise UsageError(f"--load {where!r}: {type(subject).__name__} is not a conformance.api.Subject")
        registry.register(subject, origin=where)


def _below_a_parent(where: str) -> str:
    """A relative ``.py`` path that is not under the working directory, taken from the nearest parent directory
    that has it: a reproduce command names its file relative to pytest's rootdir and works from any directory below."""
    path = Path(where.partition(":")[0] if not Path(where).is_file() else where)
    if path.is_absolute() or path.suffix != ".py" or path.is_file():
        return where
    for parent in Path.cwd().resolve().parents:
        if (parent / path).is_file():
            return str(parent / where)
    return where


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m conformance.cell", description=__doc__.split("\n\n")[0])
    parser.add_argument("cell", help="cell id: subject|transform|check|device|dtype")
    parser.add_argument("--profile", choices=list(PROFILES), default=None,
                        help="hypothesis profile (default: CONFORMANCE_PROFILE, else ci)")
    parser.add_argument("--load", action="append", default=[], metavar="FILE_OR_MODULE[:OBJECT]",
                        help="import this first: a test file or module that declares the subject (repeatable)")
    args = parser.parse_args(argv)
    try:
        profile = args.profile or profile_name()
        configure_process()
        from . import registry

        for where in args.load:
            load_subjects(where)
        cell = registry.parse_cell_id(args.cell)
        registry.check_cell_exists(cell)
    except UsageError as error:
        print(f"python -m conformance.cell: {terminal_text(error)}", file=sys.stderr)
        return 2
    from .runner import run_cell

    result = run_cell(cell, profile=profile)
    shown = {k: v for k, v in vars(result).items() if k != "message"}
    print(visible(json.dumps(shown, indent=2, default=str, ensure_ascii=False)))
    print(visible(result.message))
    return 0 if result.outcome in ("pass", "xfail", "skip") else 1


if __name__ == "__main__":
    sys.exit(main())
