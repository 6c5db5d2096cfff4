"""Rolling-origin forecast-skill backtests: words, origins, choices on earlier origins, null, power."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts, log_normalise
from pipeline.forecast.forecasters.registry import all_forecasters
from pipeline.forecast.rolling import rolling_origins
from pipeline.forecast.skill import (FAMILY, REFERENCE, log_ratios, origin_claims, pooled_claims,
                                     trend_origin_claims, word_gains)
from pipeline.forecast.words import RARE, document_frequency, period_counts, word_corpus, words
from pipeline.infra.errors import UserError
from pipeline.stats.verdict import judge

V = 1500


def corpus(slope_sd: float, periods: int = 16, n_docs: int = 400, length: int = 100,
           seed: int = 3) -> list[PeriodDocuments]:
    """Documents of i.i.d. tokens whose log frequencies move linearly in time (slope per word
    N(0, ``slope_sd``) per period; 0: a stationary corpus)."""
    rng = np.random.default_rng(seed)
    base = 1 / (np.arange(V) + 3.0) ** 1.05
    slope = rng.normal(0, slope_sd, V)
    out = []
    for t in range(periods):
        p = base * np.exp(slope * t)
        flat = rng.choice(V, size=n_docs * length, p=p / p.sum()).astype(np.int64)
        out.append(PeriodDocuments(str(2000 + t), tuple(f"d{t}-{j}" for j in range(n_docs)),
                                   flat, np.full(n_docs, length, np.int64), V))
    return out


def permuted(docs: list[PeriodDocuments], seed: int = 0) -> list[PeriodDocuments]:
    """The same documents with their periods permuted (period sizes kept, new keys)."""
    rng = np.random.default_rng(seed)
    texts = [d.flat[d.owner == j] for d in docs for j in range(d.n_documents)]
    order = rng.permutation(len(texts))
    out, at = [], 0
    for d in docs:
        chosen = [texts[i] for i in order[at:at + d.n_documents]]
        at += d.n_documents
        out.append(PeriodDocuments(d.period, tuple(f"p{d.period}-{j}" for j in range(len(chosen))),
                                   np.concatenate(chosen), np.array([len(c) for c in chosen]), V))
    return out


def judged(docs: list[PeriodDocuments], first: int = 5):
    """The backtest's verdicts, with warm-up origins before ``first`` as the stage runs it."""
    data = period_counts(docs)
    rolling = rolling_origins(data, docs, all_forecasters("forecast-skill"), first=first,
                              last=len(docs) - 1,
                              warmup=0)
    claims = [c for o in rolling.origins for c in origin_claims(o)]
    claims += pooled_claims(rolling, 1) + pooled_claims(rolling, 2)
    return rolling, judge(claims)


# --- words ---------------------------------------------------------------------------------------

def test_words_are_lowercased_letter_runs() -> None:
    assert words("BERT-based GPT-4 models, naïve_Bayes 3x") == ["bert", "based", "gpt", "models",
                                                               "naïve", "bayes", "x"]


def test_word_corpus_pools_rare_words_and_counts_documents() -> None:
    wc = word_corpus(["2020", "2021"], [["a", "b"], ["c", "d"]],
                     [["the cat the cat", "the dog"], ["the cat", "123 !!"]], min_count=2)
    assert wc.vocab == ("the", "cat", RARE) and wc.dropped == 1
    counts = wc.counts()
    assert counts.periods == ("2020", "2021") and counts.n_docs.tolist() == [2, 1]
    assert counts.counts.tolist() == [[3, 2, 1], [1, 1, 0]]
    assert counts.doc_counts.tolist() == [[2, 1, 1], [1, 1, 0]]
    assert wc.mask(lambda w: w != "the").tolist() == [False, True, False]
    dropped = word_corpus(["2020"], [["a"]], [["the cat"]], stopwords=frozenset({"the"}),
                          drop_stopwords=True, min_count=1)
    assert dropped.vocab == ("cat",)


def test_document_frequency_counts_each_document_once() -> None:
    d = PeriodDocuments("Y", ("a", "b"), np.array([0, 0, 1, 0]), np.array([3, 1]), 3)
    assert document_frequency(d).tolist() == [2, 1, 0]


# --- the origin loop -----------------------------------------------------------------------------

class Spy(Forecaster):
    """Uniform forecasts; records how much past each call saw."""

    name, kind, description, min_periods = "spy", "stationary", "uniform", 2

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.seen.append((past.n_periods, horizon))
        return np.full(past.vocab_size, -np.log(past.vocab_size))


class Tuned(Forecaster):
    """Persistence smoothed with add-α, α from its grid (the large α is the worse one)."""

    name, kind, description, min_periods = "tuned", "trend", "persistence, α in grid", 1

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": 1000.0}, {"alpha": 0.5}]

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        return log_normalise(np.log(past.counts[-1] + setting["alpha"]))


def test_forecasts_read_only_the_past_and_settings_come_from_earlier_origins() -> None:
    docs = corpus(0.0, periods=8, n_docs=30, length=40)
    spy, tuned = Spy(), Tuned()
    rolling = rolling_origins(period_counts(docs), docs, [spy, tuned], first=1, last=7)
    assert {(n, h) for n, h in spy.seen} == {(y - h + 1, h) for h in (1, 2) for y in range(1, 8)
                                            if y - h + 1 >= 2}
    skipped = {(s.period, s.horizon) for s in rolling.skipped}
    assert skipped == {("2001", 1), ("2001", 2), ("2002", 2)}
    assert "the forecasters need 2" in rolling.skipped[0].reason
    first = [o for o in rolling.warmup if o.horizon == 1][0]    # nothing earlier: no claims
    second = rolling.of(1)[0]
    assert first.period == "2002" and second.period == "2003"
    assert first.chosen["tuned"].index == 0 and "no earlier origin" in first.chosen["tuned"].note
    assert second.chosen["tuned"].index == 1
    assert first.reference == "spy" and "no earlier origin" in first.reference_note


def test_no_usable_origin_is_one_clear_error() -> None:
    docs = corpus(0.0, periods=2, n_docs=10, length=20)
    with pytest.raises(UserError, match="2 consecutive period"):
        rolling_origins(period_counts(docs), docs, all_forecasters("forecast-skill"), first=1,
                        last=1)


def test_a_target_without_documents_is_skipped() -> None:
    docs = corpus(0.0, periods=7, n_docs=20, length=30)
    docs[5] = PeriodDocuments("2005", (), np.zeros(0, np.int64), np.zeros(0, np.int64), V)
    rolling = rolling_origins(period_counts(docs), docs, [Spy(), Tuned()], first=3, last=6,
                              horizons=(1,))
    assert [(s.period, s.reason) for s in rolling.skipped] == [("2005", "0 document(s) in 2005")]


# --- null and power ------------------------------------------------------------------------------

# 11 periods: origins 5-10 scored at each horizon, 0-4 their warm-up. The learned forecaster's
# three fits of each past and horizon (~0.3 s each) are nearly all of these tests' time: 63 s at
# 16 periods, 28 s at 11. At 11, no moving forecaster is better on permuted dates (0 of 72 trend
# claims either), and on the trending corpus each is better at all 6 origins (half asked).
PERIODS = 11


@pytest.mark.slow
def test_permuted_dates_show_no_temporal_skill() -> None:
    """A trending corpus with its dates permuted: no forecaster beats the reference, at any
    origin or pooled, except stationary ones against each other (which is no temporal skill)."""
    docs = permuted(corpus(0.15, periods=PERIODS))
    rolling, verdicts = judged(docs)
    moving = {f.name for f in rolling.forecasters if f.kind != "stationary"}
    better = [v.id for v in verdicts if v.verdict == "better" and (v.a in moving
                                                                   or v.b == REFERENCE)]
    assert better == []
    data = period_counts(docs)
    trend = [c for o in rolling.of(1)
             for c in trend_origin_claims(rolling, o, data, docs, np.ones(V, bool))[0]]
    trend_verdicts = judge(trend)
    assert sum(v.verdict == "better" for v in trend_verdicts) <= 0.1 * len(trend_verdicts)


@pytest.mark.slow
def test_planted_trends_are_found_by_the_moving_forecasters() -> None:
    docs = corpus(0.15, periods=PERIODS)
    rolling, verdicts = judged(docs)
    moving = [f.name for f in rolling.forecasters if f.kind != "stationary"]
    assert moving
    origins = rolling.of(1)
    for name in moving:
        wins = [v for v in verdicts if v.a == name and v.scope.startswith("h1/")
                and v.scope != "h1/pooled" and v.verdict == "better"]
        assert len(wins) >= len(origins) / 2, name
        assert log_ratios(origins, name).mean() < 0, name
    # the per-origin claims of a horizon are one Holm family over all its origins
    per_origin = [v for v in verdicts if v.scope.startswith("h1/") and v.scope != "h1/pooled"
                  and not math.isnan(v.p)]
    assert {v.family_size for v in per_origin} == {len(per_origin)}
    assert len({v.scope for v in per_origin}) == len(origins)
    gains = word_gains(rolling, docs)
    assert set(gains) == {f.name for f in rolling.forecasters}
    assert all(v.family == FAMILY for v in verdicts)


class Seeded(Forecaster):
    """Persistence plus noise whose seed is the fit: three fits that differ as a learned
    forecaster's do."""

    name, kind, description, min_periods = "seeded", "learned", "persistence + fit noise", 1
    fits = 3

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        noise = np.random.default_rng(100 + int(setting.get("fit", 0))).normal(0, 0.3,
                                                                           past.vocab_size)
        return log_normalise(np.log(past.counts[-1] + 1.0) + noise)


def test_a_forecaster_of_several_fits_is_tested_with_their_spread() -> None:
    """Each fit is forecast and scored; the origin keeps them all and their mean; the claim
    against the reference treats the fits as a trained side's runs, so its interval is wider
    than that of fit 0 taken as the forecaster."""
    docs = corpus(0.0, periods=8, n_docs=60, length=40)
    data = period_counts(docs)
    rolling = rolling_origins(data, docs, [Spy(), Tuned(), Seeded()], first=3, last=7, warmup=1)
    origin = rolling.of(1)[0]
    assert origin.fit_nll["seeded"].shape == (60, 3) and len(origin.fit_log_p["seeded"]) == 3
    np.testing.assert_allclose(origin.nll["seeded"], origin.fit_nll["seeded"].mean(axis=1))
    assert origin.fit_nll["spy"].shape == (60, 1)
    claim = [c for c in origin_claims(origin) if c.a == "seeded"][0]
    assert claim.seeds == (3, 0)
    alone = replace(origin, fit_nll={**origin.fit_nll, "seeded": origin.fit_nll["seeded"][:, :1]})
    one = [c for c in origin_claims(alone) if c.a == "seeded"][0]
    assert one.seeds == (0, 0)
    assert claim.ci[1] - claim.ci[0] > one.ci[1] - one.ci[0]
    # the trend claims read every fit's change: their runs, and the runs' test
    trend, _ = trend_origin_claims(rolling, origin, data, docs, np.ones(V, dtype=bool),
                                   min_count=1)
    seeded = [c for c in trend if c.a == "seeded"]
    assert seeded and all(c.seeds == (3, 0) and "runs' spread" in c.test for c in seeded)


@pytest.mark.slow
def test_the_trend_test_over_fits_holds_its_level_and_widens_with_their_spread() -> None:
    """No change between half B and Y; a forecaster of three fits, each a shared guess plus its
    own noise. Over 300 simulations the test of the fits' mean statistic (documents' variance plus
    the fits' spread) rejects at about its level, and a fit spread widens its interval over that
    of the fits' mean weights held fixed (the documents' variance alone)."""
    from pipeline.forecast.claims import Compared, over_runs, rank_weights

    rng = np.random.default_rng(11)
    vocab, n_docs, length = 120, 150, 30
    ids = np.arange(vocab)
    p = 1 / (np.arange(vocab) + 5.0)

    def period() -> PeriodDocuments:
        flat = rng.choice(vocab, n_docs * length, p=p / p.sum()).astype(np.int64)
        return PeriodDocuments("p", tuple(f"d{j}" for j in range(n_docs)), flat,
                               np.full(n_docs, length, np.int64), vocab)

    one_cluster = (np.zeros(n_docs, np.int64), np.zeros(n_docs, np.int64))
    rejected, wider = [], []
    for _ in range(300):
        y, half_b = period(), period()
        compared = Compared.of(y, half_b, ids)
        guess = rng.normal(size=vocab)
        weights = [rank_weights(guess + rng.normal(0, 1.0, vocab))[compared.ids]
                   for _ in range(3)]
        runs = over_runs(compared, weights, one_cluster)
        fixed = over_runs(compared, [np.mean(weights, axis=0)], one_cluster)
        rejected.append(runs.p < 0.05)
        wider.append(runs.se > fixed.se)
    assert np.mean(rejected) <= 0.08        # measured 3.3 % (MC sd 1.0 %): the spread is added
    assert np.mean(wider) == 1.0
