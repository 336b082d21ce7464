"""snntorch's RLeaky with reset_mechanism="zero" is exported to NIR as a recurrent LIF that means something else: in
the step after a spike the layer sets its membrane to 0, dropping that step's input.

With the default reset_delay=True, RLeaky's zero reset subtracts the whole new membrane (`base - reset * base`), so
the step after a spike ends at v = 0 whatever the input; Leaky's zero reset only clears the old membrane and adds
the step's input. The exported graph (nir.LIF with tau = dt/(1 - beta), r = tau/dt, v_reset = 0, and the recurrent
nir.Affine on its spikes) resets at the spike and integrates the next step's input, as NIR declares. One neuron
without recurrent weight, beta 0.8, threshold 1, inputs 2 then 1.5: the layer spikes once, the graph twice.
Correct: the export keeps the layer's meaning (or the layer resets as Leaky and its graph do).
https://github.com/jeshraghian/snntorch/blob/master/snntorch/_neurons/rleaky.py
"""
# expect: AssertionError: the layer spikes
import torch
import snntorch as snn
from snntorch.export_nir import export_to_nir

layer = snn.RLeaky(beta=torch.full((1,), 0.8), threshold=torch.ones(1), linear_features=1, init_hidden=True,
                   reset_mechanism="zero")
linear = torch.nn.Linear(1, 1)
with torch.no_grad():
    linear.weight.fill_(1.0)
    linear.bias.zero_()
    layer.recurrent.weight.zero_()
    layer.recurrent.bias.zero_()
net = torch.nn.Sequential(linear, layer)
inputs = [2.0, 1.5]
layer_spikes = [float(net(torch.tensor([[x]]))[0, 0]) for x in inputs]

graph = export_to_nir(net, torch.zeros(1, 1), ignore_dims=[0])
lif = next(n for n in graph.nodes.values() if type(n).__name__ == "LIF")
p = {k: float(torch.as_tensor(getattr(lif, k)).flatten()[0]) for k in ("tau", "r", "v_threshold", "v_reset")}
dt, v, graph_spikes = 1e-4, 0.0, []
for x in inputs:  # NIR's LIF, forward Euler at the exporter's dt (the recurrent weight is 0)
    v = v + dt / p["tau"] * (-v + p["r"] * x)
    spike = v > p["v_threshold"]
    v = p["v_reset"] if spike else v
    graph_spikes.append(float(spike))
assert layer_spikes == graph_spikes, f"the layer spikes {layer_spikes}, its exported graph {graph_spikes}"
