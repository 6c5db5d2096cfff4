"""Persistence: the last past period's counts, add-α smoothed, whatever the horizon.

The forecaster every other one is measured against in the forecast report; here it is one
stationary reference among several (a pooled past beats it on a corpus without trends).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 alpha_grid)
from pipeline.forecast.stationary import smoothed

ORDER = 10


class Persistence(Forecaster):
    name = "persistence"
    kind = "stationary"
    description = "last period's counts, add-α smoothed"
    min_periods = 1

    def grid(self) -> list[Mapping[str, Any]]:
        return alpha_grid()

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        return smoothed(past.counts[-1], float(setting.get("alpha", DEFAULT_ALPHA)))


FORECASTER = Persistence()
