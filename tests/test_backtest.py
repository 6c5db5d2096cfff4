"""Backtest metrics on constructed cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.forecast import backtest as bt
from pipeline.features.frequencies import log_frequencies
from pipeline.forecast.claims import Forecaster, trend_claims, vocabulary_claims
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.models.perplexity import cross_entropy


def test_cross_entropy_and_unigram_perplexity():
    counts = np.array([2, 1, 1])
    log_p = np.log([0.5, 0.25, 0.25])
    # -(2 log .5 + 2 log .25) / 4 = 1.5 log 2
    assert cross_entropy(counts, log_p) == pytest.approx(1.5 * math.log(2))
    assert bt.unigram_perplexity(counts, log_p) == pytest.approx(2 ** 1.5)
    # a forecast equal to the observed proportions is the best possible
    assert cross_entropy(counts, np.log(counts / 4)) < cross_entropy(counts, np.log([1 / 3] * 3))
    # ids beyond the observed vocabulary (padded LM outputs) are ignored
    assert cross_entropy(counts, np.append(log_p, -1.0)) == pytest.approx(1.5 * math.log(2))
    with pytest.raises(ValueError, match="no tokens"):
        cross_entropy(np.zeros(3), log_p)


def test_trend_tokens_need_min_count_in_both_periods_and_content():
    prev = np.array([20, 19, 50, 30])
    year = np.array([20, 40, 10, 30])
    content = np.array([True, True, True, False])
    assert bt.trend_tokens(prev, year, content).tolist() == [True, False, False, False]


def test_spearman_known_answers():
    obs = np.array([0.1, 0.5, -0.2, 0.3, 0.0])
    assert bt.spearman(obs * 3 + 1, obs) == pytest.approx(1.0)
    assert bt.spearman(-obs, obs) == pytest.approx(-1.0)
    # ranks (1,2,3,4,5) vs (2,1,4,3,5): 1 - 6 * 4 / (5 * 24) = 0.8
    assert bt.spearman(np.array([1, 2, 3, 4, 5.0]), np.array([2, 1, 4, 3, 5.0])) == pytest.approx(0.8)
    assert math.isnan(bt.spearman(np.zeros(5), obs))            # no change predicted


def test_precision_at_k_known_answer():
    n = 20
    observed = np.arange(n, dtype=float)             # top 10 % = ids 18, 19
    predicted = np.zeros(n)
    predicted[[19, 5, 7]] = [3.0, 2.0, 1.0]          # top-2 predicted: 19 (hit), 5 (miss)
    assert bt.precision_at_k(predicted, observed, k=2) == pytest.approx(0.5)
    assert bt.precision_at_k(observed, observed, k=2) == pytest.approx(1.0)
    assert bt.precision_at_k(-observed, observed, k=2) == pytest.approx(0.0)
    # k larger than the observed top set caps precision at 2 / 4
    assert bt.precision_at_k(observed, observed, k=4) == pytest.approx(0.5)
    # k larger than n: all n tokens, 2 of them hits
    assert bt.precision_at_k(observed, observed, k=50) == pytest.approx(2 / 20)
    assert math.isnan(bt.precision_at_k(np.ones(n), observed, k=2))


def _docs(rng, n_docs: int = 60, vocab: int = 30) -> PeriodDocuments:
    lengths = rng.integers(5, 40, n_docs)
    flat = rng.integers(0, vocab, int(lengths.sum()))
    return PeriodDocuments("2021", tuple(f"d{i}" for i in range(n_docs)), flat, lengths, vocab)


def test_document_nll_and_counts_are_the_tokens_of_each_document():
    docs = PeriodDocuments("2021", ("a", "b"), np.array([0, 1, 1, 2]), np.array([1, 3]), 4)
    log_p = np.log([[0.5, 0.25, 0.125, 0.125], [0.25] * 4])
    nll = document_nll(docs, log_p)
    assert nll[:, 0] == pytest.approx([np.log(2), 2 * np.log(4) + np.log(8)])
    assert nll[:, 1] == pytest.approx([np.log(4), 3 * np.log(4)])
    assert docs.counts().tolist() == [1, 2, 1, 0]
    assert docs.matrix(np.array([1, 2])).toarray().tolist() == [[0, 0], [2, 1]]
    a, b = docs.halves()
    assert a.n_documents + b.n_documents == 2 and (a.counts() + b.counts()).tolist() == [1, 2, 1, 0]


def test_vocabulary_claims_are_paired_document_bootstraps():
    rng = np.random.default_rng(0)
    docs = _docs(rng)
    counts = docs.counts()
    good = np.log((counts + 1) / (counts + 1).sum())
    flat = np.log(np.full(30, 1 / 30))
    fs = [Forecaster("good", (good,)), Forecaster("flat", (flat,))]
    claims, rows = vocabulary_claims("2021", docs, fs, ["good"], n_boot=200)
    assert [c.a for c in claims] == ["flat"] and claims[0].b == "good"
    c = claims[0]
    assert c.unit == "documents" and c.n == 60 and c.seeds == (0, 0) and c.scope == "2021"
    assert c.effect == pytest.approx(rows["flat"]["ppl"] - rows["good"]["ppl"]) and c.effect > 0
    assert rows["good"]["ppl"] == pytest.approx(bt.unigram_perplexity(counts, good))
    assert rows["good"]["ppl_lo"] < rows["good"]["ppl"] < rows["good"]["ppl_hi"]
    assert c.ci[0] > 0 and c.p < 0.05                 # paired: the good forecast always wins
    assert vocabulary_claims("2021", docs, fs, ["good"], n_boot=200)[0] == claims   # seeded


def test_a_trained_forecaster_s_runs_are_drawn_in_each_replicate():
    """Three runs that disagree widen the interval; three identical runs do not (issue 31 §2)."""
    rng = np.random.default_rng(0)
    docs = _docs(rng)
    counts = docs.counts()
    good = np.log((counts + 1) / (counts + 1).sum())
    tempered = lambda w: np.log(((counts + 1) ** w) / ((counts + 1) ** w).sum())   # noqa: E731
    runs = (tempered(1.0),) * 3                        # three runs, one model: no spread
    mixed = tuple(tempered(w) for w in (0.0, 1.0, 3.0))  # three runs far apart
    def width(log_ps):
        (claim,), _ = vocabulary_claims("2021", docs, [Forecaster("ref", (good,)),
                                                        Forecaster("m", log_ps, runs=3)],
                                        ["ref"], n_boot=300)
        assert claim.seeds == (3, 0)
        return claim.ci[1] - claim.ci[0]
    assert width(mixed) > 3 * width(runs)


def test_trend_claims_test_rho_against_zero_and_mark_untested_ones():
    rng = np.random.default_rng(1)
    docs, half_b = _docs(rng), _docs(rng)
    observed = log_frequencies(docs.counts()) - log_frequencies(half_b.counts())
    fs = [Forecaster("none", (np.zeros(30),)),
          Forecaster("right", (np.zeros(30),), observed),
          Forecaster("wrong", (np.zeros(30),), -observed),
          Forecaster("model", (np.zeros(30),), None, 1, "reads embeddings")]
    claims, rows = trend_claims("2021", docs, half_b, fs, np.ones(30, bool), min_count=5,
                                n_boot=200)
    by = {c.a: c for c in claims}
    assert set(by) == {"right", "wrong", "model"}            # no change predicted: no claim
    assert by["right"].effect == pytest.approx(1.0) and by["right"].ci[0] > 0
    assert by["wrong"].effect == pytest.approx(-1.0) and by["wrong"].ci[1] < 0
    assert by["right"].better_when == "higher" and by["right"].p < 0.05
    assert math.isnan(by["model"].p) and by["model"].note == "reads embeddings"
    assert rows["right"]["n_trend"] == 30 and rows["right"]["precision"] == pytest.approx(3 / 30)


def test_no_trend_tokens_gives_undefined_metrics():
    assert math.isnan(bt.spearman(np.zeros(0), np.zeros(0)))
    assert math.isnan(bt.precision_at_k(np.zeros(0), np.zeros(0)))
