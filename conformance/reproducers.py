"""The standalone reproducers of the known failures (reproducers/README.md): which entry names which script, the
scripts' contract, and running them.

    python -m conformance.reproducers [--library NAME] [--fork] [PATH ...]

Each script runs in a fresh interpreter by default (the way a library's maintainer would run it). ``--fork`` runs
them in processes forked from one that has already imported torch and the libraries, which saves the imports
(seconds per script) and is how the test suite runs them; a script's own imports still run, in a fresh namespace.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from . import SUITE_ROOT
from .core.types import Known
from .core.usage import OneLineParser

FOLDER = "reproducers"
EXPECT = re.compile(r"^#\s*expect:\s*(.*?)\s*$", re.M)
REQUIRES = re.compile(r"^#\s*requires:\s*(.*?)\s*$", re.M)
KNOWN_REQUIREMENTS = {"cuda"}
#: What a script must not import: this project (it must run where only the library is installed) and test tools.
FORBIDDEN_IMPORTS = {"conformance", "qsnn_reference", "suites", "hypothesis", "pytest"}
TIMEOUT_S = 180.0

REPRODUCES, PASSES, FAILS_OTHERWISE, TIMEOUT, SKIP = "reproduces", "PASSES", "FAILS OTHERWISE", "TIMEOUT", "skip"


@dataclass
class Claim:
    """One known-failure entry and where it is declared."""

    owner: str          # "subject snntorch.Leaky" or "transform bdpy_features on snntorch.Leaky"
    known: Known
    requires: tuple[str, ...]


@dataclass
class Script:
    path: str                                   # from the suite's root, as the entries name it
    claims: list[Claim] = field(default_factory=list)

    @property
    def file(self) -> Path:
        return SUITE_ROOT / self.path

    @property
    def library(self) -> str:
        parts = Path(self.path).parts
        return parts[1] if len(parts) > 2 else ""


@dataclass
class Result:
    path: str
    status: str
    last_line: str = ""
    seconds: float = 0.0
    output: str = ""
    expect: str = ""

    def describe(self) -> str:
        if self.status == REPRODUCES:
            return f"{self.path}: reproduces ({self.last_line})"
        if self.status == PASSES:
            return (f"{self.path}: exits 0, the failure it shows is gone: re-check the known-failure entries that "
                    "name it (stale, or fixed upstream)")
        if self.status == FAILS_OTHERWISE:
            return f"{self.path}: fails, but not as it says (# expect: {self.expect}): {self.last_line or '(no output)'}"
        if self.status == TIMEOUT:
            return f"{self.path}: did not finish in {self.seconds:.0f} s"
        return f"{self.path}: skipped: {self.last_line}"


# ------------------------------------------------------------------------------------------------------ entries
def claims() -> list[Claim]:
    """Every known-failure entry this project declares: its subjects' own, and those a transform declares on one of
    them (once per distinct entry and owner). Subjects of other packages (entry points) and those registered at
    run time (a test suite's own) keep their reproducers where they are defined."""
    import importlib

    from . import registry

    own = {s.id for name in registry.subject_modules() for s in importlib.import_module(name).subjects()}
    seen, found = set(), []
    specs = registry.specs()
    for subject in (s for s in registry.subjects().values() if s.id in own):
        for entry in subject.known:
            key = ("subject", subject.library, entry)
            if key not in seen:
                seen.add(key)
                found.append(Claim(f"subject {subject.id}", entry, tuple(subject.requires)))
        for transform in registry.transforms().values():
            if transform.known is None:
                continue
            for entry in transform.known(subject, specs[subject.spec]):
                key = ("transform", transform.id, entry)
                if key not in seen:
                    seen.add(key)
                    found.append(Claim(f"transform {transform.id} on {subject.id}", entry,
                                       tuple(subject.requires) + transform.requires))
    return found


def without_reproducer(found: Sequence[Claim]) -> list[str]:
    """One line per entry that names no reproducer, or one that is not a file of reproducers/."""
    problems = []
    for claim in found:
        path = claim.known.reproducer
        where = f"{claim.owner}: Known(transform={claim.known.transform!r}, check={claim.known.check!r}, " \
                f"cause={claim.known.cause!r})"
        if not path:
            problems.append(f"{where} names no reproducer")
        elif Path(path).parts[:1] != (FOLDER,) or not (SUITE_ROOT / path).is_file():
            problems.append(f"{where}: reproducer {path!r} is not a file under {FOLDER}/")
    return problems


def scripts(found: Sequence[Claim] | None = None) -> dict[str, Script]:
    """The scripts the entries name, each with the entries that name it."""
    by_path: dict[str, Script] = {}
    for claim in claims() if found is None else found:
        if claim.known.reproducer:
            by_path.setdefault(claim.known.reproducer, Script(claim.known.reproducer)).claims.append(claim)
    return dict(sorted(by_path.items()))


def unclaimed() -> list[str]:
    """Scripts under reproducers/ that no entry names."""
    named = set(scripts())
    return sorted(str(p.relative_to(SUITE_ROOT)) for p in (SUITE_ROOT / FOLDER).rglob("*.py")
                  if str(p.relative_to(SUITE_ROOT)) not in named)


# ----------------------------------------------------------------------------------------------------- contract
def expectation(text: str) -> str:
    found = EXPECT.findall(text)
    return found[0] if len(found) == 1 else ""


def contract_problems(text: str, name: str = "script") -> list[str]:
    """What a script's text breaks of the contract in reproducers/README.md (empty: nothing)."""
    problems = []
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        return [f"{name}: not Python ({error.msg}, line {error.lineno})"]
    if not ast.get_docstring(tree):
        problems.append(f"{name}: no docstring saying what fails")
    expects = EXPECT.findall(text)
    if len(expects) != 1 or not expects[0]:
        problems.append(f"{name}: needs exactly one non-empty '# expect: <fragment of the last traceback line>' "
                        f"line, has {len(expects)}")
    for requirement in REQUIRES.findall(text):
        if requirement not in KNOWN_REQUIREMENTS:
            problems.append(f"{name}: '# requires: {requirement}': only {sorted(KNOWN_REQUIREMENTS)} are known")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""] if not node.level else ["." * node.level]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            if top in FORBIDDEN_IMPORTS or module.startswith("."):
                problems.append(f"{name}: imports {module!r} (line {node.lineno}): a reproducer uses the library "
                                "and torch only")
    return problems


def skip_reason(script: Script, text: str) -> str:
    """Why the script cannot show its failure here (empty: it can)."""
    import torch

    from . import registry

    if "cuda" in REQUIRES.findall(text) and not torch.cuda.is_available():
        return "needs a GPU (# requires: cuda)"
    for claim in script.claims:
        missing = registry.missing_requirement(claim.requires)
        if missing:
            return f"{missing} is not installed"
    if script.claims and not any(registry.for_this_torch(c.known) for c in script.claims):
        globs = sorted({c.known.torch for c in script.claims})
        return f"its entries apply to torch {', '.join(globs)}, this is {torch.__version__}"
    if script.claims and not any(registry.for_this_cpu(c.known) for c in script.claims):
        globs = sorted({c.known.cpu for c in script.claims})
        return f"its entries apply to CPUs with {', '.join(globs)}, which this one lacks"
    if script.claims and not any(registry.in_release(script.library, c.known.releases) for c in script.claims):
        globs = sorted({c.known.releases for c in script.claims})
        return (f"its entries apply to {script.library} {', '.join(globs)}, this is "
                f"{registry.installed_release(script.library)}")
    return ""


# ------------------------------------------------------------------------------------------------------ running
def _environment() -> dict[str, str]:
    """The scripts' environment: one thread, faulthandler on, nothing of this checkout on the path (the suite and
    its ``kernels`` are reachable only as installed, which is how a library's maintainer would have them)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONFAULTHANDLER"] = "1"
    # other entries stay: libraries installed with `pip install --target DIR` are found through PYTHONPATH
    kept = [entry for entry in env.pop("PYTHONPATH", "").split(os.pathsep) if entry and not _in_checkout(entry)]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def _in_checkout(entry: str) -> bool:
    path = Path(entry).resolve()
    return path == SUITE_ROOT.resolve() or SUITE_ROOT.resolve() in path.parents


#: the line an uncaught exception's message starts on (``torch.utils.checkpoint.CheckpointError: ...``)
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*:")


def judge(path: str, returncode: int | None, output: str, expect: str, seconds: float) -> Result:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    # an exception whose message spans several lines ends the output with its last line: its first line counts
    starts = [i for i, line in enumerate(lines) if EXCEPTION_LINE.match(line)]
    raised = lines[starts[-1]] if starts else ""
    if returncode is None:
        status = TIMEOUT
    elif returncode == 0:
        status = PASSES
    else:
        status = REPRODUCES if expect and (expect in last or expect in raised) else FAILS_OTHERWISE
    return Result(path, status, last, seconds, output, expect)


def run_fresh(path: str, *, timeout: float = TIMEOUT_S) -> Result:
    """Run one script in a fresh interpreter, from an empty directory."""
    file = SUITE_ROOT / path
    text = file.read_text(encoding="utf-8")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reproducer-") as where:
        try:
            done = subprocess.run([sys.executable, str(file)], cwd=where, env=_environment(), capture_output=True,
                                  text=True, timeout=timeout, errors="replace")
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as error:
            partial = error.stdout or ""
            code, output = None, partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    return judge(path, code, output, expectation(text), time.monotonic() - started)


_SERVER = r"""
import importlib, json, os, runpy, signal, sys, time, traceback
import torch
torch.set_num_threads(1)
paths, preload, timeout = json.loads(sys.argv[1])
for name in preload:
    try:
        importlib.import_module(name)
    except Exception:
        pass
results = []
for path, out in paths:
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1); os.dup2(fd, 2)
        signal.alarm(int(timeout))
        sys.argv = [path]
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            sys.stdout.flush(); sys.stderr.flush(); os._exit(code)
        except BaseException:
            sys.stdout.flush()
            traceback.print_exc()
            sys.stdout.flush(); sys.stderr.flush(); os._exit(1)
        sys.stdout.flush(); sys.stderr.flush(); os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    results.append([path, None if code == -signal.SIGALRM else code, time.monotonic() - started])
print(json.dumps(results))
"""


#: What many scripts import besides the library (dynamo alone takes a second), imported once by a forking runner.
PRELOAD = ("torch._dynamo", "torch.export", "torch.utils.checkpoint", "opacus", "bdpy.dl.torch")


def run_forked(paths: Sequence[str], preload: Iterable[str] = (), *, timeout: float = TIMEOUT_S) -> list[Result]:
    """Run scripts in processes forked from one that imported torch, ``preload`` (the library) and PRELOAD
    once."""
    texts = {p: (SUITE_ROOT / p).read_text(encoding="utf-8") for p in paths}
    with tempfile.TemporaryDirectory(prefix="reproducers-") as where:
        jobs = [[str(SUITE_ROOT / p), str(Path(where) / f"{i}.out")] for i, p in enumerate(paths)]
        arguments = json.dumps([jobs, [*preload, *PRELOAD], timeout])
        done = subprocess.run([sys.executable, "-c", _SERVER, arguments], cwd=where, env=_environment(),
                              capture_output=True, text=True, errors="replace",
                              timeout=timeout * max(1, len(paths)) + 60)
        if done.returncode != 0:
            raise RuntimeError(f"the reproducer runner failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        results = []
        for (path, out), (_, code, seconds) in zip(jobs, rows):
            output = Path(out).read_text(errors="replace") if Path(out).exists() else ""
            relative = str(Path(path).relative_to(SUITE_ROOT))
            results.append(judge(relative, code, output, expectation(texts[relative]), seconds))
    return results


# ---------------------------------------------------------------------------------------------------------- CLI
def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m conformance.reproducers", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="scripts to run (default: every script an entry names)")
    parser.add_argument("--library", help="only this library's scripts (reproducers/<library>/)")
    parser.add_argument("--fork", action="store_true", help="fork per script from a process that imported the "
                                                             "library once (faster; the test suite's way)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per script")
    args = parser.parse_args(argv)
    known = scripts()
    chosen = [known[p] if p in known else Script(p) for p in (args.paths or known)]
    unknown = [s.path for s in chosen if not s.file.is_file()]
    if unknown:
        print(f"conformance.reproducers: error: no such script: {unknown[0]} (they live under {FOLDER}/)",
              file=sys.stderr)
        return 2
    if args.library:
        chosen = [s for s in chosen if s.library == args.library]
        if not chosen:
            libraries = sorted({s.library for s in known.values()})
            print(f"conformance.reproducers: error: no scripts of library {args.library!r}; libraries: "
                  f"{', '.join(libraries)}", file=sys.stderr)
            return 2
    bad = 0
    for problem in without_reproducer(claims()) if not args.paths and not args.library else []:
        print(f"missing: {problem}")
        bad += 1
    runnable, results = [], []
    for script in chosen:
        text = script.file.read_text(encoding="utf-8")
        problems = contract_problems(text, script.path)
        if problems:
            for problem in problems:
                print(f"contract: {problem}")
            bad += 1
            continue
        reason = skip_reason(script, text)
        if reason:
            results.append(Result(script.path, SKIP, reason))
        else:
            runnable.append(script)
    if args.fork and runnable:
        print(f"{len(runnable)} script(s), forked from one process ...", flush=True)
        results += run_forked([s.path for s in runnable], sorted({s.library for s in runnable}),
                              timeout=args.timeout)
    else:
        for script in runnable:
            results.append(run_fresh(script.path, timeout=args.timeout))
            print(f"[{len(results)}/{len(chosen)}] {results[-1].path}: {results[-1].status} "
                  f"({results[-1].seconds:.1f} s)", flush=True)
    for result in sorted(results, key=lambda r: (r.status == REPRODUCES, r.path)):
        print(result.describe())
        bad += result.status not in (REPRODUCES, SKIP)
    counts = {s: sum(r.status == s for r in results) for s in (REPRODUCES, PASSES, FAILS_OTHERWISE, TIMEOUT, SKIP)}
    print("conformance.reproducers: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) +
          f" of {len(chosen)} script(s)" + (f"; {bad} problem(s)" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
