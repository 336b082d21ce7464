"""Speed and memory of every subject as a ratio to its spec, gated against a checked-in baseline.

    python -m conformance.bench run --profile quick            # measure, write reports/bench/latest-cpu.json
    python -m conformance.bench gate --profile quick           # measure, compare with reports/bench/baseline-cpu.json
    python -m conformance.bench accept --results a.json b.json # the median of runs becomes the baseline

The figure of merit is a ratio measured in one process, subject and reference interleaved: ``subject / spec``
(the library layer against the pure-PyTorch spec on the same input and parameters) and, in the full profile,
``compiled / eager`` for a few specs. Absolute times are recorded for reading, never gated: they say more about
the machine than about the code. ``cases`` declares what is timed, ``timing`` measures, ``gate`` judges.
"""
