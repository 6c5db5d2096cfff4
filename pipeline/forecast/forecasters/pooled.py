"""Pooled past: the summed counts of the last k periods, add-α smoothed.

On a corpus without trends pooling several periods beats persistence (less sampling noise), so a
forecaster with temporal skill must beat this one too. Where the past holds fewer than k periods
the pool is all of it: a setting names the longest window, not an exact one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import smoothed

ORDER = 20
WINDOWS: tuple[int, ...] = (2, 3, 4, 6, 8)   # k = 1 is persistence


class PooledPast(Forecaster):
    name = "pooled-past"
    kind = "stationary"
    description = "summed counts of the last k periods, add-α smoothed"
    min_periods = 1

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"window": k, **a} for k in WINDOWS for a in alpha_grid()]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        window = int(setting.get("window", WINDOWS[0]))
        return smoothed(past.counts[-window:].sum(axis=0),
                        float(setting.get("alpha", DEFAULT_ALPHA)))


FORECASTER = PooledPast()
