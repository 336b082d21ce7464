"""Declarations of the specs: for each function of ``qsnn_reference/``, its hyperparameters, the domain its examples are
drawn from, its decision margins and shape rules (:class:`~conformance.core.types.Spec`)."""

from __future__ import annotations

from . import affine, blockwise, fp8, halfquadratic, models, neuron, quant

#: Every spec, quantizers and layers first, then surrogates and neurons, then whole models.
SPECS = (*quant.SPECS, *affine.SPECS, *halfquadratic.SPECS, *blockwise.SPECS, *fp8.SPECS, *neuron.SPECS, *models.SPECS)
