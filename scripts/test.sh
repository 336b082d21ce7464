#!/usr/bin/env bash
# The test command (./run test): the whole suite in parallel, then the matrix against the expectations.
set -euo pipefail
export CONFORMANCE_PROFILE="${CONFORMANCE_PROFILE:-ci}"
results="reports/results/test-$(date +%Y%m%dT%H%M%S)"
status=0
python -m pytest suites -n auto --dist loadgroup --results-dir "$results" --durations=10 "$@" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
python -m conformance.expectations check --results "$results" || status=1
exit "$status"
