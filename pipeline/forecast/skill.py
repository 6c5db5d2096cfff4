"""The claims of a rolling-origin backtest (:mod:`pipeline.forecast.rolling`): temporal skill.

Family ``forecast-skill`` (report ``forecast-skill``), metric unigram PPL, ``b`` the reference
(the best stationary forecaster chosen on earlier origins):

* **per origin** (``scope`` ``h<h>/<Y>``): each forecaster other than that origin's reference
  against it on ``Y``'s documents — the relative change of PPL, tested by the paired t over
  documents (:func:`pipeline.stats.comparisons.compare_rates`, the test of the forecast report's
  vocabulary claims; a forecaster of several fits, a learned one, is a trained side whose fits
  are its runs, so the fit-to-fit spread is part of the test); Holm over the forecasters and
  **every origin** of the horizon
  (:func:`origins_family`), since the report reads the origins together ("better in 2019 and
  2021-2023");
* **pooled** (``scope`` ``h<h>/pooled``, ``b`` = :data:`REFERENCE`): each forecaster's mean
  per-origin log-PPL ratio against the origin's reference (0 where it is the reference), tested
  with the **origin** as the unit by the Diebold–Mariano test
  (:func:`pipeline.stats.diebold_mariano.diebold_mariano`: a HAC variance, because consecutive
  origins' ratios are correlated); untested below :data:`MIN_POOLED` origins. Holm over the
  forecasters.

Family ``forecast-trend`` (report ``forecast-skill``, ``scope`` ``h1/<Y>``): the split-half
trend claims of :func:`pipeline.forecast.claims.trend_claims` at each horizon-1 origin — the
forecaster re-run on the same past with period ``Y − 1`` replaced by its half A, its predicted
change = that forecast minus persistence of half A (add-α with the forecaster's α, else 1;
:meth:`pipeline.forecast.forecasters.base.Forecaster.change`, as in the forecast report),
the observed change from half B of ``Y − 1`` to ``Y``. A forecaster whose predicted change is
constant (persistence) makes no trend claim. Holm over the forecasters, metrics and every origin,
as for the per-origin skill claims.

**Words** (:func:`word_gains`): over the horizon-1 origins, each forecaster's log-likelihood gain
over the reference per word, ``Σ_Y c_Y(w) (log p̂_f(w) − log p̂_ref(w))``: the words it got most
right (largest gain) and most wrong.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from pipeline.forecast import backtest as bt
from pipeline.forecast.claims import Predictions, trend_claims
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts
from pipeline.forecast.rolling import OriginScore, Rolling
from pipeline.forecast.words import document_frequency
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.diebold_mariano import diebold_mariano
from pipeline.stats.verdict import Claim, claim_of

REPORT = FAMILY = "forecast-skill"
REFERENCE = "best stationary (chosen per origin)"
METRIC = "unigram PPL"
MIN_POOLED = 10


def origins_family(horizon: int) -> str:
    """The Holm family's split of every per-origin claim of ``horizon``: one family over all
    its origins (each claim keeps its origin's scope, ``h<h>/<Y>``, in its record id)."""
    return f"h{horizon}/origins"


def origin_claims(origin: OriginScore) -> list[Claim]:
    """Each forecaster against the origin's reference on its documents (module doc)."""
    ref = Side(origin.fit_nll[origin.reference], trained=False)
    return [replace(claim_of(compare_rates(Side(nll, trained=nll.shape[1] > 1), ref,
                                           origin.lengths, (name, origin.reference)),
                             report=REPORT, family=FAMILY, a=name, b=origin.reference,
                             metric=METRIC, scale="relative", effect_unit="% PPL",
                             scope=f"h{origin.horizon}/{origin.period}"),
                    holm_scope=origins_family(origin.horizon))
            for name, nll in origin.fit_nll.items() if name != origin.reference]


def log_ratios(origins: list[OriginScore], name: str) -> np.ndarray:
    """float64 ``[origins]``: log PPL of ``name`` minus the reference's, per origin."""
    return np.array([o.log_ppl(name) - o.log_ppl(o.reference) for o in origins])


def pooled_claims(rolling: Rolling, horizon: int) -> list[Claim]:
    """Each forecaster's pooled skill over the origins of ``horizon`` (module doc)."""
    origins = rolling.of(horizon)
    claims = []
    for f in rolling.forecasters:
        ratios = log_ratios(origins, f.name)
        result = diebold_mariano(ratios, horizon)
        if len(origins) and not ratios.any():
            result = replace(result, note="the reference at every origin: nothing to compare")
        elif len(origins) < MIN_POOLED:
            result = replace(result, p=math.nan, ci=(math.nan, math.nan),
                             note=f"{len(origins)} origins: a pooled claim needs {MIN_POOLED}")
        claims.append(claim_of(result, report=REPORT, family=FAMILY, a=f.name, b=REFERENCE,
                               metric=METRIC, scale="relative", effect_unit="% PPL",
                               scope=f"h{horizon}/pooled"))
    return claims


def _with_half(data: PeriodCounts, half: PeriodDocuments) -> PeriodCounts:
    """``data`` with its last period's counts replaced by ``half``'s."""
    counts, doc_counts, n_docs = data.counts.copy(), data.doc_counts.copy(), data.n_docs.copy()
    counts[-1], doc_counts[-1], n_docs[-1] = half.counts(), document_frequency(half), \
        half.n_documents
    return PeriodCounts(data.periods, counts, doc_counts, n_docs)


def trend_origin_claims(rolling: Rolling, origin: OriginScore, data: PeriodCounts,
                        documents: list[PeriodDocuments], content: np.ndarray,
                        min_count: int = bt.MIN_COUNT) -> tuple[list[Claim], dict]:
    """The ``forecast-trend`` claims of one horizon-1 origin (module doc) and their values."""
    y = origin.target
    half_a, half_b = documents[y - 1].halves()
    past = _with_half(data.until(y), half_a)
    entries = [_predictions(f, origin, past) for f in rolling.forecasters]
    claims, rows = trend_claims(origin.period, documents[y], half_a, half_b, entries, content,
                                min_count)
    return [replace(c, report=REPORT, scope=f"h1/{origin.period}", holm_scope=origins_family(1))
            for c in claims], rows


def _predictions(f: Forecaster, origin: OriginScore, past: PeriodCounts) -> Predictions:
    """What ``f`` predicted at ``origin`` for the trend claims: its change from the half-A past;
    a forecaster of several fits, each fit's (their runs' spread enters the test)."""
    changes = [f.change(past, 1, s) for s in f.fit_settings(origin.chosen[f.name].setting)]
    log_ps = origin.fit_log_p[f.name]
    if len(changes) == 1 or any(c is None for c in changes):
        return Predictions(f.name, log_ps, changes[0])
    return Predictions(f.name, log_ps, np.mean(np.stack(changes), axis=0), runs=len(changes),
                       changes=tuple(changes))


def word_gains(rolling: Rolling, documents: list[PeriodDocuments], horizon: int = 1
               ) -> dict[str, np.ndarray]:
    """float64 ``[V]`` per forecaster: its summed log-likelihood gain over the reference on
    each word at the origins of ``horizon`` (module doc)."""
    gains: dict[str, np.ndarray] = {}
    for o in rolling.of(horizon):
        counts = documents[o.target].counts().astype(np.float64)
        ref = o.log_p[o.reference][:len(counts)]
        for name, lp in o.log_p.items():
            gain = counts * (lp[:len(counts)] - ref)
            gains[name] = gains[name] + gain if name in gains else gain
    return gains
