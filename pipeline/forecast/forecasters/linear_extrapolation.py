"""Linear extrapolation: each word's add-one smoothed log frequency, its least-squares line through
the whole past evaluated at the target period, renormalised.

Time is the periods' ordinals (:func:`pipeline.corpus.periods.ordinal`: consecutive within a kind,
for years the years themselves), so the slope is per period; with one past period it is
persistence. Its predicted change is the extrapolated log frequency minus the last period's (for
a past of two periods, the last change repeated). It is the unshrunk, whole-past trend: the
forecast report found it ranks rising words worse than chance (trends revert), the finding that
:mod:`~pipeline.forecast.forecasters.mean_reversion` bets on. The skill report has
:mod:`~pipeline.forecast.forecasters.linear_trend` (shrunk, windowed, its settings chosen per
origin) in its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.corpus.periods import ordinal, shift
from pipeline.features.frequencies import log_frequencies
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts

ORDER = 45


def linear_extrapolation(log_freq: np.ndarray, periods: Sequence[str | int],
                         period: str | int) -> np.ndarray:
    """Per token, the least-squares line through ``log_freq`` ``[|V|, m]`` (columns =
    ``periods``, labels) evaluated at ``period``, as a distribution (softmax of the extrapolated
    log frequencies); with one period, that period's distribution."""
    log_freq = np.asarray(log_freq, dtype=np.float64)
    x = np.asarray([ordinal(p) for p in periods], dtype=np.float64)
    at = float(ordinal(period))
    if log_freq.ndim != 2 or log_freq.shape[1] != len(x):
        raise ValueError(f"log_freq {log_freq.shape} does not match {len(x)} periods")
    if len(x) == 1:
        predicted = log_freq[:, 0]
    else:
        xc = x - x.mean()
        slope = log_freq @ xc / (xc @ xc)
        predicted = log_freq.mean(axis=1) + slope * (at - x.mean())
    predicted = predicted - predicted.max()
    p = np.exp(predicted)
    return p / p.sum()


class LinearExtrapolation(Forecaster):
    name = "linear-extrapolation"
    kind = "trend"
    description = "each word's least-squares line through the whole past, at the target"
    min_periods = 1
    title = "Linear extrapolation"
    # The forecast report's unfitted trend; the skill report has linear-trend in its place.
    backtests = frozenset({"forecast"})

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        log_freq = np.stack([log_frequencies(c) for c in past.counts], axis=1)
        return np.log(linear_extrapolation(log_freq, past.periods,
                                           shift(past.periods[-1], horizon)))


FORECASTER = LinearExtrapolation()
