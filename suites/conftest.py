"""Suite-wide set-up: the conformance plugin does the per-worker configuration and recording."""

pytest_plugins = ["conformance.plugin"]
