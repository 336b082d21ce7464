"""Pickling a norse LIFBoxCell fails: its LIFBoxParameters class cannot be found by name.

``LIFBoxParameters`` is made by ``pytree.MultipleInheritanceNamedTupleMeta``, which creates the class with
``__module__ == "norse.torch.utils.pytree"`` under a name that module does not define, so pickle's lookup by
qualified name fails. Correct: ``pickle.loads(pickle.dumps(cell))`` gives a working copy, as for any nn.Module.
https://github.com/norse/norse/blob/main/norse/torch/utils/pytree.py
"""
import pickle

import torch
from norse.torch import LIFBoxCell
from norse.torch.functional.lif_box import LIFBoxParameters
from norse.torch.functional.reset import reset_value

t = lambda v: torch.tensor(float(v))  # noqa: E731
cell = LIFBoxCell(LIFBoxParameters(tau_mem_inv=t(50), v_leak=t(0), v_th=t(0.3), v_reset=t(0), method="super",
                                   alpha=t(1.0), reset_method=reset_value), dt=0.001)

# expect: Can't pickle <class 'norse.torch.utils.pytree.LIFBoxParameters'>
copy = pickle.loads(pickle.dumps(cell))
