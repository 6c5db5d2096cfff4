"""Backtest metrics on constructed cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.forecast import backtest as bt
from pipeline.features.frequencies import log_frequencies
from pipeline.forecast.claims import (Compared, Predictions, mover_weights, trend_claims,
                                      vocabulary_claims, weighted_change)
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


def test_trend_tokens_are_content_tokens_with_min_count_on_one_side():
    half_a = np.array([25, 25, 3, 40])
    content = np.array([True, True, True, False])
    assert bt.trend_tokens(half_a, content).tolist() == [True, True, False, False]


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


def test_vocabulary_claims_are_paired_document_tests():
    rng = np.random.default_rng(0)
    docs = _docs(rng)
    counts = docs.counts()
    good = np.log((counts + 1) / (counts + 1).sum())
    flat = np.log(np.full(30, 1 / 30))
    fs = [Predictions("good", (good,)), Predictions("flat", (flat,))]
    claims, rows = vocabulary_claims("2021", docs, fs, ["good"])
    assert [c.a for c in claims] == ["flat"] and claims[0].b == "good"
    c = claims[0]
    assert c.unit == "abstracts" and c.n == 60 and c.seeds == (0, 0) and c.scope == "2021"
    relative = 100 * (rows["flat"]["ppl"] / rows["good"]["ppl"] - 1)
    assert c.effect == pytest.approx(relative) and c.effect > 0 and c.effect_unit == "% PPL"
    assert rows["good"]["ppl"] == pytest.approx(bt.unigram_perplexity(counts, good))
    assert rows["good"]["ppl_lo"] < rows["good"]["ppl"] < rows["good"]["ppl_hi"]
    assert c.ci[0] > 0 and c.p < 0.05                 # paired: the good forecast always wins


def test_a_trained_forecaster_s_runs_add_their_spread():
    """Three runs that disagree widen the interval; three identical runs do not."""
    rng = np.random.default_rng(0)
    docs = _docs(rng)
    counts = docs.counts()
    good = np.log((counts + 1) / (counts + 1).sum())
    tempered = lambda w: np.log(((counts + 1) ** w) / ((counts + 1) ** w).sum())   # noqa: E731
    runs = (tempered(1.5),) * 3                        # three runs, one model: no spread
    mixed = tuple(tempered(w) for w in (0.0, 1.0, 3.0))  # three runs far apart
    def width(log_ps):
        (claim,), _ = vocabulary_claims("2021", docs, [Predictions("ref", (good,)),
                                                        Predictions("m", log_ps, runs=3)],
                                        ["ref"])
        assert claim.seeds == (3, 0)
        return claim.ci[1] - claim.ci[0]
    assert width(mixed) > 3 * width(runs)


def _topical(rng, n_docs: int, vocab: int = 30, rising: tuple[int, ...] = ()) -> PeriodDocuments:
    """Documents whose tokens are uniform, except that ``rising`` tokens are drawn 3x as often."""
    weights = np.ones(vocab)
    weights[list(rising)] = 3.0
    lengths = rng.integers(5, 40, n_docs)
    flat = rng.choice(vocab, int(lengths.sum()), p=weights / weights.sum())
    return PeriodDocuments("2021", tuple(f"d{i}" for i in range(n_docs)), flat, lengths, vocab)


def test_trend_claims_find_a_forecast_of_the_real_movers_and_mark_untested_ones():
    rng = np.random.default_rng(1)
    up = tuple(range(5))
    docs, half_a, half_b = _topical(rng, 300, rising=up), _topical(rng, 150), _topical(rng, 150)
    truth = np.zeros(30)
    truth[list(up)] = 1.0
    fs = [Predictions("none", (np.zeros(30),)),
          Predictions("right", (np.zeros(30),), truth + rng.normal(0, 0.01, 30)),
          Predictions("wrong", (np.zeros(30),), -truth + rng.normal(0, 0.01, 30)),
          Predictions("model", (np.zeros(30),), None, 1, "reads embeddings"),
          Predictions("trained", (np.zeros(30),) * 3, truth, 3)]
    claims, rows = trend_claims("2021", docs, half_a, half_b, fs, np.ones(30, bool),
                                min_count=5, seen="its training read Y−1")
    by = {(c.a, c.metric.split(" ")[-1]): c for c in claims}
    assert {a for a, _ in by} == {"right", "wrong", "model", "trained"}   # "none": no claim
    rho = by[("right", "correlation")]
    assert rho.effect > 0.3 and rho.ci[0] > 0 and rho.p < 0.01
    assert rho.unit == "documents" and rho.n == 450 and rho.better_when == "higher"
    assert by[("wrong", "correlation")].effect == pytest.approx(-rho.effect, abs=0.05)
    movers = by[("right", "movers")]
    assert movers.metric == "top-10 movers" and movers.effect > 1 and movers.p < 0.01
    assert math.isnan(by[("model", "correlation")].p)
    assert by[("model", "correlation")].note == "reads embeddings"
    assert "read Y−1" in by[("trained", "correlation")].note
    assert rows["right"]["n_trend"] == 30 and rows["right"]["k"] == 10


def test_trend_tokens_are_chosen_on_half_a_only():
    """Tokens frequent in Y and half B but rare in half A are not ranked: the selection must not
    read the counts the observed change is measured on."""
    rng = np.random.default_rng(2)
    docs, half_a, half_b = _docs(rng, 200), _docs(rng, n_docs=8), _docs(rng, 200)
    fs = [Predictions("f", (np.zeros(30),), rng.normal(size=30))]
    _, rows = trend_claims("2021", docs, half_a, half_b, fs, np.ones(30, bool), min_count=5)
    assert rows["f"]["n_trend"] == int((half_a.counts() >= 5).sum()) < 30


def test_the_weighted_change_is_a_sum_of_standardised_changes():
    y = PeriodDocuments("2021", ("a", "b", "c", "d"), np.array([0, 0, 0, 1, 0, 1]),
                        np.array([3, 1, 1, 1]), 2)
    b = PeriodDocuments("2020", ("e", "f", "g", "h"), np.array([1, 1, 1, 0]),
                        np.array([1, 1, 1, 1]), 2)
    compared = Compared.of(y, b, np.array([0, 1]))
    z = compared.z
    # token 0 in 2/4 documents of Y, 1/4 of B: pooled 3/8
    assert z[0] == pytest.approx((0.5 - 0.25) / np.sqrt(3 / 8 * 5 / 8 * 0.5)) and z[1] < 0
    weights = np.array([0.7, -0.3])
    one_cluster = (np.zeros(4, np.int64), np.zeros(4, np.int64))
    result = weighted_change(compared, weights, one_cluster)
    assert result.effect == pytest.approx(float(weights @ z)) and result.unit
    assert mover_weights(np.array([3.0, 1.0, 2.0, 0.0]), 1).tolist() == [0.5, 0, 0, -0.5]


def test_predicted_movers_are_ranked_by_their_change_over_its_sampling_noise():
    """Rare trend tokens' predicted changes are the noisiest (their half-A log counts are): ranked
    raw, they fill the top-k; scaled by √(half-A count), the confident moves of frequent tokens
    that did rise lead the ranking and the top-k claim finds them."""
    rng = np.random.default_rng(7)
    vocab, common, rising = 60, 30, tuple(range(10))
    weights = np.where(np.arange(vocab) < common, 4.0, 0.3)

    def period(n_docs, boost=()):
        w = weights.copy()
        w[list(boost)] *= 2.0
        lengths = rng.integers(10, 40, n_docs)
        flat = rng.choice(vocab, int(lengths.sum()), p=w / w.sum())
        return PeriodDocuments("2021", tuple(f"d{i}" for i in range(n_docs)), flat, lengths, vocab)

    docs, half_a, half_b = period(400, rising), period(200), period(200)
    change = np.zeros(vocab)
    change[list(rising)] = 1.0
    change[common:] = rng.normal(0.0, 1.5, vocab - common)     # rare tokens: noise
    claims, rows = trend_claims("2021", docs, half_a, half_b,
                                [Predictions("f", (np.zeros(vocab),), change)],
                                np.ones(vocab, bool), min_count=5)
    ids = np.flatnonzero(half_a.counts() >= 5)
    k = rows["f"]["k"]
    raw_top = ids[np.argsort(-change[ids], kind="stable")[:k]]
    assert (raw_top >= common).sum() >= k // 2                # raw: the rare tokens' noise leads
    movers = next(c for c in claims if "movers" in c.metric)
    assert movers.p < 1e-3 and movers.effect > 1.0            # scaled: the risers are found
