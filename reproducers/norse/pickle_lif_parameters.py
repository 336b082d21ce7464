"""Pickling a norse LIFCell (or LIF) fails: its LIFParameters class cannot be found by name.

``LIFParameters`` is made by ``pytree.MultipleInheritanceNamedTupleMeta``, which creates the class with
``__module__ == "norse.torch.utils.pytree"`` under a name that module does not define, so pickle's lookup by
qualified name fails. Correct: ``pickle.loads(pickle.dumps(cell))`` gives a working copy, as for any nn.Module.
https://github.com/norse/norse/blob/main/norse/torch/utils/pytree.py
"""
import pickle

import torch
from norse.torch import LIFCell, LIFParameters

t = lambda v: torch.tensor(float(v))  # noqa: E731
cell = LIFCell(LIFParameters(tau_syn_inv=t(100), tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0),
                             method="super", alpha=t(1.0)), dt=0.001)

# expect: Can't pickle <class 'norse.torch.utils.pytree.LIFParameters'>
copy = pickle.loads(pickle.dumps(cell))
