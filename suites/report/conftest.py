"""Synthetic cell records for the report tests, written through the real record writer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance import registry
from conformance.core.types import Cell
from conformance.records.io import CellResult, RecordWriter, make_record, write_suite_file

ENV = {"python": "3.11.9", "torch": "2.13.0+cpu", "platform": "linux-x86_64", "cpu": "x86_64", "device_name": "cpu",
       "cuda": None, "suite_sha": "abc123def456", "libraries": {"torch": "2.13.0", "snntorch": "0.9.1"},
       "hypothesis_profile": "ci"}


def record(subject: str, transform: str, check: str, outcome: str, *, device: str = "cpu", dtype: str = "float32",
           library: str | None = None, spec: str = "neuron.leaky", cause: str | None = None, message: str = "",
           started: str = "2025-01-01T00:00:00Z", run: str = "run-a", env: dict | None = None, **fields) -> dict:
    """One record as ``make_record`` writes it (this version's schema), with a fixed start time."""
    cell = Cell(subject, transform, check, device, dtype)
    library = library or subject.split(".", 1)[0]
    result = CellResult(outcome=outcome, cause=cause, message=message,
                        **{k: v for k, v in fields.items() if k in CellResult.__dataclass_fields__})
    rec = make_record(run=run, cell=cell, subject=SimpleNamespace(library=library, spec=spec), result=result,
                      reproduce=f"pytest 'suites/test_matrix.py::test_cell[{cell.id}]'", env=env or ENV)
    rec["started"] = started
    return rec


def write(path: Path, records, *, suite: bool = True) -> Path:
    """Records into ``path``, and (as every run does) the suite's description beside them."""
    writer = RecordWriter(path)
    for rec in records:
        writer.write(rec)
    writer.close()
    if suite:
        write_suite_file(path.parent, registry.suite_description())
    return path


MESSAGES = [
    "[forward-mismatch] {sid}: forward differs from spec neuron.leaky: max abs err 3.1e-02 > atol 1e-05 at index "
    "(3, 1, 7); spec 1.0 got 0.0 (membrane 0.99991 vs threshold 1.0, outside tie margin)",
    "[grad-mismatch] {sid}: d(loss)/d(beta) differs from the surrogate formula (fast_sigmoid, slope=25): "
    "max rel err 0.21 > rtol 1.3e-06",
    "TransformFailed: vmap: RuntimeError: In order to use an autograd.Function with functorch transforms "
    "(vmap, grad, jvp, jacrev, ...), it must override the setup_context staticmethod.",
    "torch._dynamo.exc.Unsupported: Data-dependent branching\n  Explanation: Detected data-dependent branching "
    "(e.g. `if my_tensor:`) while tracing <lambda> in {sid}.forward",
    "KeyError: '_layer_implementation' while deepcopy of {sid}: maximum recursion depth exceeded in __getattr__",
]
OUTCOME_WEIGHTS = {"pass": 62, "fail": 12, "xfail": 8, "skip": 10, "crash": 2, "timeout": 1, "xpass": 1}
CAUSES = ["forward-mismatch", "grad-mismatch", "autograd-function-without-setup_context",
          "graph-break:Data-dependent branching", "deepcopy-getattr-recursion"]


def synthetic(n: int, *, seed: int = 0, libraries: int = 6, transforms: int = 20) -> list[dict]:
    """``n`` realistic records: libraries x subjects x transforms x checks x dtypes, mixed outcomes."""
    rng = random.Random(seed)
    libs = ["snntorch", "spikingjelly", "norse", "sinabs", "bitorch", "brevitas", "reference",
            "bitorch_engine"][:libraries]
    transform_names = [f"t{i:02d}_{name}" for i, name in enumerate(
        ["eager", "deepcopy", "deepcopy_used", "pickle", "pickle_used", "state_dict", "functional_call", "vmap",
         "grad", "per_sample_grad", "jvp", "compile_aot_eager", "compile_inductor", "compile_dynamic", "jit_script",
         "jit_trace", "export", "forward_hooks", "checkpoint", "opacus_hooks"][:transforms])]
    checks = ["forward_matches_spec", "grad_matches_spec", "preserves_forward", "preserves_grad", "no_state_leak"]
    dtypes = ["float32", "float64", "bfloat16"]
    outcomes, weights = zip(*OUTCOME_WEIGHTS.items())
    records, i = [], 0
    while len(records) < n:
        lib = libs[i % len(libs)]
        subject = f"{lib}.Layer{i // len(libs)}"
        spec = ["neuron.leaky", "sign.clipped_ste", "neuron.lif"][i % 3]
        for t in transform_names:
            for c in checks:
                for dt in dtypes:
                    if len(records) >= n:
                        break
                    outcome = rng.choices(outcomes, weights)[0]
                    k = rng.randrange(len(CAUSES))
                    bad = outcome in ("fail", "xfail", "crash", "timeout")
                    sid = f"{subject}|{t}|{c}|cpu|{dt}"
                    records.append(record(
                        subject, t, c, outcome, dtype=dt, library=lib, spec=spec, cause=CAUSES[k] if bad else None,
                        message=MESSAGES[k].format(sid=sid) if bad else "",
                        max_abs_err=rng.random() * 1e-2 if bad else rng.random() * 1e-7,
                        max_rel_err=rng.random() if bad else rng.random() * 1e-7, atol=1e-5, rtol=1.3e-6,
                        tie_excluded=rng.randrange(3),
                        example=(f"Example(x=tensor(shape=(4, 3), [{rng.random():.4g}, {rng.random():.4g}, -0.3, 1.2, "
                                 f"0.01, 2.5, ...]), beta=tensor(shape=(), [{rng.random():.4g}]), threshold=1.0, "
                                 "reset='subtract')") if bad else None,
                        known={"reason": "autograd.Function without setup_context",
                               "link": "https://github.com/example/issue/1",
                               "cause": CAUSES[k]} if outcome == "xfail" else None,
                        duration_s=rng.random() * 3, started=f"2025-01-0{1 + i % 3}T10:00:00Z", run=f"run-{i % 3}"))
        i += 1
    return records


@pytest.fixture
def write_records(tmp_path):
    """``write_records(records, name="w0.jsonl")`` -> the results directory holding them."""
    results = tmp_path / "results"

    def _write(records, name: str = "gw0.jsonl") -> Path:
        write(results / name, records)
        return results

    return _write


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
