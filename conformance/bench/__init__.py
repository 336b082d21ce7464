"""Speed and memory of every subject as a ratio to its spec, gated against a checked-in baseline.

    python -m conformance.bench run --profile quick            # a session of rounds -> reports/bench/latest-cpu.json
    python -m conformance.bench gate --profile quick           # measure a session, judge it against the baseline
    python -m conformance.bench accept --results a.json b.json # pool sessions into the baseline (--add: keep its own)

The figure of merit is a ratio measured in one process, subject and reference interleaved: ``subject / spec``
(the library layer against the pure-PyTorch spec on the same input and parameters) and, in the full profile,
``compiled / eager`` for a few specs. Absolute times are recorded for reading, never gated: they say more about
the machine than about the code. ``cases`` declares what is timed, ``timing`` measures one process, ``rounds``
repeats it in fresh processes, ``stats`` and ``gate`` judge.
"""
