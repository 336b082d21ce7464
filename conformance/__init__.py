"""The conformance suite for quantized ops and spiking neurons: see README.md and CONTRIBUTING.md."""

from pathlib import Path

#: The directory this package was loaded from sits in: a checkout (its git sha names the suite version in every
#: record, its reports/expected/ holds the checked-in expectations) or site-packages (neither).
SUITE_ROOT = Path(__file__).resolve().parent.parent
