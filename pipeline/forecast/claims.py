"""The backtest claims of one period Y.

**Family ``forecast-vocabulary``** (``scope`` = Y): every forecaster that is not a stationary
baseline against **each** stationary baseline (persistence, the pooled past, mean reversion; each
smoothed by a rule fitted on the training periods only, :mod:`pipeline.forecast.stationary`):
the relative change of unigram PPL on Y's documents, tested by
:func:`pipeline.stats.comparisons.compare_rates` (documents paired; a trained forecaster's runs
add their spread, Welch's t). A forecaster has *temporal skill* only where it is ``better`` than
every one of them: which stationary baseline is best differs from period to period, so no single
reference chosen in advance can stand for "the best stationary forecast".

**Family ``forecast-trend``** (``scope`` = Y): does a forecaster's predicted change order the words
as they moved? Three choices keep its null honest:

* the prediction reads **half A** of Y−1 only (:mod:`pipeline.corpus.halves`) and the observed
  change is measured between **half B** and Y, so predictor and observation share no document;
* the **trend tokens** are the content tokens seen ≥ ``min_count`` times in half A — chosen on
  the predictor's side, not on the observed counts (selecting on observed counts with add-one
  smoothing left a null mean ρ of +0.02..+0.03 that did not shrink with corpus size);
* the observed change is a **standardised** change of document frequency (a two-proportion z
  between half B and Y): every word's null is N(0, 1) whatever its frequency or burstiness, so
  rare words do not crowd the observed extremes.

Two claims per forecaster, the word as the unit (``n`` = trend tokens): Spearman ρ over all trend
tokens, and the precision of its top-k predicted risers among the top-k observed risers
(``k`` = 1 % of the trend tokens, at least 10: a few strong trends are not diluted by thousands of
flat words), against chance k/n with the exact hypergeometric test (:mod:`pipeline.stats.ranks`).

A trained forecaster whose training (or early stopping) read Y−1 has seen half B: its trend
claims are untested (``seen``). A forecaster without a predicted change makes no trend claim; one
whose half-A change could not be computed makes an untested one (NaN p, ``note``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.forecast import backtest as bt
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.stats.comparisons import Side, compare_rates, rate_interval
from pipeline.stats.power import mde_function, top_k_mde
from pipeline.stats.ranks import SPEARMAN_TEST, TOP_K_TEST, spearman_test, top_k, top_k_test
from pipeline.stats.verdict import Claim, claim_of

REPORT = "forecast"
VOCABULARY, TREND = "forecast-vocabulary", "forecast-trend"
CHANCE = "chance (ρ = 0)"
TREND_UNIT = "trend tokens (words)"


@dataclass(frozen=True)
class Forecaster:
    """``log_ps``: one forecast ``[≥|V|]`` per trained run (one for a forecaster without
    training, ``runs = 0``). ``change``: the predicted change from half-A inputs (mean over runs),
    None for no trend claim, or — with ``trend_note`` — for an untested one."""

    name: str
    log_ps: tuple[np.ndarray, ...]
    change: np.ndarray | None = None
    runs: int = 0
    trend_note: str = ""
    changes: tuple[np.ndarray, ...] = ()     # per run (their mean is ``change``)


def vocabulary_claims(period: str, docs: PeriodDocuments, forecasters: Sequence[Forecaster],
                      references: Sequence[str]
                      ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-vocabulary`` claims of every forecaster not in ``references`` against each of
    them (module doc), and each forecaster's unigram PPL with its 95 % interval
    (``{name: {ppl, ppl_lo, ppl_hi}}``)."""
    nll = document_nll(docs, np.stack([lp for f in forecasters for lp in f.log_ps]))
    sides, col = {}, 0
    for f in forecasters:
        sides[f.name] = Side(nll[:, col:col + len(f.log_ps)], trained=f.runs > 0)
        col += len(f.log_ps)
    rows = {name: dict(zip(("ppl", "ppl_lo", "ppl_hi"),
                           (math.exp(x) for x in rate_interval(side, docs.lengths))))
            for name, side in sides.items()}
    references = [r for r in references if r in sides]
    claims = [claim_of(compare_rates(sides[f.name], sides[ref], docs.lengths, (f.name, ref)),
                       report=REPORT, family=VOCABULARY, a=f.name, b=ref, metric="unigram PPL",
                       scale="relative", effect_unit="% PPL", scope=period)
              for f in forecasters if f.name not in references for ref in references]
    return claims, rows


def observed_change(docs: PeriodDocuments, half_b: PeriodDocuments, ids: np.ndarray) -> np.ndarray:
    """``[len(ids)]``: each token's standardised change of document frequency from half B of Y−1
    to Y (two-proportion z with the pooled share; 0 where the token is in no or every document)."""
    in_y = np.asarray((docs.matrix(ids) > 0).sum(axis=0), dtype=np.float64).ravel()
    in_b = np.asarray((half_b.matrix(ids) > 0).sum(axis=0), dtype=np.float64).ravel()
    n_y, n_b = float(docs.n_documents), float(half_b.n_documents)
    pooled = (in_y + in_b) / (n_y + n_b)
    sd = np.sqrt(pooled * (1 - pooled) * (1 / n_y + 1 / n_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sd > 0, (in_y / n_y - in_b / n_b) / sd, 0.0)


def trend_claims(period: str, docs: PeriodDocuments, half_a: PeriodDocuments,
                 half_b: PeriodDocuments, forecasters: Sequence[Forecaster], content: np.ndarray,
                 min_count: int = bt.MIN_COUNT, seen: str = ""
                 ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-trend`` claims (module doc) and each ranking forecaster's point values
    (``{name: {rho, rho_lo, rho_hi, precision, chance, k, n_trend}}``). ``seen``: why a trained
    forecaster's trend claims are untested here (its training read Y−1), or empty."""
    counts_a = half_a.counts()
    ids = np.flatnonzero(bt.trend_tokens(counts_a, np.asarray(content)[:len(counts_a)],
                                         min_count))
    observed = observed_change(docs, half_b, ids)
    n, k = len(ids), top_k(len(ids))
    claims: list[Claim] = []
    rows: dict[str, dict[str, float]] = {}
    common = dict(report=REPORT, family=TREND, scope=period, unit=TREND_UNIT, n=n,
                  better_when="higher")
    for f in forecasters:
        note = f.trend_note if f.change is None else (seen if f.runs > 0 else "")
        if f.change is None and not note:
            continue
        seeds = (f.runs, 0)
        if note:
            claims += [Claim(a=f.name, b=CHANCE, metric="Spearman ρ", effect=math.nan,
                             ci=(math.nan, math.nan), p=math.nan, test=SPEARMAN_TEST, seeds=seeds,
                             note=note, **common)]                           # type: ignore[arg-type]
            continue
        pred = np.asarray(f.change, dtype=np.float64)[ids]
        rho, ci, p, se = spearman_test(pred, observed)
        precision, p_k, chance = top_k_test(pred, observed, k)
        claims.append(Claim(a=f.name, b=CHANCE, metric="Spearman ρ", effect=rho, ci=ci, p=p,
                            test=SPEARMAN_TEST, seeds=seeds,
                            note="" if not math.isnan(p) else "no ranking on the trend tokens",
                            mde_of=mde_function(se, math.inf, "fisher-z"),
                            **common))                                     # type: ignore[arg-type]
        mde_k = top_k_mde(n, k)
        claims.append(Claim(a=f.name, b=f"chance ({k}/{n})", metric=f"precision@{k} of risers",
                            effect=precision - chance, ci=(math.nan, math.nan), p=p_k,
                            test=TOP_K_TEST, seeds=seeds, effect_unit="above chance",
                            note="" if not math.isnan(p_k) else "too few trend tokens for a top k",
                            mde_of=lambda level, m=mde_k, c=chance: m(level) - c,
                            **common))                                     # type: ignore[arg-type]
        rows[f.name] = {"rho": rho, "rho_lo": ci[0], "rho_hi": ci[1], "precision": precision,
                        "chance": chance, "k": k, "n_trend": n}
    return claims, rows
