"""The module as built, called directly: the cells that judge a subject against its spec."""

from __future__ import annotations

from .harness import Context, Transform, TransformRun, build, eager

#: where these transforms stand in the table (and the report's columns)
ORDER = 0


def eager_transform(ctx: Context) -> TransformRun:
    """The module as built, called directly; run twice to check determinism."""
    module = build(ctx)
    first = eager(ctx, module)
    second = eager(ctx, module)
    first.findings.second_call = second.y
    return first


TRANSFORMS = (
    Transform("eager", eager_transform, ("forward_matches_spec", "grad_matches_spec", "output_dtype", "deterministic"),
              dtypes=("float32", "float64", "bfloat16")),
)
