"""Surrogate-gradient spike functions: a Heaviside step forward, a smooth stand-in derivative backward.

Every surrogate ``<name>(x, *, <params>, strict=True)`` computes the spike ``H(x)`` of ``x = membrane - threshold``:

- ``strict=True``  (snntorch, norse):    ``H(x) = 1 if x > 0 else 0``
- ``strict=False`` (spikingjelly, sinabs): ``H(x) = 1 if x >= 0 else 0``

and its gradient is ``dL/dx = dL/dH * <name>_grad(x, *, <params>)``; forward-mode AD uses the same derivative
(``tangent_out = <name>_grad(x) * tangent_in``). The derivative functions are plain functions, tested on their own.
All arithmetic happens in ``x``'s dtype and device; every derivative is finite for any finite ``x`` (no ``exp`` of a
large positive number anywhere), in float32 and bfloat16 too.

One ``torch.autograd.Function`` (:class:`SurrogateSpike`) serves every surrogate; it is selected by name, with its
parameters passed as a tuple of ``(name, value)`` pairs so that the call is hashable and static under
``torch.compile``, ``torch.export`` and ``torch.func``.

Parameter conventions (checked against the library code, not only its documentation):

==================== ===================================================== ============================================
surrogate            ``<name>_grad(x)``                                     matches
==================== ===================================================== ============================================
heaviside            ``H(x)`` (1 where it spiked, else 0)                    snntorch ``surrogate.heaviside()``
straight_through     ``1``                                                   snntorch ``straight_through_estimator()``
fast_sigmoid         ``1 / (alpha |x| + 1)^2``                               snntorch ``fast_sigmoid(slope=alpha)``;
                                                                             norse ``method="super"`` is alpha = 1
                                                                             (norse ignores its own ``alpha``)
atan                 ``(alpha/2) / (1 + (pi/2 alpha x)^2)``                  snntorch ``atan(alpha)``, spikingjelly
                                                                             ``ATan(alpha)``
sigmoid              ``alpha sig(alpha x) sig(-alpha x)``                    snntorch ``sigmoid(slope=alpha)``,
                                                                             spikingjelly ``Sigmoid(alpha)``
triangular           ``alpha max(0, 1 - |x|)``                               norse ``method="triangle"``
rectangular          ``alpha [|x| < 0.5/alpha]``                             spikingjelly ``Rect(alpha)``
piecewise_quadratic  ``max(0, alpha - alpha^2 |x|)``                          spikingjelly ``PiecewiseQuadratic(alpha)``
spike_rate_escape    ``alpha exp(-beta |x - 1|)``                            snntorch ``spike_rate_escape(beta,
                                                                             slope=alpha)`` (centred at x = 1)
single_exponential   ``scale/width exp(-|x|/width)``                         sinabs ``SingleExponential`` with
                                                                             ``width = grad_width * threshold``;
                                                                             spikingjelly ``PiecewiseExp(a)`` is
                                                                             ``width=1/a, scale=1/2``
multi_gaussian       ``scale ((1+h) N(x; mu, sigma) - h N(x; sigma, s sigma)  sinabs ``MultiGaussian``
                     - h N(x; -sigma, s sigma))``
==================== ===================================================== ============================================

``N(x; m, s) = exp(-(x-m)^2 / (2 s^2)) / (s sqrt(2 pi))``.

>>> import torch
>>> x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
>>> atan(x, alpha=2.0).tolist()
[0.0, 0.0, 1.0]
>>> torch.autograd.grad(atan(x, alpha=2.0).sum(), x)[0].tolist()[1]
1.0
"""

from __future__ import annotations

import math
from typing import Any

import torch

from qsnn_reference import _validate

__all__ = [
    "SURROGATES", "DEFAULT_PARAMS", "PRIMARY", "SurrogateSpike", "spike", "surrogate_grad",
    "heaviside", "heaviside_grad", "straight_through", "straight_through_grad",
    "fast_sigmoid", "fast_sigmoid_grad", "atan", "atan_grad", "sigmoid", "sigmoid_grad",
    "triangular", "triangular_grad", "rectangular", "rectangular_grad",
    "piecewise_quadratic", "piecewise_quadratic_grad", "spike_rate_escape", "spike_rate_escape_grad",
    "single_exponential", "single_exponential_grad", "multi_gaussian", "multi_gaussian_grad",
]


# --- derivatives -------------------------------------------------------------------------------------------------

def heaviside_grad(x: torch.Tensor, *, strict: bool = True) -> torch.Tensor:
    """``H(x)``: the gradient passes exactly where the neuron spiked (snntorch's ``Heaviside``)."""
    return _step(x, strict)


def straight_through_grad(x: torch.Tensor) -> torch.Tensor:
    """``1`` everywhere."""
    return torch.ones_like(x)


def fast_sigmoid_grad(x: torch.Tensor, *, alpha: float = 25.0) -> torch.Tensor:
    """``1 / (alpha |x| + 1)^2``."""
    return (alpha * x.abs() + 1.0).square().reciprocal()


def atan_grad(x: torch.Tensor, *, alpha: float = 2.0) -> torch.Tensor:
    """``(alpha / 2) / (1 + (pi/2 * alpha * x)^2)``."""
    return (alpha / 2.0) / (1.0 + (math.pi / 2.0 * alpha * x).square())


def sigmoid_grad(x: torch.Tensor, *, alpha: float = 4.0) -> torch.Tensor:
    """``alpha * sigmoid(alpha x) * sigmoid(-alpha x)``: the same value as ``alpha e^{-alpha x} / (1 + e^{-alpha x})^2``
    without the overflow of ``e^{-alpha x}`` for very negative ``x``."""
    return alpha * torch.sigmoid(alpha * x) * torch.sigmoid(-alpha * x)


def triangular_grad(x: torch.Tensor, *, alpha: float = 0.3) -> torch.Tensor:
    """``alpha * max(0, 1 - |x|)``: height ``alpha``, half-width 1 (norse's ``triangle``)."""
    return alpha * torch.relu(1.0 - x.abs())


def rectangular_grad(x: torch.Tensor, *, alpha: float = 1.0) -> torch.Tensor:
    """``alpha`` where ``|x| < 0.5 / alpha`` (open window), else 0: unit area."""
    return alpha * (x.abs() < 0.5 / alpha).to(x.dtype)


def piecewise_quadratic_grad(x: torch.Tensor, *, alpha: float = 1.0) -> torch.Tensor:
    """``max(0, alpha - alpha^2 |x|)``: a triangle of height ``alpha`` and half-width ``1/alpha``, unit area."""
    return torch.relu(alpha - alpha * alpha * x.abs())


def spike_rate_escape_grad(x: torch.Tensor, *, alpha: float = 25.0, beta: float = 1.0) -> torch.Tensor:
    """``alpha * exp(-beta |x - 1|)``: snntorch's code and docstring both centre it at ``x = 1``, i.e. at
    ``membrane = threshold + 1``, not at the threshold."""
    return alpha * torch.exp(-beta * (x - 1.0).abs())


def single_exponential_grad(x: torch.Tensor, *, width: float = 0.5, scale: float = 1.0) -> torch.Tensor:
    """``scale / width * exp(-|x| / width)`` with an absolute ``width``."""
    return (scale / width) * torch.exp(-x.abs() / width)


def _gaussian(x: torch.Tensor, mu: float, sigma: float) -> torch.Tensor:
    return torch.exp(-(x - mu).square() / (2.0 * sigma * sigma)) / (sigma * math.sqrt(2.0 * math.pi))


def multi_gaussian_grad(x: torch.Tensor, *, mu: float = 0.0, sigma: float = 0.5, h: float = 0.15, s: float = 6.0,
                        scale: float = 1.0) -> torch.Tensor:
    """``scale * ((1 + h) N(x; mu, sigma) - h N(x; sigma, s sigma) - h N(x; -sigma, s sigma))`` (Yin et al. 2021 as
    sinabs codes it: the two negative lobes are centred at ``+-sigma``, not ``mu +- sigma``)."""
    return scale * ((1.0 + h) * _gaussian(x, mu, sigma) - h * _gaussian(x, sigma, s * sigma)
                    - h * _gaussian(x, -sigma, s * sigma))


#: name -> (derivative, default parameters). The order of this table is the public list of surrogates.
_TABLE: dict[str, tuple[Any, dict[str, float]]] = {
    "heaviside": (heaviside_grad, {}),
    "straight_through": (straight_through_grad, {}),
    "fast_sigmoid": (fast_sigmoid_grad, {"alpha": 25.0}),
    "atan": (atan_grad, {"alpha": 2.0}),
    "sigmoid": (sigmoid_grad, {"alpha": 4.0}),
    "triangular": (triangular_grad, {"alpha": 0.3}),
    "rectangular": (rectangular_grad, {"alpha": 1.0}),
    "piecewise_quadratic": (piecewise_quadratic_grad, {"alpha": 1.0}),
    "spike_rate_escape": (spike_rate_escape_grad, {"alpha": 25.0, "beta": 1.0}),
    "single_exponential": (single_exponential_grad, {"width": 0.5, "scale": 1.0}),
    "multi_gaussian": (multi_gaussian_grad, {"mu": 0.0, "sigma": 0.5, "h": 0.15, "s": 6.0, "scale": 1.0}),
}

SURROGATES: tuple[str, ...] = tuple(_TABLE)
#: The default parameters of each surrogate (those of the library it matches).
DEFAULT_PARAMS: dict[str, dict[str, float]] = {name: dict(params) for name, (_, params) in _TABLE.items()}

#: The parameter a neuron spec's ``surrogate_alpha`` sets for each surrogate (``None``: the surrogate has none).
PRIMARY: dict[str, str | None] = {
    "heaviside": None, "straight_through": None, "fast_sigmoid": "alpha", "atan": "alpha", "sigmoid": "alpha",
    "triangular": "alpha", "rectangular": "alpha", "piecewise_quadratic": "alpha", "spike_rate_escape": "alpha",
    "single_exponential": "width", "multi_gaussian": "sigma",
}

_POSITIVE = frozenset({"alpha", "beta", "width", "sigma", "s", "scale"})


def _step(x: torch.Tensor, strict: bool) -> torch.Tensor:
    return ((x > 0) if strict else (x >= 0)).to(x.dtype)


def surrogate_grad(x: torch.Tensor, name: str, *, strict: bool = True, **params: float) -> torch.Tensor:
    """The derivative of surrogate ``name`` at ``x`` (``strict`` matters for ``heaviside`` only)."""
    grad_fn, _ = _TABLE[name]
    if name == "heaviside":
        return grad_fn(x, strict=strict)
    return grad_fn(x, **params)


class SurrogateSpike(torch.autograd.Function):
    """``H(x)`` forward; ``surrogate_grad(x, name, **params)`` times the incoming gradient (reverse mode) or tangent
    (forward mode, ``jvp``). Call it through :func:`spike` or the named functions; ``params`` is a tuple of
    ``(name, float)`` pairs."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, name: str, strict: bool, params: tuple) -> torch.Tensor:
        return _step(x, strict)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, name, strict, params = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.name, ctx.strict, ctx.params = name, strict, params

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad = surrogate_grad(x, ctx.name, strict=ctx.strict, **dict(ctx.params))
        return grad_output * grad, None, None, None

    @staticmethod
    def jvp(ctx, x_tangent, *_):
        (x,) = ctx.saved_tensors
        return surrogate_grad(x, ctx.name, strict=ctx.strict, **dict(ctx.params)) * x_tangent


def _traced_spike(x: torch.Tensor, name: str, strict: bool, params: tuple) -> torch.Tensor:
    """:class:`SurrogateSpike` in plain tensor algebra, used while ``torch.compile``/``torch.export`` trace it.

    Why not the Function itself: dynamo refuses an ``autograd.Function`` that defines a custom ``jvp`` (graph
    break gb0144), and with ``dynamic=True`` fails on two applications of one Function whose inputs share a
    parameter ("lift_tracked_freevar_to_input should not be called on root SubgraphTracer", torch 2.11-2.13).
    Same values: ``step + g * (x - x.detach())`` adds an exact zero; same first derivatives, forward and reverse:
    ``d/dx [g.detach() * x] = g = surrogate_grad(x)``.

    The zero must be exact whatever the compiler does: a spec may test the spike for ``== 0`` (sinabs' zero
    reset). The tempting ``c - c.detach()`` with ``c = x * g`` is not: Triton contracts ``x * g - x * g`` into
    ``fma(x, g, -(x * g))``, the product's rounding error (about 1e-9 of a float32 spike on the H200 with
    inductor, torch 2.11), and a spike compared ``== 0`` then reset the membrane of neurons that did not fire.
    ``x - x.detach()`` is a subtraction of equal values, exactly zero, before it is multiplied.
    """
    slope = surrogate_grad(x.detach(), name, strict=strict, **dict(params))
    return _step(x.detach(), strict) + slope * (x - x.detach())


def _check(name: str, strict: Any, params: dict[str, Any]) -> tuple:
    _validate.one_of("surrogate", name, SURROGATES)
    _validate.one_of("strict", strict, (True, False))
    allowed = _TABLE[name][1]
    for key, value in params.items():
        if key not in allowed:
            raise ValueError(f"surrogate {name!r} has no parameter {key!r}; it has {sorted(allowed)}")
        if key in _POSITIVE:
            _validate.positive(key, value)
        elif key == "h":
            _validate.in_range(key, value, 0.0, None)
        else:
            _validate.in_range(key, value)
    return tuple((key, float(params.get(key, default))) for key, default in allowed.items())


def spike(x: torch.Tensor, *, surrogate: str = "atan", alpha: float | None = None, strict: bool = True,
          **params: float) -> torch.Tensor:
    """``H(x)`` with the gradient of surrogate ``surrogate``; ``alpha`` (when not ``None``) sets the surrogate's
    :data:`PRIMARY` parameter, ``params`` set any of its other parameters. Used by the neuron specs.

    >>> spike(torch.tensor([0.5]), surrogate="single_exponential", alpha=0.25).tolist()
    [1.0]
    """
    _validate.one_of("surrogate", surrogate, SURROGATES)
    params = dict(params)
    if alpha is not None:
        primary = PRIMARY[surrogate]
        if primary is not None:
            params[primary] = alpha
        else:
            _validate.in_range("surrogate_alpha", alpha)
    _validate.floating("x", x)
    checked = _check(surrogate, strict, params)
    if torch.compiler.is_compiling():
        return _traced_spike(x, surrogate, strict, checked)
    return SurrogateSpike.apply(x, surrogate, strict, checked)


# --- the surrogates as specs ---------------------------------------------------------------------------------------
# Each public function below is a spec. Shared docstring sections:
#   Dtype: output has x's dtype (0.0/1.0 values); the gradient has x's dtype. Shape: elementwise, any shape.

def heaviside(x: torch.Tensor, *, strict: bool = True) -> torch.Tensor:
    """Spike with snntorch's ``heaviside`` surrogate.

    Forward:  ``H(x)``; ``strict``: 1 iff ``x > 0``, else 1 iff ``x >= 0``.
    Backward: ``dH/dx = H(x)`` (same strictness): the gradient passes unchanged where the neuron spiked
              (snntorch ``Heaviside.backward``: ``grad_output * out``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="heaviside", strict=strict)


def straight_through(x: torch.Tensor, *, strict: bool = True) -> torch.Tensor:
    """Spike with the straight-through estimator.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = 1`` (snntorch ``StraightThroughEstimator``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="straight_through", strict=strict)


def fast_sigmoid(x: torch.Tensor, *, alpha: float = 25.0, strict: bool = True) -> torch.Tensor:
    """Spike with the fast-sigmoid (SuperSpike) surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = 1 / (alpha |x| + 1)^2``. ``alpha`` is snntorch's ``fast_sigmoid(slope)``. norse's
              ``SuperSpike`` (``method="super"``) computes ``1 / (|x| + 1)^2`` whatever its ``alpha``: alpha = 1 here.
              spikingjelly's ``SuperSpike(a)`` is ``a / (|x| + 1)^2``: a scaled alpha = 1 (not representable unless
              a = 1).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="fast_sigmoid", alpha=alpha, strict=strict)


def atan(x: torch.Tensor, *, alpha: float = 2.0, strict: bool = True) -> torch.Tensor:
    """Spike with the arc-tangent surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = (alpha / 2) / (1 + (pi/2 * alpha * x)^2)``, the derivative of
              ``arctan(pi/2 alpha x) / pi + 1/2``. Same ``alpha`` as snntorch ``atan(alpha)`` and spikingjelly
              ``ATan(alpha)`` (both default 2, where ``dH/dx(0) = 1``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="atan", alpha=alpha, strict=strict)


def sigmoid(x: torch.Tensor, *, alpha: float = 4.0, strict: bool = True) -> torch.Tensor:
    """Spike with the sigmoid surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = alpha * sig(alpha x) * (1 - sig(alpha x))``, ``sig(z) = 1 / (1 + e^{-z})``, computed as
              ``alpha sig(alpha x) sig(-alpha x)`` (finite for every finite ``x``). ``alpha`` is snntorch's
              ``sigmoid(slope)`` (default 25) and spikingjelly's ``Sigmoid(alpha)`` (default 4).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="sigmoid", alpha=alpha, strict=strict)


def triangular(x: torch.Tensor, *, alpha: float = 0.3, strict: bool = True) -> torch.Tensor:
    """Spike with the triangular (piecewise-linear) surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = alpha * max(0, 1 - |x|)`` (norse ``Triangle``, ``method="triangle"``, default alpha 0.3).
              Not snntorch's ``Triangular``, whose code returns ``+threshold`` for ``x < 0`` and ``-threshold`` for
              ``x >= 0`` (a sign-changing constant, not a triangle).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="triangular", alpha=alpha, strict=strict)


def rectangular(x: torch.Tensor, *, alpha: float = 1.0, strict: bool = True) -> torch.Tensor:
    """Spike with the rectangular-window surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = alpha`` if ``|x| < 0.5 / alpha`` else 0 (spikingjelly ``Rect(alpha)``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="rectangular", alpha=alpha, strict=strict)


def piecewise_quadratic(x: torch.Tensor, *, alpha: float = 1.0, strict: bool = True) -> torch.Tensor:
    """Spike with spikingjelly's piecewise-quadratic surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = -alpha^2 |x| + alpha`` if ``|x| <= 1/alpha`` else 0 (spikingjelly
              ``PiecewiseQuadratic(alpha)``; the primitive is piecewise quadratic, the derivative a triangle).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="piecewise_quadratic", alpha=alpha, strict=strict)


def spike_rate_escape(x: torch.Tensor, *, alpha: float = 25.0, beta: float = 1.0, strict: bool = True) -> torch.Tensor:
    """Spike with snntorch's spike-rate-escape surrogate.

    Forward:  ``H(x)``.
    Backward: ``dH/dx = alpha * exp(-beta * |x - 1|)`` (snntorch ``spike_rate_escape(beta, slope=alpha)``; its
              code and docstring centre the kernel at ``x = 1``, one unit above the threshold).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="spike_rate_escape", alpha=alpha, beta=beta, strict=strict)


def single_exponential(x: torch.Tensor, *, width: float = 0.5, scale: float = 1.0, strict: bool = True) -> torch.Tensor:
    """Spike with the single-exponential surrogate (Shrestha and Orchard 2018).

    Forward:  ``H(x)``.
    Backward: ``dH/dx = scale / width * exp(-|x| / width)``. ``width`` is absolute: sinabs'
              ``SingleExponential(grad_width, grad_scale)`` is ``width = grad_width * spike_threshold``,
              ``scale = grad_scale``; spikingjelly's ``PiecewiseExp(a)`` is ``width = 1/a``, ``scale = 1/2``.
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="single_exponential", width=width, scale=scale, strict=strict)


def multi_gaussian(x: torch.Tensor, *, mu: float = 0.0, sigma: float = 0.5, h: float = 0.15, s: float = 6.0,
                   scale: float = 1.0, strict: bool = True) -> torch.Tensor:
    """Spike with sinabs' multi-Gaussian surrogate (Yin et al. 2021).

    Forward:  ``H(x)``.
    Backward: ``dH/dx = scale * ((1 + h) N(x; mu, sigma) - h N(x; sigma, s sigma) - h N(x; -sigma, s sigma))`` with
              ``N(x; m, sd) = exp(-(x - m)^2 / (2 sd^2)) / (sd sqrt(2 pi))`` (sinabs ``MultiGaussian``, where
              ``grad_scale = scale``).
    Dtype:    follows ``x``.
    Shape:    elementwise.
    """
    return spike(x, surrogate="multi_gaussian", mu=mu, sigma=sigma, h=h, s=s, scale=scale, strict=strict)
