"""pipeline.evaluation.longtail: paper 004's tokens, types and baselines, hand-counted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.evaluation.longtail import (frequency_bins, freq_baseline_predictions,
                                          longtail_table, token_accuracy, types_correct,
                                          unigram_baseline_predictions)

# vocabulary of 10 ids; with edges (30, 5): ids 0, 1, 9 high; 2, 3 mid; 4 and the unseen 5-8 low
COUNTS = np.array([50, 30, 10, 5, 2, 0, 0, 0, 0, 100])
EDGES = (30, 5)
FILLER = 9      # a proposal that is never a target


def ranked(*best: int) -> list[int]:
    """A row of 10 proposals: ``best`` first, then the filler."""
    return [*best] + [FILLER] * (10 - len(best))


TARGETS = np.array([0, 0, 1, 2, 2, 3, 4, 5])
PREDICTIONS = np.array([
    ranked(0),          # p0: target 0 at rank 1
    ranked(1, 0),       # p1: target 0 at rank 2
    ranked(),           # p2: target 1 missed
    ranked(3, 2),       # p3: target 2 at rank 2
    ranked(2),          # p4: target 2 at rank 1
    ranked(),           # p5: target 3 missed
    ranked(9, 9, 4),    # p6: target 4 at rank 3
    ranked(5),          # p7: target 5 (unseen in training) at rank 1
])


def test_bin_edges_are_inclusive_below_and_unseen_is_low() -> None:
    counts = np.array([0, 1, 4, 5, 29, 30, 31])
    # high: count >= 30; mid: 5 <= count < 30; low: count < 5 (0 included)
    assert frequency_bins(counts, EDGES).tolist() == [
        "low", "low", "low", "mid", "mid", "high", "high"]
    assert frequency_bins(COUNTS, EDGES).tolist() == [
        "high", "high", "mid", "mid", "low", "low", "low", "low", "low", "high"]
    # equal edges leave mid empty; mid_min = 1 puts exactly the unseen words in low
    assert frequency_bins(counts, (5, 5)).tolist() == [
        "low", "low", "low", "high", "high", "high", "high"]
    assert frequency_bins(counts, (30, 1)).tolist() == [
        "low", "mid", "mid", "mid", "mid", "high", "high"]


def test_token_accuracy_by_hand() -> None:
    # top-1 hits: p0, p4, p7 -> 3 / 8
    assert token_accuracy(TARGETS, PREDICTIONS, 1) == pytest.approx(3 / 8)
    # top-2 adds p1 and p3 -> 5 / 8
    assert token_accuracy(TARGETS, PREDICTIONS, 2) == pytest.approx(5 / 8)
    # top-10 adds p6 -> 6 / 8
    assert token_accuracy(TARGETS, PREDICTIONS, 10) == pytest.approx(6 / 8)


def test_types_count_each_target_word_once() -> None:
    # top-1 hits p0 (word 0), p4 (2), p7 (5) -> {0, 2, 5}
    assert types_correct(TARGETS, PREDICTIONS, 1) == 3
    # top-2 also hits p1 (0 again) and p3 (2 again) -> still {0, 2, 5}
    assert types_correct(TARGETS, PREDICTIONS, 2) == 3
    # top-10 also hits p6 (4) -> {0, 2, 4, 5}
    assert types_correct(TARGETS, PREDICTIONS, 10) == 4


def test_no_positions() -> None:
    empty = np.zeros((0, 10), dtype=np.int64)
    assert math.isnan(token_accuracy(np.array([], dtype=np.int64), empty, 1))
    assert types_correct(np.array([], dtype=np.int64), empty, 10) == 0


def test_longtail_table_by_hand() -> None:
    table = longtail_table(TARGETS, PREDICTIONS, COUNTS, EDGES).set_index("bin")
    assert table.index.tolist() == ["high", "mid", "low", "all"]
    expected = {
        # high (words 0, 1): p0, p1, p2; top-1 p0; top-10 p0, p1; types {0} both
        "high": dict(n=3, n_types=2, acc1=1 / 3, acc10=2 / 3, T1=1, T10=1),
        # mid (words 2, 3): p3, p4, p5; top-1 p4; top-10 p3, p4; types {2} both
        "mid": dict(n=3, n_types=2, acc1=1 / 3, acc10=2 / 3, T1=1, T10=1),
        # low (words 4, 5): p6, p7; top-1 p7; top-10 p6, p7; types {5}, {4, 5}
        "low": dict(n=2, n_types=2, acc1=1 / 2, acc10=2 / 2, T1=1, T10=2),
        # all: 8 positions, words {0..5}; 3/8, 6/8; T1 = 1 + 1 + 1, T10 = 1 + 1 + 2
        "all": dict(n=8, n_types=6, acc1=3 / 8, acc10=6 / 8, T1=3, T10=4),
    }
    for name, e in expected.items():
        row = table.loc[name]
        assert (row["n"], row["n_types"], row["T1"], row["T10"]) == (
            e["n"], e["n_types"], e["T1"], e["T10"]), name
        assert row["acc@1"] == pytest.approx(e["acc1"]) and row["acc@10"] == pytest.approx(
            e["acc10"]), name


def test_longtail_table_empty_bin_and_short_rankings() -> None:
    table = longtail_table(TARGETS, PREDICTIONS, COUNTS, (30, 30)).set_index("bin")
    assert table.loc["mid", "n"] == 0 and table.loc["mid", "T1"] == 0
    assert math.isnan(table.loc["mid", "acc@1"])
    assert table.loc["low", "n"] == 5       # words 2, 3 (counts 10, 5) join 4 and 5
    top3 = longtail_table(TARGETS, PREDICTIONS[:, :3], COUNTS, EDGES).set_index("bin")
    assert top3.loc["all", "acc@1"] == pytest.approx(3 / 8)
    assert math.isnan(top3.loc["all", "acc@10"]) and math.isnan(top3.loc["all", "T10"])


def test_freq_baseline_breaks_ties_by_smaller_id() -> None:
    counts = np.array([4, 9, 9, 1, 9, 0, 2])
    # 9, 9, 9 for ids 1, 2, 4 (smaller id first), then 4 (id 0), 2 (id 6), 1 (id 3), 0 (id 5)
    assert freq_baseline_predictions(counts, 2, k=3).tolist() == [[1, 2, 4], [1, 2, 4]]
    assert freq_baseline_predictions(counts, 1, k=7).tolist() == [[1, 2, 4, 0, 6, 3, 5]]
    default = freq_baseline_predictions(COUNTS, 4)
    # ids by count: 9 (100), 0 (50), 1 (30), 2 (10), 3 (5), 4 (2), then the unseen 5, 6, 7, 8
    assert default.shape == (4, 10) and (default == [9, 0, 1, 2, 3, 4, 5, 6, 7, 8]).all()
    # on the hand example: the top-1 is the filler 9, never a target; word 0 (p0, p1) is 2nd;
    # all ten words are proposed, so every target is within the top-10
    freq = freq_baseline_predictions(COUNTS, 8)
    assert token_accuracy(TARGETS, freq, 1) == 0.0
    assert token_accuracy(TARGETS, freq, 2) == pytest.approx(2 / 8)
    assert token_accuracy(TARGETS, freq, 10) == 1.0
    assert types_correct(TARGETS, freq, 10) == 6


def test_ugrm_is_reproducible_distinct_and_never_unseen() -> None:
    a = unigram_baseline_predictions(COUNTS, 500, 5, seed=3)
    b = unigram_baseline_predictions(COUNTS, 500, 5, seed=3)
    assert a.shape == (500, 5) and np.array_equal(a, b)
    assert not np.array_equal(a, unigram_baseline_predictions(COUNTS, 500, 5, seed=4))
    assert all(len(set(row)) == 5 for row in a.tolist())
    assert set(a.ravel().tolist()) <= {0, 1, 2, 3, 4, 9}      # the words seen in training
    # k = the 6 seen words: every row is a permutation of them
    assert (np.sort(unigram_baseline_predictions(COUNTS, 50, 6, seed=0), axis=1)
            == [0, 1, 2, 3, 4, 9]).all()


def test_ugrm_top1_accuracy_approaches_sum_of_squared_probabilities() -> None:
    counts = np.round(1000 / np.arange(1, 51)).astype(np.int64)      # Zipf-like, 50 words
    p = counts / counts.sum()
    n = 200_000
    targets = np.random.default_rng(1).choice(counts.size, size=n, p=p)
    predictions = unigram_baseline_predictions(counts, n, 10, seed=2)
    # P(hit@1) = sum_w P(target = w) P(first draw = w) = sum_w p_w^2 (about 0.08 here); the
    # standard error of the mean over 200,000 positions is about 0.0006
    assert token_accuracy(targets, predictions, 1) == pytest.approx(float((p ** 2).sum()),
                                                                    abs=0.004)


@pytest.mark.slow
def test_ugrm_samples_successively_without_replacement() -> None:
    # p = (0.9, 0.09, 0.01), k = 3: each row is an order of {0, 1, 2}, with probability
    # P(a, b, c) = p_a * p_b / (1 - p_a); most rows need more than the first 6 draws
    p = np.array([0.9, 0.09, 0.01])
    rows = unigram_baseline_predictions(np.array([900, 90, 10]), 100_000, 3, seed=7)
    for a, b, c in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]:
        share = float((rows == [a, b, c]).all(axis=1).mean())
        assert share == pytest.approx(p[a] * p[b] / (1 - p[a]), abs=0.005), (a, b, c)


@pytest.mark.parametrize("call, message", [
    (lambda: token_accuracy(TARGETS, PREDICTIONS[:, 0], 1), "predictions must have 2 dim"),
    (lambda: token_accuracy(TARGETS[:, None], PREDICTIONS, 1), "targets must have 1 dim"),
    (lambda: token_accuracy(TARGETS[:5], PREDICTIONS, 1), "predictions has 8 rows, targets has 5"),
    (lambda: token_accuracy(TARGETS, PREDICTIONS, 0), "k must be between 1 and the 10"),
    (lambda: types_correct(TARGETS, PREDICTIONS[:, :3], 10), "k must be between 1 and the 3"),
    (lambda: token_accuracy(TARGETS.astype(float), PREDICTIONS, 1), "integer word ids"),
    (lambda: frequency_bins(COUNTS, (5, 30)), "1 <= mid_min <= high_min"),
    (lambda: frequency_bins(COUNTS, (30, 0)), "1 <= mid_min <= high_min"),
    (lambda: frequency_bins(COUNTS, (30, 5, 1)), "edges must be"),
    (lambda: frequency_bins(np.array([3, -1]), EDGES), "non-negative"),
    (lambda: longtail_table(np.array([10]), PREDICTIONS[:1], COUNTS, EDGES),
     "outside the vocabulary of 10"),
    (lambda: freq_baseline_predictions(COUNTS, 3, k=11), "between 1 and the vocabulary size 10"),
    (lambda: unigram_baseline_predictions(COUNTS, 3, 7, seed=0), "the 6 words seen"),
])
def test_bad_inputs_raise_clear_errors(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()
