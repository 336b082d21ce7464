#!/usr/bin/env bash
# The test command (./run test): the whole suite in parallel, then the matrix against the expectations of this
# environment (reports/expected/<env>.json), which fail the run when any cell gets worse or better.
set -euo pipefail
export CONFORMANCE_PROFILE="${CONFORMANCE_PROFILE:-ci}"
results="reports/results/test-$(date +%Y%m%dT%H%M%S)"
status=0
python -m pytest suites -n auto --dist loadgroup --results-dir "$results" --durations=10 "$@" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
env_name=$(python -c "from conformance.records.expectations import environment_name; print(environment_name())")
if [ -f "reports/expected/$env_name.json" ]; then
  partial=""; [ "$#" -gt 0 ] && partial="--partial"
  if [ "$#" -gt 0 ] && ! compgen -G "$results/*.jsonl" > /dev/null; then
    echo "expectations: this partial run recorded no matrix cell; nothing to compare"
  else
    python -m conformance.expectations check $partial --results "$results" || status=1
  fi
else
  echo "expectations: none checked in for environment $env_name (strict known failures still apply);" \
       "record them with: python -m conformance.expectations accept --results $results"
fi
# The benchmark gate (quick profile, about 2 min on 2 idle cores): subject/spec speed ratios of the tree and of the
# code of the baseline commit (reports/bench/gate-commit.json), up to 16 fresh processes each (it stops once no case
# can be rejected any more), side by side on this machine;
# a rank test per case and Holm's correction over all of them; exits 1 on a regression (family-wise false-alarm
# rate 1%, docs/benchmarks.md).
# Only on a whole run (a partial one, ./run test -k ..., skips it), and never with CONFORMANCE_BENCH_GATE=0.
if [ "$#" -eq 0 ] && [ "${CONFORMANCE_BENCH_GATE:-1}" != "0" ]; then
  started=$(date +%s)
  gate_status=0
  python -m conformance.bench gate --profile quick || gate_status=$?
  if [ "$gate_status" -eq 3 ]; then
    echo "benchmark gate: no case could be judged on this machine (reasons above); not counted as a failure"
  elif [ "$gate_status" -ne 0 ]; then
    status=1
  fi
  echo "benchmark gate: $(( $(date +%s) - started )) s"
fi
exit "$status"
