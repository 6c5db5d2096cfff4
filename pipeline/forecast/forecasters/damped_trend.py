"""Damped trend: Holt's linear method with a damped slope on each word's smoothed log frequency.

For the series ``y_t`` (add-α smoothed log frequency of one word), level ``ℓ`` and slope ``b``::

    ℓ_t = a · y_t + (1 − a) · (ℓ_{t−1} + φ b_{t−1})
    b_t = β · (ℓ_t − ℓ_{t−1}) + (1 − β) · φ b_{t−1}
    ŷ_{T+h} = ℓ_T + (φ + φ² + … + φ^h) · b_T

started at ``ℓ = y_0``, ``b = y_1 − y_0``, all words at once, then renormalised over the
vocabulary. φ < 1 bends the extrapolated trend flat: a word's rise is expected to slow, which the
forecast report's finding (trends revert) asks for. The grid is small: the engine refits per origin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 SKILL_ONLY, log_frequency_series, log_normalise)

ORDER = 50
# Each grid's first value makes the first setting, the engine's fallback: a moderate trend.
LEVELS: tuple[float, ...] = (0.8, 0.5)
SLOPES: tuple[float, ...] = (0.3, 0.1)
DAMPINGS: tuple[float, ...] = (0.8, 0.95, 0.5)
ALPHAS: tuple[float, ...] = (DEFAULT_ALPHA, 0.1)


def damped_holt(series: np.ndarray, horizon: int, level: float, slope: float,
                phi: float) -> np.ndarray:
    """``ŷ_{T+h}`` float64 ``[V]`` of Holt's damped method on ``series`` ``[n ≥ 2, V]``."""
    lvl, trend = series[0], series[1] - series[0]
    for y in series[1:]:
        new = level * y + (1.0 - level) * (lvl + phi * trend)
        trend = slope * (new - lvl) + (1.0 - slope) * phi * trend
        lvl = new
    return lvl + sum(phi ** i for i in range(1, horizon + 1)) * trend


class DampedTrend(Forecaster):
    name = "damped-trend"
    kind = "trend"
    description = "Holt's damped linear trend on each word's smoothed log frequency"
    min_periods = 2
    backtests = SKILL_ONLY

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": alpha, "level": a, "slope": b, "phi": phi}
                for alpha in ALPHAS for a in LEVELS for b in SLOPES for phi in DAMPINGS]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        series = log_frequency_series(past.counts, float(setting.get("alpha", DEFAULT_ALPHA)))
        return log_normalise(damped_holt(series, horizon, float(setting.get("level", LEVELS[0])),
                                         float(setting.get("slope", SLOPES[0])),
                                         float(setting.get("phi", DAMPINGS[0]))))


FORECASTER = DampedTrend()
