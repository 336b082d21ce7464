"""reference.nir (what a NIR graph declares) and the NIR exchange's plumbing; the columns themselves are judged in the
matrix (the networks' cells) and by the mutants (suites/mutants.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qsnn_reference.nir import UnsupportedGraph, simulate

nir = pytest.importorskip("nir")


def _lif_graph(tau, r, v_leak, v_threshold, v_reset, weight, bias):
    return nir.NIRGraph.from_list(nir.Affine(weight=weight.numpy(), bias=bias.numpy()),
                                  nir.LIF(tau=tau.numpy(), r=r.numpy(), v_leak=v_leak.numpy(),
                                          v_threshold=v_threshold.numpy(), v_reset=v_reset.numpy()))


def test_a_lif_graph_means_forward_euler_of_its_equation():
    torch.manual_seed(0)
    weight, bias = torch.randn(3, 4, dtype=torch.float64), torch.rand(3, dtype=torch.float64)
    tau, r = torch.tensor([2e-3, 5e-3, 1e-2], dtype=torch.float64), torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    v_leak, v_th, v_reset = torch.full((3,), 0.1, dtype=torch.float64), torch.ones(3, dtype=torch.float64), \
        torch.full((3,), -0.2, dtype=torch.float64)
    x, dt = 2 * torch.rand(12, 2, 4, dtype=torch.float64), 1e-3
    got = simulate(_lif_graph(tau, r, v_leak, v_th, v_reset, weight, bias), x, dt)
    v, expected = v_leak.expand(2, 3).clone(), []
    for x_t in x:  # written out independently of the module under test
        current = x_t @ weight.T + bias
        v = v + dt / tau * (v_leak - v + r * current)
        spike = v > v_th
        v = torch.where(spike, v_reset.expand_as(v), v)
        expected.append(spike.double())
    assert torch.equal(got, torch.stack(expected)) and 0 < got.sum() < got.numel()


def test_an_if_graph_integrates_r_dt_times_its_input():
    graph = nir.NIRGraph.from_list(nir.IF(r=torch.full((1,), 1e3).numpy(), v_threshold=torch.ones(1).numpy(),
                                          v_reset=torch.zeros(1).numpy()))
    x = torch.full((4, 1, 1), 0.4, dtype=torch.float64)  # v: 0.4, 0.8, 1.2 -> spike and reset, 0.4
    assert simulate(graph, x, 1e-3).flatten().tolist() == [0.0, 0.0, 1.0, 0.0]


def test_an_li_graph_returns_the_euler_membrane_of_its_equation():
    tau, r, v_leak = np.array([1e-2, 4e-3]), np.array([1.0, 3.0]), np.array([0.0, 0.5])
    graph = nir.NIRGraph.from_list(nir.LI(tau=tau, r=r, v_leak=v_leak))
    x, dt = torch.tensor([[[1.0, -2.0]], [[0.5, 0.25]], [[0.0, 1.0]]], dtype=torch.float64), 1e-3
    v, expected = torch.as_tensor(v_leak).clone(), []
    for x_t in x[:, 0]:  # from rest at v_leak, written out step by step
        v = v + dt / torch.as_tensor(tau) * (torch.as_tensor(v_leak) - v + torch.as_tensor(r) * x_t)
        expected.append(v.clone())
    assert torch.allclose(simulate(graph, x, dt)[:, 0], torch.stack(expected), rtol=1e-12, atol=0)


def test_a_cubalif_graph_steps_its_synapse_then_its_membrane():
    params = dict(tau_syn=np.array([2e-3]), tau_mem=np.array([5e-3]), r=np.array([2.0]), v_leak=np.array([0.1]),
                  v_threshold=np.array([0.3]), v_reset=np.array([-0.1]), w_in=np.array([3.0]))
    graph = nir.NIRGraph.from_list(nir.CubaLIF(**params))
    x, dt = torch.tensor([0.5, 1.0, 0.0, 0.0, 2.0], dtype=torch.float64).view(5, 1, 1), 1e-3
    p = {k: float(v[0]) for k, v in params.items()}
    i, v, expected = 0.0, p["v_leak"], []
    for x_t in x.flatten().tolist():  # written out step by step: the synapse first, the membrane with the new current
        i = i + dt / p["tau_syn"] * (-i + p["w_in"] * x_t)
        v = v + dt / p["tau_mem"] * (p["v_leak"] - v + p["r"] * i)
        expected.append(float(v > p["v_threshold"]))
        v = p["v_reset"] if v > p["v_threshold"] else v
    got = simulate(graph, x, dt).flatten().tolist()
    assert got == expected and 0 < sum(got) < len(got)


def test_a_recurrent_edge_delivers_the_previous_step_and_the_bias_before_the_first():
    w_rec, b_rec = np.array([[0.0, -2.0], [0.5, 0.0]]), np.array([0.5, -0.5])  # the bias decides the first step
    lif = dict(tau=np.full(2, 2e-3), r=np.ones(2), v_leak=np.zeros(2), v_threshold=np.full(2, 0.2),
               v_reset=np.zeros(2))
    nodes = {"input": nir.Input(input_type={"input": np.array([2])}), "lif": nir.LIF(**lif),
             "w_rec": nir.Affine(weight=w_rec, bias=b_rec), "output": nir.Output(output_type={"output": np.array([2])})}
    graph = nir.NIRGraph(nodes=nodes, edges=[("input", "lif"), ("lif", "w_rec"), ("w_rec", "lif"), ("lif", "output")])
    x, dt = torch.tensor([[0.2, 0.9], [1.0, 0.9], [0.0, 1.0], [0.3, 0.3]], dtype=torch.float64).view(4, 1, 2), 1e-3
    v, spikes, expected = torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64), []
    for x_t in x[:, 0]:  # written out: the recurrent Affine of the previous step's spikes (its bias at the first)
        current = x_t + torch.as_tensor(w_rec) @ spikes + torch.as_tensor(b_rec)
        v = v + dt / torch.as_tensor(lif["tau"]) * (-v + current)
        spikes = (v > 0.2).double()
        v = torch.where(spikes.bool(), torch.zeros_like(v), v)
        expected.append(spikes)
    got = simulate(graph, x, dt)[:, 0]
    assert torch.equal(got, torch.stack(expected)) and 0 < got.sum() < got.numel()


def test_a_conv2d_graph_is_the_cross_correlation_of_its_weight_and_round_trips_unchanged():
    from conformance.transforms.nir import through_file

    gen = torch.Generator().manual_seed(1)
    weight, bias = torch.randn(2, 1, 3, 3, generator=gen).numpy(), torch.randn(2, generator=gen).numpy()
    graph = nir.NIRGraph.from_list(nir.Conv2d(input_shape=(4, 4), weight=weight, stride=1, padding=1, dilation=1,
                                              groups=1, bias=bias))
    x = torch.randn(3, 2, 1, 4, 4, generator=gen, dtype=torch.float64)
    expected = torch.stack([torch.nn.functional.conv2d(x_t, torch.as_tensor(weight).double(),
                                                       torch.as_tensor(bias).double(), padding=1) for x_t in x])
    assert torch.allclose(simulate(graph, x, 1e-3), expected)
    # nir.read gives numpy scalars and arrays for the ints and tuples written: the same values, no change
    read, changes = through_file(graph)
    assert changes == [] and int(next(iter(n for n in read.nodes.values() if type(n).__name__ == "Conv2d")).groups) == 1


def test_a_node_without_reference_semantics_is_named():
    graph = nir.NIRGraph.from_list(nir.Threshold(threshold=torch.ones(2).numpy()))
    with pytest.raises(UnsupportedGraph, match="Threshold"):
        simulate(graph, torch.zeros(2, 1, 2, dtype=torch.float64), 1e-3)


def test_the_file_round_trip_names_what_changed():
    from conformance.transforms.nir import graph_differences, through_file

    graph = _lif_graph(*(torch.ones(3, dtype=torch.float64) for _ in range(5)), torch.eye(3, 4, dtype=torch.float64),
                       torch.zeros(3, dtype=torch.float64))
    read, changes = through_file(graph)
    assert changes == [] and set(read.nodes) == set(graph.nodes)
    ones = [torch.ones(3, dtype=torch.float64) for _ in range(4)]
    other = _lif_graph(*ones, torch.full((3,), 0.5, dtype=torch.float64), torch.eye(3, 4, dtype=torch.float64),
                       torch.zeros(3, dtype=torch.float64))
    assert [c.split(":")[0] for c in graph_differences(graph, other)] == [
        f"{name}.v_reset" for name, node in graph.nodes.items() if type(node).__name__ == "LIF"]


def test_exchange_columns_apply_only_to_subjects_that_declare_the_format():
    from conformance import registry

    cells = registry.cells(["reference.neuron.leaky", "spikingjelly.LinearLIFNode"], devices=["cpu"])
    reasons = {c.id: registry.not_applicable(c, registry.subjects()[c.subject], registry.specs()[
        registry.subjects()[c.subject].spec], registry.transforms()[c.transform]) for c in cells
        if c.transform.startswith("nir_")}
    assert all("declares no NIR export" in reasons[i] for i in reasons if i.startswith("reference."))
    assert reasons["spikingjelly.LinearLIFNode|nir_to:spikingjelly|preserves_forward|cpu|float32"] == \
        "spikingjelly to itself is nir_roundtrip"
    assert reasons["spikingjelly.LinearLIFNode|nir_to:norse|preserves_forward|cpu|float32"] is None
