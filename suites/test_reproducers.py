"""Every known failure proves itself: each entry names a standalone reproducer (reproducers/README.md), each script
keeps the contract, and each fails the way it says, on its own. The runner itself is tested on broken scripts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance import reproducers
from conformance.core.types import Known

SCRIPTS = reproducers.scripts()
LIBRARIES = sorted({script.library for script in SCRIPTS.values()})


def test_every_known_failure_names_a_reproducer():
    problems = reproducers.without_reproducer(reproducers.claims())
    assert not problems, f"{len(problems)} known failure(s) without a standalone reproducer:\n" + "\n".join(problems)


def test_every_script_is_named_by_an_entry():
    assert not reproducers.unclaimed(), f"scripts no known failure names: {reproducers.unclaimed()}"


@pytest.mark.parametrize("path", sorted(SCRIPTS))
def test_script_keeps_the_contract(path):
    assert not reproducers.contract_problems(SCRIPTS[path].file.read_text(encoding="utf-8"), path)


def test_reproducers_fail_as_they_say():
    """Every script that can run here, forked from one process that imported torch and the libraries once (the
    imports cost seconds per script); ``python -m conformance.reproducers`` runs each in a fresh interpreter."""
    runnable = [s for s in SCRIPTS.values() if not reproducers.skip_reason(s, s.file.read_text(encoding="utf-8"))]
    if not runnable:
        pytest.skip("no reproducer can run here (their libraries are not installed)")
    results = reproducers.run_forked([s.path for s in runnable], LIBRARIES)
    wrong = [r.describe() + "\n" + textwrap.indent(r.output[-1500:], "    ")
             for r in results if r.status != reproducers.REPRODUCES]
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------------------------- the runner, on mutants
@pytest.fixture
def scratch(monkeypatch, tmp_path):
    """A suite root of its own whose reproducers/ the test writes."""
    monkeypatch.setattr(reproducers, "SUITE_ROOT", tmp_path)
    (tmp_path / "reproducers" / "lib").mkdir(parents=True)

    def write(name: str, body: str) -> str:
        path = f"reproducers/lib/{name}.py"
        (tmp_path / path).write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
        return path
    return write


SHOWS = '''
    """A list that forgets its last item."""
    # expect: AssertionError: the last item is lost
    items = [1, 2, 3][:-1]
    assert len(items) == 3, "the last item is lost"
'''
FIXED = '''
    """Once failed; the library fixed it."""
    # expect: AssertionError: the last item is lost
    items = [1, 2, 3]
    assert len(items) == 3, "the last item is lost"
'''
BROKEN = '''
    """Fails, but on a typo, not on the failure it claims."""
    # expect: AssertionError: the last item is lost
    import not_a_module_anyone_has
'''
HANGS = '''
    """Never ends."""
    # expect: AssertionError: never
    while True:
        pass
'''


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forked"])
def test_the_runner_tells_a_reproduction_from_a_fix_a_broken_script_and_a_hang(scratch, fork):
    paths = [scratch("shows", SHOWS), scratch("fixed", FIXED), scratch("broken", BROKEN), scratch("hangs", HANGS)]
    if fork:
        results = reproducers.run_forked(paths, timeout=3)
    else:
        results = [reproducers.run_fresh(p, timeout=3) for p in paths]
    assert [r.status for r in results] == [reproducers.REPRODUCES, reproducers.PASSES, reproducers.FAILS_OTHERWISE,
                                           reproducers.TIMEOUT]
    assert results[0].last_line == "AssertionError: the last item is lost"
    assert "ModuleNotFoundError" in results[2].last_line


@pytest.mark.parametrize("body, complaint", [
    ('"""Doc."""\nimport conformance.registry\n# expect: Error\n', "imports 'conformance.registry'"),
    ('"""Doc."""\nfrom qsnn_reference import quant\n# expect: Error\n', "imports 'qsnn_reference'"),
    ('"""Doc."""\nfrom . import sibling\n# expect: Error\n', "imports '.'"),
    ('"""Doc."""\nimport torch\n', "exactly one non-empty '# expect:"),
    ('"""Doc."""\n# expect: A\n# expect: B\n', "exactly one non-empty '# expect:"),
    ('import torch\n# expect: Error\n', "no docstring"),
    ('"""Doc."""\n# expect: Error\n# requires: tpu\n', "'# requires: tpu'"),
    ('"""Doc."""\n# expect: Error\nif True\n', "not Python"),
])
def test_the_contract_check_names_what_a_script_breaks(body, complaint):
    problems = reproducers.contract_problems(body, "x.py")
    assert any(complaint in p for p in problems), problems


def test_a_clean_script_keeps_the_contract():
    assert reproducers.contract_problems(textwrap.dedent(SHOWS).lstrip()) == []


def test_an_entry_without_a_reproducer_or_with_a_path_outside_the_folder_is_named(scratch):
    claims = [reproducers.Claim("subject lib.A", Known("eager", cause="x"), ()),
              reproducers.Claim("subject lib.B", Known("eager", cause="y", reproducer="docs/elsewhere.py"), ()),
              reproducers.Claim("subject lib.C", Known("eager", cause="z", reproducer="reproducers/lib/gone.py"), ()),
              reproducers.Claim("subject lib.D", Known("eager", cause="w", reproducer=scratch("here", SHOWS)), ())]
    problems = reproducers.without_reproducer(claims)
    assert len(problems) == 3
    assert "lib.A" in problems[0] and "names no reproducer" in problems[0]
    assert "docs/elsewhere.py" in problems[1] and "reproducers/lib/gone.py" in problems[2]


def test_the_command_line_fails_on_a_script_that_no_longer_fails(scratch, capsys):
    fixed = scratch("fixed", FIXED)
    assert reproducers.main([fixed]) == 1
    assert "the failure it shows is gone" in capsys.readouterr().out
    assert reproducers.main([scratch("shows", SHOWS)]) == 0
    assert reproducers.main(["reproducers/lib/none.py"]) == 2


def test_subjects_registered_at_run_time_are_not_this_projects_claims():
    """A test suite's own subjects (registered while the suite runs, in whatever order xdist gives) keep their
    reproducers where they are defined: an entry of theirs must not fail this project's check."""
    from conformance import registry
    from conformance.core.types import Subject

    registry.register(Subject(id="reproducers.registered_elsewhere", spec="quant.sign_ste", build=lambda ex: None,
                              fixed={"zero_value": 1.0}, library="elsewhere",
                              known=(Known("eager", cause="forward-mismatch"),)))
    assert not any("registered_elsewhere" in c.owner for c in reproducers.claims())
    assert not reproducers.without_reproducer(reproducers.claims())


def test_an_exception_whose_message_spans_lines_is_judged_by_the_line_it_starts_on():
    """torch's CheckpointError ends the output with the last line of its message: the fragment may name its start,
    and a different exception with the same tail is still told apart."""
    from conformance.reproducers import FAILS_OTHERWISE, REPRODUCES, judge

    tail = "Traceback (most recent call last):\n  File \"x.py\", line 3\n{}: torch.utils.checkpoint: Recomputed " \
           "values differ\ntensor at position 0:\nworkaround examples.\n"
    expect = "CheckpointError: torch.utils.checkpoint: Recomputed values"
    raised = tail.format("torch.utils.checkpoint.CheckpointError")
    assert judge("x.py", 1, raised, expect, 0.1).status == REPRODUCES
    assert judge("x.py", 1, tail.format("RuntimeError"), expect, 0.1).status == FAILS_OTHERWISE
    assert judge("x.py", 1, "Traceback\nAssertionError: the copy differs\n", "AssertionError: the copy", 0.1).status \
        == REPRODUCES


def test_scripts_see_installed_libraries_on_pythonpath_but_not_this_checkout(monkeypatch, tmp_path):
    """A library installed with `pip install --target DIR` (the GPU runs) is found through PYTHONPATH; the checkout,
    named directly or through a folder inside it, is not."""
    site = tmp_path / "site"
    inside = reproducers.SUITE_ROOT / "suites"
    monkeypatch.setenv("PYTHONPATH", f"{site}:{reproducers.SUITE_ROOT}::{inside}")
    assert reproducers._environment()["PYTHONPATH"] == str(site)
    monkeypatch.setenv("PYTHONPATH", str(reproducers.SUITE_ROOT))
    assert "PYTHONPATH" not in reproducers._environment()
