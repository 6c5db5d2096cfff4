"""Family-wise adjustment of p-values: Holm's step-down.

A *family* is what one report section claims at once (every forecaster against the best
stationary baseline for one period, every variant against its time-free control, ...). Holm:
sort the family's m p-values; the k-th smallest is multiplied by (m − k + 1), made monotone
(never below the previous adjusted value) and capped at 1. A claim holds where its adjusted
p-value is below α: the family-wise error rate is at most α under any dependence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order. NaN (an untested claim) stays NaN and does not
    count in m."""
    tested = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    m = len(tested)
    adjusted = [float("nan")] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(tested)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
