"""Mean reversion: the last period's smoothed log frequencies shrunk by λ toward the window mean.

The forecaster of :func:`pipeline.forecast.baselines.mean_reverting` (its doc gives the formula
and why): words that just rose tend to fall back. Each period of the window (the last m, or all of
the past where it holds fewer) is add-α smoothed before averaging; λ = 0 would be persistence, so
the grid starts above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.baselines import mean_reverting
from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import smoothed

ORDER = 40
WINDOWS: tuple[int, ...] = (2, 4)
STRENGTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


class MeanReversion(Forecaster):
    name = "mean-reversion"
    kind = "stationary"
    description = "last period's log frequencies shrunk by λ toward the mean of the last m"
    min_periods = 2

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"window": m, "lam": lam, **a}
                for m in WINDOWS for lam in STRENGTHS for a in alpha_grid()]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        alpha = float(setting.get("alpha", DEFAULT_ALPHA))
        window = past.counts[-int(setting.get("window", WINDOWS[0])):]
        log_freq = np.stack([smoothed(c, alpha) for c in window], axis=1)
        return mean_reverting(log_freq, float(setting.get("lam", STRENGTHS[0])))


FORECASTER = MeanReversion()
