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


def feature_examples(**fixed):
    """Features ``(B, F)``: normal values with standard deviation 2, every fifth exactly 0, one at -1e4 or 1e4 in
    half the examples (a quantizer's clipping range); ``features`` (default 4) and ``batch`` may be fixed."""
    cs.check_fixed(fixed, ("batch", "features"), "model.features_layer")

    @st.composite
    def draw(draw_):
        batch = draw_(cs.hyper(fixed, "batch", st.integers(1, 3)))
        features = draw_(cs.hyper(fixed, "features", st.just(4)))
        seed = draw_(st.integers(0, 2**16))
        large = draw_(st.sampled_from([None, -1e4, 1e4]))
        import torch

        gen = torch.Generator().manual_seed(seed)
        x = 2 * torch.randn((batch, features), generator=gen, dtype=torch.float64)
        x.view(-1)[::5] = 0.0
        if large is not None:
            x.view(-1)[-1] = large
        return Example(x, {}, {"seed": seed})

    return draw()


def _currents(spec_id: str, sample: tuple[int, ...], fixed: dict):
    """Input currents ``(T, B, *sample)`` in [0, 2) for a small spiking network, and the ``seed`` its weights are
    drawn from; ``steps`` and ``batch`` may be fixed."""
    cs.check_fixed(fixed, ("steps", "batch"), spec_id)

    @st.composite
    def draw(draw_):
        steps = draw_(cs.hyper(fixed, "steps", st.integers(3, 8)))
        batch = draw_(cs.hyper(fixed, "batch", st.integers(1, 2)))
        seed = draw_(st.integers(0, 2**16))
        import torch

        gen = torch.Generator().manual_seed(seed)
        x = 2 * torch.rand((steps, batch, *sample), generator=gen, dtype=torch.float64)
        return Example(x, {}, {"seed": seed})

    return draw()


def network_examples(**fixed):
    """Currents ``(T, B, 4)`` for model.snn_network (Linear(4, 3) + a spiking layer or a readout)."""
    return _currents("model.snn_network", (NETWORK_INPUTS,), fixed)


def conv_network_examples(**fixed):
    """Currents ``(T, B, 1, 4, 4)`` for model.snn_conv_network (Conv2d(1, 2, 3, padding=1) + a spiking layer)."""
    return _currents("model.snn_conv_network", CONV_NETWORK_INPUT, fixed)


#: one sample of model.snn_conv_network (channels, height, width) and its Conv2d's output channels
CONV_NETWORK_INPUT, CONV_NETWORK_CHANNELS = (1, 4, 4), 2


def conv_network_weights(seed: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """The Conv2d's weight (2, 1, 3, 3) and bias (2,) of model.snn_conv_network for an example's seed: a 3x3 kernel
    sums up to 9 inputs, so the weights are smaller than the linear network's for the neurons to spike in a fair
    share of the steps."""
    import torch

    gen = torch.Generator().manual_seed(seed + 2)
    weight = (torch.rand((CONV_NETWORK_CHANNELS, CONV_NETWORK_INPUT[0], 3, 3), generator=gen, dtype=torch.float64)
              * 0.8 - 0.2)
    bias = torch.rand((CONV_NETWORK_CHANNELS,), generator=gen, dtype=torch.float64) - 0.5
    return weight, bias


#: the input width of model.snn_network (its layers map 4 inputs to 3 neurons)
NETWORK_INPUTS, NETWORK_NEURONS = 4, 3


def network_weights(seed: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """The Linear layer's weight (3, 4) and bias (3,) of model.snn_network for an example's seed: drawn so that
    the neurons spike at some steps and not at others."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    weight = torch.rand((NETWORK_NEURONS, NETWORK_INPUTS), generator=gen, dtype=torch.float64) * 2 - 0.5
    bias = torch.rand((NETWORK_NEURONS,), generator=gen, dtype=torch.float64) - 0.5
    return weight, bias


SPECS = (
    Spec(id="model.image_classifier", fn=None, examples=image_examples,
         doc="A whole image classifier (logits from images); no spec, judged by transform preservation only."),
    Spec(id="model.features_layer", fn=None, examples=feature_examples,
         doc="A library's layer as constructed by default (its own quantizers and scales) on features (B, F); no spec, "
             "judged by transform preservation only."),
    Spec(id="model.snn_network", fn=None, examples=network_examples, time_dim=0, batch_dim=1,
         doc="A small spiking network of one library (Linear(4, 3) + a spiking layer, or + a leaky-integrator "
             "readout) over T steps: spikes, or the readout's membrane, (T, B, 3) from currents (T, B, 4); judged by "
             "what exchanges (NIR) and transforms preserve."),
    Spec(id="model.snn_conv_network", fn=None, examples=conv_network_examples, time_dim=0, batch_dim=1,
         doc="A small convolutional spiking network of one library (Conv2d(1, 2, 3, padding=1) + a spiking layer) "
             "over T steps: spikes (T, B, 2, 4, 4) from currents (T, B, 1, 4, 4); judged by what exchanges (NIR) "
             "and transforms preserve."),
)
