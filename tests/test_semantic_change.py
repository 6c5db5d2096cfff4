"""Semantic change: pooled-embedding change (paper 003, Algorithm 1), the
log-frequency baseline, Procrustes alignment, word -> token mapping and correlation with graded
truth, on hand-computed examples, the real GPT-2 tokenizer and real embeddings files."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pipeline.semantic.methods.contextual import (averaged_embedding_change,
                                                  embedding_change_from_files,
                                                  period_paths, pool_group)
from pipeline.semantic.methods.frequency import log_frequency_change
from pipeline.semantic.methods.interface import ChangeScores
from pipeline.semantic.scores import correlations, top_changed
from pipeline.semantic.targets import word_token_ids, word_token_ids_from_texts
from pipeline.semantic.vectors import aligned_cosine_change, procrustes_align

A = (np.array([1, 2, 5]), np.array([1, 3, 2]), np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]]))
B = (np.array([1, 3]), np.array([3, 1]), np.array([[0.0, 1.0], [0.0, 1.0]]))
C = (np.array([1, 2, 4]), np.array([2, 5, 1]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))


def test_pool_group_weights_by_counts() -> None:
    ids, counts, vectors = pool_group([A, B])
    assert ids.tolist() == [1, 2, 3, 5] and counts.tolist() == [4, 3, 1, 2]
    # token 1: (1 * [1, 0] + 3 * [0, 1]) / 4, not the unweighted [0.5, 0.5]
    np.testing.assert_allclose(vectors, [[0.25, 0.75], [1, 0], [0, 1], [1, 1]])
    assert vectors.dtype == np.float64


def test_averaged_embedding_change_by_hand() -> None:
    change = averaged_embedding_change([A, B], [C])
    # 3 and 5 only in the first group, 4 only in the last: not scored
    assert change.token_ids.tolist() == [1, 2]
    # token 1: cos([.25, .75], [1, 0]) = .25 / sqrt(.625) = 1/sqrt(10); token 2: orthogonal
    np.testing.assert_allclose(change.scores, [1 - 1 / math.sqrt(10), 1.0], atol=1e-12)
    assert change.first_counts.tolist() == [4, 3] and change.last_counts.tolist() == [2, 5]
    # same vectors in both groups: no change
    same = averaged_embedding_change([A], [A])
    np.testing.assert_allclose(same.scores, 0.0, atol=1e-12)


def test_zero_vector_is_nan_and_mismatch_is_refused() -> None:
    zero = (np.array([1]), np.array([1]), np.zeros((1, 2)))
    assert np.isnan(averaged_embedding_change([zero], [C]).scores).all()
    with pytest.raises(ValueError, match="differ in size"):
        averaged_embedding_change([A], [(np.array([1]), np.array([1]), np.ones((1, 3)))])
    with pytest.raises(ValueError, match="at least one period"):
        averaged_embedding_change([], [C])


def test_real_files_round_trip(tmp_path) -> None:
    from pipeline.features.embeddings import write_period

    rng = np.random.default_rng(3)
    groups = {"2015": [4, 9, 2], "2016": [9, 4, 7, 11], "2019": [2, 11, 9, 5]}
    arrays = {}
    for label, ids in groups.items():
        ids = np.array(ids)          # unsorted: the file sorts its rows
        counts = rng.integers(1, 50, ids.size)
        vectors = rng.normal(size=(ids.size, 6)).astype(np.float16)   # exact in the file
        write_period(tmp_path / f"{label}.safetensors", label, ids, counts, vectors,
                     encoder="test-encoder", layer=-1, vocab_size=16)
        arrays[label] = (ids, counts, vectors.astype(np.float64))
    got = embedding_change_from_files(period_paths(tmp_path, ["2015", "2016"]),
                                      period_paths(tmp_path, ["2019"]))
    want = averaged_embedding_change([arrays["2015"], arrays["2016"]], [arrays["2019"]])
    assert got.token_ids.tolist() == [2, 9, 11]
    np.testing.assert_array_equal(got.token_ids, want.token_ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.first_counts, want.first_counts)


def test_log_frequency_change_by_hand() -> None:
    first = [np.array([1, 0, 3])]
    last = [np.array([0, 0, 0]), np.array([3, 1, 0])]
    change = log_frequency_change(first, last)
    f1 = [math.log(2 / 7), math.log(1 / 7), math.log(4 / 7)]
    f2 = [(math.log(1 / 3) + math.log(4 / 7)) / 2, (math.log(1 / 3) + math.log(2 / 7)) / 2,
          (math.log(1 / 3) + math.log(1 / 7)) / 2]
    np.testing.assert_allclose(change.scores, np.abs(np.subtract(f2, f1)), atol=1e-12)
    assert change.token_ids.tolist() == [0, 1, 2] and change.last_counts.tolist() == [3, 1, 0]
    with pytest.raises(ValueError, match="vocabular"):
        log_frequency_change([np.array([1, 2])], [np.array([1, 2, 3])])


def test_procrustes_recovers_a_rotation() -> None:
    rng = np.random.default_rng(0)
    q, r = np.linalg.qr(rng.normal(size=(8, 8)))
    q = q * np.sign(np.diag(r))          # a random orthogonal matrix
    source = rng.normal(size=(50, 8))
    target = source @ q
    rot = procrustes_align(source, target)
    np.testing.assert_allclose(rot, q, atol=1e-10)
    np.testing.assert_allclose(rot @ rot.T, np.eye(8), atol=1e-10)
    for normalize in (True, False):
        np.testing.assert_allclose(aligned_cosine_change(source, target, normalize=normalize),
                                   0.0, atol=1e-10)
    moved = target.copy()
    moved[0] = -moved[0]                 # one word turns around; the others stay put
    change = aligned_cosine_change(source, moved)
    assert change.argmax() == 0 and change[0] > 1.5 and np.median(change) < 0.1


def test_word_token_ids_with_gpt2() -> None:
    from pipeline.features.words import token_texts
    from pipeline.models.hub import load_tokenizer_for

    tok = load_tokenizer_for("gpt2")  # installed by `make install`: no skip
    words = ["semantic", "transformer", "BERT", "embeddings", ","]
    got = word_token_ids(words, tok)
    assert sorted(got.ids) == ["semantic", "transformer"]
    assert all(tok.decode([i]) == " " + w for w, i in got.ids.items())
    assert got.rejected == {"BERT": "splits into 2 tokens", "embeddings": "splits into 3 tokens",
                            ",": "token ' ,' does not start a word"}
    pure = word_token_ids_from_texts(words, token_texts(tok, len(tok)))
    assert pure.ids == got.ids and set(pure.rejected) == set(got.rejected)


def test_top_changed_breaks_ties_by_id_and_skips_nan() -> None:
    scores = ChangeScores(np.array([1, 3, 5, 7, 9]), np.array([0.5, 0.9, 0.5, 0.5, np.nan]),
                          np.array([10, 11, 12, 13, 14]), None)
    top = top_changed(scores, 3)
    assert top.token_ids.tolist() == [3, 1, 5] and top.scores.tolist() == [0.9, 0.5, 0.5]
    assert top.first_counts.tolist() == [11, 10, 12] and top.last_counts is None
    assert top_changed(scores, 10).token_ids.tolist() == [3, 1, 5, 7]
    assert len(top_changed(scores, 0)) == 0


def test_correlations_match_scipy_with_fisher_z_intervals() -> None:
    rng = np.random.default_rng(1)
    truth = rng.uniform(size=30)
    scores = truth + rng.normal(scale=0.3, size=30)
    c = correlations(scores, truth)
    pr, sr = stats.pearsonr(scores, truth), stats.spearmanr(scores, truth)
    assert c.n == 30
    assert c.pearson == pytest.approx(pr[0]) and c.pearson_p == pytest.approx(pr[1])
    assert c.spearman == pytest.approx(sr[0]) and c.spearman_p == pytest.approx(sr[1], rel=1e-6)
    z = np.arctanh(c.pearson)
    assert c.pearson_ci == pytest.approx((np.tanh(z - 1.96 / np.sqrt(27)),
                                          np.tanh(z + 1.96 / np.sqrt(27))), abs=1e-4)
    assert c.spearman_ci[0] < c.spearman < c.spearman_ci[1]
    assert c.spearman_se == pytest.approx(np.sqrt(1.06 / 27))


def test_correlations_refuse_degenerate_inputs() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        correlations([0.1, 0.2, 0.3], [0.3, 0.4, 0.5])
    with pytest.raises(ValueError, match="constant"):
        correlations([0.1, 0.1, 0.1, 0.1], [0.3, 0.4, 0.5, 0.6])
    with pytest.raises(ValueError, match="differ in length"):
        correlations([0.1, 0.2, 0.3, 0.4], [0.3, 0.4])
    with pytest.raises(ValueError, match="finite"):
        correlations([0.1, np.nan, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6])
