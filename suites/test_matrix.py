"""The matrix: one test per cell (subject x transform x check x device x dtype); ids are the coordinates.

Hypothesis draws the examples inside ``run_cell``; every cell is recorded, whatever its outcome. A known failure
that matches no collected cell or lacks its reproducer stops the session at collection (conformance.strict, in the
plugin: the same in every repository that uses it). ``--subjects GLOB`` collects only those subjects' cells.
"""

import pytest

from conformance.plugin import matrix_cells


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Checks of one (subject, transform) share a worker, so its compiled module and outcomes are reused
    # (run with --dist loadgroup; ./run test does).
    if "cell" in metafunc.fixturenames:
        metafunc.parametrize("cell", [pytest.param(c, id=c.id,
                                                   marks=pytest.mark.xdist_group(f"{c.subject}|{c.transform}"))
                                      for c in matrix_cells(metafunc.config)])


def test_cell(cell, record_cell):
    record_cell(cell, record_cell.run(cell))
