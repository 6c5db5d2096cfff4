"""Significance tests: the exact paired sign test and the exact rank-sum test, on known cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.evaluation.significance import paired_sign_test, rank_sum_test, sign_test_counts


def test_known_counts():
    # 9 of 10 better: P(K<=1)+P(K>=9) = 2*(1+10)/1024
    assert sign_test_counts(9, 1).p_value == pytest.approx(22 / 1024, abs=1e-15)
    # all 5 better: 2/32
    assert sign_test_counts(5, 0).p_value == pytest.approx(2 / 32)
    # balanced: p = 1
    assert sign_test_counts(4, 4).p_value == pytest.approx(1.0)
    # 15 vs 5 of 20: 2 * sum_{k>=15} C(20,k)/2^20
    tail = sum(math.comb(20, k) for k in range(15, 21)) / 2 ** 20
    assert sign_test_counts(15, 5).p_value == pytest.approx(2 * tail, rel=1e-12)


def test_p_value_is_not_the_point_probability():
    # The reference reported P(K = k); the p-value is a tail and is larger.
    point = math.comb(20, 15) / 2 ** 20
    assert sign_test_counts(15, 5).p_value > point


def test_all_ties_gives_one():
    assert sign_test_counts(0, 0, ties=7).p_value == 1.0


def test_paired_directions_and_ties():
    model = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    base = np.array([2.0, 2.0, 4.0, 5.0, 4.0])
    low = paired_sign_test(model, base, higher_is_better=False)   # perplexity-like
    assert (low.better, low.worse, low.ties) == (3, 1, 1)
    assert low.p_value == pytest.approx(sign_test_counts(3, 1).p_value)
    high = paired_sign_test(model, base, higher_is_better=True)   # METEOR-like
    assert (high.better, high.worse, high.ties) == (1, 3, 1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="equal length"):
        paired_sign_test(np.zeros(3), np.zeros(4), True)
    with pytest.raises(ValueError, match="NaN"):
        paired_sign_test(np.array([np.nan]), np.array([1.0]), True)
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_counts(-1, 3)


def _brute_force_rank_sum_p(a: np.ndarray, b: np.ndarray) -> float:
    from itertools import combinations

    from scipy.stats import rankdata
    ranks = rankdata(np.concatenate([a, b]))
    mean = len(a) * ranks.sum() / len(ranks)
    observed = abs(ranks[:len(a)].sum() - mean)
    sums = [ranks[list(c)].sum() for c in combinations(range(len(ranks)), len(a))]
    return float(np.mean([abs(s - mean) >= observed - 1e-9 for s in sums]))


def test_rank_sum_is_exact_with_ties():
    # CM values tie often (many generated abstracts score exactly 0).
    model = np.array([0.0, 0.0, 0.1, 0.3, 0.3, 0.5, 0.6, 0.6, 0.9])
    base = np.array([0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.3, 0.4])
    test = rank_sum_test(model, base, higher_is_better=True)
    assert test.p_value == pytest.approx(_brute_force_rank_sum_p(model, base), rel=1e-12)
    assert test.better + test.worse + test.ties == 9 * 8
    # the same test whichever sample is larger
    assert rank_sum_test(base, model, True).p_value == pytest.approx(test.p_value, rel=1e-12)


def test_rank_sum_matches_scipy_exact_without_ties():
    from scipy.stats import mannwhitneyu
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=7), rng.normal(size=6) + 0.8
    ours = rank_sum_test(a, b, higher_is_better=False)
    assert ours.p_value == pytest.approx(mannwhitneyu(a, b, method="exact").pvalue, rel=1e-12)
    # better counts pairs where a is lower (perplexity-like); U of a = worse + ties / 2
    assert ours.worse == mannwhitneyu(a, b, method="exact").statistic


def test_rank_sum_identical_samples_and_bad_inputs():
    assert rank_sum_test(np.array([1.0, 2, 3]), np.array([3.0, 1, 2]), True).p_value == 1.0
    assert rank_sum_test(np.ones(4), np.ones(5), True).p_value == 1.0   # all tied
    with pytest.raises(ValueError, match="non-empty"):
        rank_sum_test(np.array([]), np.ones(3), True)
    with pytest.raises(ValueError, match="NaN"):
        rank_sum_test(np.array([np.nan]), np.ones(3), True)
