"""Persistence: the last past period's counts, add-α smoothed, whatever the horizon.

One stationary reference among several (a pooled past beats it on a corpus without trends). The
forecast report fits its α once on the training periods, over the finer
:data:`~pipeline.forecast.stationary.ALPHA_GRID`; without a training forecast it smooths add-one,
as the frequency features do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import ALPHA_GRID, smoothed

ORDER = 10


class Persistence(Forecaster):
    name = "persistence"
    kind = "stationary"
    description = "last period's counts, add-α smoothed"
    min_periods = 1
    title = "Persistence"

    def grid(self) -> list[Mapping[str, Any]]:
        return alpha_grid()

    def fit_grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": a} for a in ALPHA_GRID]

    def unfitted(self) -> Mapping[str, Any]:
        return {"alpha": DEFAULT_ALPHA}

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        return smoothed(past.counts[-1], float(setting.get("alpha", DEFAULT_ALPHA)))


FORECASTER = Persistence()
