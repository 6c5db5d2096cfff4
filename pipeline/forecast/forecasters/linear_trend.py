"""Shrunk linear trend: the last period's smoothed log frequency plus a shrunk least-squares slope.

For each word, the slope ``s`` of its add-α smoothed log frequency regressed on time over the last
k periods (all of the past where it holds fewer), and::

    ŷ_{T+h} = y_T + c · h · s,    then renormalised over the vocabulary.

c = 0 would be persistence and c = 1 plain linear extrapolation, which the forecast report found
worse than persistence on the export (trends revert); the grid's c between lets the engine pick
how much of a trend to believe on earlier origins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 SKILL_ONLY, log_frequency_series, log_normalise)

ORDER = 60
# Each grid's first value makes the first setting, the engine's fallback: a moderate trend.
WINDOWS: tuple[int, ...] = (5, 3, 8)
SHRINKAGES: tuple[float, ...] = (0.5, 0.25, 1.0)
ALPHAS: tuple[float, ...] = (DEFAULT_ALPHA, 0.1)


def least_squares_slope(series: np.ndarray) -> np.ndarray:
    """float64 ``[V]``: each column's least-squares slope per period over ``series`` ``[n ≥ 2, V]``."""
    time = np.arange(series.shape[0], dtype=np.float64)
    time -= time.mean()
    return time @ (series - series.mean(axis=0)) / (time @ time)


class LinearTrend(Forecaster):
    name = "linear-trend"
    kind = "trend"
    description = "last period plus c × the least-squares slope of the last k periods"
    min_periods = 2
    backtests = SKILL_ONLY

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": alpha, "window": k, "shrinkage": c}
                for alpha in ALPHAS for k in WINDOWS for c in SHRINKAGES]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        window = max(int(setting.get("window", WINDOWS[0])), 2)
        series = log_frequency_series(past.counts[-window:],
                                      float(setting.get("alpha", DEFAULT_ALPHA)))
        shrinkage = float(setting.get("shrinkage", SHRINKAGES[0]))
        return log_normalise(series[-1] + shrinkage * horizon * least_squares_slope(series))


FORECASTER = LinearTrend()
