"""Minimal detectable effects: what a test finds with 80 % power, so that a null says how large.

For a test with a t (or normal) reference, standard error ``se`` and ``df`` degrees of freedom,
the minimal detectable effect is the true effect ``δ`` that a two-sided test at level α finds
with probability :data:`POWER`: the statistic is then noncentral t with noncentrality ``δ/se``,
and ``δ`` solves

    P(|T_{df}(δ/se)| > t_{df}(1 − α/2)) = POWER

exactly. The textbook shortcut ``(t_{df}(1 − α/2) + t_{df}(POWER)) · se`` has less power where
the t is far from normal: 0.71-0.77 at α = 0.05/21 (Holm's strictest level in a family of 21)
with 4-10 degrees of freedom, 0.79 at α = 0.05 with 4. The effect is on the test's native scale,
then mapped to the effect's units (a log-PPL difference to a relative PPL change in per cent, a
Fisher z back to a correlation). The verdict engine asks for it at the
strictest level Holm can apply in the claim's family, α / m, so the stated power holds for every
claim of the family.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import stats as sps
from scipy.optimize import brentq

POWER = 0.8


def t_power(shift: float, df: float, level: float) -> float:
    """The power of a two-sided t test at ``level`` when the true effect is ``shift`` standard
    errors (noncentral t with ``df`` degrees of freedom; normal when ``df`` is infinite)."""
    return _power(shift, df, _critical(df, level))


def _critical(df: float, level: float) -> float:
    """The two-sided test's critical value at ``level``."""
    return float((sps.norm if math.isinf(df) else sps.t(df)).ppf(1 - level / 2))


def _power(shift: float, df: float, crit: float) -> float:
    """:func:`t_power` given the critical value (the MDE's root search asks a dozen shifts of
    one test: its quantile once, not per shift)."""
    if math.isinf(df):
        return float(sps.norm.sf(crit - shift) + sps.norm.cdf(-crit - shift))
    lower = float(sps.nct.cdf(-crit, df, shift))    # NaN where it underflows (far below 1e-9)
    return float(sps.nct.sf(crit, df, shift)) + (lower if math.isfinite(lower) else 0.0)


def t_mde(se: float, df: float, level: float, power: float = POWER) -> float:
    """The native-scale MDE of a two-sided t test at ``level``: the effect found with
    probability ``power`` (NaN without a standard error)."""
    if not (se > 0 and math.isfinite(se)) or not df > 0:
        return math.nan
    crit = _critical(df, level)
    q = sps.norm if math.isinf(df) else sps.t(df)
    upper = crit + float(q.ppf(power))    # the shortcut: power below ``power``
    while _power(upper, df, crit) < power:
        upper *= 2
    shift = brentq(lambda k: _power(k, df, crit) - power, 0.0, upper, xtol=1e-10)
    return float(shift * se)


def mde_function(se: float, df: float, scale: str = "identity"
                 ) -> Callable[[float], float]:
    """``level -> mde`` in the effect's units: ``scale`` ``identity``, ``relative`` (a log ratio
    shown as a per-cent change) or ``fisher-z`` (a correlation)."""
    to_units = {"identity": lambda x: x, "relative": lambda x: 100.0 * math.expm1(x),
                "fisher-z": math.tanh}[scale]
    return lambda level: to_units(t_mde(se, df, level))
