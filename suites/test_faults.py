"""Faults cost one cell: crashes, hangs (in Python and in C), kills and resumes, ids with any character, bad usage.

The end-to-end tests run real pytest sessions on subjects that a third party registers through the
``conformance.subjects`` entry point (a distribution made in a temporary directory), as a user adding an unreliable
library would, and count the records per cell.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from _pytest.compat import ascii_escaped
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import registry
from conformance.checks import CHECKS
from conformance.core.settings import UsageError
from conformance.core.types import Cell
from conformance.plugin import cell_from_nodeid
from conformance.records.io import iter_records

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "suites" / "test_matrix.py"

# ------------------------------------------------------------------------------------------------ ids
_ID_CHARS = st.sampled_from(list("[]|@ ab.Z09_-") + ["é", "λ", "字", "\\", "🙂", ":", "/"])
_SUBJECT_IDS = st.text(_ID_CHARS, min_size=1, max_size=24).filter(lambda s: s == s.strip())
_TRANSFORMS = st.sampled_from(sorted(registry.transforms()))


@st.composite
def cells(draw) -> Cell:
    transform = registry.transforms()[draw(_TRANSFORMS)]
    return Cell(draw(_SUBJECT_IDS), transform.id, draw(st.sampled_from(transform.checks)),
                draw(st.sampled_from(transform.devices)), draw(st.sampled_from(["float32", "float64", "bfloat16"])))


@settings(max_examples=300)
@given(cell=cells(), loadgroup=st.booleans(), module=st.sampled_from(["suites/test_matrix.py::test_cell",
                                                                       "tests/x/test_y.py::TestZ::test_cells"]))
def test_a_node_id_gives_back_its_cell_whatever_the_subject_id(cell, loadgroup, module):
    """As pytest writes it (the id escaped to ASCII) and pytest-xdist under --dist loadgroup (a raw suffix)."""
    nodeid = f"{module}[{ascii_escaped(cell.id)}]" + (f"@{cell.subject}|{cell.transform}" if loadgroup else "")
    assert cell_from_nodeid(nodeid) == cell
    assert registry.parse_cell_id(cell.id) == cell


def test_node_ids_that_are_not_cells_give_none():
    assert cell_from_nodeid("suites/test_framework.py::test_compare") is None
    assert cell_from_nodeid("suites/meta/test_x.py::test_y[3]") is None
    assert cell_from_nodeid("suites/test_matrix.py::test_cell[a|eager|forward_matches_spec|cpu|float32]@other") \
        is None


@pytest.mark.parametrize("bad", ["", "abc", "a|b|c|d", "|eager|forward_matches_spec|cpu|float32",
                                 "a|eager||cpu|float32"])
def test_a_malformed_cell_id_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="subject\\|transform\\|check\\|device\\|dtype"):
        registry.parse_cell_id(bad)


# --------------------------------------------------------------------------------------- fault subjects
FAULTY = textwrap.dedent('''
    """Subjects of an unreliable library, published through the conformance.subjects entry point."""
    import os, signal, time

    from conformance.subjects.reference import SpecModule
    from conformance.api import Subject
    from qsnn_reference import quant

    def crash(example):
        os._exit(7)

    def hang_in_python(example):  # the in-process alarm stops it
        while True:
            time.sleep(0.01)

    def hang_in_c(example):  # as a blocking C call: the alarm never reaches Python, only the watchdog helps
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(600)

    def slow(example):
        time.sleep(float(os.environ.get("FAULTY_SLOW_S", "0")))
        return SpecModule(quant.sign_ste, {}, example.hyper)

    def fine(example):
        return SpecModule(quant.sign_ste, {}, example.hyper)

    BUILDS = {"crash": crash, "hang_py": hang_in_python, "hang_c": hang_in_c, "fine": fine, "slow": slow}

    def exit_zero(example):  # a worker that leaves as if it had finished
        os._exit(0)

    def segfault(example):
        os.kill(os.getpid(), signal.SIGSEGV)

    def raise_keyboard_interrupt(example):  # a library that stops its user's program (no signal was received)
        raise KeyboardInterrupt("faultylib gave up")

    def raise_system_exit(example):
        raise SystemExit(3)

    BUILDS.update({"exit": exit_zero, "segfault": segfault, "interrupt": raise_keyboard_interrupt,
                   "sys_exit": raise_system_exit})

    def subjects():
        chosen = os.environ.get("FAULTY_SUBJECTS", "crash,hang_py,hang_c,fine").split(",")
        # ids a third party may choose: brackets, '|', '@', spaces and letters beyond ASCII
        return [Subject(id=f"faulty.{name}[x]@y|é z", spec="quant.sign_ste", build=BUILDS[name], library="faultylib",
                        fixed={"zero_value": 1.0}) for name in chosen]
''')


def install_faulty_library(where: Path, module_text: str = FAULTY, entry: str = "faultylib:subjects") -> Path:
    """A distribution with a ``conformance.subjects`` entry point, on a directory the test puts on PYTHONPATH."""
    site = where / "site"
    info = site / "faultylib-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faultylib\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[conformance.subjects]\nfaulty = {entry}\n")
    (site / "faultylib.py").write_text(module_text)
    return site


def pytest_run(args: list[str], *, cwd: Path, site: Path | None = None, timeout: float = 400, env: dict | None = None,
               new_session: bool = False, wait: bool = True):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_", "FAULTY_", "TORCHINDUCTOR_", "TRITON_CACHE"))}
    clean["PYTHONPATH"] = os.pathsep.join(p for p in (str(site) if site else "", str(ROOT)) if p)
    clean.update(env or {})
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    if not wait:
        return subprocess.Popen(command, cwd=cwd, env=clean, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=new_session)
    return subprocess.run(command, cwd=cwd, env=clean, capture_output=True, text=True, timeout=timeout)


def per_cell(results: Path) -> Counter:
    return Counter(r["cell"] for r in iter_records([results]))


def outcomes(results: Path) -> dict[str, str]:
    return {r["cell"]: r["outcome"] for r in iter_records([results])}


def protocol_only(cell_id: str) -> bool:
    """A cell of a check that judges state across calls: not applicable to a subject without a call protocol."""
    return CHECKS[registry.parse_cell_id(cell_id).check].needs_protocol


def test_a_crash_and_hangs_cost_one_cell_each_under_loadgroup(tmp_path):
    """-n 2 --dist loadgroup on the project's own matrix file: every faulty cell is recorded once (crash, timeout),
    none is run again, the healthy subject's cells all pass, and the run ends normally with a summary."""
    site = install_faulty_library(tmp_path)
    results = tmp_path / "results"
    started = time.monotonic()
    # Two cells of each hanging subject: the first ends its worker (hang_c) or is stopped by the alarm, the second
    # runs where the rest of such a subject runs (a forked child); more would only wait for more timeouts.
    two_checks = "(forward_matches_spec or grad_matches_spec)"
    done = pytest_run([str(MATRIX), "-n", "2", "--dist", "loadgroup", "-q", "--results-dir", str(results),
                       "--subjects", "faulty.*",
                       "--cell-timeout", "2",  # 1 s: under a load of 4 a crashing subject's forked cell timed out
                       "-k", f"faulty and cpu and float32 and eager and not compile and not checkpoint"
                             f" and (not hang or {two_checks})"],
                      cwd=tmp_path, site=site)
    elapsed = time.monotonic() - started
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-3000:]  # failures, not an internal error
    counts, found = per_cell(results), outcomes(results)
    expected = {c.id for c in registry.cells([f"faulty.{n}[x]@y|é z" for n in ("crash", "hang_py", "hang_c", "fine")],
                                            devices=["cpu"], transform_ids=["eager"])
                if c.dtype == "float32" and ("hang" not in c.subject or c.check in two_checks)}
    assert set(counts) == expected, sorted(set(expected) ^ set(counts))
    assert max(counts.values()) == 1, [c for c, n in counts.items() if n > 1]
    by_subject = {}
    for cell, outcome in found.items():
        if not protocol_only(cell):  # skipped before they run: these subjects keep no state between calls
            by_subject.setdefault(cell.split("[x]")[0], set()).add(outcome)
    assert all(outcome == "skip" for cell, outcome in found.items() if protocol_only(cell)), found
    assert by_subject == {"faulty.crash": {"crash"}, "faulty.hang_py": {"timeout"}, "faulty.hang_c": {"timeout"},
                          "faulty.fine": {"pass"}}, by_subject
    assert "cell(s) crashed" in log and "cell(s) timed out" in log, log[-3000:]
    assert "INTERNALERROR" not in log and "maximum crashed workers" not in log
    print(f"loadgroup faults: {len(counts)} cells, {elapsed:.0f} s")


def test_the_readme_example_is_isolated_without_xdist(tmp_path):
    """The documented own-library use, with no option and no -n: a crash and a hang in C cost their cells, the
    other cells run, the records name the subject's library version, and the reproduce command works."""
    site = install_faulty_library(tmp_path)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_conformance.py").write_text(textwrap.dedent('''
        from conformance.api import check_cell, parametrize_with_checks
        from conformance.subjects.reference import SpecModule
        from conformance.api import Subject
        from qsnn_reference import quant
        import faultylib

        def build(example):
            return SpecModule(quant.sign_ste, {}, example.hyper)

        MINE = Subject(id="mylib.Sign", spec="quant.sign_ste", build=build, library="faultylib",
                       fixed={"zero_value": 1.0})
        CRASHER = Subject(id="mylib.Crasher", spec="quant.sign_ste", build=faultylib.crash, library="faultylib")
        HANGER = Subject(id="mylib.Hanger", spec="quant.sign_ste", build=faultylib.hang_in_c, library="faultylib")

        @parametrize_with_checks([MINE, CRASHER, HANGER], transforms=["eager", "deepcopy"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    done = pytest_run(["tests", "-q", "--cell-timeout", "1", "--progress-every", "0.001",
                       "-k", "float32 and cpu and (Sign or Crasher or (Hanger and forward_matches_spec))"],
                      cwd=tmp_path, site=site, env={"FAULTY_SUBJECTS": "fine"})
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-3000:]
    runs = [p for p in (tmp_path / ".conformance" / "results").iterdir()]  # under the rootdir, not site-packages
    assert len(runs) == 1
    records = list(iter_records(runs))
    counts = Counter(r["cell"] for r in records)
    per_transform = {t: len(registry.checks_of(registry.transforms()[t])) for t in ("eager", "deepcopy")}
    assert max(counts.values()) == 1 and len(counts) == 2 * sum(per_transform.values()) + 1, counts
    assert all(r["outcome"] == "skip" for r in records if protocol_only(r["cell"]))
    judged = [r for r in records if not protocol_only(r["cell"])]
    kinds = {r["subject"]: {x["outcome"] for x in judged if x["subject"] == r["subject"]} for r in judged}
    assert kinds["mylib.Crasher"] == {"crash"} and kinds["mylib.Hanger"] == {"timeout"}, kinds
    assert kinds["mylib.Sign"] == {"pass"}, kinds
    assert all(r["library_version"] == "0.1" for r in records)
    assert all(r["env"]["suite_sha"] for r in records)
    assert "[conformance] " in log and " tests (" in log and "ETA" in log, log[-2000:]
    failing = next(r for r in records if r["subject"] == "mylib.Crasher")
    assert "--load tests/test_conformance.py" in failing["reproduce"], failing["reproduce"]
    assert "reproduce: CONFORMANCE_PROFILE=ci python -m conformance.cell --load" in log
    passing = next(r for r in records if r["subject"] == "mylib.Sign" and r["outcome"] == "pass")
    command = passing["reproduce"].split(" ", 1)[1].replace("python", sys.executable, 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "FAULTY_"))}
    again = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={**env, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "CONFORMANCE_PROFILE": "ci",
                                "FAULTY_SUBJECTS": "fine"})
    assert again.returncode == 0 and '"outcome": "pass"' in again.stdout, again.stdout + again.stderr


def test_a_killed_run_is_finished_by_resume_with_every_cell_recorded_once(tmp_path):
    """SIGKILL of the whole process group (controller and workers) mid-run, then --resume: one record per cell."""
    site = install_faulty_library(tmp_path)
    results = tmp_path / "results"
    args = [str(MATRIX), "-n", "2", "--dist", "loadgroup", "-q", "--results-dir", str(results),
            "--subjects", "faulty.*",
            "-k", "faulty and cpu and float32 and (eager or copy or pickle or state_dict) "
                  "and not compile and not checkpoint"]
    env = {"FAULTY_SUBJECTS": "slow,fine", "FAULTY_SLOW_S": "0.1"}
    run = pytest_run(args, cwd=tmp_path, site=site, env=env, new_session=True, wait=False)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and sum(per_cell(results).values()) < 12:
        time.sleep(0.5)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    before = per_cell(results)
    assert 12 <= sum(before.values()), before
    resumed = pytest_run([*args, "--resume"], cwd=tmp_path, site=site, env=env)
    log = resumed.stdout + resumed.stderr
    assert resumed.returncode in (0, 1) and f"{len(before)} cell(s) already recorded" in log, log[-3000:]
    counts = per_cell(results)
    wanted = {r["cell"] for r in iter_records([results])}
    assert len(wanted) > len(before), "the kill came after the last cell: nothing was left to resume"
    assert max(counts.values()) == 1, [c for c, n in counts.items() if n > 1]
    print(f"kill + resume: {len(before)} cells before the kill, {len(counts)} after, records per cell: "
          f"{sorted(Counter(counts.values()).items())}")


# ------------------------------------------------------------------------------------------ bad usage
def test_a_bad_profile_is_one_usage_line_not_a_traceback(tmp_path):
    done = pytest_run([str(MATRIX), "-q", "-k", "nothing"], cwd=tmp_path, env={"CONFORMANCE_PROFILE": "bogus"})
    log = done.stdout + done.stderr
    assert done.returncode == 4, log
    assert "CONFORMANCE_PROFILE='bogus' is not a profile; valid: ci, dev, thorough" in log
    assert "Traceback" not in log and "INTERNALERROR" not in log


@pytest.mark.parametrize("cell_id, says", [
    ("reference.quant.sign_ste|eager|no_such_check|cpu|float32", "unknown check for transform 'eager'"),
    ("reference.quant.sign_ste|eager|forward_matches_spec|tpu|float32", "unknown device"),
    ("reference.quant.sign_ste|eager|forward_matches_spec|cpu|float16", "unknown dtype"),
    ("reference.quant.sign_ste|eager|forward_matches_spec|cpu|float32 ", "unknown dtype"),
    ("reference.quant.sign_ste|cpu_vs_cuda|preserves_forward|cpu|float32", "unknown device"),
    ("no.such.subject|eager|forward_matches_spec|cpu|float32", "unknown subject"),
    ("reference.quant.sign_ste|no_such_transform|forward_matches_spec|cpu|float32", "unknown transform"),
    ("not a cell id", "a cell id is"),
])
def test_the_cell_command_rejects_what_is_not_a_cell(cell_id, says, capsys):
    from conformance.cell import main as cell_main

    assert cell_main([cell_id]) == 2
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in stderr, stderr
    assert "valid:" in lines[0] or "a cell id is" in lines[0]


def test_the_cell_command_exits_2_with_one_line():
    """The same, through the command itself (the cases above call its main in this process)."""
    done = subprocess.run([sys.executable, "-m", "conformance.cell", "no.such.subject|eager|forward_matches_spec|cpu|"
                           "float32"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown subject" in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_an_unknown_fixed_key_is_rejected_when_declared(tmp_path):
    test_file = tmp_path / "test_typo.py"
    test_file.write_text(textwrap.dedent('''
        from conformance.api import check_cell, parametrize_with_checks
        from conformance.api import Subject

        TYPO = Subject(id="mylib.Typo", spec="quant.sign_ste", build=lambda e: None, fixed={"zero_valu": 1.0})

        @parametrize_with_checks([TYPO], transforms=["eager"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    done = pytest_run([str(test_file), "-q"], cwd=tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 2, log  # a collection error, before any cell runs
    assert "conformance: subject 'mylib.Typo': spec 'quant.sign_ste' has no hyperparameter(s) ['zero_valu']" in log
    assert "Traceback" not in log, log


def test_a_call_protocol_on_a_spec_without_time_is_rejected_when_declared():
    from conformance.core.types import CallProtocol, Subject

    stepped_sign = Subject(id="mylib.SteppedSign", spec="quant.sign_ste", build=lambda e: None,
                           protocol=CallProtocol(lambda e: None))
    with pytest.raises(UsageError, match="declares a call protocol, but spec 'quant.sign_ste' has no time axis"):
        registry.validate(stepped_sign)


def test_a_broken_entry_point_is_one_line(tmp_path):
    site = install_faulty_library(tmp_path, module_text="raise ImportError('faultylib needs libfoo.so')\n")
    done = subprocess.run([sys.executable, "-m", "conformance.cell",
                           "reference.quant.sign_ste|eager|forward_matches_spec|cpu|float32"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"})
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "entry point faulty = faultylib:subjects" in lines[0], done.stderr
    assert "ImportError: faultylib needs libfoo.so" in lines[0]


# ------------------------------------------------------------------------------- a well-made plugin
def test_the_plugin_registers_itself_and_its_marker(tmp_path):
    """No -p: the installed package's pytest11 entry point loads the plugin; the xdist_group marker is known even
    with xdist disabled and --strict-markers; a session without cells writes nothing."""
    test_file = tmp_path / "test_plain.py"
    test_file.write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.xdist_group("g")
        def test_plain(request):
            assert request.config.pluginmanager.get_plugin("conformance-recorder") is not None
    '''))
    done = pytest_run([str(test_file), "-q", "-p", "no:xdist", "--strict-markers"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "reports").exists() and not (tmp_path / ".cache").exists()


def test_terminal_output_of_a_finding_is_escaped(tmp_path):
    test_file = tmp_path / "test_ansi.py"
    test_file.write_text(textwrap.dedent('''
        from conformance.api import check_cell, parametrize_with_checks
        from conformance.api import Subject

        def build(example):
            raise RuntimeError("\\x1b[2J\\x1b[31mred alert\\x07")

        @parametrize_with_checks([Subject(id="mylib.Ansi", spec="quant.sign_ste", build=build)], transforms=["eager"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    done = pytest_run([str(test_file), "-q", "-k", "forward_matches_spec and cpu and float32"], cwd=tmp_path)
    assert done.returncode == 1
    assert "\x1b[2J" not in done.stdout and "\\x1b[2J\\x1b[31mred alert\\x07" in done.stdout, done.stdout[-2000:]


# ------------------------------------------------------------------------------------------- the entry point
def test_run_help_creates_nothing(tmp_path):
    """``./run --help`` (and a wrong command) answer without creating the virtual environment."""
    shutil.copy(ROOT / "run", tmp_path / "run")
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    shown = subprocess.run(["bash", str(tmp_path / "run"), "--help"], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0 and "usage: ./run {report|test|setup}" in shown.stdout
    wrong = subprocess.run(["bash", str(tmp_path / "run"), "tset"], capture_output=True, text=True, timeout=30)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr
    assert not (tmp_path / ".venv").exists()


def test_a_long_set_up_step_is_never_silent():
    """The set-up's heartbeat: a step that runs longer than the interval says so while it runs, and how long it
    took when it ends (CONFORMANCE_HEARTBEAT_S shortens the interval here)."""
    script = (f'eval "$(sed -n "/^with_heartbeat()/,/^}}/p" {ROOT / "scripts" / "setup.sh"})"; '
              'with_heartbeat "step" sleep 2.5')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "CONFORMANCE_HEARTBEAT_S": "1"})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert sum("step: still running" in line for line in lines) >= 2, lines
    assert lines[-1].startswith("step: done in "), lines


def test_records_and_caches_go_under_the_rootdir(tmp_path):
    """A library's own suite: one output directory, <rootdir>/.conformance, ignored by git (records under results/,
    compile caches under cache/)."""
    (tmp_path / "test_where.py").write_text(textwrap.dedent('''
        import os
        from conformance.api import Subject, check_cell, parametrize_with_checks
        from conformance.subjects.reference import SpecModule
        from qsnn_reference import quant

        SIGN = Subject(id="mylib.Sign", spec="quant.sign_ste", library="mylib", fixed={"zero_value": 1.0},
                       build=lambda example: SpecModule(quant.sign_ste, {}, example.hyper))

        @parametrize_with_checks([SIGN], transforms=["eager"])
        def test_conformance(cell, record_cell):
            print("CACHE=" + os.environ["CONFORMANCE_CACHE_DIR"], "INDUCTOR=" + os.environ["TORCHINDUCTOR_CACHE_DIR"])
            check_cell(cell, record=record_cell)
    '''))
    done = pytest_run(["test_where.py", "-q", "-s", "-k", "forward_matches_spec and cpu and float32"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert f"CACHE={tmp_path / '.conformance' / 'cache'}" in done.stdout
    assert f"INDUCTOR={tmp_path / '.conformance' / 'cache' / 'inductor'}" in done.stdout
    assert list((tmp_path / ".conformance" / "results").glob("*/*.jsonl"))
    assert (tmp_path / ".conformance" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (tmp_path / "reports").exists() and not (tmp_path / ".cache").exists()
