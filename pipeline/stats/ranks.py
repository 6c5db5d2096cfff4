"""Tests of rankings over words: does a predicted ordering agree with an observed one?

The unit of a correlation over words is the **word**: ``n`` is the number of words it rests on.
Resampling documents with the predictions held fixed only adds the observed side's sampling
noise, and gave intervals centred at ~0.8 ρ̂ that covered the truth ~65 % of the time; so the
tests here treat the words as the sample (the null: the predicted order is independent of the
observed one, every pairing of the words equally likely):

* :func:`spearman_test`: Spearman ρ, its p-value from the t approximation with ``n − 2`` degrees
  of freedom, its interval from Fisher's z with the variance ``1.06 / (n − 3)`` of Fieller,
  Hartley and Pearson (1957);
* :func:`top_k_test`: of the ``k`` words predicted to rise most, how many are among the ``k``
  observed to rise most. Under the null the overlap is hypergeometric (``k`` draws from ``n``
  words of which ``k`` are "observed risers"), so the one-sided p-value is exact. A field's
  vocabulary moves a few words at a time: a correlation over thousands of flat words dilutes a
  handful of strong trends, the top of the ranking does not.

Both are only as valid as the exchangeability of the words under the null; the trend design
(:mod:`pipeline.forecast.claims`) makes the observed side a standardised change, so that rare
words are not over-represented among the observed extremes, and the calibration
(:mod:`pipeline.stats.calibration`) measures both tests' false-positive rate and power.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from pipeline.stats.comparisons import LEVEL

SPEARMAN_TEST = "Spearman ρ over words (t reference; Fisher-z interval)"
TOP_K_TEST = "top-k overlap over words (hypergeometric, one-sided)"
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
    z, q = math.atanh(r), float(sps.norm.ppf(0.5 + level / 2))
    return rho, (math.tanh(z - q * se), math.tanh(z + q * se)), p, se


def top_k(n: int, share: float = 0.01, minimum: int = 10) -> int:
    """The ``k`` of a top-k test over ``n`` words: ``share`` of them, at least ``minimum``, at most
    half (a k near n cannot discriminate: every forecaster gets the same overlap)."""
    return int(max(1, min(n // 2, max(minimum, round(share * n)))))


def top_k_test(predicted: np.ndarray, observed: np.ndarray, k: int
               ) -> tuple[float, float, float]:
    """``(precision, p, expected)``: the share of the ``k`` highest ``predicted`` among the ``k``
    highest ``observed``, the exact one-sided hypergeometric p-value of an overlap at least that
    large, and the precision expected by chance (``k / n``). Ties broken by position (stable)."""
    x, y = np.asarray(predicted, dtype=np.float64), np.asarray(observed, dtype=np.float64)
    n = len(x)
    if not 0 < k < n:
        return math.nan, math.nan, math.nan
    top_pred = np.argsort(-x, kind="stable")[:k]
    top_obs = np.argsort(-y, kind="stable")[:k]
    hits = len(np.intersect1d(top_pred, top_obs))
    p = float(sps.hypergeom.sf(hits - 1, n, k, k))
    return hits / k, min(1.0, p), k / n
