"""torch.compile(dynamic=True) of a snntorch neuron with its default atan surrogate crashes inside dynamo.

With dynamic shapes, dynamo speculates the backward of the ATan autograd.Function (snntorch.surrogate.ATan, whose
backward computes `(torch.pi / 2 * ctx.alpha * input_).pow_(2)`) while tracing the neuron's reset signal
(`mem_reset`), and crashes (with or without fullgraph) with `AssertionError: lift_tracked_freevar_to_input should
not be called on root SubgraphTracer`; the message runs over many lines and ends with dynamo's hint about
TORCHDYNAMO_VERBOSE, which is what the expect line matches. The same loop compiles with fast_sigmoid, sigmoid or
straight_through_estimator, and with static shapes. The correct behaviour: the compiled neuron runs and returns
what the eager one returns. https://github.com/jeshraghian/snntorch/blob/v0.9.4/snntorch/surrogate.py#L194
"""
import torch
import snntorch

torch.manual_seed(0)
lif = snntorch.Leaky(beta=0.9, threshold=1.0)  # spike_grad=None: snntorch's default, surrogate.atan()


def run(x):  # the neuron stepped over x's time axis, from a zero membrane
    mem = torch.zeros_like(x[0])
    spikes = []
    for step in range(x.shape[0]):
        spk, mem = lif(x[step], mem)
        spikes.append(spk)
    return torch.stack(spikes)


x = (torch.randn(3, 2, 4) * 2).requires_grad_()  # (T, B, N)
compiled = torch.compile(run, backend="aot_eager", dynamic=True)  # fullgraph=True crashes the same way
y = compiled(x)
assert torch.equal(y, run(x)), "compiled spikes differ from eager"
# expect: Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace
