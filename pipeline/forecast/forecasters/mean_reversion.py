"""Mean reversion: the last period's smoothed log frequencies shrunk by λ toward the window mean.

The forecaster of :func:`pipeline.forecast.baselines.mean_reverting` (its doc gives the formula
and why): words that just rose tend to fall back. Each period of the window (the last m, or all of
the past where it holds fewer or the setting names no window) is add-α smoothed before averaging;
λ = 0 would be persistence, so the grid starts above it.

The forecast report hands it exactly the history window Y−m .. Y−1 and fits α and λ once on the
training periods, over :data:`~pipeline.forecast.stationary.ALPHA_GRID` ×
:data:`~pipeline.forecast.baselines.LAMBDA_GRID`; without a training forecast it is left out
there (any λ would be a guess).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.baselines import LAMBDA_GRID, mean_reverting
from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import ALPHA_GRID, smoothed

ORDER = 40
WINDOWS: tuple[int, ...] = (2, 4)
STRENGTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


class MeanReversion(Forecaster):
    name = "mean-reversion"
    kind = "stationary"
    description = "last period's log frequencies shrunk by λ toward the mean of the last m"
    min_periods = 2
    title = "Mean reversion"

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"window": m, "lam": lam, **a}
                for m in WINDOWS for lam in STRENGTHS for a in alpha_grid()]

    def fit_grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": a, "lam": lam} for a in ALPHA_GRID for lam in LAMBDA_GRID]

    def unfitted(self) -> None:
        return None

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        alpha = float(setting.get("alpha", DEFAULT_ALPHA))
        size = setting.get("window")
        window = past.counts if size is None else past.counts[-int(size):]
        log_freq = np.stack([smoothed(c, alpha) for c in window], axis=1)
        return mean_reverting(log_freq, float(setting.get("lam", STRENGTHS[0])))


FORECASTER = MeanReversion()
