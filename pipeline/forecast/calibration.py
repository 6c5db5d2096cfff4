"""Calibration of the forecast claims by simulation: synthetic corpora, no trend or planted ones.

The claims are made by the project's own code (:func:`pipeline.forecast.counted.backtest_period`,
:mod:`pipeline.forecast.claims`, :func:`pipeline.stats.verdict.judge`) on documents drawn from a
:class:`pipeline.forecast.synthetic.TopicCorpus` (bursty, topical, Zipf; every token's law known).
Each simulation draws new documents; seeds are fixed. Results are
:class:`pipeline.stats.calibration.Calibration` records.

* :func:`calibrate_forecast_comparison`: two forecasts of the same documents
  (:func:`pipeline.stats.comparisons.compare_rates` without training: the paired document test).
  The forecasts are fixed (add-one smoothed counts of a training sample); the null pairs a
  forecast with its **twin swap** (each id's probability exchanged with its twin's), whose
  population cross-entropy is exactly the same; planted effects blend the forecast with the
  uniform distribution until its population PPL is 1, 2, 5 % higher (exact cross-entropies).
* :func:`calibrate_trend`: five periods Y−4 .. Y, stationary baselines fitted on the first three,
  every claim of period Y (halves of Y−1 by the project's key-hash rule on synthetic keys). Null:
  the periods i.i.d. Planted: :data:`N_PAIRS` word pairs trade places, a share
  :data:`REWRITE_SHARES` of one word's occurrences rewritten as the other's in Y−4 .. Y. With
  ``drift_sd``: the topics' shares take a random walk from period to period (no forecaster has
  skill) and :data:`GUESSER`, a forecaster without skill whose predictions have topic structure,
  joins the claims; these rows measure a known limit (:data:`DRIFT_LIMIT`).
* :func:`calibrate_permuted`: the same claims on a real corpus with its dates permuted across
  documents (``scripts/calibrate.py`` passes the tokenized sample).

Coverage of a trend claim is measured under the null only: there its population value is 0
(prediction and observation read disjoint, independent documents). Under planted trends the
observed change is a standardised z per word, which has no population value (it grows with the
corpus), so there is nothing to cover (:data:`NULL_ONLY`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.forecast.claims import Predictions
from pipeline.forecast.counted import backtest_period
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.forecast.fits import fit_forecasters
from pipeline.forecast.forecasters import linear_extrapolation, mean_reversion, pooled
from pipeline.forecast.stationary import smoothed
from pipeline.forecast.synthetic import (TopicCorpus, corpus_settings, cross_entropy,
                                         drifting_topics, planted_pairs)
from pipeline.stats.calibration import ALPHA, Calibration, covers
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.verdict import claim_of, judge

PERIODS = ("2017", "2018", "2019", "2020", "2021")     # Y−4 .. Y; the first three train the fits
WINDOW = 2
REWRITE_SHARES = (0.0, 0.2, 0.4, 0.6, 0.8)             # per period, Y−4 .. Y
N_PAIRS = 10
# the forecasters whose trend claims are calibrated, by the names their claims carry
POOLED, MEAN_REVERSION, LINEAR = (module.FORECASTER.report_name
                                  for module in (pooled, mean_reversion, linear_extrapolation))
# a forecaster without skill whose predictions have topic structure: each topic's share moved by
# a random step of the drift's size, drawn independently of the corpus's own steps
GUESSER = "Topic guesser"
TREND_FORECASTERS = (POOLED, MEAN_REVERSION, LINEAR, GUESSER)
TREND_TESTS = {"ρ": "forecast-trend rank correlation", "top-k": "forecast-trend top-k movers"}
TESTS = ("forecast-comparison", *TREND_TESTS.values())      # what this module calibrates
OWN_KEYS = ("A corpus's dates permuted with its documents' own keys is not an exact trend null: "
            "the key-hash halves are the same in every permutation, so a word the A-hash "
            "documents happen to over-use looks high in half A and rising from half B to Y "
            "(`pipeline/forecast/calibration.py`); its rows measure how far a permuted-dates "
            "control that keeps the ids is biased, and the same data re-keyed are the null.")
NULL_ONLY = ("the null's only: there the population value is 0 (prediction and observation read "
             "disjoint, independent documents); under planted trends the observed change is a "
             "standardised z per word, which has no population value (it grows with the corpus), "
             "so there is nothing to cover")
DRIFT_LIMIT = ("A known limit, not an exact null for the test: the claims compare the periods "
               "within topic clusters that k-means finds in the documents, and those clusters "
               "recover the simulated topics only in part, so some of the topic mix's chance "
               "drift stays in the claim (`pipeline/forecast/topics.py`); its rows measure how "
               "often a forecaster without skill is then called better or worse than chance.")
Record = tuple[float, float, "bool | None", str]        # effect, p, interval covers 0, verdict


def _blend_for(p: np.ndarray, log_q: np.ndarray, gain: float) -> np.ndarray:
    """``log((1−ε) q + ε/|V|)``, ε set by bisection so that its population PPL under ``p`` is
    ``1 + gain`` times ``q``'s."""
    target = cross_entropy(p, log_q) + math.log1p(gain)
    q, lo, hi = np.exp(log_q), 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        ce = cross_entropy(p, np.log((1 - mid) * q + mid / len(q)))
        lo, hi = (mid, hi) if ce < target else (lo, mid)
    return np.log((1 - hi) * q + hi / len(q))


def calibrate_forecast_comparison(n_docs: int, n_sims: int,
                                  gains: Sequence[float] = (0.01, 0.02, 0.05),
                                  corpus: TopicCorpus | None = None, train_docs: int = 750,
                                  seed: int = 0) -> Calibration:
    """Forecast A against B on the same ``n_docs`` documents (module doc): the twin-swap null and
    A against its uniform blends whose population PPL is ``1 + g`` times A's."""
    corpus = corpus or TopicCorpus()
    rng = np.random.default_rng([seed, n_docs, 1])
    p = corpus.marginal()
    log_a = smoothed(corpus.sample(rng, train_docs, "train").counts(), 1.0)
    twin = np.arange(corpus.vocab) ^ 1
    pairs = {"null": (log_a[twin], cross_entropy(p, log_a) - cross_entropy(p, log_a[twin]))}
    for g in gains:
        blend = _blend_for(p, log_a, g)
        pairs[f"{100 * g:g} %"] = (blend, cross_entropy(p, log_a) - cross_entropy(p, blend))
    rows: dict[str, list[tuple[float, bool]]] = {k: [] for k in pairs}
    verdicts = 0
    for _ in range(n_sims):
        docs = corpus.sample(rng, n_docs)
        nll = document_nll(docs, np.stack([log_a, *(b for b, _ in pairs.values())]))
        for j, (label, (_, truth)) in enumerate(pairs.items()):
            r = compare_rates(Side(nll[:, 0], False), Side(nll[:, j + 1], False), docs.lengths)
            rows[label].append((r.p, covers(r, truth)))
            if label == "null":
                claim = claim_of(r, report="calibration", family="forecast-vocabulary", a="A",
                                 b="B", metric="unigram PPL", scale="relative")
                verdicts += judge([claim], words_only=True)[0].verdict in ("better", "worse")
    share = {k: float(np.mean([q < ALPHA for q, _ in v])) for k, v in rows.items()}
    cover = {k: float(np.mean([c for _, c in v])) for k, v in rows.items()}
    settings = dict(n_docs=n_docs, corpus=corpus_settings(corpus), train_docs=train_docs,
                    forecast="add-one smoothed counts of the training documents",
                    null="the forecast against its twin swap (equal population cross-entropy)",
                    effect="the forecast blended with the uniform distribution", gains=list(gains))
    return Calibration("forecast-comparison", f"{n_docs} documents", n_sims, share.pop("null"),
                       min(cover.values()), share, settings, fpr_verdict=verdicts / n_sims,
                       coverage_by_effect=cover)


def _trend_records(docs: Mapping[str, PeriodDocuments], content: np.ndarray, min_count: int,
                   periods: Sequence[str] = PERIODS, others: Sequence[Predictions] = ()
                   ) -> tuple[dict[tuple[str, str], Record], int]:
    """``{(forecaster, "ρ"|"top-k"): record}`` of the last period's trend claims (judged with the
    period's other claims; linear extrapolation's vocabulary claims under ``"vocabulary <b>"``)
    and the number of trend tokens."""
    counts = {y: d.counts() for y, d in docs.items()}
    fits = fit_forecasters(counts, list(periods[:-2]), WINDOW)
    result = backtest_period(periods[-1], docs[periods[-1]], docs[periods[-2]], counts, fits,
                             content, WINDOW, others, min_count=min_count)
    out: dict[tuple[str, str], Record] = {}
    for claim, v in zip(result.claims, judge(result.claims, words_only=True)):
        lo, hi = claim.ci
        record = (claim.effect, claim.p, None if math.isnan(lo) else bool(lo <= 0 <= hi),
                  v.verdict)
        if claim.family == "forecast-trend" and claim.a in TREND_FORECASTERS:
            kind = "ρ" if "correlation" in claim.metric or "ρ" in claim.metric else "top-k"
            out[(claim.a, kind)] = record
        elif claim.family == "forecast-vocabulary" and claim.a == LINEAR:
            out[(LINEAR, f"vocabulary {claim.b}")] = record
    return out, result.n_trend


def _summarise_trend(runs: Sequence[dict], n_trend: Sequence[int], size: str, settings: dict,
                     planted: Sequence[dict] = (), diagnostic: str = "") -> list[Calibration]:
    """One :class:`Calibration` per trend claim (ρ, top-k) and forecaster; power: the share of
    planted simulations where the claim (or either claim) is ``better``; ``diagnostic``: why the
    data are not an exact null (:class:`Calibration`), or empty."""
    out = []
    for kind in ("ρ", "top-k"):
        for f in TREND_FORECASTERS:
            rows = [r[(f, kind)] for r in runs if (f, kind) in r]
            if not rows:
                continue
            n, effects = len(rows), np.array([e for e, *_ in rows])
            extra: dict[str, object] = dict(
                mean_effect=float(effects.mean()),
                mean_effect_se=float(effects.std() / math.sqrt(n)),
                sd_effect=float(effects.std()), n_trend_tokens=float(np.mean(n_trend)),
                verdicts={v: float(np.mean([r[3] == v for r in rows]))
                          for v in ("better", "worse")})
            power: dict[str, float] = {}
            if planted:
                power[f"{N_PAIRS} pairs"] = float(np.mean(
                    [r[(f, kind)][3] == "better" for r in planted if (f, kind) in r]))
                power[f"{N_PAIRS} pairs, ρ or top-k"] = float(np.mean(
                    [any(r.get((f, k), (0, 0, 0, ""))[3] == "better" for k in TREND_TESTS)
                     for r in planted]))
                extra["planted_mean_effect"] = float(np.mean(
                    [r[(f, kind)][0] for r in planted if (f, kind) in r]))
            if f == LINEAR and kind == "ρ":
                extra["vocabulary_better_rate"] = float(np.mean(
                    [any(v[3] == "better" for k, v in r.items() if k[1].startswith("vocabulary"))
                     for r in runs]))
            covered = [c for _, _, c, _ in rows if c is not None]
            fpr = float(np.mean([p < ALPHA for _, p, *_ in rows]))
            out.append(Calibration(
                TREND_TESTS[kind], f"{size}, {f}", n, fpr,
                float(np.mean(covered)) if covered else None, power, settings,
                fpr_verdict=float(np.mean([r[3] in ("better", "worse") for r in rows])),
                coverage_note=NULL_ONLY if covered else "the claim has no interval", extra=extra,
                diagnostic=diagnostic))
    return out


def topic_guesser(corpus: TopicCorpus, rng: np.random.Generator, shares: np.ndarray,
                  sd: float) -> Predictions:
    """:data:`GUESSER`'s forecast of the period after one with topic ``shares``: the marginal of
    those shares moved by a random step of log sd ``sd`` (independent of the corpus's step)."""
    now = corpus.marginal(topic_shares=shares)
    moved = shares * np.exp(rng.normal(0.0, sd, len(shares)))
    guess = corpus.marginal(topic_shares=moved / moved.sum())
    return Predictions(GUESSER, (np.log(guess),), change=np.log(guess) - np.log(now))


def calibrate_trend(n_docs: int, n_sims: int, n_planted: int | None = None,
                    corpus: TopicCorpus | None = None, min_count: int = 20,
                    drift_sd: float = 0.0, seed: int = 0) -> list[Calibration]:
    """The ``forecast-trend`` claims of period Y with ``n_docs`` documents a period (module doc):
    ``n_sims`` null simulations, ``n_planted`` (default ``n_sims``) with planted pairs;
    ``drift_sd`` > 0: the topics' log shares take a random walk with steps of that sd from
    period to period (:func:`pipeline.forecast.synthetic.drifting_topics`), so the null is
    "no skill", not "no change"."""
    corpus = corpus or TopicCorpus()
    content = corpus.content
    runs, planted, n_trend, moving = [], [], [], []
    n_planted = n_sims if n_planted is None else n_planted
    for i, plant in enumerate([False] * n_sims + [True] * n_planted):
        rng = np.random.default_rng([seed, n_docs, i])
        pairs = planted_pairs(corpus, rng, n_docs, min_count, N_PAIRS) if plant else {}
        mixes = (drifting_topics(corpus, rng, len(PERIODS), drift_sd) if drift_sd > 0
                 else [None] * len(PERIODS))
        docs = {y: corpus.sample(rng, n_docs, y, f"s{i}-", pairs, s if plant else 0.0, mix)
                for y, s, mix in zip(PERIODS, REWRITE_SHARES, mixes)}
        others = [topic_guesser(corpus, rng, mixes[-2], drift_sd)] if drift_sd > 0 else []
        records, k = _trend_records(docs, content, min_count, others=others)
        (planted if plant else runs).append(records)
        if plant:
            ids = np.flatnonzero(content & (docs[PERIODS[-2]].halves()[0].counts() >= min_count))
            moving.append(len(np.intersect1d(ids, [*pairs, *pairs.values()])) / max(len(ids), 1))
        else:
            n_trend.append(k)
    settings = dict(n_docs=n_docs, periods=list(PERIODS), window=WINDOW,
                    fitted_on=list(PERIODS[:3]), min_count=min_count,
                    corpus=corpus_settings(corpus), n_pairs=N_PAIRS,
                    rewrite_shares=list(REWRITE_SHARES), halves="pipeline.corpus.halves (key hash)",
                    topic_drift_sd=drift_sd)
    size = f"{n_docs} documents" + (f", topic drift sd {drift_sd:g}" if drift_sd > 0 else "")
    out = _summarise_trend(runs, n_trend, size, settings, planted,
                           diagnostic=DRIFT_LIMIT if drift_sd > 0 else "")
    for c in out:
        c.extra.update(n_planted=n_planted, planted_share_of_trend_tokens_moving=
                       float(np.mean(moving)) if moving else None)
    return out


def calibrate_permuted(docs: PeriodDocuments, years: np.ndarray, n_sims: int, content: np.ndarray,
                       periods: Sequence[str] = PERIODS, min_count: int = 20, rekey: bool = False,
                       label: str = "sample, permuted dates", seed: int = 0) -> list[Calibration]:
    """The trend claims of ``periods[-1]`` on ``docs`` (one real corpus; ``years [n]``: each
    document's period), its dates permuted across documents in each simulation.

    With the documents' own keys (``rekey=False``: a permuted-dates check that keeps the old ids)
    the split of the corpus into key-hash halves is the same in every permutation: half A of Y−1 is
    drawn from the A-hash documents, half B from the B-hash ones, Y from both, so a word that the
    A-hash documents happen to over-use looks high in half A and rising from half B to Y — a
    small shared component, not an exact null. ``rekey=True`` gives every document a new key in
    each simulation (the halves re-drawn with the dates), which is an exact null."""
    years = np.asarray(years).astype(str)
    runs, n_trend = [], []
    for i in range(n_sims):
        shuffled = np.random.default_rng([seed, i]).permutation(years)
        keys = tuple(f"{k}#{i}" for k in docs.keys) if rekey else docs.keys
        pool = PeriodDocuments(docs.period, keys, docs.flat, docs.lengths, docs.vocab_size)
        by = {}
        for y in periods:
            d = pool.subset(shuffled == y, y)
            by[y] = PeriodDocuments(y, d.keys, d.flat, d.lengths, d.vocab_size)
        records, k = _trend_records(by, content, min_count, periods)
        runs.append(records)
        n_trend.append(k)
    settings = dict(n_docs={y: int(np.sum(years == y)) for y in periods}, periods=list(periods),
                    window=WINDOW, fitted_on=list(periods[:3]), min_count=min_count,
                    halves="re-drawn in every permutation (new keys)" if rekey
                    else "the documents' own keys (the same halves in every permutation)")
    return _summarise_trend(runs, n_trend, label, settings,
                            diagnostic="" if rekey else OWN_KEYS)
