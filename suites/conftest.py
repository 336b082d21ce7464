"""Suite-wide set-up: the conformance plugin records cells; this project's own tests also run under the cells'
hypothesis profile (CONFORMANCE_PROFILE) with one torch thread per process."""

import pytest
from hypothesis import settings

from conformance.core.settings import configure_process, profile_name, register_hypothesis_profiles
from conformance.core.strategies import stable_draws

pytest_plugins = ["conformance.plugin"]

configure_process()
register_hypothesis_profiles()
settings.load_profile(f"conformance-{profile_name()}")


@pytest.fixture(autouse=True)
def _draws_independent_of_loaded_modules():
    """Every test draws as the matrix cells do (:func:`conformance.core.strategies.stable_draws`): hypothesis mixes
    literals from the source of every loaded module into its draws, so without this a derandomized test's examples
    depend on which tests an xdist worker happened to run before it (a spec meta-test failed on a fresh clone that
    way, with no change)."""
    with stable_draws():
        yield


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list) -> None:
    """The matrix's thousands of short cells run last, after the system tests (some take 20-50 s): the two workers
    then end within a cell of each other instead of one waiting on a long test at the end. A stable sort: the order
    inside each file, and every cell's draws, stay as they were."""
    items.sort(key=lambda item: item.path.name == "test_matrix.py")
