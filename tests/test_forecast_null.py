"""Falsification tests of the forecast verdicts on real abstracts: 1,200 a year of 2016-2021 from
the packaged Anthology export (the sample's ~250 a year hide any word's trend in sampling
noise), with their years permuted across documents (no trend, no temporal skill): no claim may
come out ``better``, over five different permutations and both backtest years. On one of them
with sparse planted trends (10 word pairs trading places over the years: about 1 % of the trend
tokens move), linear extrapolation's top-k movers claim must come out ``better``."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.corpus.anthology import parse_file
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.forecast.calibration import LINEAR
from pipeline.forecast.counted import backtest_period
from pipeline.forecast.documents import PeriodDocuments, tokenize_documents
from pipeline.forecast.fits import fit_forecasters
from pipeline.forecast.forecasters.registry import stationary
from pipeline.stats.verdict import judge
from tests.conftest import SHARED_DATA

YEARS = [str(y) for y in range(2016, 2022)]
TRAIN, WINDOW, MIN_COUNT = YEARS[:4], 2, 10
PER_YEAR = 1200
PERMUTATIONS = range(5)
PAIRS, SHARE_PER_YEAR = 10, 0.2


@pytest.fixture(scope="module")
def sample() -> tuple[PeriodDocuments, np.ndarray]:
    """``PER_YEAR`` abstracts of each of 2016-2021 (seeded) of the export, tokenized once with a
    scratch BPE of 4,096 tokens, and their real years."""
    papers = parse_file(SHARED_DATA / "anthology+abstracts.bib.gz").papers
    years = papers["year"].astype(str).to_numpy()
    rng = np.random.default_rng(0)
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(years == y), PER_YEAR,
                                              replace=False) for y in YEARS]))
    papers = papers.iloc[keep].reset_index(drop=True)
    tok = train_scratch_tokenizer(papers["abstract"].tolist(), 4096)
    docs = tokenize_documents(tok, "all", papers["key"].tolist(), papers["abstract"].tolist())
    return docs, papers["year"].astype(str).to_numpy()


def permuted(sample, seed: int) -> dict[str, PeriodDocuments]:
    """The abstracts with their years permuted across documents (seeded), and new keys: the
    halves of a period split by a hash of the key, so with the old keys the same documents would
    form half A in every permutation, and a word they happen to overuse would look high in half
    A and rising from half B in each of them (a fixed corpus's artefact, not a trend)."""
    docs, years = sample
    years = np.random.default_rng(seed).permutation(years)
    docs = PeriodDocuments(docs.period, tuple(f"{k}#{seed}" for k in docs.keys), docs.flat,
                           docs.lengths, docs.vocab_size)
    return {y: docs.subset(years == y, y) for y in YEARS}


def planted_pairs(docs: dict[str, PeriodDocuments], seed: int = 1
                  ) -> tuple[dict[str, PeriodDocuments], np.ndarray]:
    """``PAIRS`` pairs of frequent tokens (ranks 20-120 by count) trade places: in the j-th year a
    share ``SHARE_PER_YEAR · j`` (0, .2, .4, ..., 1) of the first token's occurrences is rewritten
    as the second (seeded); every other token is untouched. Returns the corpus and the rising
    tokens."""
    total = sum(d.counts() for d in docs.values())
    order = np.argsort(-total, kind="stable")[20:120]
    chosen = np.random.default_rng(seed).choice(order, size=2 * PAIRS, replace=False)
    falling, rising = chosen[:PAIRS], chosen[PAIRS:]
    rewrite = np.full(len(total), -1)
    rewrite[falling] = rising
    rng = np.random.default_rng(seed + 1)
    out = {}
    for j, (y, d) in enumerate(docs.items()):
        flat = d.flat.copy()
        hit = (rewrite[flat] >= 0) & (rng.random(len(flat)) < SHARE_PER_YEAR * j)
        flat[hit] = rewrite[flat[hit]]
        out[y] = PeriodDocuments(y, d.keys, flat, d.lengths, d.vocab_size)
    return out, rising


def verdicts(docs: dict[str, PeriodDocuments], period: str):
    counts = {y: d.counts() for y, d in docs.items()}
    fits = fit_forecasters(counts, TRAIN, WINDOW)
    content = np.ones(next(iter(docs.values())).vocab_size, dtype=bool)
    prev = YEARS[YEARS.index(period) - 1]
    result = backtest_period(period, docs[period], docs[prev], counts, fits, content, WINDOW,
                             min_count=MIN_COUNT)
    return result, judge(result.claims)


@pytest.mark.slow
@pytest.mark.parametrize("seed", PERMUTATIONS)
def test_permuted_dates_give_no_temporal_skill_and_no_trend(sample, seed):
    docs = permuted(sample, seed)
    for period in ("2020", "2021"):
        result, judged = verdicts(docs, period)
        trend = [v for v in judged if v.family == "forecast-trend"]
        vocab = [v for v in judged if v.family == "forecast-vocabulary"]
        assert result.n_trend >= 1000 and len(trend) >= 6 and len(vocab) >= 3   # tested
        assert {v.a for v in vocab} == {LINEAR} and {v.b for v in vocab} == {
            f.report_name for f in stationary("forecast")}
        assert all(v.verdict != "untested" for v in trend + vocab)
        assert not [v.id for v in trend if v.verdict == "better"], (seed, period)
        assert not [v.id for v in vocab if v.verdict == "better"], (seed, period)


@pytest.mark.slow
def test_sparse_planted_trends_are_found_by_the_top_k_test(sample):
    docs, rising = planted_pairs(permuted(sample, 0))
    result, judged = verdicts(docs, "2021")
    assert 2 * len(rising) / result.n_trend <= 0.011        # sparse: 20 movers of ~2,000 words
    top = next(v for v in judged if v.family == "forecast-trend" and v.a == LINEAR
               and v.metric.endswith("movers"))
    assert top.verdict == "better", top
