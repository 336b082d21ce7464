"""The libraries the suite tests or drives, gathered from their declarations: every module of
``conformance.subjects`` and ``conformance.transforms`` that holds a :class:`~conformance.core.types.Library`.

The set-up installs from here, so a library is declared once, beside its adapter:

    python -m conformance.libraries requirements [--no-deps | --with-deps] [--gpu]   # one requirement per line
    python -m conformance.libraries dependencies [--gpu]    # what the --no-deps ones (all, with --gpu) import
    python -m conformance.libraries sdist NAME              # "distribution version sha256" of one built from source
    python -m conformance.libraries list                    # name, requirement and how it is installed
    python -m conformance.libraries environments [--json]   # the history's environments: one per earlier release
    ... requirements --release snntorch==0.9.4              # the same, with one library at another release

Importing an adapter module never imports its library (that happens when a subject is built), so this works
before any of them is installed.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

from .core.types import Library
from .core.usage import OneLineParser


def declared() -> tuple[Library, ...]:
    """Every declared library, by name."""
    from . import subjects, transforms

    found: dict[str, Library] = {}
    for package in (subjects, transforms):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for value in vars(module).values():
                if isinstance(value, Library):
                    if value.name in found and found[value.name] != value:
                        raise ValueError(f"library {value.name!r} is declared twice, differently")
                    found[value.name] = value
    return tuple(found[name] for name in sorted(found))


def distributions() -> tuple[str, ...]:
    """The package-index names of every declared library (whose installed versions each record names)."""
    return tuple(library.distribution for library in declared())


def environments() -> list[dict[str, str]]:
    """The environments of the history view: one per earlier release a library declares (``Library.history``),
    named ``<library>-<version>``, with the requirement that replaces the pinned one there."""
    return [{"name": f"{lib.name}-{version}", "library": lib.name, "release": lib.at(version).requirement}
            for lib in declared() for version in lib.history]


def with_releases(libraries, releases: list[str]):
    """``libraries`` with the releases named ``distribution==version`` in place of their pins."""
    pinned = {lib.distribution: lib for lib in libraries}
    chosen = dict(pinned)
    for release in releases:
        distribution, sep, version = release.partition("==")
        if not sep or distribution not in pinned or not version:
            raise ValueError(f"--release {release!r}: expected DISTRIBUTION==VERSION of a declared library "
                             f"({', '.join(sorted(pinned))})")
        chosen[distribution] = pinned[distribution].at(version)
    return tuple(chosen[lib.distribution] for lib in libraries)


def _installable(libraries, *, gpu: bool):
    return [lib for lib in libraries if lib.sdist_sha256 is None and (lib.gpu or not gpu)]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m conformance.libraries", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    requirements = commands.add_parser("requirements", help="the pinned requirements, one per line")
    requirements.add_argument("--gpu", action="store_true", help="those the GPU machine installs")
    how = requirements.add_mutually_exclusive_group()
    how.add_argument("--no-deps", action="store_true", help="only those installed without their dependencies")
    how.add_argument("--with-deps", action="store_true", help="only those installed with their dependencies")
    dependencies = commands.add_parser("dependencies", help="what the libraries installed without dependencies need")
    dependencies.add_argument("--gpu", action="store_true", help="on the GPU machine (every library is installed "
                                                                  "without dependencies there)")
    sdist = commands.add_parser("sdist", help="distribution, version and sha256 of a library built from source")
    sdist.add_argument("name")
    listing = commands.add_parser("list", help="every library: name, requirement, how it is installed")
    shown = commands.add_parser("environments", help="the history's environments, one per earlier release")
    shown.add_argument("--json", action="store_true", help="as a JSON list (a CI job matrix reads it)")
    for command in (requirements, dependencies, listing):
        command.add_argument("--release", action="append", default=[], metavar="DISTRIBUTION==VERSION",
                             help="another release of a declared library in place of its pin (repeatable)")
    args = parser.parse_args(argv)
    try:
        libraries = with_releases(declared(), getattr(args, "release", []))
    except ValueError as error:
        print(f"python -m conformance.libraries: {error}", file=sys.stderr)
        return 2
    if args.command == "environments":
        found = environments()
        print(json.dumps(found) if args.json else "\n".join(f"{e['name']:28} {e['release']}" for e in found))
        return 0
    if args.command == "requirements":
        chosen = _installable(libraries, gpu=args.gpu)
        if args.no_deps:
            chosen = [lib for lib in chosen if lib.no_deps]
        elif args.with_deps:
            chosen = [lib for lib in chosen if not lib.no_deps]
        lines = [lib.requirement for lib in chosen]
    elif args.command == "dependencies":
        # a library built from its sdist is installed without dependencies (hqq): what it imports comes from here
        chosen = _installable(libraries, gpu=args.gpu) + [lib for lib in libraries
                                                          if lib.sdist_sha256 and (lib.gpu or not args.gpu)]
        lines = sorted({dep for lib in chosen if lib.no_deps or args.gpu for dep in lib.dependencies})
    elif args.command == "sdist":
        match = next((lib for lib in libraries if lib.name == args.name and lib.sdist_sha256), None)
        if match is None:
            built = [lib.name for lib in libraries if lib.sdist_sha256]
            print(f"python -m conformance.libraries: no library {args.name!r} is built from source; those that are: "
                  f"{', '.join(built) or 'none'}", file=sys.stderr)
            return 2
        lines = [f"{match.distribution} {match.version} {match.sdist_sha256}"]
    else:
        lines = [f"{lib.name:16} {lib.requirement:24} "
                 + ("sdist build" if lib.sdist_sha256 else "--no-deps" if lib.no_deps else "with dependencies")
                 + ("" if lib.gpu else ", not on the GPU machine") for lib in libraries]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
