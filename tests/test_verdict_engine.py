"""The verdict engine: Holm, resampling by documents in exact fixed point, the rules, the file."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pipeline.stats.collect import collect, verdicts_of
from pipeline.stats.multiple import holm
from pipeline.stats.resampling import (FIXED_POINT, bootstrap_p, document_weights,
                                       per_token_rate, weighted_sums)
from pipeline.stats.verdict import Claim, judge, sentence


def test_holm_matches_the_step_down_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3*0.01, max(0.03, 2*0.02), max(0.04, 1*0.04)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    adjusted = holm([float("nan"), 0.01])
    assert math.isnan(adjusted[0]) and adjusted[1] == pytest.approx(0.01)   # NaN is not counted


def test_weighted_sums_are_exact_fixed_point_sums() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(500.0, 200.0, size=(300, 2))
    weights = document_weights(300, n_boot=5, seed=1)
    assert (weights.sum(axis=1) == 300).all()
    got = weighted_sums(weights, values)
    for b in range(5):            # the same as exact rational arithmetic on the rounded values
        for j in range(2):
            exact = sum(Fraction(int(w)) * Fraction(int(np.rint(v * FIXED_POINT)))
                        for w, v in zip(weights[b], values[:, j]))
            assert got[b, j] == float(exact / Fraction(int(FIXED_POINT)))


def test_per_token_rate_of_unit_weights_is_the_plain_mean() -> None:
    nll, tokens = np.array([10.0, 30.0]), np.array([5, 10])
    assert per_token_rate(np.ones((1, 2), dtype=np.int64), nll, tokens)[0] == pytest.approx(40 / 15)


def test_bootstrap_p_is_two_sided_and_never_zero() -> None:
    assert bootstrap_p(np.full(999, 1.0)) == pytest.approx(2 / 1000)
    assert bootstrap_p(np.linspace(-1, 1, 1001)) == pytest.approx(1.0)


def _claim(a: str, effect: float, p: float, seeds=(3, 3), family: str = "variant") -> Claim:
    return Claim("results", family, a, "B", "PPL", effect, (effect - 1, effect + 1), p, "t",
                 "abstracts", 100, seeds, scope="2021")


def test_rules_holm_direction_seeds_and_untested() -> None:
    verdicts = judge([_claim("A", -2.0, 0.001), _claim("C", 2.0, 0.001), _claim("D", -2.0, 0.06),
                      _claim("E", -5.0, 1e-6, seeds=(1, 3)), _claim("F", 0.0, float("nan"))])
    got = {v.a: v for v in verdicts}
    assert got["A"].verdict == "better" and got["A"].p_adjusted == pytest.approx(0.003)
    assert got["C"].verdict == "worse"
    assert got["D"].verdict == "not distinguishable"          # 0.06 stays above 0.05
    assert got["E"].verdict == "not distinguishable" and "fewer than 3" in got["E"].reason
    assert got["F"].verdict == "not distinguishable" and got["F"].reason.startswith("not tested")
    assert "better than B" in sentence(got["A"]) and "not distinguishable" in sentence(got["D"])


def test_families_are_adjusted_separately() -> None:
    alone = judge([_claim("A", -1.0, 0.03, family="temporal-gain")] +
                  [_claim(x, -1.0, 0.03) for x in "CDE"])
    assert alone[0].verdict == "better" and alone[0].family_size == 1
    assert all(v.verdict == "not distinguishable" for v in alone[1:])


def test_zero_spread_side_is_judged_by_documents_and_says_so() -> None:
    (v,) = judge([_claim("A", -1.0, 0.001, seeds=(0, 0))])
    assert v.verdict == "better"
    (w,) = judge([_claim("A", -1.0, 0.001, seeds=(3, 0))])
    assert "document-level test alone" in w.reason


def test_collect_round_trips_and_refuses_duplicate_ids() -> None:
    records = [v.as_record() for v in judge([_claim("A", -2.0, 0.001)])]
    document = collect({"reports/results.json": {"verdicts": records}})
    assert document["counts"]["variant"]["better"] == 1
    (back,) = verdicts_of(document)
    assert back.id == "results/variant/2021/A/B/PPL" and back.verdict == "better"
    with pytest.raises(ValueError, match="also in"):
        collect({"x.json": {"verdicts": records}, "y.json": {"verdicts": records}})
    with pytest.raises(ValueError, match="lacks"):
        collect({"x.json": {"verdicts": [{"id": "x"}]}})
