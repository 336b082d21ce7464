"""What a NIR graph means: its nodes' declared dynamics (https://neuroir.org/docs/primitives.html), stepped with
forward Euler at the time step ``dt`` its exporter declares. Pure PyTorch.

    simulate(graph, x, dt) -> spikes/outputs of shape (T, B, ...) for x of shape (T, B, ...)

Per step, with input current ``I``:
- ``Affine``: ``W I + b``; ``Linear``: ``W I``; ``Conv2d``: the 2-d cross-correlation of ``I`` (B, C, H, W) with its
  weight, stride, padding (numbers, or "same"/"valid"), dilation and groups, plus its bias.
- ``LIF``: ``v += dt / tau * (v_leak - v + r I)``; it spikes where ``v > v_threshold``, and there ``v = v_reset``.
- ``IF``: ``v += dt * r * I``; spike and reset as LIF.
- ``LI``: ``v += dt / tau * (v_leak - v + r I)``, output ``v``; ``Integrator``: ``v += dt * r * I``, output ``v``.
- ``CubaLIF``: its synapse, then its membrane, each stepped as the nodes above in a chain (an LI synapse feeding a
  LIF): ``i += dt / tau_syn * (-i + w_in I)``, then ``v += dt / tau_mem * (v_leak - v + r i)`` with the new ``i``;
  spike and reset as LIF. (NIR states the two equations, not their order within a step; this is the order a graph
  of an LI node feeding a LIF node has.)
A neuron starts at rest: ``v_leak`` (LIF, LI, CubaLIF, whose synapse starts at 0), ``v_reset`` (IF), 0
(Integrator). ``v_reset`` is 0 where a graph written before NIR 1.0.6 has none.

Recurrent graphs: an edge that closes a cycle (found depth-first from the input node) delivers its source's output of
the previous step; before the first step an Affine source delivers its bias (its input, a neuron at rest, is 0) and
any other source 0.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["simulate", "UnsupportedGraph"]


class UnsupportedGraph(ValueError):
    """A node type or graph shape this reference does not define (subgraphs, pooling, a cycle the input does not
    reach, ...)."""


def _param(node: Any, name: str, like: torch.Tensor, default: float | None = None) -> torch.Tensor:
    value = getattr(node, name, None)
    if value is None:
        if default is None:
            raise UnsupportedGraph(f"{type(node).__name__} has no {name}")
        value = default
    return torch.as_tensor(value, dtype=like.dtype, device=like.device)


def _order(graph: Any) -> list[tuple[str, list[str], list[str]]]:
    """The nodes in an order where every node comes after its inputs, each with its inputs and its delayed inputs:
    an edge that closes a cycle (found depth-first from the input node) delivers its source's output of the step
    before, as a recurrent connection does."""
    def base(port: str) -> str:
        return port if port in graph.nodes else port.split(".")[0]

    inputs: dict[str, list[str]] = {name: [] for name in graph.nodes}
    outgoing: dict[str, list[str]] = {name: [] for name in graph.nodes}
    for source, target in graph.edges:
        inputs[base(target)].append(base(source))
        outgoing[base(source)].append(base(target))
    delayed: set[tuple[str, str]] = set()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        path.append(node)
        for target in sorted(outgoing[node]):
            if target in path:
                delayed.add((node, target))
            elif target not in done:
                visit(target, path)
        path.pop()
        done.add(node)

    for entry in sorted(n for n in inputs if not inputs[n]):
        visit(entry, [])
    direct = {n: [s for s in srcs if (s, n) not in delayed] for n, srcs in inputs.items()}
    ordered: list[str] = []
    while len(ordered) < len(inputs):
        ready = [n for n in inputs if n not in ordered and all(src in ordered for src in direct[n])]
        if not ready:
            raise UnsupportedGraph("the graph has a cycle the input does not reach")
        ordered.extend(sorted(ready))
    return [(n, direct[n], [s for s in inputs[n] if (s, n) in delayed]) for n in ordered]


def _at_rest(node: Any, like: torch.Tensor) -> torch.Tensor:
    """What a recurrent edge's source delivers before the first step: the output of an Affine node for neurons at
    rest (no spike) is its bias; every other node's is 0."""
    if type(node).__name__ == "Affine":
        return _param(node, "bias", like)
    return torch.zeros((), dtype=like.dtype, device=like.device)


def _leak(state: dict[str, torch.Tensor], key: str, tau: torch.Tensor, v_leak: torch.Tensor, r: torch.Tensor,
          current: torch.Tensor, dt: float) -> torch.Tensor:
    """One Euler step of ``tau dv/dt = v_leak - v + r I`` for ``state[key]`` (from ``v_leak`` at rest), kept there."""
    v = state.get(key, torch.zeros_like(current) + v_leak)
    state[key] = v = v + dt / tau * (v_leak - v + r * current)
    return v


def _fire(node: Any, v: torch.Tensor, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """Spikes where ``v > v_threshold``; there ``v`` becomes ``v_reset`` (kept in ``state``)."""
    spikes = v > _param(node, "v_threshold", v)
    state["v"] = torch.where(spikes, _param(node, "v_reset", v, 0.0) + torch.zeros_like(v), v)
    return spikes.to(v.dtype)


def _step(node: Any, current: torch.Tensor, state: dict[str, torch.Tensor], dt: float) -> torch.Tensor:
    kind = type(node).__name__
    if kind in ("Input", "Output"):
        return current
    if kind in ("Affine", "Linear"):
        weight = _param(node, "weight", current)
        out = current @ weight.transpose(-1, -2)
        return out + _param(node, "bias", current) if kind == "Affine" else out
    if kind == "Conv2d":
        padding = node.padding if isinstance(node.padding, str) else tuple(int(p) for p in node.padding)
        return torch.nn.functional.conv2d(current, _param(node, "weight", current), _param(node, "bias", current),
                                          stride=tuple(int(s) for s in node.stride), padding=padding,
                                          dilation=tuple(int(d) for d in node.dilation), groups=int(node.groups))
    if kind == "CubaLIF":  # an LI synapse feeding a LIF membrane
        zero = torch.zeros((), dtype=current.dtype, device=current.device)
        i = _leak(state, "i", _param(node, "tau_syn", current), zero, _param(node, "w_in", current, 1.0), current, dt)
        v = _leak(state, "v", _param(node, "tau_mem", current), _param(node, "v_leak", current),
                  _param(node, "r", current), i, dt)
        return _fire(node, v, state)
    if kind in ("LIF", "IF", "LI", "Integrator"):
        r = _param(node, "r", current)
        if kind in ("LIF", "LI"):
            v = _leak(state, "v", _param(node, "tau", current), _param(node, "v_leak", current), r, current, dt)
        else:
            rest = _param(node, "v_reset", current, 0.0) if kind == "IF" else torch.zeros((), dtype=current.dtype)
            v = state.get("v", torch.zeros_like(current) + rest)
            v = v + dt * r * current
        if kind in ("LI", "Integrator"):
            state["v"] = v
            return v
        return _fire(node, v, state)
    raise UnsupportedGraph(f"no reference semantics for NIR node type {kind}")


def simulate(graph: Any, x: torch.Tensor, dt: float) -> torch.Tensor:
    """Run ``graph`` over the leading time axis of ``x``; returns its output node's value at every step."""
    order = _order(graph)
    entry = [name for name, sources, later in order if not sources and not later]
    exits = [name for name in graph.nodes if not any(name in sources + later for _, sources, later in order)]
    if len(entry) != 1 or len(exits) != 1:
        raise UnsupportedGraph(f"expected one input and one output node, found inputs {entry} and outputs {exits}")
    states: dict[str, dict[str, torch.Tensor]] = {name: {} for name in graph.nodes}
    before = {source: _at_rest(graph.nodes[source], x) for _, _, later in order for source in later}
    outputs = []
    for x_t in x:
        values: dict[str, torch.Tensor] = {}
        for name, sources, later in order:
            current = x_t if not sources and not later else \
                sum([values[s] for s in sources] + [before[s] for s in later])
            values[name] = _step(graph.nodes[name], current, states[name], dt)
        before = {source: values[source] for source in before}
        outputs.append(values[exits[0]])
    return torch.stack(outputs)
