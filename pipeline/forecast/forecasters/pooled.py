"""Pooled past: the summed counts of the last k periods, add-α smoothed.

On a corpus without trends pooling several periods beats persistence (less sampling noise), so a
forecaster with temporal skill must beat this one too. Where the past holds fewer than k periods
the pool is all of it: a setting names the longest window, not an exact one, and a setting without
a window pools the whole past. The forecast report hands it exactly the history window
Y−m .. Y−1 (the periods every forecaster there reads) and fits only α, over the finer
:data:`~pipeline.forecast.stationary.ALPHA_GRID`; without a training forecast it smooths add-one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import ALPHA_GRID, smoothed

ORDER = 20
WINDOWS: tuple[int, ...] = (2, 3, 4, 6, 8)   # k = 1 is persistence


class PooledPast(Forecaster):
    name = "pooled-past"
    kind = "stationary"
    description = "summed counts of the last k periods, add-α smoothed"
    min_periods = 1
    title = "Pooled past"

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"window": k, **a} for k in WINDOWS for a in alpha_grid()]

    def fit_grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": a} for a in ALPHA_GRID]

    def unfitted(self) -> Mapping[str, Any]:
        return {"alpha": DEFAULT_ALPHA}

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        window = setting.get("window")
        rows = past.counts if window is None else past.counts[-int(window):]
        return smoothed(rows.sum(axis=0), float(setting.get("alpha", DEFAULT_ALPHA)))


FORECASTER = PooledPast()
