"""Transforms of a used module: the module a user transforms has usually run already (a training step, an
evaluation), and what it keeps from that run (a neuron's membrane, a cached shape, a compiled path) must not change
what the transform gives. Each ``<transform>_used`` runs ``<transform>`` with every module built for it used once
first (a forward and a backward on the example, ``after_use``), its eager reference used the same way, so the
comparison is with the used module's own next call. For the subjects whose state persists between calls (a call
protocol): a stateless module is a fresh one after use.
"""

from __future__ import annotations

import dataclasses
import fnmatch

from . import compile as compile_transforms
from . import contract, functional, hooks, jit_export
from .harness import Context, Transform, TransformRun

#: where these columns stand in the table: after the transforms they repeat
ORDER = 55

#: the transforms that hand the user a module to go on calling, whose result should not depend on earlier calls
#: (jit_trace and export record the state they see as constants by design; the copies have their own *_used)
USED_OF = ("module_contract", "functional_call", "compile_aot_eager", "jit_script", "forward_hooks", "checkpoint")


def _stateful(subject, spec) -> str | None:
    if subject.protocol is None:
        return f"{subject.id} keeps no state between calls (it declares no call protocol): used, it is a fresh module"
    return None


def _used(base: Transform) -> Transform:
    def transform(ctx: Context) -> TransformRun:
        return base.fn(dataclasses.replace(ctx, used=True))  # shares ctx.watched: the runner reads it on failure

    transform.__name__ = f"{base.id}_used"
    transform.__doc__ = (f"{base.id} of a module that has run once (a forward and a backward), against the eager "
                         f"module used the same way: what the run left must not change what {base.id} gives.")

    def applies(subject, spec) -> str | None:
        return _stateful(subject, spec) or (base.applies(subject, spec) if base.applies else None)

    # the base's stages keep its causes (its own stage is named after it, not after this transform)
    causes = {base.id: base.failure_cause, **base.stage_causes}
    return dataclasses.replace(base, id=f"{base.id}_used", fn=transform, applies=applies, stage_causes=causes,
                               known=_inherited(base))


def _inherited(base: Transform):
    """The base transform's known failures on a subject, for the used cells: a finding of ``base`` on a fresh module
    (its reproducer shows it there) is expected on a used one too, and reported as an unexpected pass if it is not."""
    used_id = f"{base.id}_used"

    def known(subject, spec) -> tuple:
        if _stateful(subject, spec):
            return ()
        entries = tuple(k for k in subject.known if fnmatch.fnmatchcase(base.id, k.transform))
        entries += base.known(subject, spec) if base.known else ()
        return tuple(dataclasses.replace(k, transform=used_id) for k in entries
                     if not fnmatch.fnmatchcase(used_id, k.transform))

    return known


_BASES = {t.id: t for module in (contract, functional, compile_transforms, jit_export, hooks)
          for t in module.TRANSFORMS}
TRANSFORMS = tuple(_used(_BASES[name]) for name in USED_OF)
