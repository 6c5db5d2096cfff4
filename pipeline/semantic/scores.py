"""Statistics of semantic-change scores: the top-k list, correlation with graded truth and the
methods' agreement (paper 003 §5.1: targets ranked by degree of change
and compared with SemEval-2020 Task 1 Subtask 2's graded labels).

* :func:`top_changed` — the most changed tokens of a per-token result
  (:class:`~pipeline.semantic.methods.interface.ChangeScores`);

* :func:`correlations` — Pearson and Spearman of one method's scores against graded truth, with
  p-values and percentile-bootstrap intervals over the targets; :func:`truth_correlations` — the
  same for every method of a long table (``method``, ``word``, ``score``);
* :func:`agreement_matrix` — Spearman ρ between every two methods' scores;
  :func:`method_agreement` and :func:`change_metrics` — the one-number DVC metric (the registry's
  :data:`~pipeline.semantic.methods.registry.AGREEMENT` pair).

Pure numpy/scipy/pandas; no torch. The scores themselves come from the methods
(:mod:`pipeline.semantic.methods`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.semantic.methods.interface import ChangeScores
from pipeline.semantic.methods.registry import AGREEMENT
from pipeline.stats.ranks import spearman_test


def top_changed(scores: ChangeScores, k: int) -> ChangeScores:
    """The ``k`` most changed tokens, highest score first.

    Ties are broken by ascending token id, so the list is the same on every run and platform
    (``np.lexsort`` is stable and total). NaN scores (a zero pooled vector: cosine undefined) are
    never ranked: they cannot be compared, and putting them first or last would be arbitrary.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    ok = ~np.isnan(scores.scores)
    ids, vals = scores.token_ids[ok], scores.scores[ok]
    order = np.lexsort((ids, -vals))[:k]          # last key is primary: -score, then id
    pick = np.flatnonzero(ok)[order]

    def sub(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[pick]

    return ChangeScores(ids[order], vals[order], sub(scores.first_counts), sub(scores.last_counts))


@dataclass(frozen=True)
class Correlation:
    """Pearson r and Spearman rho of scores against graded truth, with two-sided p-values and
    Fisher-z 95 % intervals ``(low, high)`` (the word as the unit; ``spearman_se`` on the z
    scale)."""

    n: int
    pearson: float
    pearson_p: float
    pearson_ci: tuple[float, float]
    spearman: float
    spearman_p: float
    spearman_ci: tuple[float, float]
    spearman_se: float


def correlations(scores: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray
                 ) -> Correlation:
    """Correlate change scores with graded truth (aligned: ``scores[i]`` and ``truth[i]`` are target i).

    The unit is the target word. Spearman's ρ, its p-value and its Fisher-z interval come from
    :func:`pipeline.stats.ranks.spearman_test`; Pearson's r has scipy's p-value and the Fisher-z
    interval (standard error ``1/sqrt(n − 3)``). Closed-form: the same numbers on every machine.

    Raises ``ValueError`` for fewer than 4 targets (with 3 or fewer no interval is defined),
    mismatched lengths, non-finite values, or constant scores or truth (correlation undefined:
    scipy would warn and return NaN, which a report would print as a number).
    """
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(truth, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"scores ({x.size}) and truth ({y.size}) differ in length")
    n = int(x.size)
    if n < 4:
        raise ValueError(f"correlation needs at least 4 targets, got {n}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("scores and truth must be finite (drop unscored targets first, and say so)")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("scores or truth are constant: correlation is undefined")
    r, r_p = (float(v) for v in stats.pearsonr(x, y))
    z, half = math.atanh(min(max(r, -1 + 1e-12), 1 - 1e-12)), 1.959963984540054 / math.sqrt(n - 3)
    rho, rho_ci, rho_p, rho_se = spearman_test(x, y)
    return Correlation(n=n, pearson=r, pearson_p=r_p,
                       pearson_ci=(math.tanh(z - half), math.tanh(z + half)), spearman=rho,
                       spearman_p=rho_p, spearman_ci=rho_ci, spearman_se=rho_se)


def truth_correlations(frame: pd.DataFrame, truth: Mapping[str, float],
                       methods: Sequence[str] = ()) -> dict[str, dict]:
    """Per method of ``frame`` (long table: ``method``, ``word``, ``score``): Pearson and Spearman
    against graded ``truth`` with p-values and intervals (:func:`correlations`); each of
    ``methods`` without a scored word gets an entry saying so (every method is shown)."""
    out: dict[str, dict] = {m: {"n": 0, "error": "no target scored"} for m in methods
                            if m not in set(frame["method"])}
    for method, part in frame.groupby("method", sort=False):
        part = part[part["word"].isin(truth)]
        try:
            c = correlations(part["score"], [truth[w] for w in part["word"]])
        except ValueError as err:
            out[method] = {"n": len(part), "error": str(err)}
            continue
        out[method] = {"n": c.n, "pearson": c.pearson, "pearson_p": c.pearson_p,
                       "pearson_ci": list(c.pearson_ci), "spearman": c.spearman,
                       "spearman_p": c.spearman_p, "spearman_ci": list(c.spearman_ci),
                       "spearman_se": c.spearman_se}
    return {m: out[m] for m in [*methods, *(k for k in out if k not in methods)]}


def agreement_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ between every two methods' scores over the targets both scored (NaN where
    fewer than 3 or a constant column); rows and columns in the frame's method order."""
    methods = list(dict.fromkeys(frame["method"]))
    wide = frame.pivot(index="word", columns="method", values="score")
    out = pd.DataFrame(np.nan, index=methods, columns=methods)
    for i, a in enumerate(methods):
        for b in methods[i:]:
            both = wide[[a, b]].dropna()
            if len(both) >= 3 and (both.nunique() > 1).all():
                rho = 1.0 if a == b else float(stats.spearmanr(both[a], both[b])[0])
                out.loc[a, b] = out.loc[b, a] = rho
    return out


def method_agreement(frame: pd.DataFrame, pair: tuple[str, str] = AGREEMENT
                     ) -> tuple[float, int] | None:
    """Spearman ρ between two methods (by default the registry's :data:`AGREEMENT`: contextual
    vs frequency) over the targets both scored, and their count: the DVC metric ``agreement``
    (one number: ``dvc metrics show`` is near its 200 columns; every pair is in
    :func:`agreement_matrix`)."""
    a, b = pair
    if not {a, b} <= set(frame["method"]):
        return None
    wide = frame.pivot(index="word", columns="method", values="score")[[a, b]].dropna()
    if len(wide) < 3 or (wide.nunique() < 2).any():
        return None       # too few targets, or a constant column: no rank correlation
    return float(stats.spearmanr(wide[a], wide[b])[0]), len(wide)


def change_metrics(frame: pd.DataFrame, correlated: Mapping[str, dict]) -> dict:
    """The compact DVC metrics, one column wide by default so that `dvc metrics show` keeps to a
    200-column terminal: ``agreement`` (:func:`method_agreement`; null if undefined) and, with
    graded truth, ``spearman`` {method: ρ against the truth}. Coverage, every other pair of
    methods and everything else is in the report and the scores table."""
    agreement = method_agreement(frame)
    out: dict = {"agreement": None if agreement is None else round(agreement[0], 4)}
    rho = {m: round(c["spearman"], 4) for m, c in correlated.items() if "error" not in c}
    if rho:
        out["spearman"] = rho
    return out
