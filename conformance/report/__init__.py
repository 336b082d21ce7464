"""The report: reads recorded cells (never re-derives an outcome) and renders the matrix.

``data`` loads and merges records and builds the model, ``html``/``markdown`` render it (``summary.md`` for a pull
request, ``matrix.md`` in full), ``libdocs`` writes one page per library, ``cli`` is ``python -m conformance.report``,
``site`` publishes rendered reports as a static site (``python -m conformance.report site``).
"""
