"""Same-parity pooled past: the summed counts of the past periods t−2, t−4, … of target t.

The export's venues alternate between years (some conferences meet every other year), so a year's
composition resembles the year two before it more than the year before; pooling only the periods
of the target's parity keeps that composition. Where the past holds fewer than k such periods the
pool is all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, Forecaster, PeriodCounts,
                                                 SKILL_ONLY, alpha_grid)
from pipeline.forecast.stationary import smoothed

ORDER = 30
WINDOWS: tuple[int, ...] = (1, 2, 3, 4)   # how many same-parity periods are pooled


def same_parity_rows(n_periods: int, horizon: int, window: int) -> list[int]:
    """Row indices ``t−2, t−4, …`` (at most ``window``, all < ``n_periods``) of the target
    ``t = n_periods − 1 + horizon``."""
    last = n_periods - 1 if horizon % 2 == 0 else n_periods - 2   # the latest of t's parity
    return list(range(last, -1, -2))[:window]


class SameParity(Forecaster):
    name = "same-parity"
    kind = "stationary"
    description = "summed counts of the last k periods of the target's parity (t−2, t−4, …)"
    min_periods = 2
    backtests = SKILL_ONLY

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"window": k, **a} for k in WINDOWS for a in alpha_grid()]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        rows = same_parity_rows(past.n_periods, horizon,
                                int(setting.get("window", WINDOWS[0])))
        return smoothed(past.counts[rows].sum(axis=0),
                        float(setting.get("alpha", DEFAULT_ALPHA)))


FORECASTER = SameParity()
