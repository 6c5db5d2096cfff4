"""Rank correlations over independent items, and the size of a top-k set.

:func:`spearman_test`: Spearman ρ between two orderings of ``n`` items that are independent draws
(the semantic-change benchmark's target words, whose truth is planted independently of every
method): its p-value from the t approximation with ``n − 2`` degrees of freedom, its interval
from Fisher's z with the variance ``1.06 / (n − 3)`` of Fieller, Hartley and Pearson (1957). The
unit is the item and ``n`` says how many.

Not for the words of one corpus ranked by their change: a period with a few more papers on one
topic moves hundreds of words together, so words are not independent draws, and this test with
the word as the unit said ``better`` for forecasters of a corpus whose dates were permuted. The
trend test resamples documents instead (:mod:`pipeline.forecast.claims`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from pipeline.stats.comparisons import LEVEL

SPEARMAN_TEST = "Spearman ρ over words (t reference; Fisher-z interval)"
FIELLER = 1.06


def spearman_test(predicted: np.ndarray, observed: np.ndarray,
                  level: float = LEVEL) -> tuple[float, tuple[float, float], float, float]:
    """``(ρ, ci, p, se)``: Spearman ρ of the two orderings (NaN p with fewer than 4 words or a
    constant side). ``se`` is the Fisher-z standard error."""
    x, y = np.asarray(predicted, dtype=np.float64), np.asarray(observed, dtype=np.float64)
    n = len(x)
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, (math.nan, math.nan), math.nan, math.nan
    rho = float(sps.spearmanr(x, y)[0])
    r = min(max(rho, -1 + 1e-12), 1 - 1e-12)
    t = r * math.sqrt((n - 2) / (1 - r * r))
    p = float(2 * sps.t.sf(abs(t), n - 2))
    se = math.sqrt(FIELLER / (n - 3)) if n > 3 else math.nan
    return rho, fisher_interval(r, se, level), p, se


def fisher_interval(rho: float, se: float, level: float = LEVEL) -> tuple[float, float]:
    """The ``level`` interval of a correlation ``rho`` whose Fisher z has standard error ``se``."""
    r = min(max(rho, -1 + 1e-12), 1 - 1e-12)
    z, q = math.atanh(r), float(sps.norm.ppf(0.5 + level / 2))
    return math.tanh(z - q * se), math.tanh(z + q * se)


def top_k(n: int, share: float = 0.01, minimum: int = 10) -> int:
    """The ``k`` of a top-k statistic over ``n`` words: ``share`` of them, at least ``minimum``, at
    most half (a k near n cannot discriminate: every forecaster gets the same set)."""
    return int(max(1, min(n // 2, max(minimum, round(share * n)))))
