"""The backtest claims of one period Y, resampled by document (issue 31 §1-3).

**Unit.** Every interval and test resamples the **documents** (abstracts) of Y
(:func:`pipeline.stats.resampling.document_weights`), paired: each replicate draws one multiset of
documents and scores every forecaster on it (per-document NLL sums and token counts,
:func:`pipeline.stats.resampling.per_token_rate`). A model with several seeds (trained runs) is the
mean over its runs, and each replicate also draws its runs with replacement
(:func:`pipeline.stats.resampling.run_draws`): the run-to-run spread enters every interval of a
trained forecaster (issue 31 §2), its cross-entropy and its predicted change alike.

**Family ``forecast-vocabulary``** (``scope`` = Y): every forecaster that is not a stationary
baseline against **each** stationary baseline (persistence, the pooled past, mean reversion; each
smoothed by a rule fitted on the training periods only, :mod:`pipeline.forecast.stationary`):
the unigram PPL difference, its percentile interval and two-sided bootstrap p-value; Holm
within the family. A forecaster has *temporal skill* only where it is ``better`` than every one
of them: which stationary baseline is best differs from period to period (on a corpus whose
dates were permuted the pooled past beat the one fitted best on the training periods), so no
single reference chosen in advance can stand for "the best stationary forecast".

**Family ``forecast-trend``** (``scope`` = Y): Spearman ρ between a forecaster's predicted change,
computed from inputs in which period Y−1 is its half A only (:mod:`pipeline.corpus.halves`), and
the observed change ``log f_Y − log f^B_{Y−1}`` (add-one smoothed; half B), over the trend tokens:
content tokens seen ≥ ``min_count`` times in both Y and half B. Predictor and observation share no
document, so ρ's null is ≈ 0 (GUIDE §12) and ρ is tested against 0. Interval and p: the documents
of Y and of half B are resampled (independently), the predictions stay fixed, the trend tokens too.
A forecaster without a predicted change (persistence, a model without history) makes no trend
claim; one whose half-A change could not be computed makes an untested claim (NaN p, ``note``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from pipeline.forecast import backtest as bt
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.features.frequencies import log_frequencies
from pipeline.stats import resampling as rs
from pipeline.stats.verdict import Claim

REPORT = "forecast"
VOCABULARY, TREND = "forecast-vocabulary", "forecast-trend"
CHANCE = "chance (ρ = 0)"


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


def _claim(family: str, period: str, a: str, b: str, metric: str, point: float,
           samples: np.ndarray | None, n: int, runs: int, **kw: object) -> Claim:
    ci = (float("nan"),) * 2 if samples is None else rs.percentile_interval(samples)
    p = float("nan") if samples is None else rs.bootstrap_p(samples)
    return Claim(report=REPORT, family=family, a=a, b=b, metric=metric, effect=float(point),
                 ci=ci, p=p, unit="documents", n=n, seeds=(runs, 0), scope=period, **kw)


def vocabulary_claims(period: str, docs: PeriodDocuments, forecasters: Sequence[Forecaster],
                      references: Sequence[str], n_boot: int = rs.N_BOOTSTRAP,
                      seed: int = rs.SEED) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-vocabulary`` claims of every forecaster not in ``references`` against each of
    them (module doc), and each forecaster's unigram PPL with its 95 % interval
    (``{name: {ppl, ppl_lo, ppl_hi}}``)."""
    nll = document_nll(docs, np.stack([lp for f in forecasters for lp in f.log_ps]))
    rates = rs.per_token_rate(rs.document_weights(docs.n_documents, n_boot, seed), nll,
                              docs.lengths)
    point_ce = nll.sum(axis=0) / docs.lengths.sum()
    ppl, boot, col = {}, {}, 0
    for i, f in enumerate(forecasters):
        cols = slice(col, col + len(f.log_ps))
        col += len(f.log_ps)
        per_run = rates[:, cols]
        if per_run.shape[1] > 1:                   # a trained forecaster: draw its runs too
            per_run = np.take_along_axis(
                per_run, rs.run_draws(per_run.shape[1], n_boot, seed + 1 + i), axis=1)
        ppl[f.name], boot[f.name] = np.exp(point_ce[cols].mean()), np.exp(per_run.mean(1))
    rows = {n: dict(zip(("ppl", "ppl_lo", "ppl_hi"), (float(ppl[n]), *rs.percentile_interval(b))))
            for n, b in boot.items()}
    test = f"paired document bootstrap ({n_boot} replicates; a model's runs drawn too)"
    references = [r for r in references if r in boot]
    claims = [_claim(VOCABULARY, period, f.name, ref, "unigram PPL",
                     ppl[f.name] - ppl[ref], boot[f.name] - boot[ref],
                     docs.n_documents, f.runs, test=test, effect_unit="PPL")
              for f in forecasters if f.name not in references for ref in references]
    return claims, rows


def _normalised_ranks(values: np.ndarray) -> np.ndarray:
    """Row-wise mid-ranks, centred and scaled to unit norm (NaN rows where constant)."""
    r = rankdata(values, axis=-1)
    r -= r.mean(axis=-1, keepdims=True)
    norm = np.sqrt((r * r).sum(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, r / norm, np.nan)


def trend_claims(period: str, docs: PeriodDocuments, half_b: PeriodDocuments,
                 forecasters: Sequence[Forecaster], content: np.ndarray,
                 min_count: int = bt.MIN_COUNT, n_boot: int = rs.N_BOOTSTRAP, seed: int = rs.SEED
                 ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-trend`` claims (module doc) and each ranking forecaster's point ρ and
    precision@k (``{name: {rho, rho_lo, rho_hi, precision, n_trend}}``)."""
    cy, cb = docs.counts(), half_b.counts()
    ids = np.flatnonzero(bt.trend_tokens(cb, cy, np.asarray(content)[:len(cy)], min_count))
    observed = (log_frequencies(cy) - log_frequencies(cb))[ids]
    boot_y = (docs.matrix(ids).T @ rs.document_weights(docs.n_documents, n_boot, seed).T).T
    boot_b = (half_b.matrix(ids).T
              @ rs.document_weights(half_b.n_documents, n_boot, seed + 1).T).T
    obs_ranks = _normalised_ranks(np.log1p(np.asarray(boot_y, float))
                                  - np.log1p(np.asarray(boot_b, float)))
    test = (f"document bootstrap of Y and half B ({n_boot} replicates), predictions fixed "
            "(a model's runs drawn)")
    claims, rows = [], {}
    n = docs.n_documents + half_b.n_documents
    for f in forecasters:
        if f.change is None:
            if f.trend_note:
                claims.append(_claim(TREND, period, f.name, CHANCE, "Spearman ρ", float("nan"),
                                     None, n, f.runs, test=test, better_when="higher",
                                     note=f.trend_note))
            continue
        pred = np.asarray(f.change, dtype=np.float64)[ids]
        rho = bt.spearman(pred, observed)
        samples = None if len(ids) < 2 else obs_ranks @ _normalised_ranks(pred)
        if samples is not None and len(f.changes) > 1:     # draw the model's runs too
            per_run = np.stack([np.asarray(c, dtype=np.float64)[ids] for c in f.changes])
            draws = rs.run_draws(len(per_run), n_boot, seed + 2)
            samples = (obs_ranks * _normalised_ranks(per_run[draws].mean(axis=1))).sum(axis=1)
        if samples is not None and np.isnan(samples).any():
            samples = None
        claims.append(_claim(TREND, period, f.name, CHANCE, "Spearman ρ", rho, samples, n,
                             f.runs, test=test, better_when="higher",
                             note="" if samples is not None else "no ranking on the trend tokens"))
        lo, hi = claims[-1].ci
        rows[f.name] = {"rho": rho, "rho_lo": lo, "rho_hi": hi, "n_trend": len(ids),
                        "precision": bt.precision_at_k(pred, observed)}
    return claims, rows
