"""The framework's own guarantees: tie rule, tolerance table, cause classification, timeouts, crash and
kill resilience of the records, expectations, known-failure strictness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from conformance import expectations, registry
from conformance.checks.harness import compare
from conformance.core.causes import CheckFailed, classify
from conformance.core.tolerance import DEFAULTS, OVERRIDES, tolerance
from conformance.core.types import Cell, Known, Subject
from conformance.records.io import CellResult, RecordWriter, iter_records, make_record
from conformance.runner import run_cell

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------------ tie rule


def test_compare_excuses_a_flip_only_near_the_boundary():
    expected = torch.tensor([[1.0, 0.0, 1.0]])
    actual = torch.tensor([[0.0, 0.0, 1.0]])
    tol = DEFAULTS["float32"]
    near = torch.tensor([[1e-6, -0.5, 0.5]])
    assert compare(actual, expected, tol=tol, cause="forward-mismatch", what="t", margin=near, tie=1e-4) == 1
    far = torch.tensor([[0.3, -0.5, 0.5]])
    with pytest.raises(CheckFailed) as raised:
        compare(actual, expected, tol=tol, cause="forward-mismatch", what="t", margin=far, tie=1e-4)
    assert raised.value.cause == "forward-mismatch"


def test_compare_judges_values_exactly_on_the_boundary():
    """sign(0) and mem == threshold are conventions, not rounding: a flip there is a finding."""
    with pytest.raises(CheckFailed):
        compare(torch.tensor([-1.0]), torch.tensor([1.0]), tol=DEFAULTS["float32"], cause="forward-mismatch",
                what="sign(0)", margin=torch.tensor([0.0]), tie=1e-4)


def test_compare_excludes_the_rest_of_a_trajectory_after_an_excused_flip():
    # (T=3, B=2, N=1): sample 0 flips at t=0 near the threshold, so its t=1,2 are excluded; sample 1 must match.
    expected = torch.zeros(3, 2, 1)
    actual = expected.clone()
    actual[0, 0, 0] = 1.0
    actual[2, 0, 0] = 1.0
    margin = torch.full((3, 2, 1), 0.5)
    margin[0, 0, 0] = 1e-6
    excused = compare(actual, expected, tol=DEFAULTS["float32"], cause="forward-mismatch", what="spk",
                      margin=margin, tie=1e-4, time_dim=0, batch_dim=1)
    assert excused == 3
    actual[1, 1, 0] = 1.0
    with pytest.raises(CheckFailed):
        compare(actual, expected, tol=DEFAULTS["float32"], cause="forward-mismatch", what="spk",
                margin=margin, tie=1e-4, time_dim=0, batch_dim=1)


def test_integer_outputs_compare_exactly():
    words = torch.tensor([3, 5], dtype=torch.int32)
    assert compare(words, words.clone(), tol=DEFAULTS["float32"], cause="forward-mismatch", what="w") == 0
    with pytest.raises(CheckFailed):
        compare(words + 1, words, tol=DEFAULTS["float32"], cause="forward-mismatch", what="w")


# ------------------------------------------------------------------------------------------------ tolerances


def test_every_tolerance_override_has_a_reason_and_is_used_by_lookup():
    for key, tol in OVERRIDES.items():
        assert tol.reason and tol.reason != DEFAULTS["float32"].reason, key
    assert tolerance("float64", "eager", "preserves_forward") == DEFAULTS["float64"]
    assert tolerance("float32", "compile_inductor", "preserves_grad") is OVERRIDES[
        ("float32", "compile_inductor", "*")]


# ------------------------------------------------------------------------------------------------ causes


def test_reported_messages_are_classified():
    bitorch_vmap = RuntimeError(  # hpi-xnor/bitorch#4
        "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it must "
        "override the setup_context staticmethod. For more details, please see "
        "https://pytorch.org/docs/main/notes/extending.func.html")
    assert classify(bitorch_vmap) == "autograd-function-without-setup_context"
    assert classify(KeyError("_layer_implementation")) == "deepcopy-getattr-recursion"
    nonleaf = RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                           "because of a torch.nn.utils.weight_norm usage")
    assert classify(nonleaf) == "deepcopy-non-leaf"
    from conformance.core.causes import TransformFailed
    from conformance.transforms import by_id

    pickle_stage = TransformFailed("pickle", ValueError("boom"))
    assert classify(pickle_stage, by_id("pickle").stage_causes_of()) == "pickle-failed"  # the transform's own stage
    assert classify(TransformFailed("build", ValueError("boom"))) == "build-failed"  # a stage every transform has
    assert classify(ValueError("boom")) == "error"


def test_check_failed_rejects_an_unknown_cause():
    with pytest.raises(ValueError):
        CheckFailed("made-up-cause", "x")


# ------------------------------------------------------------------------------------------------ runner


class _Sleeper(torch.nn.Module):
    def forward(self, x):
        time.sleep(30)
        return x


def _register(subject: Subject) -> Subject:
    if subject.id not in registry.subjects():
        registry.register(subject)
    return registry.subjects()[subject.id]


def test_a_hanging_cell_times_out_and_is_recorded_as_timeout():
    _register(Subject(id="framework.sleeper", spec="quant.sign_ste", build=lambda ex: _Sleeper(),
                      fixed={"zero_value": 1.0}, library="framework"))
    started = time.monotonic()
    result = run_cell(Cell("framework.sleeper", "eager", "forward_matches_spec"), timeout_s=1.0)
    assert result.outcome == "timeout" and result.cause == "timeout"
    assert time.monotonic() - started < 15


def test_a_missing_library_skips_with_the_reason():
    _register(Subject(id="framework.missing_lib", spec="quant.sign_ste", build=lambda ex: None,
                      requires=("no_such_library_xyz",), library="framework"))
    result = run_cell(Cell("framework.missing_lib", "eager", "forward_matches_spec"))
    assert result.outcome == "skip" and "no_such_library_xyz" in result.message


def test_known_failures_are_strict():
    from conformance.subjects.reference import SpecModule
    from qsnn_reference import quant

    passing = _register(Subject(
        id="framework.known_but_passing", spec="quant.sign_ste", library="framework", fixed={"zero_value": 1.0},
        build=lambda ex: SpecModule(quant.sign_ste, {}, ex.hyper),
        known=(Known(transform="eager", check="forward_matches_spec", reason="test"),)))
    result = run_cell(Cell(passing.id, "eager", "forward_matches_spec"))
    assert result.outcome == "xpass"
    stale = registry.unmatched_known([Cell(passing.id, "eager", "output_dtype")])
    assert any(sid == passing.id for sid, _ in stale)


def test_examples_scale_draws_fewer_examples_on_its_device():
    from conformance.subjects.reference import SpecModule
    from qsnn_reference import quant

    built = []

    def build(ex):
        built.append(ex)
        return SpecModule(quant.sign_ste, {}, ex.hyper)

    full = _register(Subject(id="framework.examples_full", spec="quant.sign_ste", library="framework",
                             fixed={"zero_value": 1.0}, build=build))
    assert run_cell(Cell(full.id, "deepcopy", "preserves_forward"), profile="ci").outcome == "pass"
    n_full, built[:] = len(built), []
    scaled = _register(full.replace(id="framework.examples_scaled", examples_scale={"cpu": 0.4}))
    assert run_cell(Cell(scaled.id, "deepcopy", "preserves_forward"), profile="ci").outcome == "pass"
    assert 0 < len(built) < n_full


def test_cell_examples_ignore_constants_in_loaded_modules(tmp_path, monkeypatch):
    """The examples of a cell do not move when some project module gains literals (hypothesis' local-constant
    pool): the checked-in expectations must not flip on an unrelated edit."""
    import importlib

    from conformance.subjects.reference import SpecModule
    from qsnn_reference import neurons

    seen: list = []

    def build(ex):
        seen.append((tuple(ex.x.flatten().tolist()), sorted((k, str(v)) for k, v in ex.hyper.items())))
        return SpecModule(neurons.leaky, ex.params, ex.hyper)

    subject = _register(Subject(id="framework.draws", spec="neuron.leaky", library="framework", build=build))
    run_cell(Cell(subject.id, "deepcopy", "preserves_forward"), profile="ci")
    before, seen[:] = list(seen), []
    (tmp_path / "more_constants.py").write_text(
        "VALUES = (" + ", ".join(f"{0.05 + i / 13:.9f}, {2 + 7 * i}" for i in range(500)) + ", 'zero', 'none')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("more_constants")
    try:  # another transform: the same examples are drawn (outcomes are cached per transform and example)
        run_cell(Cell(subject.id, "pickle", "preserves_forward"), profile="ci")
    finally:
        sys.modules.pop("more_constants", None)
    assert before and seen == before


def _only_this_release_applies(subject: Subject, other: Known, mine: Known) -> Cell:
    """``mine`` covers the subject's eager cell, ``other`` (of another release) neither covers it nor is stale."""
    cell = Cell(subject.id, "eager", "forward_matches_spec")
    assert registry.known_failure(cell, subject) is mine
    assert registry.known_failure(cell, subject.replace(known=(other,))) is None
    assert not any(sid == subject.id for sid, _ in registry.unmatched_known([cell]))
    return cell


def test_a_known_failure_for_another_torch_release_neither_applies_nor_is_stale():
    import torch

    here = torch.__version__
    other = Known(transform="eager", torch="0.1*", reason="an old release's finding")
    mine = Known(transform="eager", torch=here.split("+")[0] + "*", reason="this release's finding")
    subject = _register(Subject(id="framework.torch_versions", spec="quant.sign_ste", library="framework",
                                fixed={"zero_value": 1.0}, build=lambda ex: None, known=(other, mine)))
    _only_this_release_applies(subject, other, mine)


def test_a_library_release_outside_a_subject_or_a_known_failure_is_said_and_never_applied():
    """The history view runs earlier releases: a subject a release lacks skips with the reason its adapter gives,
    and a known failure of other releases neither excuses a cell nor is stale (as one of another torch)."""
    release = registry.installed_release("snntorch")
    if release is None:
        pytest.skip("snntorch is not installed")
    old = Known(transform="eager", releases="0.0.*", reason="a finding of releases long gone")
    mine = Known(transform="eager", releases=release, reason="this release's finding")
    subject = _register(Subject(id="framework.release_globs", spec="quant.sign_ste", library="snntorch",
                                fixed={"zero_value": 1.0}, build=lambda ex: None, known=(old, mine)))
    cell = _only_this_release_applies(subject, old, mine)
    assert registry.not_applicable(cell, subject, registry.specs()["quant.sign_ste"],
                                   registry.transforms()["eager"]) is None
    absent = subject.replace(releases=("0.0.*", "added in 0.1"))
    reason = registry.not_applicable(cell, absent, registry.specs()["quant.sign_ste"], registry.transforms()["eager"])
    assert reason == (f"snntorch {release} is not among the releases 0.0.* that have framework.release_globs: "
                      "added in 0.1")


def test_a_known_failure_accepts_only_its_causes():
    from conformance.records.io import CellResult
    from conformance.runner import _apply_known

    entry = Known(transform="eager", cause="forward-raised", also=("dtype-mismatch",), reason="one finding")

    def judged(cause):
        return _apply_known(CellResult(outcome="fail", cause=cause, message="m"), entry)

    assert judged("forward-raised").outcome == "xfail"
    assert judged("dtype-mismatch").outcome == "xfail"
    other = judged("grad-mismatch")
    assert other.outcome == "fail" and "expected cause 'forward-raised'" in other.message
    assert Known(transform="eager").explains("anything")


# ------------------------------------------------------------------------------------------------ records


def test_records_survive_a_killed_writer(tmp_path):
    """Each record is flushed when written: a process killed right after keeps every line."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from conformance.records.io import RecordWriter
        writer = RecordWriter({str(tmp_path / 'w.jsonl')!r})
        for i in range(3):
            writer.write({{"schema": 1, "kind": "cell", "subject": "s", "transform": "t", "check": str(i),
                           "device": "cpu", "dtype": "float32", "outcome": "pass"}})
        os._exit(9)
    """)
    subprocess.run([sys.executable, "-c", script], check=False)
    assert len(list(iter_records([tmp_path]))) == 3


def test_gzipped_records_are_read_and_a_truncated_one_keeps_its_lines(tmp_path):
    import gzip

    lines = [json.dumps({"schema": 1, "kind": "cell", "subject": "s", "transform": "t", "check": str(i),
                         "device": "cuda", "dtype": "float32", "outcome": "pass"}) for i in range(200)]
    (tmp_path / "run").mkdir()
    with gzip.open(tmp_path / "run" / "cuda.jsonl.gz", "wt") as out:
        out.write("\n".join(lines) + "\n")
    assert len(list(iter_records([tmp_path / "run"]))) == 200
    data = (tmp_path / "run" / "cuda.jsonl.gz").read_bytes()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "cuda.jsonl.gz").write_bytes(data[: len(data) // 2])
    problems: list = []
    kept = list(iter_records([tmp_path / "cut"], problems))
    assert 0 < len(kept) < 200 and problems and "cannot read further" in problems[-1].reason


def test_a_dead_worker_is_recorded_as_crash(tmp_path):
    test_file = tmp_path / "test_crashing.py"
    test_file.write_text(textwrap.dedent("""
        import os
        from conformance.api import parametrize_with_checks
        from conformance.api import Subject

        def build(example):
            os._exit(7)

        CRASHER = Subject(id="framework.crasher", spec="quant.sign_ste", build=build, library="framework")

        @parametrize_with_checks([CRASHER], transforms=["eager"])
        def test_cells(cell, record_cell):
            from conformance.api import check_cell
            check_cell(cell, record=record_cell)
    """))
    results = tmp_path / "results"
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONFORMANCE_RUN_ID="crash-test")
    subprocess.run([sys.executable, "-m", "pytest", str(test_file), "-p", "conformance.plugin", "-n", "1",
                    "-p", "no:cacheprovider", "-q", "--results-dir", str(results), "-k", "forward_matches_spec and float32"],
                   cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    records = list(iter_records([results]))
    assert records and all(r["outcome"] == "crash" for r in records), records
    assert records[0]["cell"].startswith("framework.crasher|eager|forward_matches_spec")


def test_two_workers_survive_a_crash_and_a_hang_in_c_and_finish(tmp_path):
    """Under -n 2: one cell kills its worker, one hangs where the alarm cannot reach (a blocking C call), the
    watchdog ends that worker; xdist replaces both, every other cell is recorded, and the run ends."""
    test_file = tmp_path / "test_two_workers.py"
    test_file.write_text(textwrap.dedent("""
        import os, signal, time
        from conformance.api import parametrize_with_checks
        from conformance.subjects.reference import SpecModule
        from conformance.api import Subject
        from qsnn_reference import quant

        def crash(example):
            os._exit(7)

        def hang(example):  # as a hang in C code: the in-process alarm never reaches Python
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(600)

        def fine(example):
            return SpecModule(quant.sign_ste, {}, example.hyper)

        SUBJECTS = [Subject(id=f"framework.{name}", spec="quant.sign_ste", build=build, library="framework",
                            fixed={"zero_value": 1.0})
                    for name, build in (("crash", crash), ("hang", hang), ("fine_a", fine), ("fine_b", fine))]

        @parametrize_with_checks(SUBJECTS, transforms=["eager", "deepcopy"])
        def test_cells(cell, record_cell):
            from conformance.api import check_cell
            check_cell(cell, record=record_cell)
    """))
    results = tmp_path / "results"
    # a 1 s cell timeout stopped healthy cells under load
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONFORMANCE_RUN_ID="two-workers", CONFORMANCE_CELL_TIMEOUT="2")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", str(test_file), "-p", "conformance.plugin", "-n", "2",
                           "-p", "no:cacheprovider", "-q", "--results-dir", str(results),
                           # one cell of the hanging subject: a second would only wait out another hard limit
                           "-k", "float32 and (forward_matches_spec or preserves_forward) and not (hang and deepcopy)"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    records = {r["cell"]: r for r in iter_records([results])}
    outcomes = {cell.split("|")[0] + "|" + cell.split("|")[1] + "|" + cell.split("|")[2]: r["outcome"]
                for cell, r in records.items()}
    assert time.monotonic() - started < 200, done.stdout[-2000:]
    assert outcomes.get("framework.crash|eager|forward_matches_spec") == "crash", outcomes
    assert outcomes.get("framework.hang|eager|forward_matches_spec") == "timeout", outcomes
    assert all(outcomes.get(f"framework.fine_{x}|{t}|{c}") == "pass" for x in "ab"
               for t, c in (("eager", "forward_matches_spec"), ("deepcopy", "preserves_forward"))), outcomes


def test_recording_overhead_is_small(tmp_path):
    """Not a timing gate: the measured number is printed for the notes (target: under 5 ms per cell)."""
    writer = RecordWriter(tmp_path / "bench.jsonl")
    cell = Cell("reference.quant.sign_ste", "eager", "forward_matches_spec")
    subject = registry.subjects()["reference.quant.sign_ste"]
    from conformance.records.io import environment

    env = environment()
    started = time.perf_counter()
    for _ in range(500):
        writer.write(make_record(run="bench", cell=cell, subject=subject, result=CellResult("pass"),
                                 reproduce="x", env=env))
    per_cell_ms = (time.perf_counter() - started) / 500 * 1000
    writer.close()
    print(f"recording: {per_cell_ms:.3f} ms per cell")
    assert per_cell_ms < 50  # only guards against something pathological on a loaded machine


# ------------------------------------------------------------------------------------------------ expectations


def _write_records(path: Path, outcomes: dict[str, tuple[str, str | None]]) -> None:
    lines = []
    for cell_id, (outcome, cause) in outcomes.items():
        s, t, c, d, dt = cell_id.split("|")
        lines.append(json.dumps({"schema": 1, "kind": "cell", "subject": s, "transform": t, "check": c,
                                 "device": d, "dtype": dt, "outcome": outcome, "cause": cause,
                                 "started": "2026-01-01T00:00:00Z"}))
    path.write_text("\n".join(lines) + "\n")


def test_expectations_fail_when_results_get_worse_or_better_and_accept_fixes_it(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    file = tmp_path / "expected.json"
    _write_records(run, {"a|eager|x|cpu|float32": ("pass", None), "b|eager|x|cpu|float32": ("xfail", "grad-mismatch")})
    assert expectations.main(["accept", "--results", str(run), "--file", str(file)]) == 0
    assert expectations.main(["check", "--results", str(run), "--file", str(file)]) == 0
    _write_records(run, {"a|eager|x|cpu|float32": ("fail", "forward-mismatch"),
                         "b|eager|x|cpu|float32": ("xfail", "grad-mismatch")})
    assert expectations.main(["check", "--results", str(run), "--file", str(file)]) == 1  # worse
    _write_records(run, {"a|eager|x|cpu|float32": ("pass", None), "b|eager|x|cpu|float32": ("pass", None)})
    assert expectations.main(["check", "--results", str(run), "--file", str(file)]) == 1  # better
    _write_records(run, {"a|eager|x|cpu|float32": ("pass", None)})
    assert expectations.main(["check", "--results", str(run), "--file", str(file)]) == 1  # a cell vanished
    assert expectations.main(["check", "--partial", "--results", str(run), "--file", str(file)]) == 0


def test_registry_ids_are_stable_coordinates():
    cells = registry.cells(["reference.quant.sign_ste"], devices=["cpu"])
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids))
    assert "reference.quant.sign_ste|eager|forward_matches_spec|cpu|bfloat16" in ids
    assert all(registry.parse_cell_id(i).id == i for i in ids)


# ------------------------------------------------------------------------------------------------ graph breaks


def test_graph_breaks_count_a_break_inside_a_loop():
    """A data-dependent branch inside a loop makes dynamo skip the whole frame (gb7000): it must count."""
    from conformance.transforms.compile import graph_breaks

    class LoopBranch(torch.nn.Module):
        def forward(self, x):
            steps = []
            for t in range(x.shape[0]):
                steps.append(x[t] * 2 if x[t].sum() > 0 else x[t])
            return torch.stack(steps)

    count, reasons = graph_breaks(LoopBranch(), torch.randn(3, 4))
    assert count >= 1
    assert any("Data-dependent branching" in r for r in reasons), reasons


def test_graph_break_slug_has_no_trailing_space():
    from conformance.core.causes import graph_break_reason

    slug = graph_break_reason("Unsupported: " + "word " * 40)
    assert slug == slug.strip() and len(slug) <= 80


# ------------------------------------------------------------------------------------------------ devices


def test_cuda_only_transforms_have_no_cpu_cells():
    ids = {c.id for c in registry.cells(["reference.quant.sign_ste"])}
    assert "reference.quant.sign_ste|cpu_vs_cuda|preserves_forward|cuda|float32" in ids
    assert "reference.quant.sign_ste|autocast_fp16|preserves_grad|cuda|float32" in ids
    assert not any("|cpu_vs_cuda|" in i and "|cpu|" in i for i in ids)


def test_float32_cells_compute_without_tf32_cpu_vs_cuda_included():
    """The harness turns TF32 off (float32 cells compare at float32 tolerances), and cpu_vs_cuda changes nothing of
    it: torch's TF32 default for cuDNN convolutions is a precision torch chooses, not the subject's."""
    import inspect

    from conformance.core.settings import configure_process
    from conformance.transforms import devices

    configure_process()  # once per process: already done by the plugin in a test run
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    assert "allow_tf32" not in inspect.getsource(devices)


def test_the_cache_directory_is_resolved_in_one_place(tmp_path, monkeypatch):
    """The suite's processes and the benchmark gate's baseline cache agree on the cache directory: the variable when
    set (made absolute, so a subprocess with another working directory finds it), the default when unset or empty."""
    from conformance.bench import ab
    from conformance.core.settings import cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONFORMANCE_DIR", raising=False)  # the kit's one output directory, when a user sets it
    default = tmp_path / ".conformance" / "cache"
    for value in (None, ""):
        if value is None:
            monkeypatch.delenv("CONFORMANCE_CACHE_DIR", raising=False)
        else:
            monkeypatch.setenv("CONFORMANCE_CACHE_DIR", value)
        assert cache_dir() == default.resolve()
        assert ab.default_cache() == default.resolve() / "bench-baseline"
    assert cache_dir(tmp_path / "root") == (tmp_path / "root" / ".conformance" / "cache").resolve()
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", "relative/here")
    assert cache_dir(tmp_path / "root") == (tmp_path / "relative" / "here").resolve()
    assert ab.default_cache() == (tmp_path / "relative" / "here" / "bench-baseline").resolve()


def test_a_gpu_record_is_not_hidden_by_a_later_skip_for_want_of_a_gpu():
    from conformance.records.io import NO_DEVICE, latest_by_cell

    base = {"subject": "s", "transform": "eager", "check": "forward_matches_spec", "device": "cuda",
            "dtype": "float32"}
    gpu = {**base, "outcome": "fail", "message": "x", "started": "2026-12-01T00:00:00Z"}
    cpu_skip = {**base, "outcome": "skip", "message": NO_DEVICE, "started": "2026-12-02T00:00:00Z"}
    newer_gpu = {**base, "outcome": "pass", "message": "", "started": "2026-12-03T00:00:00Z"}
    assert next(iter(latest_by_cell([gpu, cpu_skip]).values()))["outcome"] == "fail"
    assert next(iter(latest_by_cell([cpu_skip, gpu]).values()))["outcome"] == "fail"
    assert next(iter(latest_by_cell([gpu, cpu_skip, newer_gpu]).values()))["outcome"] == "pass"
    assert next(iter(latest_by_cell([cpu_skip]).values()))["outcome"] == "skip"


def test_scaled_tolerance_is_relative_to_the_largest_output():
    from conformance.core.tolerance import Tolerance

    expected = torch.tensor([100.0, 0.0, -50.0])
    tol = Tolerance(1e-2, 1e-2, "test", scaled=True)
    compare(torch.tensor([100.5, 0.9, -50.2]), expected, tol=tol, cause="forward-mismatch", what="t")
    with pytest.raises(CheckFailed):
        compare(torch.tensor([100.5, 1.1, -50.2]), expected, tol=tol, cause="forward-mismatch", what="t")
    # Tiny outputs: float16 flushes 6e-31 to zero, which the floor of the fp16 entry allows; more does not pass.
    tiny = torch.tensor([6.1e-31, -2e-31])
    floored = Tolerance(4e-3, 4e-3, "test", scaled=True, floor=6.1e-5)
    compare(torch.zeros(2), tiny, tol=floored, cause="forward-mismatch", what="t")
    with pytest.raises(CheckFailed):
        compare(torch.zeros(2), tiny, tol=tol, cause="forward-mismatch", what="t")
    with pytest.raises(CheckFailed):
        compare(torch.tensor([1e-4, 0.0]), tiny, tol=floored, cause="forward-mismatch", what="t")


def test_mixed_precision_gradients_are_judged_against_the_whole_gradient_flow():
    """Under autocast a small gradient can be a sum with cancellation of large rounded terms (bitorch QLinear on
    the H200: d/dx = 0.006 from terms of size 1, off by 0.001 in bfloat16): its atol is relative to the largest
    gradient of the module. A gradient off by more than that, or any error under a plain tolerance, still fails."""
    from types import SimpleNamespace

    from conformance.checks.preserve import check_preserves_grad
    from conformance.transforms import TransformRun

    ctx = SimpleNamespace(dtype=torch.float32)
    eager = TransformRun(grads={"x": torch.tensor([[0.0060]]), "bias": torch.tensor([0.9, -0.4, 0.3, -0.8])})

    def outcome(dx: float, dbias=(0.9, -0.4, 0.3, -0.8)) -> TransformRun:
        return TransformRun(grads={"x": torch.tensor([[dx]]), "bias": torch.tensor(dbias)}, against=eager)

    check_preserves_grad(ctx, outcome(0.0049), None, "autocast_bf16")
    for broken in (outcome(0.03), outcome(0.006, (0.45, -0.2, 0.15, -0.4))):  # beyond 2% of 0.9; half the bias grad
        with pytest.raises(CheckFailed):
            check_preserves_grad(ctx, broken, None, "autocast_bf16")
    with pytest.raises(CheckFailed):
        check_preserves_grad(ctx, outcome(0.0049), None, "compile_inductor")


def test_resume_finishes_a_stopped_run_without_running_recorded_cells_again(tmp_path):
    """--resume runs only what a results directory lacks (a crash is recorded once, not tried again), and refuses a
    directory recorded under another environment (here: another hypothesis profile) instead of mixing the two."""
    test_file = tmp_path / "test_resume.py"
    test_file.write_text(textwrap.dedent("""
        import os
        from conformance.api import parametrize_with_checks
        from conformance.subjects.reference import SpecModule
        from conformance.api import Subject
        from qsnn_reference import quant

        def crash(example):
            os._exit(7)

        def fine(example):
            return SpecModule(quant.sign_ste, {}, example.hyper)

        SUBJECTS = [Subject(id=f"framework.{name}", spec="quant.sign_ste", build=build, library="framework",
                            fixed={"zero_value": 1.0})
                    for name, build in (("crash", crash), ("fine_a", fine), ("fine_b", fine))]

        @parametrize_with_checks(SUBJECTS, transforms=["eager"])
        def test_cells(cell, record_cell):
            from conformance.api import check_cell
            check_cell(cell, record=record_cell)
    """))
    results = tmp_path / "results"

    def run(*extra: str, profile: str = "ci") -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_"))}
        env.update(PYTHONPATH=str(ROOT), CONFORMANCE_PROFILE=profile)
        return subprocess.run([sys.executable, "-m", "pytest", str(test_file), "-p", "conformance.plugin", "-n", "1",
                               "-p", "no:cacheprovider", "-q", "--results-dir", str(results),
                               "-k", "cpu and float32 and forward_matches_spec", *extra],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)

    run("-k", "cpu and float32 and forward_matches_spec and not fine_b")
    first = list(iter_records([results]))
    assert sorted(r["outcome"] for r in first) == ["crash", "pass"]
    resumed = run("--resume")
    assert "2 cell(s) already recorded" in resumed.stdout, resumed.stdout[-2000:]
    per_cell: dict[str, list[str]] = {}
    for record in iter_records([results]):
        per_cell.setdefault(record["subject"], []).append(record["outcome"])
    assert per_cell == {"framework.crash": ["crash"], "framework.fine_a": ["pass"], "framework.fine_b": ["pass"]}
    other = run("--resume", profile="dev")
    assert other.returncode == 4 and "another environment" in other.stderr + other.stdout
    assert "hypothesis_profile 'ci' here vs 'dev' now" in other.stderr + other.stdout


def test_a_comparison_across_devices_is_not_applicable_without_the_other_device():
    from conformance import registry
    from conformance.core.types import Cell, Subject

    spec = registry.specs()["quant.sign_ste"]
    transform = registry.transforms()["cpu_vs_cuda"]
    cuda_only = Subject("framework.cuda_only", spec.id, lambda example: None, library="framework",
                        devices=("cuda",))
    both = Subject("framework.both", spec.id, lambda example: None, library="framework")
    cell = Cell("framework.cuda_only", "cpu_vs_cuda", "preserves_forward", "cuda")
    reason = registry.not_applicable(cell, cuda_only, spec, transform)
    assert reason and "no CPU result to agree with" in reason
    assert registry.not_applicable(cell, both, spec, transform) is None
    assert registry.not_applicable(cell, cuda_only, spec, registry.transforms()["eager"]) is None


#: sha256 of cell_property's source in conformance/runner.py, decorators included (see the test below)
CELL_PROPERTY_SOURCE_SHA256 = "584d998369d68daeceb2b1464a356dca812da4e261d3f048601c5be8eab74e34"


def test_the_source_hypothesis_seeds_the_draws_from_is_unchanged():
    """hypothesis derives a derandomized cell's draws from the source of the function it runs (cell_property in
    runner.run_cell, its decorators included): a one-character edit there draws other examples in every cell and can
    move recorded outcomes (a GPU run once found four new cells that way). An intended edit re-runs the whole matrix
    against the expectations and the CUDA records, then updates the hash here."""
    import hashlib

    source = (Path(__file__).parents[1] / "conformance" / "runner.py").read_text()
    start = source.index("    @settings(max_examples=examples,")
    last = '        state["excused"] += check(ctx, outcome, truth_for(cell, ctx, key), cell.transform)\n'
    block = source[start:source.index(last, start) + len(last)]
    assert "def cell_property(data):" in block
    assert hashlib.sha256(block.encode()).hexdigest() == CELL_PROPERTY_SOURCE_SHA256, (
        "cell_property's source changed: every derandomized cell now draws other examples (see the docstring)")


def test_a_library_is_imported_at_the_float32_default_before_a_float64_cell_builds(tmp_path, monkeypatch):
    """A tensor a library makes when it is imported (a default argument) has the dtype a program importing it at
    start gives it, float32, whichever cell imports the library first: Context.build imports the subject's
    ``requires`` before it sets float64 as the default dtype for a float64 cell."""
    from conformance.core.types import Example
    from conformance.transforms.harness import Context

    (tmp_path / "made_at_import.py").write_text("import torch\nDEFAULT = torch.tensor(1.0)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "made_at_import", raising=False)

    def build(example):
        import made_at_import

        return torch.nn.Identity() if made_at_import.DEFAULT.dtype == torch.float32 else None

    subject = Subject(id="probe.made_at_import", spec="quant.sign_ste", build=build, library="probe",
                      requires=("made_at_import",))
    example = Example(torch.tensor([0.5, -2.0], dtype=torch.float64), {}, {"zero_value": 1.0})
    ctx = Context(subject, registry.specs()[subject.spec], example, torch.float64, torch.device("cpu"))
    assert isinstance(ctx.build(), torch.nn.Identity)
    assert sys.modules["made_at_import"].DEFAULT.dtype == torch.float32
