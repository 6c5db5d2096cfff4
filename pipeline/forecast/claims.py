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
* the observed change of a word is its **standardised** change of document frequency from half B
  to Y, ``z_w = (p_Y − p_B) / s_w`` (two-proportion z, ``s_w`` from the pooled share): under no
  change every word's z has mean 0 and variance 1 whatever its frequency or burstiness.

Each claim is a weighted sum of the z's, ``T = Σ_w a_w z_w``, with weights ``a`` fixed by the
prediction, and its null is **no skill**: the forecast carries no information on which words move.
Words are not independent — a topic whose share of the papers drifted (or that a period happens to
hold more papers on) moves hundreds of words at once, and a forecast with topic structure lines up
with that movement by chance: with topic shares drifting between half B and Y, a test that held
the forecast fixed and resampled documents rejected the null for a skill-free forecaster far more
often than its level. So the words' shared directions are partialled out first: the test is the
regression t of the weights on the z's given an intercept, each word's log count in half A and the
leading principal components of the words' document incidence in half A
(:mod:`pipeline.forecast.topics`, one per 10 trend tokens, at most 50), with the word as the unit
(:mod:`pipeline.stats.adjusted`). The directions are read on the predictor's side, like the trend
tokens: with Y's documents among them, a set of words that rose together would itself be a
direction, and partialled out.
What it credits is skill within the topic structure — which words of a topic rise — not foreseeing
which topic grows (a topic-level forecast has as many units as there are topics). Two claims per
forecaster:

* **rank correlation**: ``a`` = the centred ranks of the predicted change — the partial
  correlation of predicted ranks with the standardised change, over every trend token;
* **top-k movers**: ``a`` = +1/(2k) on the k words predicted to rise most and −1/(2k) on the k
  predicted to fall most (k = 1 % of the trend tokens, at least 10): half the difference of the
  mean adjusted z of the predicted risers and fallers. A field's vocabulary moves a few words at a
  time; a statistic over every word dilutes them, the extremes of a ranking do not.

The calibration simulates the null with topic shares fixed, drifting, and on a real corpus with
its dates permuted (``reports/calibration.json``). A trained forecaster whose training (or early
stopping) read Y−1 has seen half B: its trend claims are untested (``seen``). A forecaster without
a predicted change makes no trend claim; one whose half-A change could not be computed makes an
untested one (NaN p, ``note``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import rankdata

from pipeline.forecast import backtest as bt
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.forecast.topics import topic_directions
from pipeline.stats.adjusted import (ADJUSTED_TEST, adjusted_correlation, adjusted_sum,
                                     covariate_basis)
from pipeline.stats.comparisons import Side, compare_rates, rate_interval
from pipeline.stats.ranks import top_k
from pipeline.stats.verdict import Claim, claim_of

REPORT = "forecast"
VOCABULARY, TREND = "forecast-vocabulary", "forecast-trend"
CHANCE = "chance (ρ = 0)"
NO_MOVE = "chance (0)"
TREND_TEST = ADJUSTED_TEST


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


def _incidence(docs: PeriodDocuments, ids: np.ndarray):
    return (docs.matrix(ids) > 0).astype(np.float64)


def standardised_change(docs: PeriodDocuments, half_b: PeriodDocuments, ids: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(z, s)`` over ``ids``: each token's standardised change of document frequency from half
    B of Y−1 to Y (two-proportion z) and its standard error ``s`` from the pooled share (0 where
    the token is in no or every document: such a token has no z and gets none)."""
    in_y = np.asarray(_incidence(docs, ids).sum(axis=0)).ravel()
    in_b = np.asarray(_incidence(half_b, ids).sum(axis=0)).ravel()
    n_y, n_b = float(docs.n_documents), float(half_b.n_documents)
    pooled = (in_y + in_b) / (n_y + n_b)
    s = np.sqrt(pooled * (1 - pooled) * (1 / n_y + 1 / n_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, (in_y / n_y - in_b / n_b) / s, 0.0), s


def rank_weights(predicted: np.ndarray) -> np.ndarray:
    """Centred mid-ranks of ``predicted`` scaled to unit norm (zeros where it is constant)."""
    r = rankdata(predicted) - (len(predicted) + 1) / 2
    norm = float(np.sqrt((r * r).sum()))
    return r / norm if norm > 0 else np.zeros(len(predicted))


def mover_weights(predicted: np.ndarray, k: int) -> np.ndarray:
    """+1/(2k) on the ``k`` largest predicted changes, −1/(2k) on the ``k`` smallest (ties by
    position)."""
    order = np.argsort(-np.asarray(predicted, dtype=np.float64), kind="stable")
    w = np.zeros(len(order))
    w[order[:k]], w[order[len(order) - k:]] = 1 / (2 * k), -1 / (2 * k)
    return w


def trend_basis(half_a: PeriodDocuments, ids: np.ndarray, counts_a: np.ndarray) -> np.ndarray:
    """The orthonormal basis the trend test partials out over the trend tokens ``ids``: an
    intercept, each token's log count in half A and the topic directions of half A's documents
    (module doc)."""
    directions = topic_directions((half_a,), ids)
    return covariate_basis(np.column_stack([np.log(counts_a[ids].astype(np.float64)),
                                            directions]))


def trend_claims(period: str, docs: PeriodDocuments, half_a: PeriodDocuments,
                 half_b: PeriodDocuments, forecasters: Sequence[Forecaster], content: np.ndarray,
                 min_count: int = bt.MIN_COUNT, seen: str = ""
                 ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-trend`` claims (module doc) and each ranking forecaster's point values
    (``{name: {rho, rho_lo, rho_hi, movers, k, n_trend}}``). ``seen``: why a trained
    forecaster's trend claims are untested here (its training read Y−1), or empty."""
    counts_a = half_a.counts()
    ids = np.flatnonzero(bt.trend_tokens(counts_a, np.asarray(content)[:len(counts_a)],
                                         min_count))
    z, s = standardised_change(docs, half_b, ids)
    keep = s > 0
    ids, z = ids[keep], z[keep]
    n, k = len(ids), top_k(len(ids))
    basis = None
    claims: list[Claim] = []
    rows: dict[str, dict[str, float]] = {}
    where = dict(report=REPORT, family=TREND, scope=period, better_when="higher")
    for f in forecasters:
        note = f.trend_note if f.change is None else (seen if f.runs > 0 else "")
        if f.change is None and not note:
            continue
        if note or n < 2 * k or np.ptp(z) == 0:
            claims.append(Claim(a=f.name, b=CHANCE, metric="rank correlation", effect=math.nan,
                                ci=(math.nan, math.nan), p=math.nan, test=TREND_TEST,
                                unit="words", n=n, seeds=(f.runs, 0),
                                note=note or f"{n} trend tokens: too few", **where))
            continue
        if basis is None:
            basis = trend_basis(half_a, ids, counts_a)
        pred = np.asarray(f.change, dtype=np.float64)[ids]
        rho = adjusted_correlation(z, rank_weights(pred), basis)
        movers = adjusted_sum(z, mover_weights(pred, k), basis)
        claims += [claim_of(replace(rho, runs=(f.runs, 0)), a=f.name, b=CHANCE,
                            metric="rank correlation", **where),
                   claim_of(replace(movers, runs=(f.runs, 0)), a=f.name, b=NO_MOVE,
                            metric=f"top-{k} movers", effect_unit="z", **where)]
        rows[f.name] = {"rho": rho.effect, "rho_lo": rho.ci[0], "rho_hi": rho.ci[1],
                        "movers": movers.effect, "k": k, "n_trend": n}
    return claims, rows
