"""Falsification tests of the forecast verdicts (issue 31 §5): on the real sample with its dates
permuted (no trend, no temporal skill) no claim may come out ``better``; on the same corpus with
planted trends, linear extrapolation's trend claim must."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.corpus.anthology import parse_file
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.forecast.counted import LINEAR, backtest_period
from pipeline.forecast.documents import PeriodDocuments, tokenize_documents
from pipeline.forecast.stationary import POOLED, STATIONARY, fit_stationary
from pipeline.stats.verdict import judge
from tests.conftest import SAMPLE_BIB

YEARS = [str(y) for y in range(2016, 2022)]
TRAIN, WINDOW, MIN_COUNT, N_BOOT = YEARS[:4], 2, 10, 500


@pytest.fixture(scope="module")
def permuted() -> dict[str, PeriodDocuments]:
    """The sample's 2016-2021 abstracts with their years permuted across documents (seeded)."""
    papers = parse_file(SAMPLE_BIB).papers
    papers = papers[papers["year"].astype(str).isin(YEARS)].reset_index(drop=True)
    years = np.random.default_rng(0).permutation(papers["year"].astype(str).to_numpy())
    tok = train_scratch_tokenizer(papers["abstract"].tolist(), 400)
    return {y: tokenize_documents(tok, y, papers.loc[years == y, "key"].tolist(),
                                  papers.loc[years == y, "abstract"].tolist()) for y in YEARS}


def planted(docs: dict[str, PeriodDocuments], rate: float = 0.4) -> dict[str, PeriodDocuments]:
    """Each token (but EOS, the last id) rises or falls by ``exp(rate)`` per year: occurrences
    are thinned with a per-token, per-year keep probability (seeded)."""
    rng = np.random.default_rng(1)
    vocab = next(iter(docs.values())).vocab_size
    slope = rng.choice([-rate, rate], vocab)
    out = {}
    for j, (y, d) in enumerate(docs.items()):
        keep_p = np.where(slope > 0, np.exp(slope * (j - len(docs) + 1)), np.exp(slope * j))
        keep_p[-1] = 1.0
        keep = rng.random(len(d.flat)) < keep_p[d.flat]
        lengths = np.bincount(d.owner[keep], minlength=d.n_documents)
        out[y] = PeriodDocuments(y, d.keys, d.flat[keep], lengths.astype(np.int64), vocab)
    return out


def verdicts(docs: dict[str, PeriodDocuments], period: str):
    counts = {y: d.counts() for y, d in docs.items()}
    fits = fit_stationary(counts, TRAIN, WINDOW)
    content = np.ones(next(iter(docs.values())).vocab_size, dtype=bool)
    prev = YEARS[YEARS.index(period) - 1]
    result = backtest_period(period, docs[period], docs[prev], counts, fits, content, WINDOW,
                             min_count=MIN_COUNT, n_boot=N_BOOT)
    return result, judge(result.claims)


@pytest.mark.slow
@pytest.mark.parametrize("period", ["2020", "2021"])
def test_permuted_dates_give_no_temporal_skill_and_no_trend(permuted, period):
    result, judged = verdicts(permuted, period)
    trend = [v for v in judged if v.family == "forecast-trend"]
    vocab = [v for v in judged if v.family == "forecast-vocabulary"]
    assert result.n_trend >= 50 and len(trend) >= 3 and len(vocab) >= 3   # something was tested
    # only linear extrapolation claims skill here, against each of the stationary baselines
    assert {v.a for v in vocab} == {LINEAR} and {v.b for v in vocab} == set(STATIONARY)
    assert not [v.a for v in trend if v.verdict == "better"]
    assert not [v.a for v in vocab if v.verdict == "better"]


def test_planted_trends_are_detected_by_linear_extrapolation(permuted):
    result, judged = verdicts(planted(permuted), "2021")
    lin = next(v for v in judged if v.family == "forecast-trend" and v.a == LINEAR)
    assert lin.verdict == "better" and lin.effect > 0.3, lin
    pooled = next(v for v in judged if v.family == "forecast-trend" and v.a == POOLED)
    assert pooled.verdict == "worse"       # the pooled past bets on the old level: trends persist
