"""``--dist loadgroup`` under pytest 9.2 and later: the group tag pytest-xdist (3.8) puts on a node id is lost.

xdist's worker tags each item marked ``xdist_group(name)`` by appending ``@name`` to its node id, assigned to
``item._nodeid``; the controller's LoadGroupScheduling keeps the tests of one tag on one worker. pytest 9.2 derives
``item.nodeid`` from ``item._id`` (a structured ``NodeId``) instead, so the assignment changes nothing, no id carries
a tag and every group is spread over the workers. Registered by the plugin on workers of a loadgroup run, this hook
runs after xdist's and sets the tagged id where pytest now reads it; where xdist's tag took (pytest 8), it does
nothing.
"""

from __future__ import annotations

import pytest


def group_tag(item: pytest.Item) -> str | None:
    """The tag xdist gives ``item``: its ``xdist_group`` names, sorted, joined by ``_`` (None without a mark)."""
    names = {str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
             for mark in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


def set_nodeid(item: pytest.Item, nodeid: str) -> None:
    """Give ``item`` the node id ``nodeid``, where this pytest keeps it."""
    if hasattr(item, "_id"):  # pytest >= 9.2: a NodeId; parse() keeps the string it is given as its string form
        item._id = type(item._id).parse(nodeid)
    else:
        item._nodeid = nodeid


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        tag = group_tag(item)
        if tag is not None and not item.nodeid.endswith(f"@{tag}"):
            set_nodeid(item, f"{item.nodeid}@{tag}")
