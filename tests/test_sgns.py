"""SGNS + Procrustes semantic change (pipeline.semantic.sgns)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.semantic.sgns import SGNSVectors, aligned_change, sgns_change, tokenize, train_sgns

TOPICS = [[f"topic{chr(97 + t)}{chr(97 + j)}" for j in range(12)] for t in range(6)]


def corpus(shifty_topic: int, seed: int, n_docs: int = 1200, length: int = 16) -> list[str]:
    """Texts of one topic each; ``steady`` always in topic 0, ``shifty`` in ``shifty_topic``."""
    rng = np.random.default_rng(seed)
    texts = []
    for i in range(n_docs):
        topic = i % len(TOPICS)
        words = list(rng.choice(TOPICS[topic], size=length))
        if topic == 0:
            words[length // 2] = "steady"
        if topic == shifty_topic:
            words[length // 3] = "shifty"
        texts.append(" ".join(words) + ".")
    return texts


FIRST, LAST = corpus(1, seed=1), corpus(4, seed=2)
KW = dict(dim=16, window=3, negatives=5, epochs=10, min_count=5)


@pytest.fixture(scope="module")
def models() -> tuple[SGNSVectors, SGNSVectors]:
    return (train_sgns(FIRST, seed=0, progress=False, **KW),
            train_sgns(LAST, seed=0, progress=False, **KW))


def test_tokenize_words_and_pseudowords() -> None:
    assert tokenize("A psw000 Model-based model, of BERT2 x1 ab.") == ["psw000", "model", "bert2"]
    # SemEval-2020 Task 1's English targets carry a part-of-speech tag in its corpora
    assert tokenize("an attack_nn on the plane_nn, ab_nn") == ["attack_nn", "the", "plane_nn"]


@pytest.mark.slow
def test_changed_context_scores_higher_than_stable() -> None:
    scores = sgns_change(FIRST, LAST, ["shifty", "steady"], seed=0, **KW)
    assert scores.dtype == np.float64 and scores.shape == (2,)
    assert scores[0] > scores[1] + 0.2, scores
    # the stable topic words barely move either
    background = sgns_change(FIRST, LAST, TOPICS[2], seed=0, **KW)
    assert scores[0] > np.nanmax(background), (scores, background)


@pytest.mark.slow
def test_deterministic_with_seed() -> None:
    words = ["shifty", "steady", *TOPICS[3]]
    a = sgns_change(FIRST, LAST, words, seed=3, **KW)
    b = sgns_change(FIRST, LAST, words, seed=3, **KW)
    c = sgns_change(FIRST, LAST, words, seed=4, **KW)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.slow
def test_rotating_one_space_changes_no_score(models: tuple[SGNSVectors, SGNSVectors]) -> None:
    first, last = models
    words = ["shifty", "steady", *TOPICS[0], *TOPICS[5]]
    base = aligned_change(first, last, words)
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(KW["dim"], KW["dim"])))
    for rotated in (SGNSVectors(last.words, last.counts, last.vectors @ q),
                    SGNSVectors(last.words, last.counts, last.vectors @ q[:, ::-1])):  # reflection too
        np.testing.assert_allclose(aligned_change(first, rotated, words), base, atol=1e-9)
    np.testing.assert_allclose(
        aligned_change(SGNSVectors(first.words, first.counts, first.vectors @ q), last, words),
        base, atol=1e-9)


def test_nan_for_words_outside_either_vocabulary(models: tuple[SGNSVectors, SGNSVectors]) -> None:
    first, last = models
    only_first = ["onlyfirst"] * 10
    texts_first = FIRST + [" ".join(only_first)]
    scores = sgns_change(texts_first, LAST, ["unknownword", "onlyfirst", "Steady", "ab"],
                         seed=0, **KW)
    assert np.isnan(scores[[0, 1, 3]]).all() and np.isfinite(scores[2])
    assert np.isnan(aligned_change(first, last, ["nothere"])).all()
    empty = train_sgns(["a b c"], progress=False, **KW)
    assert empty.words == () and np.isnan(aligned_change(empty, last, ["steady"])).all()


def test_negative_sampling_loss_decreases() -> None:
    model = train_sgns(FIRST, seed=0, progress=False, **KW)
    losses = model.losses
    assert len(losses) == KW["epochs"] and np.isfinite(losses).all()
    assert losses[0] < 6 * np.log(2)      # below the untrained loss, σ(0) for all six terms
    assert losses[-1] < losses[0] - 1.0 and losses[-1] <= min(losses[:2]), losses


def test_vocabulary_is_min_count_words_by_frequency(models: tuple[SGNSVectors, SGNSVectors]) -> None:
    first, _ = models
    assert "shifty" in first.index and first.vectors.shape == (len(first.words), KW["dim"])
    assert (np.diff(first.counts) <= 0).all() and first.counts.min() >= KW["min_count"]


def test_trains_on_one_thread_and_restores_the_callers_setting() -> None:
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        two = train_sgns(FIRST[:300], seed=5, progress=False, **KW)
        assert torch.get_num_threads() == 2
        torch.set_num_threads(1)
        one = train_sgns(FIRST[:300], seed=5, progress=False, **KW)
    finally:
        torch.set_num_threads(previous)
    np.testing.assert_array_equal(one.vectors, two.vectors)


@pytest.mark.parametrize("bad", [{"dim": 0}, {"window": 0}, {"negatives": 0}, {"min_count": 0},
                                 {"epochs": -1}])
def test_rejects_bad_settings(bad: dict) -> None:
    with pytest.raises(ValueError):
        train_sgns(FIRST[:10], progress=False, **{**KW, **bad})
