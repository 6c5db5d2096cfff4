"""The engine's closed-form tests against textbook answers (scipy), and their edge cases.
Their calibration (false-positive rate, coverage, power) is simulated in test_calibration.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.stats.comparisons import (PAIRED_RATE_TEST, RATE_TEST, Side, compare_items,
                                        compare_rates, rate_interval, shared_seeds)
from pipeline.stats.power import mde_function, t_mde
from pipeline.stats.ranks import spearman_test, top_k


def test_one_forecast_a_side_is_the_paired_t_test_on_documents() -> None:
    rng = np.random.default_rng(0)
    tokens = np.full(40, 100)                     # equal lengths: the ratio is a plain mean
    a = rng.normal(600, 30, 40)
    b = a + rng.normal(5, 10, 40)
    got = compare_rates(Side(a, False), Side(b, False), tokens)
    ref = sps.ttest_rel(a / 100, b / 100)
    assert got.p == pytest.approx(ref.pvalue, rel=1e-6) and got.df == pytest.approx(39)
    assert got.effect == pytest.approx((a.sum() - b.sum()) / 4000) and got.runs == (0, 0)


def test_runs_without_document_noise_are_welchs_test() -> None:
    rng = np.random.default_rng(1)
    tokens = rng.integers(50, 300, 60).astype(float)
    ra, rb = rng.normal(0, 0.02, 3), rng.normal(0.01, 0.03, 5)
    a = tokens[:, None] * (6.0 + ra)[None, :]     # every document moves with its run: no
    b = tokens[:, None] * (6.0 + rb)[None, :]     # document-level variance of the difference
    got = compare_rates(Side(a, True), Side(b, True), tokens)
    ref = sps.ttest_ind(6.0 + ra, 6.0 + rb, equal_var=False)
    assert got.p == pytest.approx(ref.pvalue, rel=1e-6) and got.runs == (3, 5)
    lo, hi = got.ci
    assert lo < got.effect < hi


def test_runs_of_one_seed_are_paired_and_its_shared_spread_cancels() -> None:
    rng = np.random.default_rng(5)
    tokens = rng.integers(50, 300, 60).astype(float)
    seed_offset = rng.normal(0, 0.1, 5)                       # each seed's Baseline, shared
    ra, rb = seed_offset + rng.normal(0.002, 0.001, 5), seed_offset + rng.normal(0, 0.001, 5)
    a = tokens[:, None] * (6.0 + ra)[None, :]                 # no document-level variance
    b = tokens[:, None] * (6.0 + rb)[None, :]
    got = compare_rates(Side(a, True, (0, 1, 2, 3, 4)), Side(b, True, (0, 1, 2, 3, 4)), tokens)
    ref = sps.ttest_rel(6.0 + ra, 6.0 + rb)
    assert got.p == pytest.approx(ref.pvalue, rel=1e-6) and got.df == pytest.approx(4)
    assert got.test == PAIRED_RATE_TEST and got.runs == (5, 5)
    welch = compare_rates(Side(a, True), Side(b, True), tokens)   # no seeds named: unpaired
    assert welch.test == RATE_TEST and welch.se > 20 * got.se
    # runs of seeds only one side ran are left out; the pairs follow the seeds, not the columns
    shuffled = compare_rates(Side(a, True, (0, 1, 2, 3, 4)), Side(b[:, [2, 0, 1]], True, (2, 0, 1)),
                             tokens)
    ref3 = sps.ttest_rel((6.0 + ra)[:3], (6.0 + rb)[:3])
    assert shuffled.runs == (3, 3) and shuffled.p == pytest.approx(ref3.pvalue, rel=1e-6)


def test_pairing_needs_three_shared_seeds_and_one_seed_per_run() -> None:
    tokens = np.full(10, 50.0)
    rng = np.random.default_rng(6)
    a, b = rng.normal(300, 5, (10, 4)), rng.normal(300, 5, (10, 4))
    assert shared_seeds(Side(a, True, (0, 1, 2, 3)), Side(b, True, (2, 3, 4, 5))) == ()
    assert compare_rates(Side(a, True, (0, 1, 2, 3)), Side(b, True, (2, 3, 4, 5)),
                         tokens).test == RATE_TEST
    assert shared_seeds(Side(a, True, (0, 1, 2, 3)), Side(b[:, 0], False)) == ()
    with pytest.raises(ValueError, match="4 runs of NLL but 3 seeds"):
        compare_rates(Side(a, True, (0, 1, 2)), Side(b, True, (0, 1, 2, 3)), tokens)


def test_fewer_than_three_trained_runs_are_untested() -> None:
    tokens = np.full(10, 50)
    two = np.ones((10, 2)) * 300
    got = compare_rates(Side(two, True), Side(two * 1.01, True), tokens, names=("X", "Y"))
    assert math.isnan(got.p) and "X and Y: fewer than 3" in got.note


def test_items_are_welch_over_run_means_and_a_sampler_over_its_items() -> None:
    rng = np.random.default_rng(2)
    a = [rng.normal(0.05, 0.02, 8) for _ in range(3)]
    b = [rng.normal(0.04, 0.02, 8) for _ in range(4)]
    got = compare_items(Side(a, True), Side(b, True))
    ref = sps.ttest_ind([x.mean() for x in a], [x.mean() for x in b], equal_var=False)
    assert got.p == pytest.approx(ref.pvalue, rel=1e-4) and got.runs == (3, 4)   # fixed-point sums
    sampler = rng.normal(0.03, 0.02, 30)
    vs = compare_items(Side(a, True), Side([sampler], False))
    assert vs.runs == (3, 0) and vs.df > 2


def test_rate_interval_covers_its_rate() -> None:
    rng = np.random.default_rng(3)
    tokens = rng.integers(50, 300, 80)
    nll = tokens * rng.normal(6.0, 0.3, 80)
    rate, lo, hi = rate_interval(Side(nll, False), tokens)
    assert rate == pytest.approx(nll.sum() / tokens.sum()) and lo < rate < hi


def test_spearman_matches_scipy_and_its_interval_holds_rho() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=50)
    y = 0.5 * x + rng.normal(size=50)
    rho, (lo, hi), p, se = spearman_test(x, y)
    ref = sps.spearmanr(x, y)
    assert rho == pytest.approx(ref[0]) and p == pytest.approx(ref[1], rel=1e-6)
    assert lo < rho < hi and se == pytest.approx(math.sqrt(1.06 / 47))
    assert math.isnan(spearman_test(np.zeros(10), y[:10])[2])       # no ranking: untested


def test_top_k_is_a_share_with_a_floor_and_a_ceiling() -> None:
    assert top_k(2300) == 23 and top_k(40) == 10 and top_k(12) == 6


def test_mde_grows_with_the_family_and_shrinks_with_the_error() -> None:
    assert t_mde(1.0, math.inf, 0.05) == pytest.approx(1.959964 + 0.841621, rel=1e-5)
    assert t_mde(1.0, 4, 0.05) > t_mde(1.0, 100, 0.05) > t_mde(0.5, 100, 0.05)
    relative = mde_function(0.01, 10, "relative")
    assert relative(0.05 / 10) > relative(0.05) > 100 * t_mde(0.01, 10, 0.05) * 0.99
    assert math.isnan(t_mde(0.0, 10, 0.05))
