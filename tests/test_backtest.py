"""Backtest metrics on constructed cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.forecast import backtest as bt
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


def test_bootstrap_is_seeded_and_brackets_the_point():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 200, 50)
    good = np.log((counts + 1) / (counts + 1).sum())
    flat = np.log(np.full(50, 1 / 50))
    boot = bt.bootstrap_cross_entropy(counts, np.stack([good, flat]), n_boot=200)
    assert boot.shape == (200, 2)
    np.testing.assert_array_equal(boot, bt.bootstrap_cross_entropy(counts, np.stack([good, flat]),
                                                                   n_boot=200))
    lo, hi = bt.interval(boot[:, 0])
    assert lo < cross_entropy(counts, good) < hi
    assert (boot[:, 0] < boot[:, 1]).all()            # paired: the good forecast always wins
    obs = rng.normal(size=40)
    rho, prec = bt.bootstrap_trends(np.stack([obs, -obs, np.zeros(40)]), obs, k=4, n_boot=100)
    assert rho.shape == prec.shape == (100, 3)
    assert np.allclose(rho[:, 0], 1.0) and np.allclose(rho[:, 1], -1.0)
    assert np.isnan(rho[:, 2]).all() and all(math.isnan(v) for v in bt.interval(rho[:, 2]))


def test_no_trend_tokens_gives_undefined_metrics():
    rho, prec = bt.bootstrap_trends(np.zeros((2, 0)), np.zeros(0), n_boot=5)
    assert rho.shape == (5, 2) and np.isnan(rho).all() and np.isnan(prec).all()
    assert math.isnan(bt.spearman(np.zeros(0), np.zeros(0)))
    assert math.isnan(bt.precision_at_k(np.zeros(0), np.zeros(0)))
