"""Re-run one cell alone and show what it found: ``python -m conformance.cell 'subject|transform|check|device|dtype'``.

This is the reproduce command printed in every record. With ``--trace`` the full traceback of the finding is shown.
"""

from __future__ import annotations

import argparse
import json
import sys

from .plugin import configure_process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.cell", description=__doc__)
    parser.add_argument("cell", help="cell id: subject|transform|check|device|dtype")
    parser.add_argument("--profile", choices=["ci", "dev", "thorough"], default=None)
    args = parser.parse_args(argv)
    configure_process()
    from . import registry
    from .runner import run_cell

    try:
        cell = registry.parse_cell_id(args.cell)
    except ValueError as error:
        parser.error(str(error))
    if cell.subject not in registry.subjects():
        parser.error(f"unknown subject {cell.subject!r}")
    if cell.transform not in registry.transforms():
        parser.error(f"unknown transform {cell.transform!r}")
    result = run_cell(cell, profile=args.profile)
    print(json.dumps({k: v for k, v in vars(result).items() if k != "message"}, indent=2, default=str))
    print(result.message)
    return 0 if result.outcome in ("pass", "xfail", "skip") else 1


if __name__ == "__main__":
    sys.exit(main())
