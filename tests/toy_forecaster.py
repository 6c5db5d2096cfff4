"""A toy forecaster, written as a user would add one: this one module.

``tests/test_forecaster_seam.py`` puts it on the search path of
:mod:`pipeline.forecast.forecasters` (as if saved there as ``toy_recent.py``); nothing else
changes, and it appears in both backtests: ``reports/forecast.md`` and the skill report. It
forecasts the last period's add-α smoothed log frequencies moved by a share of their latest
change: ``y_T + c · (y_T − y_{T−1})``, renormalised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 log_frequency_series, log_normalise)

ORDER = 90
STEPS: tuple[float, ...] = (0.5, 0.25)


class ToyRecent(Forecaster):
    name = "toy-recent"
    kind = "trend"
    description = "last period plus c × its latest change of smoothed log frequency"
    min_periods = 2

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": DEFAULT_ALPHA, "step": c} for c in STEPS]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        y = log_frequency_series(past.counts[-2:], float(setting.get("alpha", DEFAULT_ALPHA)))
        return log_normalise(y[-1] + float(setting.get("step", STEPS[0])) * (y[-1] - y[-2]))


FORECASTER = ToyRecent()
