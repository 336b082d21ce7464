"""What reaches a terminal shows direction and C1 control characters as escapes: pytest's failure text and the
FAILED lines pytest-xdist prints, ``python -m conformance.cell``, and the errors that refuse a subject id holding
one (an id is printed raw inside node ids, so such an id is refused where it is declared)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conformance import registry
from conformance.core.settings import UsageError

from .test_faults import ROOT, pytest_run

#: Direction marks, embeddings, overrides and isolates, C1 controls (U+009B opens a terminal sequence), ESC, BEL.
HIDDEN = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
          "\u061c", "\x80", "\x85", "\x9b", "\x9f", "\x1b", "\x07"]
RAW = re.compile("[" + "".join(HIDDEN) + "]")
#: A subject whose layer raises an error holding every hidden character.
RAISES = textwrap.dedent(f'''
    from conformance.api import Subject

    def build(example):
        raise RuntimeError({"evil".join(HIDDEN)!r})

    SUBJECTS = [Subject(id="mylib.Raises", spec="quant.sign_ste", build=build)]
''')


def escaped(char: str) -> str:
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


@pytest.mark.parametrize("char", HIDDEN, ids=escaped)
def test_a_subject_id_that_hides_or_reorders_text_is_refused_in_one_line(char):
    subject = dataclasses.replace(registry.subjects()["reference.quant.sign_ste"], id=f"mylib.evil{char}Sign")
    with pytest.raises(UsageError) as refused:
        registry.validate(subject)
    message = str(refused.value)
    assert "\n" not in message and not RAW.search(message) and f"evil{escaped(char)}Sign" in message, message


class EntryPoint:
    """An entry point of the ``conformance.subjects`` group, as importlib.metadata gives it."""

    name, value, dist = "faulty", "faultylib:subjects", None

    def __init__(self, subject):
        self.subject = subject

    def load(self):
        return lambda: [self.subject]


def test_an_entry_point_subject_id_with_a_direction_override_is_refused(monkeypatch):
    """Subject ids declared by an installed package are validated as the suite's own are."""
    subject = dataclasses.replace(registry.subjects()["reference.quant.sign_ste"], id="faulty.\u202eevil")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [EntryPoint(subject)] if group ==
                        registry.ENTRY_POINT_GROUP else [])
    registry.subjects.cache_clear()
    try:
        with pytest.raises(UsageError, match=re.escape("subject id 'faulty.\\u202eevil' contains a control")):
            registry.subjects()
    finally:
        registry.subjects.cache_clear()  # rebuilt from the real entry points on next use


def test_the_cell_command_shows_what_a_cell_found_escaped(tmp_path):
    (tmp_path / "mine.py").write_text(RAISES)
    done = subprocess.run([sys.executable, "-m", "conformance.cell", "--load", "mine.py:SUBJECTS",
                           "mylib.Raises|eager|forward_matches_spec|cpu|float32"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and '"outcome": "fail"' in done.stdout, done.stdout + done.stderr
    assert "evil\\u200fevil" in done.stdout and not RAW.search(done.stdout + done.stderr), done.stdout


def test_failure_text_and_xdist_failed_lines_show_hidden_characters_escaped(tmp_path):
    """A layer whose error holds every hidden character, and a test file declaring a subject id with U+202E, run
    under xdist as the README runs the matrix: no raw character reaches the terminal."""
    (tmp_path / "test_message.py").write_text(RAISES + textwrap.dedent('''
        from conformance.api import check_cell, parametrize_with_checks

        @parametrize_with_checks(SUBJECTS, transforms=["eager"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    (tmp_path / "test_id.py").write_text(textwrap.dedent('''
        from conformance.api import Subject, check_cell, parametrize_with_checks

        LIVE = Subject(id="mylib.\\u202elive", spec="quant.sign_ste", build=None)

        @parametrize_with_checks([LIVE], transforms=["eager"])
        def test_conformance(cell, record_cell):
            check_cell(cell, record=record_cell)
    '''))
    done = pytest_run(["-q", "-n", "1", "--dist", "loadgroup", "--continue-on-collection-errors", "-rfE",
                       "-k", "forward_matches_spec and cpu and float32", "test_message.py", "test_id.py"],
                      cwd=tmp_path, timeout=240, env={"COLUMNS": "1000"})  # FAILED lines uncut
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-3000:]
    failed = [line for line in log.splitlines() if line.startswith("FAILED test_message.py")]
    assert len(failed) == 1 and "evil\\u202eevil" in failed[0], log[-3000:]
    assert "reproduce: CONFORMANCE_PROFILE=ci python -m conformance.cell" in log
    assert "mylib.\\u202elive" in log and "contains a control, line-break or text-direction character" in log
    assert not RAW.search(log), [line for line in log.splitlines() if RAW.search(line)][:5]
