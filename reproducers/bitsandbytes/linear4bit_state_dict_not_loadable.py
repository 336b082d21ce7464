"""A Linear4bit's state_dict does not load into another Linear4bit built the same way: load_state_dict (strict)
raises on the quantization state it saved itself (weight.absmax, weight.quant_map, weight.quant_state...).

The correct behaviour: m2.load_state_dict(m1.state_dict()) makes m2 compute what m1 computes (Linear8bitLt's
_load_from_state_dict takes its own SCB back; Linear4bit has none for its quant_state).
https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1946
"""
import torch
import bitsandbytes as bnb


def built():
    layer = bnb.nn.Linear4bit(64, 3, quant_type="nf4")
    layer.load_state_dict(torch.nn.Linear(64, 3).state_dict())
    return layer.to("cpu")


torch.manual_seed(0)
source, target = built(), built()
target.load_state_dict(source.state_dict())  # raises RuntimeError
# expect: RuntimeError: Error(s) in loading state_dict for Linear4bit:
