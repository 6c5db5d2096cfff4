"""The trend claims' topic clusters and their post-stratified test, on synthetic corpora with known
topics."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pipeline.forecast.claims import post_stratified
from pipeline.forecast.synthetic import TopicCorpus
from pipeline.forecast.topics import n_clusters, topic_clusters
from pipeline.stats.calibration import token_counts
from pipeline.stats.comparisons import Side, compare_items


def _documents_with_topics(corpus: TopicCorpus, n_docs: int, seed: int):
    """Documents of ``corpus`` and each one's topic (drawn again from the same seed: the
    sampler draws lengths, then topics)."""
    docs = corpus.sample(np.random.default_rng(seed), n_docs)
    rng = np.random.default_rng(seed)
    token_counts(rng, n_docs)
    return docs, rng.integers(1, corpus.topics + 1, n_docs)


def test_clusters_recover_the_documents_topics():
    """Spherical k-means over idf-weighted incidence finds the planted topics far above chance,
    and the same clusters twice."""
    corpus = TopicCorpus(vocab=1000, topics=6, topic_share=0.5)
    docs, topic = _documents_with_topics(corpus, 900, 3)
    labels = topic_clusters(docs.matrix(), 6)
    purity = sum(Counter(topic[labels == c]).most_common(1)[0][1]
                 for c in np.unique(labels)) / len(topic)
    assert purity > 0.6                                  # chance: about 1/6 plus noise
    assert np.array_equal(labels, topic_clusters(docs.matrix(), 6))
    assert n_clusters(900) == 3 and n_clusters(599) == 1 and n_clusters(100_000) == 40
    assert topic_clusters(docs.matrix(), 1).tolist() == [0] * 900


def test_one_cluster_is_welchs_test():
    rng = np.random.default_rng(0)
    y, b = rng.normal(0.3, 1.0, 80), rng.normal(0.0, 2.0, 50)
    one = post_stratified(y, b, np.zeros(80, np.int64), np.zeros(50, np.int64))
    welch = compare_items(Side([y], trained=False), Side([b], trained=False))
    assert one.effect == pytest.approx(welch.effect)
    assert one.se == pytest.approx(welch.se) and one.df == pytest.approx(welch.df)
    assert one.p == pytest.approx(welch.p)


def test_a_shift_of_the_topic_mix_is_not_a_change():
    """Two clusters with different means and the same means in both periods; period Y holds more
    of the high cluster. Compared as one sample per period the mix looks like a change; within
    clusters it is not one."""
    rng = np.random.default_rng(1)
    c_y = np.repeat([0, 1], [300, 100])
    c_b = np.repeat([0, 1], [100, 300])
    y = np.where(c_y == 0, 2.0, 0.0) + rng.normal(0, 0.5, 400)
    b = np.where(c_b == 0, 2.0, 0.0) + rng.normal(0, 0.5, 400)
    pooled = post_stratified(y, b, np.zeros(400, np.int64), np.zeros(400, np.int64))
    within = post_stratified(y, b, c_y, c_b)
    assert pooled.p < 1e-6 and pooled.effect == pytest.approx(1.0, abs=0.15)
    assert abs(within.effect) < 3 * within.se and within.p > 0.001
    # a cluster with one document on a side is left out, the others' shares renormalised
    lonely = post_stratified(np.append(y, 9.0), b, np.append(c_y, 2), c_b)
    assert lonely.effect == pytest.approx(within.effect)
