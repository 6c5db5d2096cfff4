"""The trend test's null of no skill: the forecast's weights freed of the words' shared directions.

The projection is checked against least squares; the topic directions against a corpus whose
words come in two blocks; and the point of it all, by simulation: a skill-free forecast that
follows the topics, on a corpus whose topic shares drift, is called better by the document test
far more often than its level, and much less often once half A's topic directions are projected
out of its weights. Not at the level: directions estimated from half A leave a little of the
topic structure in the weights, and the stronger the drift the more that little counts
(``reports/calibration.json`` measures the rate at the calibration's drift).
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.forecast.claims import standardised_change, weighted_change
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.synthetic import drifting_topic_weights
from pipeline.forecast.topics import n_directions, topic_directions
from pipeline.stats.projection import covariate_basis, residual


def test_the_residual_is_what_least_squares_leaves():
    rng = np.random.default_rng(0)
    cov = rng.normal(size=(50, 3))
    x = cov @ [1.0, -2.0, 0.5] + 3.0 + rng.normal(size=50)
    design = np.column_stack([np.ones(50), cov])
    beta, *_ = np.linalg.lstsq(design, x, rcond=None)
    basis = covariate_basis(np.column_stack([cov, cov[:, 0]]))     # a repeated column adds nothing
    assert basis.shape == (50, 4)
    assert residual(basis, x) == pytest.approx(x - design @ beta, abs=1e-10)
    assert not residual(basis, cov[:, 1] * 2 - 1).any()            # in the span: nothing is left


def _block_corpus(rng, n_docs=400, vocab=40):
    """Two topics: a document draws its words from ids 0-19 or from 20-39."""
    lengths = rng.integers(5, 15, n_docs)
    topic = rng.integers(0, 2, n_docs)
    flat = np.concatenate([rng.integers(0, 20, n) + 20 * t for n, t in zip(lengths, topic)])
    return PeriodDocuments("2021", tuple(f"d{i}" for i in range(n_docs)), flat, lengths, vocab)


def test_the_leading_direction_separates_the_topics():
    docs = _block_corpus(np.random.default_rng(1))
    first = topic_directions([docs], np.arange(40), k=1)[:, 0]
    assert np.all(np.sign(first[:20]) == np.sign(first[0]))
    assert np.all(np.sign(first[20:]) == -np.sign(first[0]))
    assert n_directions(250) == 25 and n_directions(5000) == 50 and n_directions(3) == 1


def test_drifting_topic_shares_are_a_random_walk_of_the_log_shares():
    weights = drifting_topic_weights(np.random.default_rng(0), 400, 5, 0.3)
    assert weights.shape == (5, 400) and np.allclose(weights.sum(axis=1), 1.0)
    steps = np.diff(np.log(weights), axis=0)
    steps -= steps.mean(axis=1, keepdims=True)           # the normalisation shifts every log share
    assert steps.std() == pytest.approx(0.3, rel=0.05)


def test_topic_drift_does_not_make_a_skill_free_forecast_better():
    """Words of 20 topics; each topic's share of the documents moves at random from half B to Y,
    and the forecast is an independent draw of topic moves (the topic structure, no skill)."""
    rng = np.random.default_rng(3)
    topics, per_topic, n_docs = 20, 10, 1000
    vocab = topics * per_topic
    ids = np.arange(vocab)

    def period(shares):
        lengths = rng.integers(20, 60, n_docs)
        topic = rng.choice(topics, n_docs, p=shares / shares.sum())
        own = rng.random(int(lengths.sum())) < 0.5
        words = np.where(own, np.repeat(topic, lengths) * per_topic
                         + rng.integers(0, per_topic, int(lengths.sum())),
                         rng.integers(0, vocab, int(lengths.sum())))
        return PeriodDocuments("p", tuple(map(str, range(n_docs))), words, lengths, vocab)

    fixed, freed = [], []
    for _ in range(60):
        before = np.exp(rng.normal(0, 0.3, topics))
        half_a, half_b = period(before), period(before)
        y = period(before * np.exp(rng.normal(0, 0.5, topics)))
        _, s = standardised_change(y, half_b, ids)
        forecast = np.repeat(rng.normal(size=topics), per_topic) + 0.1 * rng.normal(size=vocab)
        weights = forecast - forecast.mean()
        fixed.append(weighted_change(y, half_b, ids, weights, s).p < 0.05)
        basis = covariate_basis(topic_directions([half_a], ids, k=topics))
        freed.append(weighted_change(y, half_b, ids, residual(basis, weights), s).p < 0.05)
    assert np.mean(fixed) > 0.4            # the forecast held fixed: far beyond 5 %
    assert np.mean(freed) < 0.5 * np.mean(fixed)      # freed of the topics: most of it gone
