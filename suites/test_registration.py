"""A library's subjects, from its package and its tests: registering one subject from two places, the public way
to get a registered subject, and known failures that stay strict in any repository that uses the plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance import api, registry
from conformance.core.settings import UsageError
from conformance.core.types import Known, Subject
from conformance.subjects.reference import SpecModule
from qsnn_reference import quant

ROOT = Path(__file__).resolve().parents[1]


def build_sign(example):
    return SpecModule(quant.sign_ste, {}, example.hyper)


def _sign(sid: str, **changes) -> Subject:
    return Subject(id=sid, spec="quant.sign_ste", build=build_sign, library="framework",
                   **{"fixed": {"zero_value": 1.0}, **changes})


def test_the_same_declaration_registers_from_two_places():
    first = registry.register(_sign("registration.twice"), origin="mylib/subjects.py")
    again = registry.register(_sign("registration.twice"), origin="tests/test_mylib.py")
    assert again == first and api.subject("registration.twice") == first


def test_a_different_declaration_with_the_same_id_names_both_places():
    registry.register(_sign("registration.differs"), origin="mylib/subjects.py")
    with pytest.raises(UsageError) as raised:
        registry.register(_sign("registration.differs", fixed={"zero_value": -1.0}), origin="tests/test_mylib.py")
    message = str(raised.value)
    assert "\n" not in message and "mylib/subjects.py" in message and "tests/test_mylib.py" in message, message


def test_a_suite_subject_declared_again_differently_names_its_module():
    with pytest.raises(UsageError, match=r"module conformance\.subjects\.reference and in tests/x\.py"):
        registry.register(_sign("reference.quant.sign_ste"), origin="tests/x.py")


def test_subject_and_subjects_are_the_public_way_to_get_a_registered_one():
    assert api.subject("reference.quant.sign_ste") is registry.subjects()["reference.quant.sign_ste"]
    assert "reference.neuron.leaky" in api.subjects()
    with pytest.raises(UsageError, match="no subject 'reference.quant.sign_stee' is registered .*did you mean"):
        api.subject("reference.quant.sign_stee")


def test_known_failures_added_by_a_test_file_join_the_subject_once():
    registry.register(_sign("registration.known"), origin="mylib/subjects.py")
    entry = Known("vmap", reason="r", reproducer="reproducers/x.py")
    registry.add_known("registration.known", [entry])
    registry.add_known("registration.known", [entry])
    assert api.subject("registration.known").known == (entry,)
    assert registry.register(_sign("registration.known"), origin="tests/t.py").known == (entry,)


# ------------------------------------------------------------------------- strictness in another repository
THIRD_PARTY_TEST = '''
from conformance.api import Known, Subject, check_cell, parametrize_with_checks
from conformance.subjects.reference import SpecModule
from qsnn_reference import quant

def build(example):
    return SpecModule(quant.sign_ste, {{}}, example.hyper)

SIGN = Subject(id="thirdparty.Sign", spec="quant.sign_ste", build=build, library="thirdparty",
               fixed={{"zero_value": 1.0}})

@parametrize_with_checks([SIGN], transforms=["eager"], known={{"thirdparty.Sign": [{known}]}})
def test_conformance(cell, record_cell):
    check_cell(cell, record=record_cell)
'''


def _run_third_party(tmp_path: Path, known: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_thirdparty.py").write_text(THIRD_PARTY_TEST.format(known=known))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "pytest", "tests", "-p", "conformance.plugin", "-p",
                           "no:cacheprovider", "-q", "--results-dir", str(tmp_path / "results"), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_third_party_s_bad_known_failures_stop_its_session(tmp_path):
    """One line at collection (no cell runs) names the stale entry and the one whose reproducer is missing."""
    (tmp_path / "reproducers").mkdir()
    (tmp_path / "reproducers" / "sign.py").write_text("raise SystemExit(1)\n")
    done = _run_third_party(tmp_path, 'Known("jvp", reproducer="reproducers/sign.py"), '
                                      'Known("eager", reproducer="nope/missing.py")')
    output = done.stdout + done.stderr
    complaints = [line for line in output.splitlines() if line.startswith("ERROR: conformance: ")]
    assert done.returncode == 4 and len(complaints) == 1 and "Traceback" not in output, output[-3000:]
    assert "Known(transform='jvp', check='*', cause=None) matches no collected cell" in complaints[0]
    assert "reproducer 'nope/missing.py' is not a file under" in complaints[0]


def test_under_xdist_each_cell_fails_with_the_line_instead(tmp_path):
    """A worker cannot stop the session (xdist reports an internal error): its cells fail with the one line."""
    done = _run_third_party(tmp_path, 'Known("eager", reproducer="nope/missing.py")', "-n", "1", "-k",
                            "forward_matches_spec and float32")
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "INTERNALERROR" not in output, output[-3000:]
    assert "1 error" in output and "reproducer 'nope/missing.py' is not a file under" in output, output[-3000:]


def test_a_partial_run_is_not_told_its_known_failure_matches_nothing(tmp_path):
    (tmp_path / "reproducers").mkdir()
    (tmp_path / "reproducers" / "sign.py").write_text("raise SystemExit(1)\n")
    for partial in ("--conformance-partial", "-k forward_matches_spec and float32"):
        done = _run_third_party(tmp_path, 'Known("jvp", reproducer="reproducers/sign.py")', *partial.split(" ", 1),
                                "--co")
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def test_a_test_file_declaring_a_suite_subject_differently_fails_collection_with_one_line(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_again.py").write_text(textwrap.dedent('''
        from conformance.api import Subject, check_cell, parametrize_with_checks

        AGAIN = Subject(id="reference.quant.sign_ste", spec="quant.sign_ste", build=lambda example: None)

        @parametrize_with_checks([AGAIN], transforms=["eager"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "-p", "conformance.plugin", "-p",
                           "no:cacheprovider", "-q", "--co"], cwd=tmp_path, env=dict(env, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    # the error itself is one line; pytest's short summary may repeat it (in full where CI is set)
    lines = [line for line in output.splitlines() if line.startswith("conformance: subject") and "declared twice" in line]
    assert done.returncode != 0 and len(lines) == 1 and "Traceback" not in output, output[-3000:]
    assert "module conformance.subjects.reference and in tests/test_again.py" in lines[0], lines
