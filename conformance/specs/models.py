"""Opaque models: whole networks shipped by libraries (e.g. bitorch's ResNet), judged only by what the transforms
preserve (deepcopy, pickle, per-sample gradients, compile, ...). They have no spec function (``fn=None``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.core import strategies as cs
from conformance.core.types import Example, Spec


def image_examples(**fixed):
    """Small images ``(B, C, H, W)``: ``channels``/``size``/``batch`` may be fixed by the subject."""
    cs.check_fixed(fixed, ("batch", "channels", "size"), "model.image_classifier")

    @st.composite
    def draw(draw_):
        batch = draw_(cs.hyper(fixed, "batch", st.integers(1, 2)))
        channels = draw_(cs.hyper(fixed, "channels", st.just(3)))
        size = draw_(cs.hyper(fixed, "size", st.just(16)))
        seed = draw_(st.integers(0, 2**16))
        import torch

        gen = torch.Generator().manual_seed(seed)
        x = torch.randn((batch, channels, size, size), generator=gen, dtype=torch.float64)
        return Example(x, {}, {})

    return draw()


SPECS = (
    Spec(id="model.image_classifier", fn=None, examples=image_examples,
         doc="A whole image classifier (logits from images); no spec, judged by transform preservation only."),
)
