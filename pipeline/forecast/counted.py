"""The count-based forecasters of a backtest period and the period's claims.

The forecasters read only observed counts of the history window Y−m .. Y−1: the stationary
baselines (:mod:`pipeline.forecast.stationary`, smoothing fitted on training periods) and linear
extrapolation (add-one smoothed, :func:`pipeline.forecast.vocabulary.linear_extrapolation`). Each
forecast uses all of Y−1; each *predicted change* (the trend test) is recomputed from the same
window with Y−1 replaced by its half A (:mod:`pipeline.corpus.halves`), so it shares no document
with the observed change, measured against half B. :func:`backtest_period` adds any other
forecasters (the models) and returns every claim of the period (:mod:`pipeline.forecast.claims`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pipeline.corpus.periods import shift
from pipeline.features.frequencies import log_frequencies
from pipeline.features.windows import history_periods
from pipeline.forecast import backtest as bt
from pipeline.forecast.claims import Forecaster, trend_claims, vocabulary_claims
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.stationary import STATIONARY, StationaryFit, best_stationary
from pipeline.forecast.vocabulary import linear_extrapolation
from pipeline.stats.verdict import Claim

LINEAR = "Linear extrapolation"


def _linear(window: Sequence[np.ndarray], periods: Sequence[str], period: str) -> np.ndarray:
    lf = np.stack([log_frequencies(c) for c in window], axis=1)
    return np.log(linear_extrapolation(lf, periods, period))


def count_forecasters(period: str, window: int, counts: Mapping[str, np.ndarray],
                      half_a: np.ndarray, fits: Mapping[str, StationaryFit]) -> list[Forecaster]:
    """The stationary baselines (in :data:`STATIONARY` order) and linear extrapolation for
    ``period`` from ``counts`` of its window; ``half_a``: counts of half A of Y−1."""
    periods = list(history_periods(period, window))
    full = [np.asarray(counts[p]) for p in periods]
    half = [*full[:-1], np.asarray(half_a)]
    out = [Forecaster(n, (fits[n].log_p(full),), fits[n].change(half))
           for n in STATIONARY if n in fits]
    out.append(Forecaster(LINEAR, (_linear(full, periods, period),),
                          _linear(half, periods, period) - log_frequencies(half[-1])))
    return out


@dataclass
class PeriodBacktest:
    """One period's claims, the best-fitting stationary baseline and the descriptive numbers
    per forecaster (PPL with interval; ρ, precision@k, k and the number of trend tokens)."""

    period: str
    reference: str
    claims: list[Claim] = field(default_factory=list)
    vocabulary: dict[str, dict[str, float]] = field(default_factory=dict)
    trend: dict[str, dict[str, float]] = field(default_factory=dict)
    n_trend: int = 0
    n_documents: tuple[int, int] = (0, 0)


def backtest_period(period: str, docs: PeriodDocuments, previous: PeriodDocuments,
                    counts: Mapping[str, np.ndarray], fits: Mapping[str, StationaryFit],
                    content: np.ndarray, window: int, others: Sequence[Forecaster] = (),
                    min_count: int = bt.MIN_COUNT, seen: str = "") -> PeriodBacktest:
    """Every claim of backtest ``period``: ``docs`` its documents, ``previous`` those of Y−1
    (split in halves here), ``counts`` the window's counts, ``others`` the models' forecasters;
    ``seen``: why the trained ones make no trend claim here (their training read Y−1), or empty."""
    if previous.period != shift(period, -1):
        raise ValueError(f"the documents before {period} are {shift(period, -1)}'s, "
                         f"not {previous.period}'s")
    half_a, half_b = previous.halves()
    forecasters = [*count_forecasters(period, window, counts, half_a.counts(), fits), *others]
    reference = best_stationary(fits)
    stationary = [n for n in STATIONARY if n in fits]
    vocab, ppl = vocabulary_claims(period, docs, forecasters, stationary)
    trend, rho = trend_claims(period, docs, half_a, half_b, forecasters, content, min_count, seen)
    n_trend = next((r["n_trend"] for r in rho.values()), 0)
    return PeriodBacktest(period, reference, vocab + trend, ppl, rho, int(n_trend),
                          (half_a.n_documents, half_b.n_documents))
