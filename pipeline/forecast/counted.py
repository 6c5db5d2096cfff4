"""The count-based forecasts of a backtest period and the period's claims.

The count forecasters are the registry's, each with the setting fitted on the training periods
(:mod:`pipeline.forecast.fits`); they read only the observed counts of the history window
Y−m .. Y−1. Each forecast uses all of Y−1; each *predicted change* (the trend test) is recomputed
from the same window with Y−1 replaced by its half A (:mod:`pipeline.corpus.halves`), so it shares
no document with the observed change, measured against half B. :func:`backtest_period` adds any
other forecasters (the models) and returns every claim of the period
(:mod:`pipeline.forecast.claims`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pipeline.corpus.periods import shift
from pipeline.forecast import backtest as bt
from pipeline.forecast.claims import Predictions, trend_claims, vocabulary_claims
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.fits import Fit, best_fit, references, window_counts
from pipeline.stats.verdict import Claim


def count_predictions(period: str, window: int, counts: Mapping[str, np.ndarray],
                      half_a: np.ndarray, fits: Mapping[str, Fit]) -> list[Predictions]:
    """Every fitted count forecaster's forecast of ``period`` from ``counts`` of its window and
    its predicted change from the window with ``half_a`` (counts of half A of Y−1) in place of
    Y−1, in the fits' order."""
    full = window_counts(counts, period, window)
    half = window_counts(counts, period, window, np.asarray(half_a))
    return [Predictions(name, (f.log_p(full),), f.change(half)) for name, f in fits.items()]


@dataclass
class PeriodBacktest:
    """One period's claims, the best-fitting stationary forecaster and the descriptive numbers
    per forecaster (PPL with interval; ρ, precision@k, k and the number of trend tokens)."""

    period: str
    reference: str
    claims: list[Claim] = field(default_factory=list)
    vocabulary: dict[str, dict[str, float]] = field(default_factory=dict)
    trend: dict[str, dict[str, float]] = field(default_factory=dict)
    n_trend: int = 0
    n_documents: tuple[int, int] = (0, 0)


def backtest_period(period: str, docs: PeriodDocuments, previous: PeriodDocuments,
                    counts: Mapping[str, np.ndarray], fits: Mapping[str, Fit],
                    content: np.ndarray, window: int, others: Sequence[Predictions] = (),
                    min_count: int = bt.MIN_COUNT, seen: str = "") -> PeriodBacktest:
    """Every claim of backtest ``period``: ``docs`` its documents, ``previous`` those of Y−1
    (split in halves here), ``counts`` the window's counts, ``fits`` the count forecasters
    (:func:`pipeline.forecast.fits.fit_forecasters`), ``others`` the models' predictions;
    ``seen``: why the trained ones make no trend claim here (their training read Y−1), or empty."""
    if previous.period != shift(period, -1):
        raise ValueError(f"the documents before {period} are {shift(period, -1)}'s, "
                         f"not {previous.period}'s")
    half_a, half_b = previous.halves()
    forecasters = [*count_predictions(period, window, counts, half_a.counts(), fits), *others]
    vocab, ppl = vocabulary_claims(period, docs, forecasters, references(fits))
    trend, rho = trend_claims(period, docs, half_a, half_b, forecasters, content, min_count, seen)
    n_trend = next((r["n_trend"] for r in rho.values()), 0)
    return PeriodBacktest(period, best_fit(fits), vocab + trend, ppl, rho, int(n_trend),
                          (half_a.n_documents, half_b.n_documents))
