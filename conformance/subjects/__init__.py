"""Subject declarations: one module per library (plus ``specs`` for the specs themselves).

Each module exposes ``subjects() -> Iterable[Subject]`` and imports its library lazily, inside ``build``.
"""
