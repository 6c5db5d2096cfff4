"""Minimal detectable effects: what a test could have seen, so that a null says how large.

For a test with a t (or normal) reference, standard error ``se`` and ``df`` degrees of freedom,
the effect found with probability :data:`POWER` by a two-sided test at level α is

    mde = (t_{df}(1 − α/2) + t_{df}(POWER)) · se

on the test's native scale, then mapped to the effect's units (a log-PPL difference to a relative
PPL change in per cent, a Fisher z back to a correlation). The verdict engine asks for it at the
strictest level Holm can apply in the claim's family, α / m, so the stated power holds for every
claim of the family.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import stats as sps

POWER = 0.8


def t_mde(se: float, df: float, level: float, power: float = POWER) -> float:
    """The native-scale MDE of a two-sided t test at ``level`` (NaN without a standard error)."""
    if not (se > 0 and math.isfinite(se)) or not df > 0:
        return math.nan
    q = (sps.norm if math.isinf(df) else sps.t(df))
    return float((q.ppf(1 - level / 2) + q.ppf(power)) * se)


def mde_function(se: float, df: float, scale: str = "identity"
                 ) -> Callable[[float], float]:
    """``level -> mde`` in the effect's units: ``scale`` ``identity``, ``relative`` (a log ratio
    shown as a per-cent change) or ``fisher-z`` (a correlation)."""
    to_units = {"identity": lambda x: x, "relative": lambda x: 100.0 * math.expm1(x),
                "fisher-z": math.tanh}[scale]
    return lambda level: to_units(t_mde(se, df, level))
