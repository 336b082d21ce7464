"""spikingjelly 2.0 (``spikingjelly.activation_based``): IF, LIF and PLIF nodes, single- and multi-step, and the
surrogate functions that map onto :mod:`qsnn_reference.surrogate`.

spikingjelly 2.0 has no ``backend=`` argument any more (no cupy backend): the multi-step path picks its
implementation from the input's device and dtype (``functional.neuron.lif_multi_step`` and friends: a registered
``torch.library`` operator with a CPU kernel for float32 and a built-in surrogate, the Python reference otherwise,
native CUDA/Triton kernels on CUDA). The ``[m]`` rows therefore exercise the CUDA kernels in their cuda cells.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch import nn

from . import Network, exchange_network, network_conv, network_linear
from ..core.types import CallProtocol, Example, Known, Library, Subject
from ..transforms.bdpy import known_stepped as bdpy_stepped

#: Installed without its declared dependencies: it declares torchvision/torchaudio (a CUDA torch) and imports neither.
LIBRARY = Library("spikingjelly", "spikingjelly", "2.0.0", no_deps=True,
                  dependencies=("h5py", "loguru", "matplotlib", "packaging", "scipy", "tqdm"),
                  history=("0.0.0.0.14",))
REQUIRES = ("spikingjelly",)
_SRC = "https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/activation_based"

#: spec surrogate name -> (spikingjelly class name, its default alpha)
_SURROGATES = {"sigmoid": ("Sigmoid", 4.0), "atan": ("ATan", 2.0)}


def _surrogate(hyper: dict[str, Any]):
    from spikingjelly.activation_based import surrogate

    name, default = _SURROGATES[hyper["surrogate"]]
    alpha = hyper["surrogate_alpha"]
    return getattr(surrogate, name)(alpha=float(default if alpha is None else alpha))


class NodeOverTime(nn.Module):
    """A spikingjelly node run over ``x`` of shape ``(T, B, N)`` from its reset state.

    ``step_mode="s"``: one call per time step (the adapter loops); ``"m"``: one call with the whole sequence.
    ``persist``: the node goes on from the ``v`` the previous call left, as spikingjelly's nodes do until
    ``reset()`` (``functional.reset_net``) is called; otherwise every call starts from ``v_reset`` (or 0).
    """

    def __init__(self, node: nn.Module, step_mode: str, persist: bool = False):
        super().__init__()
        self.node = node
        self.step_mode = step_mode
        self.persist = persist

    def reset(self) -> None:
        self.node.reset()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.persist:
            self.node.reset()
        if self.step_mode == "m":
            return self.node(x)
        return torch.stack([self.node(x[t]) for t in range(x.shape[0])])


def _common(hyper: dict[str, Any], step_mode: str) -> dict[str, Any]:
    return dict(v_threshold=float(hyper["v_threshold"]),
                v_reset=None if hyper["v_reset"] is None else float(hyper["v_reset"]),
                surrogate_function=_surrogate(hyper), detach_reset=bool(hyper["detach_reset"]), step_mode=step_mode)


def _default_builder(class_name: str, persist: bool = False):
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import neuron

        return NodeOverTime(getattr(neuron, class_name)(), "s", persist)

    return build


def _if_builder(step_mode: str, persist: bool = False):
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import neuron

        return NodeOverTime(neuron.IFNode(**_common(example.hyper, step_mode)), step_mode, persist)

    return build


def _lif_builder(step_mode: str, persist: bool = False):
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import neuron

        hyper = example.hyper
        node = neuron.LIFNode(tau=float(hyper["tau"]), decay_input=bool(hyper["decay_input"]),
                              **_common(hyper, step_mode))
        return NodeOverTime(node, step_mode, persist)

    return build


def _plif_builder(step_mode: str, persist: bool = False):
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import neuron

        hyper = example.hyper
        node = neuron.ParametricLIFNode(init_tau=2.0, decay_input=bool(hyper["decay_input"]),
                                        **_common(hyper, step_mode))
        with torch.no_grad():
            node.w.copy_(example.params["w"].to(node.w.dtype))
        return NodeOverTime(node, step_mode, persist)

    return build


class SurrogateModule(nn.Module):
    """A spikingjelly surrogate function module applied to ``x = membrane - threshold``."""

    def __init__(self, fn: nn.Module):
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def _surrogate_builder(class_name: str):
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import surrogate

        return SurrogateModule(getattr(surrogate, class_name)(alpha=float(example.hyper["alpha"])))

    return build


# --- known failures --------------------------------------------------------------------------------------------

_OPS = "https://github.com/fangwei123456/spikingjelly/blob/master/spikingjelly/_ops/surrogate.py"
_NO_SETUP_CONTEXT = (
    "the neuron kernels' spike function spikingjelly._ops.surrogate._SurrogateSpike is an old-style "
    "autograd.Function (forward(ctx, ...), no setup_context), which torch.func refuses")
_JIT_NODE = ("MemoryModule.forward(self, *args, **kwargs) takes variable arguments, which TorchScript cannot "
             "compile")


#: Findings of the H200 run (CUDA, torch 2.11): they apply only there (CPU with torch 2.13 does not show them).
_CUDA_211 = dict(device="cuda", torch="2.11*")
_JVP_ZERO = ("on CUDA the nodes run spikingjelly's CUDA kernels instead of the old-style _SurrogateSpike Function: "
             "torch.func.jvp through them no longer raises (as on the CPU) but returns a zero tangent for the "
             "spikes, so a jvp-derived gradient is 0 where reverse mode gives the surrogate gradient: silently wrong "
             "forward-mode AD")


#: Findings of the call protocol (one time step per call, the node keeping v in between): the same on the CPU and on
#: CUDA (H100 run of 2026-12-05), except the learnable node's checkpoint cells (below).
_TRACE_FORGETS_V = ("a node at rest holds v as the Python float v_reset, which torch.jit.trace / torch.export "
                    "record as a constant (`v = full_like(x, v_reset)`): the traced or exported node starts every "
                    "call from rest, so fed one step per call it forgets v between the steps (its gradients too); "
                    "nothing warns")
_CHECKPOINT_STEPS = ("checkpoint recomputes a call's forward during backward from the v the later calls left (a "
                     "node is not the side-effect-free function checkpoint asks for): the recomputed step is not "
                     "the one that ran, so the input gradient is wrong, or, where v changes shape from the float "
                     "at rest to a tensor, backward raises CheckpointError")


def _known_node(*, learnable: bool) -> tuple[Known, ...]:
    known = [
        Known("jit_trace", "preserves_grad", cause="transform-changed-grad", reason=_TRACE_FORGETS_V,
              link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/node_jit_trace_forgets_v.py"),
        Known("jvp", "preserves_grad", cause="transform-changed-grad", reason=_JVP_ZERO, link=f"{_SRC}/neuron",
              reproducer="reproducers/spikingjelly/node_cuda_jvp_zero_tangent.py", **_CUDA_211),
        Known("jvp", device="cpu", cause="autograd-function-without-setup_context", reason=_NO_SETUP_CONTEXT,
              link=_OPS, reproducer="reproducers/spikingjelly/node_jvp_old_style_function.py"),
        Known("jvp", "no_state_leak", cause="state-leak", link=f"{_SRC}/base.py",
              reason="on CUDA, where jvp runs through the nodes' CUDA kernels, the node stores the membrane it "
                     "computed inside torch.func.jvp: node._memories['v'] is a functorch-wrapped tensor after jvp "
                     "returns",
              reproducer="reproducers/spikingjelly/node_cuda_jvp_leaves_wrapped_v.py", **_CUDA_211),
        Known("deepcopy_used", cause="deepcopy-non-leaf", link=f"{_SRC}/base.py",
              reason="forward+backward leaves the membrane v of the last step (a non-leaf tensor) in "
                     "MemoryModule._memories; copy.deepcopy refuses non-leaf tensors",
              reproducer="reproducers/spikingjelly/node_deepcopy_after_backward.py"),
        Known("vmap", "no_state_leak", cause="state-leak", link=f"{_SRC}/base.py",
              reason="the node keeps the membrane of its last step in MemoryModule._memories['v'] until reset(): "
                     "called under torch.func.vmap it keeps the ended vmap's BatchedTensor there (copy.deepcopy "
                     "then raises)",
              reproducer="reproducers/spikingjelly/node_vmap_leaves_batched_v.py"),
        Known("state_dict", "continues_mid_sequence", cause="copy-lost-state", link=f"{_SRC}/base.py",
              reason="the node holds v between calls in MemoryModule._memories (register_memory), which state_dict "
                     "does not save: a state_dict taken in the middle of a sequence restarts the rest of it from "
                     "rest in the node it is loaded into",
              reproducer="reproducers/spikingjelly/node_state_dict_drops_v.py"),
        Known("grad", cause="autograd-function-without-setup_context", reason=_NO_SETUP_CONTEXT, link=_OPS,
              reproducer="reproducers/spikingjelly/node_func_grad_old_style_function.py"),
        Known("jit_script", cause="jit-unsupported", reason=_JIT_NODE, link=f"{_SRC}/base.py",
              reproducer="reproducers/spikingjelly/node_jit_script_varargs_forward.py"),
    ]
    known += [
        Known("jit_trace", "preserves_forward", cause="state-lost-between-calls", reason=_TRACE_FORGETS_V,
              link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/node_jit_trace_forgets_v.py"),
        Known("export", "preserves_forward", cause="state-lost-between-calls", reason=_TRACE_FORGETS_V,
              link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/node_export_forgets_v.py"),
    ]
    if learnable:
        known += [
            Known("checkpoint", "preserves_grad", cause="backward-raised", reason=_CHECKPOINT_STEPS, device="cpu",
                  link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/plif_checkpoint_steps_raises.py"),
            Known("checkpoint", "preserves_grad", cause="transform-changed-grad", reason=_CHECKPOINT_STEPS,
                  device="cuda", link=f"{_SRC}/neuron.py",
                  reproducer="reproducers/spikingjelly/plif_cuda_checkpoint_steps_gradient.py"),
            Known("per_sample_grad", cause="autograd-function-without-setup_context", reason=_NO_SETUP_CONTEXT,
                  link=_OPS, reproducer="reproducers/spikingjelly/plif_per_sample_grad_old_style_function.py"),
            Known("opacus_*", cause="autograd-function-without-setup_context", reason=_NO_SETUP_CONTEXT, link=_OPS,
                  reproducer="reproducers/spikingjelly/plif_opacus_old_style_function.py"),
        ]
    else:
        known += [
            Known("checkpoint", "preserves_grad", cause="transform-changed-grad", reason=_CHECKPOINT_STEPS,
                  link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/node_checkpoint_steps_gradient.py"),
        ]
    return tuple(known)


def _known_surrogate() -> tuple[Known, ...]:
    link = f"{_SRC}/surrogate.py"
    return (
        Known("vmap", cause="autograd-function-no-vmap-rule", link=link,
              reason="the surrogate autograd.Functions (sigmoid, atan, piecewise_quadratic) define setup_context but "
                     "neither generate_vmap_rule nor a vmap staticmethod",
              reproducer="reproducers/spikingjelly/surrogate_vmap_no_rule.py"),
        Known("jvp", cause="jvp-unsupported", link=link,
              reason="the surrogate autograd.Functions define no jvp, so forward-mode AD raises",
              reproducer="reproducers/spikingjelly/surrogate_jvp_unsupported.py"),
        Known("jit_script", cause="jit-unsupported", link=link,
              reason="SurrogateFunctionBase.forward calls spiking_function(x, **self._sg_params): TorchScript has no "
                     "keyword-argument expansion",
              reproducer="reproducers/spikingjelly/surrogate_jit_script_kwargs_expansion.py"),
    )


def _run_network(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    from spikingjelly.activation_based import functional

    functional.reset_net(net)
    return torch.stack([net(x_t) for x_t in x])


def build_network(node_type: str, **kwargs):
    """layer.Linear(4, 3) + a single-step node (v_threshold 1, v_reset 0)."""
    def build(example: Example) -> nn.Module:
        from spikingjelly.activation_based import layer, neuron

        linear = network_linear(example)
        sj_linear = layer.Linear(linear.in_features, linear.out_features)
        sj_linear.load_state_dict(linear.state_dict())
        node = getattr(neuron, node_type)(v_threshold=1.0, v_reset=0.0, step_mode="s", **kwargs)
        return Network(nn.Sequential(sj_linear, node), _run_network)

    return build


def build_conv_network(example: Example) -> nn.Module:
    """layer.Conv2d(1, 2, 3, padding=1) + a single-step IFNode (v_threshold 1, v_reset 0)."""
    from spikingjelly.activation_based import layer, neuron

    conv = network_conv(example)
    sj_conv = layer.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, padding=conv.padding)
    sj_conv.load_state_dict(conv.state_dict())
    return Network(nn.Sequential(sj_conv, neuron.IFNode(v_threshold=1.0, v_reset=0.0, step_mode="s")),
                   _run_network)


#: BaseNode's default argument, evaluated once: every node built without its own surrogate shares one
_SHARED_SURROGATE = Known(
    transform="module_contract", check="independent_builds", cause="module-shared-between-builds",
    link=f"{_SRC}/neuron.py", reproducer="reproducers/spikingjelly/default_surrogate_shared.py",
    reason="the nodes declare surrogate_function=surrogate.Sigmoid() as a default argument, evaluated once: every "
           "node built without its own surrogate holds that one module, so setting one node's surrogate alpha (or a "
           "hook on it) changes every such node")


#: the half column's gradient cell of the Sigmoid surrogate: its documented formula loses the tail in float16
_SIGMOID_FLOAT16 = {
    "half:grad_matches_spec":
        "spikingjelly documents the Sigmoid surrogate's gradient as alpha * (1 - sigmoid(alpha x)) * sigmoid(alpha x) "
        f"(the docstring of sigmoid_backward, {_SRC}/surrogate.py), as torch's own sigmoid backward computes it: "
        "in float16 sigmoid(alpha x) rounds to 1 once alpha x > 8.3, so the gradient is 0 where the spec's is below "
        "alpha * 2^-11 (3.7e-4 at alpha 3, x 3), one float16 unit of the gradient's peak alpha / 4, which the half "
        "tolerance, relative to the largest expected value of a one-element example, does not allow"}


def subjects() -> Iterator[Subject]:
    # a small network for the exchange columns (NIR): model.snn_network
    network = exchange_network(LIBRARY.name, REQUIRES)
    yield Subject(id="spikingjelly.LinearLIFNode", spec="model.snn_network",
                  build=build_network("LIFNode", tau=2.0, decay_input=True), **network)
    yield Subject(id="spikingjelly.LinearIFNode", spec="model.snn_network", build=build_network("IFNode"),
                  **network)
    yield Subject(id="spikingjelly.LinearParametricLIFNode", spec="model.snn_network",
                  build=build_network("ParametricLIFNode", init_tau=2.0, decay_input=True), **network)
    yield Subject(id="spikingjelly.ConvIFNode", spec="model.snn_conv_network", build=build_conv_network, **network)
    common = dict(library=LIBRARY.name, requires=REQUIRES)
    for step_mode in ("s", "m"):
        # single-step nodes are stepped over time by the adapter (called T times per forward): bdpy pairs by position
        bdpy = bdpy_stepped(tuple_output=False) if step_mode == "s" else ()
        # every node keeps v between calls until reset(): fed one step per call (a chunk of one step in "m")
        node = dict(fixed={"min_steps": 3}, **common)
        yield Subject(id=f"spikingjelly.IFNode[{step_mode}]", spec="neuron.sj_if", build=_if_builder(step_mode),
                      protocol=CallProtocol(_if_builder(step_mode, persist=True)),
                      known=_known_node(learnable=False) + bdpy, **node)
        yield Subject(id=f"spikingjelly.LIFNode[{step_mode}]", spec="neuron.sj_lif", build=_lif_builder(step_mode),
                      protocol=CallProtocol(_lif_builder(step_mode, persist=True)),
                      known=_known_node(learnable=False) + bdpy, **node)
        yield Subject(id=f"spikingjelly.ParametricLIFNode[{step_mode}]", spec="neuron.sj_plif",
                      build=_plif_builder(step_mode), param_map={"w": "node.w"},
                      protocol=CallProtocol(_plif_builder(step_mode, persist=True)),
                      known=_known_node(learnable=True) + bdpy, **node)
    # the nodes as constructed by default (tau 2, threshold 1, reset to 0, Sigmoid(alpha=4), single-step): the
    # spec's hyperparameters fixed at those defaults
    defaults = dict(v_threshold=1.0, v_reset=0.0, detach_reset=False, surrogate="sigmoid", surrogate_alpha=4.0,
                    min_steps=3)
    stepped = bdpy_stepped(tuple_output=False)
    for name, spec, make, fixed in (("IFNode", "neuron.sj_if", "IFNode", defaults),
                                    ("LIFNode", "neuron.sj_lif", "LIFNode", dict(defaults, tau=2.0, decay_input=True))):
        yield Subject(id=f"spikingjelly.{name}[default]", spec=spec, build=_default_builder(make),
                      protocol=CallProtocol(_default_builder(make, persist=True)), fixed=fixed,
                      known=_known_node(learnable=False) + (_SHARED_SURROGATE,) + stepped, **common)
    for spec_name, class_name in (("sigmoid", "Sigmoid"), ("atan", "ATan"),
                                  ("piecewise_quadratic", "PiecewiseQuadratic")):
        # spikingjelly's heaviside fires at x >= 0
        yield Subject(id=f"spikingjelly.surrogate.{class_name}", spec=f"surrogate.{spec_name}",
                      build=_surrogate_builder(class_name), fixed={"strict": False},
                      not_applicable=_SIGMOID_FLOAT16 if class_name == "Sigmoid" else {},
                      known=_known_surrogate(), **common)
