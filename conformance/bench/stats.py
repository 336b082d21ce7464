"""The gate's statistics: an exact one-sided Mann-Whitney test, Holm's step-down correction, and the noise model of a
case (spread between rounds, between sessions and between machines) that sets its margin and decides whether a
slowdown of the size the gate promises to catch is detectable in it.

All ratios are handled as natural logarithms: a slowdown by a factor multiplies a ratio, so it adds a constant.

>>> mann_whitney_greater([3.0, 4.0, 5.0], [0.0, 1.0, 2.0])   # complete separation: 1 arrangement in C(6, 3) = 20
(9, 0.05)
>>> sorted(holm({"a": 0.001, "b": 0.03, "c": 0.04}, alpha=0.05))   # 0.03 > 0.05 / 2 stops it
['a']
"""

from __future__ import annotations

import bisect
import math
import random
import statistics
from functools import lru_cache
from typing import Mapping, Sequence


# --------------------------------------------------------------------------------------------- Mann-Whitney U
@lru_cache(maxsize=256)
def _u_tail(n: int, m: int) -> tuple[float, ...]:
    """``tail[u] = P(U >= u)`` for u = 0 .. n*m + 1 when two samples of sizes n and m come from one continuous
    distribution. The number of arrangements with U = u is the coefficient of q**u in the Gaussian binomial
    coefficient [n+m choose n]_q = prod_{i=1..n} (1 - q**(m+i)) / (1 - q**i), computed exactly in integers."""
    size = n * m + 1
    coefficients = [1] + [0] * (size - 1)
    for i in range(1, n + 1):
        for k in range(size - 1, m + i - 1, -1):  # multiply by (1 - q^(m+i))
            coefficients[k] -= coefficients[k - m - i]
        for k in range(i, size):  # divide by (1 - q^i): a running sum with stride i
            coefficients[k] += coefficients[k - i]
    total = math.comb(n + m, n)
    tail = [0.0] * (size + 1)
    running = 0
    for u in range(size - 1, -1, -1):
        running += coefficients[u]
        tail[u] = running / total
    return tuple(tail)


def mann_whitney_greater(x: Sequence[float], y: Sequence[float]) -> tuple[int, float]:
    """The one-sided exact Mann-Whitney test of "x tends to be larger than y": U = the number of pairs (x_i, y_j)
    with x_i > y_j, and its p-value P(U' >= U) over all equally likely arrangements. A tie counts against x, so
    ties make the test conservative, never the reverse."""
    if not x or not y:
        raise ValueError("both samples must be non-empty")
    ordered = sorted(y)
    u = 0
    for value in x:
        lo, hi = 0, len(ordered)
        while lo < hi:  # number of y strictly below value
            mid = (lo + hi) // 2
            if ordered[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        u += lo
    return u, _u_tail(len(x), len(y))[u]


def can_still_reject(u: int, seen: tuple[int, int], final: tuple[int, int], level: float) -> bool:
    """Whether the test of the final sizes ``final`` = (n, m) can still end with p <= ``level`` when U counts ``u``
    on the ``seen`` = (n', m') samples measured so far. Every pair with a sample still to come can count (the tree's
    later samples above everything, the baseline's below everything), so U ends at most at u + n*m - n'*m', and that
    is reached: the answer is exact, not a bound. False is a sound futility rule: no rounds to come can reject."""
    (n_seen, m_seen), (n, m) = seen, final
    if not (0 <= n_seen <= n and 0 <= m_seen <= m and 0 <= u <= n_seen * m_seen):
        raise ValueError(f"U = {u} on {n_seen} x {m_seen} samples of {n} x {m} is impossible")
    return _u_tail(n, m)[u + n * m - n_seen * m_seen] <= level


def smallest_p(n: int, m: int) -> float:
    """The smallest p-value the test can give for samples of sizes n and m (complete separation)."""
    return 1.0 / math.comb(n + m, n)


# ------------------------------------------------------------------------------------------------------- Holm
def holm(pvalues: Mapping[str, float], *, alpha: float) -> set[str]:
    """Holm's step-down procedure: the hypotheses rejected with a family-wise error rate of at most ``alpha``
    (whatever the dependence between the tests). The k-th smallest of m p-values is compared with
    alpha / (m - k + 1); the first that is not small enough stops the procedure."""
    ranked = sorted(pvalues.items(), key=lambda kv: (kv[1], kv[0]))
    rejected = set()
    for k, (name, p) in enumerate(ranked):
        if p > alpha / (len(ranked) - k):
            break
        rejected.add(name)
    return rejected


# ------------------------------------------------------------------------------------------------ noise model
def robust_sd(values: Sequence[float]) -> float:
    """1.4826 times the median absolute deviation from the median: the standard deviation for normal data, not
    moved by a few outlying rounds."""
    if not values:
        return 0.0
    middle = statistics.median(values)
    return 1.4826 * statistics.median(abs(v - middle) for v in values)


def detection_power(*, reference: Sequence[float], residuals: Sequence[float], session_sd: float, level: float,
                    margin: float, rounds: int, threshold_p: float, effect: float, trials: int, seed: int) -> float:
    """The share of simulated gate runs in which a case slowed by ``effect`` (a log ratio) gives a p-value of at
    most ``threshold_p``: ``rounds`` samples, each ``level + effect + session shift + a resampled within-session
    residual`` (the shift drawn once per run from N(0, session_sd)), shifted down by ``margin`` and ranked against
    ``reference`` (the baseline's samples). Deterministic for its arguments, so remembered (judging many sessions
    against one baseline asks the same questions)."""
    return _detection_power(tuple(reference), tuple(residuals), session_sd, level, margin, rounds, threshold_p, effect,
                            trials, seed)


@lru_cache(maxsize=4096)
def _detection_power(reference: tuple[float, ...], residuals: tuple[float, ...], session_sd: float, level: float,
                     margin: float, rounds: int, threshold_p: float, effect: float, trials: int, seed: int) -> float:
    rng = random.Random(seed)
    ordered = sorted(reference)
    tail = _u_tail(rounds, len(ordered))
    hits = 0
    for _ in range(trials):
        shift = rng.gauss(0.0, session_sd) if session_sd > 0 else 0.0
        u = sum(bisect.bisect_left(ordered, level + effect + shift + rng.choice(residuals) - margin)
                for _ in range(rounds))
        hits += tail[u] <= threshold_p
    return hits / trials
