"""The trend test's null of no skill: partial regression on the words' shared directions.

The regression t is checked against a by-hand least-squares fit; the topic directions against a
corpus whose words come in two blocks; and the point of it all, by simulation: a skill-free
forecast that follows the topics, on a corpus whose topic shares drift, is not called better
more often than the test's level, while the unadjusted sum over the same words is.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.topics import n_directions, topic_directions
from pipeline.stats.adjusted import adjusted_correlation, adjusted_sum, covariate_basis


def test_the_adjusted_sum_is_the_regression_t_of_the_weights():
    rng = np.random.default_rng(0)
    n = 80
    cov = rng.normal(size=(n, 3))
    weights = rng.normal(size=n)
    observed = cov @ [1.0, -0.5, 0.2] + 0.3 * weights + rng.normal(size=n)
    basis = covariate_basis(cov)
    result = adjusted_sum(observed, weights, basis)
    design = np.column_stack([np.ones(n), cov, weights])
    beta, *_ = np.linalg.lstsq(design, observed, rcond=None)
    resid = observed - design @ beta
    s2 = resid @ resid / (n - 5)
    se_beta = math.sqrt(s2 * np.linalg.inv(design.T @ design)[-1, -1])
    assert result.df == n - 5
    assert result.effect / result.se == pytest.approx(beta[-1] / se_beta, rel=1e-9)
    assert result.p == pytest.approx(2 * sps.t.sf(abs(beta[-1] / se_beta), n - 5), rel=1e-9)
    corr = adjusted_correlation(observed, weights, basis)
    # the same t, read as a partial correlation
    assert corr.p == pytest.approx(result.p, rel=1e-9)
    assert corr.ci[0] < corr.effect < corr.ci[1]


def test_a_constant_weighting_is_untested():
    basis = covariate_basis(np.arange(10.0)[:, None])
    result = adjusted_sum(np.arange(10.0) ** 2, np.ones(10), basis)
    assert math.isnan(result.p) and result.note


def _block_corpus(rng, n_docs=400, vocab=40):
    """Two topics: a document draws its words from ids 0-19 or from 20-39."""
    lengths = rng.integers(5, 15, n_docs)
    topic = rng.integers(0, 2, n_docs)
    flat = np.concatenate([rng.integers(0, 20, n) + 20 * t for n, t in zip(lengths, topic)])
    return PeriodDocuments("2021", tuple(f"d{i}" for i in range(n_docs)), flat, lengths, vocab)


def test_the_leading_direction_separates_the_topics():
    docs = _block_corpus(np.random.default_rng(1))
    ids = np.arange(40)
    first = topic_directions([docs], ids, k=1)[:, 0]
    assert np.all(np.sign(first[:20]) == np.sign(first[0]))
    assert np.all(np.sign(first[20:]) == -np.sign(first[0]))
    assert n_directions(250) == 25 and n_directions(5000) == 50 and n_directions(3) == 1


def test_topic_drift_does_not_make_a_skill_free_forecast_better():
    """Words of 20 topics; each topic's share of the documents moves at random between the two
    periods (the observed change), and the forecast is another, independent draw of topic moves
    (the same structure, no skill). The sum over words (as a test with the word or the document
    as the unit sees it) lines up with the drift far beyond its level; once the topic directions
    are partialled out the rejection rate is the level's."""
    rng = np.random.default_rng(3)
    topics, per_topic, n_docs = 20, 10, 600
    vocab = topics * per_topic
    raw, adjusted = [], []
    for _ in range(60):
        def period(weights):
            lengths = rng.integers(20, 60, n_docs)
            topic = rng.choice(topics, n_docs, p=weights)
            own = rng.random(int(lengths.sum())) < 0.5
            words = np.where(own, np.repeat(topic, lengths) * per_topic
                             + rng.integers(0, per_topic, int(lengths.sum())),
                             rng.integers(0, vocab, int(lengths.sum())))
            return PeriodDocuments("p", tuple(map(str, range(n_docs))), words, lengths, vocab)
        before = np.exp(rng.normal(0, 0.3, topics))
        after = before * np.exp(rng.normal(0, 0.3, topics))
        b, y = period(before / before.sum()), period(after / after.sum())
        share = lambda d: np.asarray((d.matrix() > 0).mean(axis=0)).ravel()   # noqa: E731
        z = (share(y) - share(b)) / np.sqrt(0.25 * 2 / n_docs)
        forecast = np.repeat(rng.normal(size=topics), per_topic) + 0.1 * rng.normal(size=vocab)
        weights = forecast - forecast.mean()
        raw.append(float(np.corrcoef(weights, z)[0, 1]))
        basis = covariate_basis(topic_directions([b, y], np.arange(vocab), k=topics))
        adjusted.append(adjusted_correlation(z, weights, basis).p < 0.05)
    naive_t = np.abs(np.array(raw)) * math.sqrt(vocab - 2)
    assert np.mean(naive_t > 1.97) > 0.3          # the word-level sum: far beyond 5 %
    assert np.mean(adjusted) <= 0.12              # adjusted: the level (60 draws, MC sd 0.03)


def test_drifting_topic_shares_are_a_random_walk_of_the_log_shares():
    from pipeline.forecast.synthetic import drifting_topic_weights
    weights = drifting_topic_weights(np.random.default_rng(0), 400, 5, 0.3)
    assert weights.shape == (5, 400) and np.allclose(weights.sum(axis=1), 1.0)
    steps = np.diff(np.log(weights), axis=0)
    steps -= steps.mean(axis=1, keepdims=True)           # the normalisation shifts every log share
    assert steps.std() == pytest.approx(0.3, rel=0.05)
