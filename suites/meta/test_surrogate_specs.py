"""The surrogate spike specs against closed forms written here, independently, with Python's ``math``.

Forward: a Heaviside step (strict or not). Backward: autograd through the spec equals the closed-form derivative
(never finite differences); forward mode (jvp) equals it too. Plus: extremes stay finite in float32/bfloat16, bad
parameters raise ``ValueError`` naming the parameter, and every spec survives vmap, grad, jvp, compile and export.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.specs.neuron import SPECS, surrogate_kinks
from qsnn_reference import surrogate as S

SURROGATE_SPECS = {spec.id.split(".", 1)[1]: spec for spec in SPECS if spec.family == "surrogate"}
NAMES = sorted(SURROGATE_SPECS)
FEW = settings(max_examples=15, deadline=None)


def _normal(v: float, mu: float, sd: float) -> float:
    return math.exp(-((v - mu) ** 2) / (2 * sd * sd)) / (sd * math.sqrt(2 * math.pi))


def _sig(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


#: name -> closed-form derivative d H / d x at the float ``v`` with parameters ``p`` (the drawn hyper).
CLOSED_FORM = {
    "heaviside": lambda v, p: float(v > 0 if p["strict"] else v >= 0),
    "straight_through": lambda v, p: 1.0,
    "fast_sigmoid": lambda v, p: (1 + p["alpha"] * abs(v)) ** -2,
    "atan": lambda v, p: p["alpha"] / 2 / (1 + (math.pi / 2 * p["alpha"] * v) ** 2),
    "sigmoid": lambda v, p: p["alpha"] * _sig(p["alpha"] * v) * (1 - _sig(p["alpha"] * v)),
    "triangular": lambda v, p: p["alpha"] * max(0.0, 1 - abs(v)),
    "rectangular": lambda v, p: p["alpha"] if abs(v) < 0.5 / p["alpha"] else 0.0,
    "piecewise_quadratic": lambda v, p: (-p["alpha"] ** 2 * abs(v) + p["alpha"]) if abs(v) <= 1 / p["alpha"] else 0.0,
    "spike_rate_escape": lambda v, p: p["alpha"] * math.exp(-p["beta"] * abs(v - 1)),
    "single_exponential": lambda v, p: p["scale"] / p["width"] * math.exp(-abs(v) / p["width"]),
    "multi_gaussian": lambda v, p: p["scale"] * ((1 + p["h"]) * _normal(v, p["mu"], p["sigma"])
                                                 - p["h"] * _normal(v, p["sigma"], p["s"] * p["sigma"])
                                                 - p["h"] * _normal(v, -p["sigma"], p["s"] * p["sigma"])),
}


def _closed(name: str, x: torch.Tensor, hyper: dict) -> tuple[torch.Tensor, torch.Tensor]:
    values = x.flatten().tolist()
    forward = [float(v > 0) if hyper["strict"] else float(v >= 0) for v in values]
    grad = [CLOSED_FORM[name](v, hyper) for v in values]
    as_tensor = lambda vs: torch.tensor(vs, dtype=torch.float64).reshape(x.shape)
    return as_tensor(forward), as_tensor(grad)


def test_every_surrogate_has_a_spec_and_a_closed_form():
    assert set(NAMES) == set(S.SURROGATES) == set(CLOSED_FORM)


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_forward_and_gradient_match_closed_form(name, data):
    spec = SURROGATE_SPECS[name]
    example = data.draw(spec.examples())
    x = example.x.clone().requires_grad_()
    y = spec.fn(x, **example.hyper)
    (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
    forward, derivative = _closed(name, example.x, dict(example.hyper))
    torch.testing.assert_close(y.detach(), forward, rtol=0, atol=0)
    torch.testing.assert_close(grad, derivative)
    params = {k: v for k, v in example.hyper.items() if k != "strict"}
    torch.testing.assert_close(S.surrogate_grad(example.x, name, strict=example.hyper["strict"], **params), derivative)


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_jvp_equals_closed_form_times_tangent(name, data):
    spec = SURROGATE_SPECS[name]
    example = data.draw(spec.examples())
    tangent = torch.linspace(-1, 2, example.x.numel(), dtype=torch.float64).reshape(example.x.shape)
    _, out_tangent = torch.func.jvp(lambda x: spec.fn(x, **example.hyper), (example.x,), (tangent,))
    torch.testing.assert_close(out_tangent, _closed(name, example.x, dict(example.hyper))[1] * tangent)


@pytest.mark.parametrize("name", NAMES)
def test_edge_examples_cover_the_domain_and_match_closed_form(name):
    """The edge examples (checked first in every cell) hold the threshold itself, kinks and |x| up to 1e4, with the
    library defaults and with extreme parameters; the spec matches the closed form on them, finite in every dtype."""
    examples = SURROGATE_SPECS[name].edges()
    assert len(examples) == 2 and {e.hyper["strict"] for e in examples} == {True, False}
    assert {k for k in examples[0].hyper if k != "strict"} == set(S.DEFAULT_PARAMS[name])
    for example in examples:
        values = example.x.flatten().tolist()
        assert 0.0 in values and max(map(abs, values)) >= 1e4 and example.x.shape[0] == 2
        x = example.x.clone().requires_grad_()
        (grad,) = torch.autograd.grad(SURROGATE_SPECS[name].fn(x, **example.hyper).sum(), x)
        torch.testing.assert_close(grad, _closed(name, example.x, dict(example.hyper))[1])
        for dtype in (torch.float32, torch.bfloat16):
            x = example.x.to(dtype).requires_grad_()
            (grad,) = torch.autograd.grad(SURROGATE_SPECS[name].fn(x, **example.hyper).sum(), x)
            assert torch.isfinite(grad).all(), (name, dtype, example.hyper)


def test_edge_examples_keep_what_a_subject_fixes():
    from hypothesis import strategies as st

    fixed = SURROGATE_SPECS["atan"].edges(strict=True, alpha=st.floats(3.0, 4.0))
    assert [e.hyper for e in fixed] == [{"alpha": 3.0, "strict": True}] * 2


def test_atan_and_sigmoid_at_zero_match_library_defaults():
    zero = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    for fn, kwargs, expected in [(S.atan, {"alpha": 2.0}, 1.0), (S.sigmoid, {"alpha": 4.0}, 1.0),
                                 (S.sigmoid, {"alpha": 25.0}, 6.25), (S.fast_sigmoid, {"alpha": 25.0}, 1.0),
                                 (S.piecewise_quadratic, {"alpha": 1.0}, 1.0), (S.rectangular, {"alpha": 1.0}, 1.0),
                                 (S.spike_rate_escape, {"alpha": 25.0, "beta": 1.0}, 25 * math.exp(-1)),
                                 (S.single_exponential, {"width": 0.5, "scale": 1.0}, 2.0)]:
        (grad,) = torch.autograd.grad(fn(zero, **kwargs).sum(), zero)
        assert grad.item() == pytest.approx(expected), fn.__name__


@pytest.mark.parametrize("strict,expected", [(True, [0.0, 0.0, 1.0]), (False, [0.0, 1.0, 1.0])])
@pytest.mark.parametrize("name", NAMES)
def test_strictness_decides_the_spike_at_zero(name, strict, expected):
    x = torch.tensor([-1e-30, 0.0, 1e-30], dtype=torch.float64)
    assert SURROGATE_SPECS[name].fn(x, strict=strict).tolist() == expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
def test_extremes_are_finite(name, dtype):
    x = torch.tensor([-1e4, -100.0, -1e-3, 0.0, 1e-3, 100.0, 1e4], dtype=dtype, requires_grad=True)
    steep = {"alpha": 30.0, "width": 0.1, "sigma": 0.1}
    for strict in (True, False):
        for params in ({}, {k: v for k, v in steep.items() if k in S._TABLE[name][1]}):
            y = SURROGATE_SPECS[name].fn(x, strict=strict, **params)
            (grad,) = torch.autograd.grad(y.sum(), x)
            assert y.dtype == dtype and grad.dtype == dtype
            assert torch.isfinite(grad).all(), (params, grad)
            assert y.tolist()[:3] == [0, 0, 0] and y.tolist()[-3:] == [1, 1, 1]
            assert y[3].item() == (0.0 if strict else 1.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_drawn_examples_are_valid_in_every_dtype(name, dtype, data):
    spec = SURROGATE_SPECS[name]
    example = data.draw(spec.examples())
    x = example.x.to(dtype).requires_grad_()
    y = spec.fn(x, **example.hyper)
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert y.dtype == dtype and y.shape == x.shape and grad.dtype == dtype
    assert torch.isfinite(grad).all()
    assert torch.equal(spec.margin(example), example.x)


@pytest.mark.parametrize("call,param", [
    (lambda x: S.atan(x, alpha=0.0), "alpha"),
    (lambda x: S.fast_sigmoid(x, alpha=-1.0), "alpha"),
    (lambda x: S.sigmoid(x, alpha=float("nan")), "alpha"),
    (lambda x: S.spike_rate_escape(x, beta=0.0), "beta"),
    (lambda x: S.single_exponential(x, width=0.0), "width"),
    (lambda x: S.multi_gaussian(x, sigma=-0.1), "sigma"),
    (lambda x: S.multi_gaussian(x, h=-0.1), "h"),
    (lambda x: S.atan(x, strict="yes"), "strict"),
    (lambda x: S.spike(x, surrogate="erf"), "surrogate"),
    (lambda x: S.spike(x, surrogate="atan", width=1.0), "width"),
    (lambda x: S.atan(x.to(torch.int64)), "x"),
])
def test_bad_parameters_raise_naming_them(call, param):
    with pytest.raises(ValueError, match=param):
        call(torch.zeros(2, dtype=torch.float64))


def test_kinks_are_where_the_derivative_jumps():
    assert surrogate_kinks("rectangular", {"alpha": 2.0}) == (0.0, 0.25, -0.25)
    assert surrogate_kinks("piecewise_quadratic", {"alpha": 2.0}) == (0.0, 0.5, -0.5)


# --- transforms ------------------------------------------------------------------------------------------------------

ONE = settings(max_examples=1, deadline=None, derandomize=True)


@pytest.mark.parametrize("name", NAMES)
@ONE
@given(data=st.data())
def test_spec_survives_functorch_transforms(name, data):
    spec = SURROGATE_SPECS[name]
    example = data.draw(spec.examples())
    x, hyper = example.x, dict(example.hyper)
    f = lambda t: spec.fn(t, **hyper)
    torch.testing.assert_close(torch.func.vmap(f, in_dims=spec.batch_dim)(x), f(x))
    torch.testing.assert_close(torch.stack([f(x[b]) for b in range(x.shape[0])]), f(x))
    weights = torch.linspace(0.5, 1.5, x.numel(), dtype=x.dtype).reshape(x.shape)
    loss = lambda t: (f(t) * weights).sum()
    xr = x.clone().requires_grad_()
    torch.testing.assert_close(torch.func.grad(loss)(x), torch.autograd.grad(loss(xr), xr)[0])
    u = torch.cos(torch.arange(x.numel(), dtype=x.dtype)).reshape(x.shape)
    v = torch.sin(torch.arange(x.numel(), dtype=x.dtype) + 1).reshape(x.shape)
    _, ju = torch.func.jvp(f, (x,), (u,))
    _, vjp = torch.func.vjp(f, x)
    torch.testing.assert_close((v * ju).sum(), (vjp(v)[0] * u).sum())


@pytest.mark.parametrize("name", NAMES)
@ONE
@given(data=st.data())
def test_spec_compiles_fullgraph_and_exports(name, data):
    spec = SURROGATE_SPECS[name]
    example = data.draw(spec.examples())
    hyper = dict(example.hyper)
    f = lambda t: spec.fn(t, **hyper) * t
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    xe, xc = example.x.clone().requires_grad_(), example.x.clone().requires_grad_()
    ye, yc = f(xe), compiled(xc)
    torch.testing.assert_close(yc, ye)
    torch.testing.assert_close(torch.autograd.grad(yc.sum(), xc)[0], torch.autograd.grad(ye.sum(), xe)[0])

    class Wrapped(torch.nn.Module):
        def forward(self, t):
            return spec.fn(t, **hyper)

    exported = torch.export.export(Wrapped(), (example.x,))
    torch.testing.assert_close(exported.module()(example.x), spec.fn(example.x, **hyper))
