"""The pooled forecast-skill test over origins (pipeline.stats.diebold_mariano) and its calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.stats.calibration import ar1, calibrate_diebold_mariano, overlapping_ar1
from pipeline.stats.diebold_mariano import (PHI_MAX, allowance, cosine_df, cosine_variance,
                                            default_lag, diebold_mariano, hln_factor,
                                            newey_west_variance)
from pipeline.stats.verdict import claim_of, judge


@pytest.mark.parametrize("horizon", [1, 2])
def test_cosine_test_is_student_t_with_its_cosines_and_allowance(horizon: int) -> None:
    d = np.random.default_rng(0).normal(0.1, 1.0, 16)
    r = diebold_mariano(d, horizon)
    nu = cosine_df(16)
    assert nu == 3 and r.df == nu and r.unit == "origins" and r.n == 16
    se = math.sqrt(cosine_variance(d, nu) / 16 / allowance(16, nu, horizon))
    assert r.se == pytest.approx(se)
    assert r.p == pytest.approx(2 * sps.t.sf(abs(d.mean()) / se, nu))


def test_allowance_is_the_cosine_estimates_bias_under_autocorrelation() -> None:
    assert allowance(16, 3, 1, 0.0) == pytest.approx(1.0)        # orthonormal cosines, white noise
    at_most = allowance(16, 3, 2, PHI_MAX)              # the most autocorrelation, two steps ahead
    assert at_most < allowance(16, 3, 1, PHI_MAX) < allowance(16, 3, 1, 0.3) < 1
    assert allowance(200, 8, 1) > allowance(16, 3, 1)             # more origins: less bias
    rng = np.random.default_rng(4)                   # the expected estimate over Var(d̄), simulated
    draws = [overlapping_ar1(rng, 16, PHI_MAX, 2) for _ in range(20000)]
    estimate = np.mean([cosine_variance(d, 3) for d in draws]) / 16
    truth = np.var([d.mean() for d in draws])
    assert estimate / truth == pytest.approx(allowance(16, 3, 2), rel=0.05)


def test_overlapping_differentials_have_unit_variance_and_horizon_one_is_ar1() -> None:
    one = overlapping_ar1(np.random.default_rng(5), 16, 0.4, 1)
    assert np.array_equal(one, ar1(np.random.default_rng(5), 16, 0.4))
    d = np.concatenate([overlapping_ar1(np.random.default_rng(i), 16, 0.6, 2) for i in range(3000)])
    assert d.var() == pytest.approx(1.0, rel=0.05)


def test_cosine_variance_ignores_the_mean_and_reads_low_frequencies() -> None:
    d = np.random.default_rng(1).standard_normal(20)
    assert cosine_variance(d + 5.0, 4) == pytest.approx(cosine_variance(d, 4))
    trend = np.arange(20, dtype=float)                    # a slow drift is long-run variance
    assert cosine_variance(trend, 3) > newey_west_variance(trend, default_lag(20))


def test_newey_west_variant_uses_lag_and_hln_factor() -> None:
    assert default_lag(16, 1) == 2 and default_lag(16, 4) == 3 and default_lag(2, 1) == 1
    d = np.random.default_rng(2).standard_normal(16)
    r = diebold_mariano(d, horizon=2, kernel="newey-west")
    se = math.sqrt(newey_west_variance(d, 2) / 16) / hln_factor(16, 2)
    assert r.df == 15 and r.se == pytest.approx(se)
    assert newey_west_variance(d, 0) == pytest.approx(d.var())


def test_too_few_or_constant_origins_are_untested() -> None:
    assert math.isnan(diebold_mariano(np.array([0.1, 0.2])).p)
    r = diebold_mariano(np.full(12, 0.3))
    assert math.isnan(r.p) and r.note
    with pytest.raises(ValueError):
        diebold_mariano(np.zeros(5), kernel="bartlett")


def test_claims_carry_an_mde_in_percent() -> None:
    d = np.random.default_rng(3).normal(0.0, 0.01, 16)
    claim = claim_of(diebold_mariano(d), report="forecast-skill", family="forecast-skill",
                     a="x", b="reference", metric="unigram PPL", scale="relative",
                     effect_unit="% PPL", scope="h1/pooled")
    [v] = judge([claim])
    assert v.verdict == "not distinguishable" and 0 < v.mde < 10


def test_calibration_holds_its_level_without_autocorrelation() -> None:
    c = calibrate_diebold_mariano(16, 0.0, 300)
    assert c.fpr <= 0.08 and c.power["1 sd"] > 0.4
    assert c.extra["newey-west"]["fpr"] >= 0.0


def test_calibration_holds_its_level_at_the_strongest_autocorrelation_allowed() -> None:
    c = calibrate_diebold_mariano(16, PHI_MAX, 1000, horizon=2)
    assert c.size == "16 origins, φ 0.6, horizon 2" and c.settings["horizon"] == 2
    assert c.fpr <= 0.07                       # 9.5 % without the allowance (module doc)
    assert c.extra["newey-west"]["fpr"] > 0.15
