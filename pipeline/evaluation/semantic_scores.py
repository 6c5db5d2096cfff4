"""Statistics of semantic-change scores: the per-token result type, the top-k list, correlation
with graded truth and the methods' agreement (issue 19 §4, scoring part; paper 003 §5.1: targets
ranked by degree of change and compared with SemEval-2020 Task 1 Subtask 2's graded labels).

* :func:`correlations` — Pearson and Spearman of one method's scores against graded truth, with
  p-values and percentile-bootstrap intervals over the targets; :func:`truth_correlations` — the
  same for every method of a long table (``method``, ``word``, ``score``);
* :func:`agreement_matrix` — Spearman ρ between every two methods' scores;
  :func:`method_agreement` and :func:`change_metrics` — the one-number DVC metric (the registry's
  :data:`~pipeline.evaluation.change_methods.method_registry.AGREEMENT` pair).

Pure numpy/scipy/pandas; no torch. The scores themselves come from the methods
(:mod:`pipeline.evaluation.change_methods`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.evaluation.change_methods.method_registry import AGREEMENT


@dataclass(frozen=True)
class ChangeScores:
    """One change score per LM token id (higher = more change); ``token_ids`` sorted, unique.

    ``first_counts`` / ``last_counts``: occurrences in the first / last group of periods (kept so
    that a reader can see how well supported a score is; empty when not applicable).
    """

    token_ids: np.ndarray            # int64 [n]
    scores: np.ndarray               # float64 [n]
    first_counts: np.ndarray | None = None   # int64 [n]
    last_counts: np.ndarray | None = None    # int64 [n]

    def __len__(self) -> int:
        return int(self.token_ids.size)

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.token_ids.tolist(), self.scores.tolist()))


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
    """Pearson r and Spearman rho of scores against graded truth, with scipy's two-sided p-values
    and percentile-bootstrap 95 % intervals ``(low, high)``."""

    n: int
    pearson: float
    pearson_p: float
    pearson_ci: tuple[float, float]
    spearman: float
    spearman_p: float
    spearman_ci: tuple[float, float]
    n_boot: int


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of [B, n] arrays; NaN for a constant row."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (x * y).sum(axis=1) / den
    r[den == 0] = np.nan
    return r


def correlations(scores: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray,
                 n_boot: int = 1000, seed: int = 0) -> Correlation:
    """Correlate change scores with graded truth (aligned: ``scores[i]`` and ``truth[i]`` are target i).

    Point estimates and p-values are scipy's (``pearsonr``, ``spearmanr``). The 95 % intervals
    are percentile bootstraps: ``n_boot`` resamples of the *targets* with replacement (the unit
    of sampling in SemEval: a few dozen words), from ``np.random.default_rng(seed)`` so a report
    is reproducible. Spearman is re-ranked inside each resample (ties averaged). A resample whose
    scores or truth are all equal has no correlation and is left out of the percentiles
    (``np.nanpercentile``).

    Raises ``ValueError`` for fewer than 3 targets (with 2, r is always +-1 and no test is
    meaningful), mismatched lengths, non-finite values, or constant scores or truth (correlation
    undefined: scipy would warn and return NaN, which a report would print as a number).
    """
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(truth, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"scores ({x.size}) and truth ({y.size}) differ in length")
    n = int(x.size)
    if n < 3:
        raise ValueError(f"correlation needs at least 3 targets, got {n}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("scores and truth must be finite (drop unscored targets first, and say so)")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("scores or truth are constant: correlation is undefined")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    pr = stats.pearsonr(x, y)
    sr = stats.spearmanr(x, y)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    xb, yb = x[idx], y[idx]
    boot_p = _rowwise_pearson(xb, yb)
    boot_s = _rowwise_pearson(stats.rankdata(xb, axis=1), stats.rankdata(yb, axis=1))

    def ci(b: np.ndarray) -> tuple[float, float]:
        lo, hi = np.nanpercentile(b, [2.5, 97.5])
        return float(lo), float(hi)

    return Correlation(n=n, pearson=float(pr[0]), pearson_p=float(pr[1]), pearson_ci=ci(boot_p),
                       spearman=float(sr[0]), spearman_p=float(sr[1]), spearman_ci=ci(boot_s),
                       n_boot=n_boot)


def truth_correlations(frame: pd.DataFrame, truth: Mapping[str, float], seed: int,
                       methods: Sequence[str] = ()) -> dict[str, dict]:
    """Per method of ``frame`` (long table: ``method``, ``word``, ``score``): Pearson and Spearman
    against graded ``truth`` with p-values and intervals (:func:`correlations`); each of
    ``methods`` without a scored word gets an entry saying so (every method is shown)."""
    out: dict[str, dict] = {m: {"n": 0, "error": "no target scored"} for m in methods
                            if m not in set(frame["method"])}
    for method, part in frame.groupby("method", sort=False):
        part = part[part["word"].isin(truth)]
        try:
            c = correlations(part["score"], [truth[w] for w in part["word"]], seed=seed)
        except ValueError as err:
            out[method] = {"n": len(part), "error": str(err)}
            continue
        out[method] = {"n": c.n, "pearson": c.pearson, "pearson_p": c.pearson_p,
                       "pearson_ci": list(c.pearson_ci), "spearman": c.spearman,
                       "spearman_p": c.spearman_p, "spearman_ci": list(c.spearman_ci)}
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
