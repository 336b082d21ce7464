"""sinabs holds spike_threshold as a tensor: a layer built in float32 holds it rounded to float32, and .double()
(the to_float64 column) computes on that rounded value. The subjects that draw it must draw it where float32 holds
it exactly, or their to_float64 cells judge a threshold the layer cannot hold (a spike at an edge example, exactly
at a multiple of the threshold, flips)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.registry import specs
from conformance.subjects import sinabs as sinabs_subjects

DRAWN = ("sinabs.IAF", "sinabs.IAFSqueeze", "sinabs.LIF")


@pytest.mark.parametrize("subject_id", DRAWN)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_drawn_threshold_is_a_float32_number(subject_id, data):
    subject = {s.id: s for s in sinabs_subjects.subjects()}[subject_id]
    threshold = data.draw(specs()[subject.spec].examples(**subject.fixed)).hyper["spike_threshold"]
    assert float(torch.tensor(threshold, dtype=torch.float32)) == threshold, (
        f"{subject_id} draws spike_threshold {threshold!r}, which a float32 layer holds as "
        f"{float(torch.tensor(threshold, dtype=torch.float32))!r}")
