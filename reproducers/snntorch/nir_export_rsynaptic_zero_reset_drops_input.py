"""snntorch's RSynaptic with reset_mechanism="zero" is exported to NIR as a recurrent CubaLIF that means something else:
in the step after a spike the layer sets its membrane to 0, dropping that step's synaptic current.

With the default reset_delay=True, RSynaptic's zero reset (as Synaptic's) subtracts the whole new membrane
(`mem -= mem2 * reset`), so the step after a spike ends at v = 0 whatever the current; the exported nir.CubaLIF
(tau_syn = dt/(1 - alpha), tau_mem = dt/(1 - beta), r = tau_mem/dt, w_in = tau_syn/dt, v_reset = 0) resets at the
spike and integrates the next step's current, as NIR declares (https://neuroir.org/docs/primitives.html). One neuron without recurrent
weight, alpha 0.5, beta 0.8, threshold 1, inputs 2 then 0.5: the layer spikes once, the graph twice.
Correct: the export keeps the layer's meaning (or the layer resets as its graph says).
https://github.com/jeshraghian/snntorch/blob/master/snntorch/_neurons/rsynaptic.py
"""
# expect: AssertionError: the layer spikes
import torch
import snntorch as snn
from snntorch.export_nir import export_to_nir

layer = snn.RSynaptic(alpha=torch.full((1,), 0.5), beta=torch.full((1,), 0.8), threshold=torch.ones(1),
                      linear_features=1, init_hidden=True, reset_mechanism="zero")
linear = torch.nn.Linear(1, 1)
with torch.no_grad():
    linear.weight.fill_(1.0)
    linear.bias.zero_()
    layer.recurrent.weight.zero_()
    layer.recurrent.bias.zero_()
net = torch.nn.Sequential(linear, layer)
inputs = [2.0, 0.5]
layer_spikes = [float(net(torch.tensor([[x]]))[0, 0]) for x in inputs]

graph = export_to_nir(net, torch.zeros(1, 1), ignore_dims=[0])
node = next(n for n in graph.nodes.values() if type(n).__name__ == "CubaLIF")
p = {k: float(torch.as_tensor(getattr(node, k)).flatten()[0])
     for k in ("tau_syn", "tau_mem", "r", "w_in", "v_threshold", "v_reset")}
dt, i, v, graph_spikes = 1e-4, 0.0, 0.0, []
for x in inputs:  # NIR's CubaLIF, forward Euler at the exporter's dt (the synapse, then the membrane)
    i = i + dt / p["tau_syn"] * (-i + p["w_in"] * x)
    v = v + dt / p["tau_mem"] * (-v + p["r"] * i)
    spike = v > p["v_threshold"]
    v = p["v_reset"] if spike else v
    graph_spikes.append(float(spike))
assert layer_spikes == graph_spikes, f"the layer spikes {layer_spikes}, its exported CubaLIF {graph_spikes}"
