"""The verdict engine: Holm, resampling by documents in exact fixed point, the rules, the file."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pipeline.stats.collect import collect, verdicts_of
from pipeline.stats.multiple import holm
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.power import mde_function
from pipeline.stats.fixed_point import FIXED_POINT, fixed_sum
from pipeline.stats.verdict import Claim, claim_of, judge, sentence, table


def test_holm_matches_the_step_down_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3*0.01, max(0.03, 2*0.02), max(0.04, 1*0.04)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    adjusted = holm([float("nan"), 0.01])
    assert math.isnan(adjusted[0]) and adjusted[1] == pytest.approx(0.01)   # NaN is not counted


def test_fixed_point_sums_are_exact_in_any_order() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(500.0, 200.0, size=(300, 2))
    got = fixed_sum(values)
    assert (fixed_sum(values[::-1]) == got).all() and (fixed_sum(values[rng.permutation(300)]) == got).all()
    for j in range(2):            # the same as exact rational arithmetic on the rounded values
        exact = sum(Fraction(int(np.rint(v * FIXED_POINT))) for v in values[:, j])
        assert got[j] == float(exact / Fraction(int(FIXED_POINT)))


def _claim(a: str, effect: float, p: float, seeds=(3, 3), family: str = "variant",
           se: float = 0.5) -> Claim:
    return Claim("results", family, a, "B", "PPL", effect, (effect - 1, effect + 1), p, "t",
                 "abstracts", 100, seeds, scope="2021", mde_of=mde_function(se, 4.0))


def test_rules_holm_direction_seeds_and_untested() -> None:
    verdicts = judge([_claim("A", -2.0, 0.001), _claim("C", 2.0, 0.001), _claim("D", -2.0, 0.06),
                      _claim("E", -5.0, 1e-6, seeds=(1, 3)), _claim("F", 0.0, float("nan"))])
    got = {v.a: v for v in verdicts}
    assert got["A"].verdict == "better" and got["A"].p_adjusted == pytest.approx(0.003)
    assert got["C"].verdict == "worse"
    assert got["D"].verdict == "not distinguishable"          # 0.06 stays above 0.05
    assert got["E"].verdict == "untested" and "fewer than 3" in got["E"].reason
    assert got["F"].verdict == "untested" and math.isnan(got["F"].mde)
    assert "better than B" in sentence(got["A"]) and "not distinguishable" in sentence(got["D"])
    assert "**untested**" in sentence(got["E"])
    # every tested record has its MDE at the family's strictest Holm level, α / m (m = 3: E has
    # too few runs and F no p, so neither is in the family)
    assert got["D"].mde == pytest.approx(mde_function(0.5, 4.0)(0.05 / 3))
    assert "detectable with 80% power" in got["D"].reason and "±" in table([got["D"]])


def test_words_only_gives_the_same_verdicts_without_their_mde() -> None:
    claims = [_claim("A", -2.0, 0.001), _claim("D", -2.0, 0.06), _claim("E", -5.0, 1e-6, (1, 3))]
    full, words = judge(claims), judge(claims, words_only=True)
    assert [v.verdict for v in words] == [v.verdict for v in full]
    np.testing.assert_array_equal([v.p_adjusted for v in words], [v.p_adjusted for v in full])
    assert [v.reason for v in words[:1]] == [v.reason for v in full[:1]]
    assert words[1].reason == full[1].reason.partition(";")[0] and "power" in full[1].reason
    assert not math.isnan(full[1].mde) and all(math.isnan(v.mde) for v in words)
    assert all(math.isnan(v.ci_family[0]) for v in words)


def test_families_are_adjusted_separately() -> None:
    alone = judge([_claim("A", -1.0, 0.03, family="temporal-gain")] +
                  [_claim(x, -1.0, 0.03) for x in "CDE"])
    assert alone[0].verdict == "better" and alone[0].family_size == 1
    assert all(v.verdict == "not distinguishable" for v in alone[1:])


def test_a_holm_scope_corrects_claims_of_several_scopes_together() -> None:
    """Per-origin claims read together are corrected together: with ``holm_scope`` the two
    scopes form one family of 2 (p 0.03 each fails 0.025), each record keeping its own scope and
    id; without it each scope is its own family of 1 (0.03 < 0.05). The grouping is not part of
    the record."""
    from dataclasses import replace
    claims = [_claim("A", -1.0, 0.03), replace(_claim("A", -1.0, 0.03), scope="2022")]
    apart = judge(claims)
    assert [v.verdict for v in apart] == ["better", "better"]
    together = judge([replace(c, holm_scope="origins") for c in claims])
    assert [v.family_size for v in together] == [2, 2]
    assert [v.verdict for v in together] == ["not distinguishable"] * 2
    assert [v.scope for v in together] == ["2021", "2022"] and together[0].id != together[1].id
    assert "holm_scope" not in together[0].as_record()


def test_untrained_sides_are_judged_and_runs_come_from_the_data() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.integers(50, 300, 200)
    a = tokens * rng.normal(6.0, 0.3, 200)
    b = a + tokens * rng.normal(0.05, 0.05, 200)
    result = compare_rates(Side(a, trained=False), Side(b, trained=False), tokens)
    (v,) = judge([claim_of(result, report="forecast", family="forecast-vocabulary", a="A",
                           b="B", metric="unigram PPL", scale="relative", effect_unit="% PPL")])
    assert v.seeds == (0, 0) and v.verdict == "better"
    assert v.effect == pytest.approx(100 * math.expm1((a.sum() - b.sum()) / tokens.sum()))
    trained = compare_rates(Side(np.stack([a, a, a], 1), True), Side(a[:, None], False), tokens)
    assert trained.runs == (3, 0)


def test_zero_width_interval_is_untested() -> None:
    tokens = np.full(50, 100)
    same = np.full((50, 3), 600.0)
    result = compare_rates(Side(same, True), Side(same, True), tokens)
    (v,) = judge([claim_of(result, report="results", family="variant", a="A", b="B",
                           metric="PPL", scale="relative", effect_unit="% PPL")])
    assert v.verdict == "untested" and "zero-width" in v.reason


def test_collect_round_trips_and_refuses_duplicate_ids() -> None:
    records = [v.as_record() for v in judge([_claim("A", -2.0, 0.001)])]
    document = collect({"reports/results.json": {"verdicts": records}})
    assert document["counts"]["variant"]["better"] == 1
    (back,) = verdicts_of(document)
    assert back.id == "results/variant/2021/A/B/PPL" and back.verdict == "better"
    assert records[0]["mde"] is not None and "mde_of" not in records[0]
    with pytest.raises(ValueError, match="also in"):
        collect({"x.json": {"verdicts": records}, "y.json": {"verdicts": records}})
    with pytest.raises(ValueError, match="lacks"):
        collect({"x.json": {"verdicts": [{"id": "x"}]}})


def test_the_interval_shown_agrees_with_the_verdict() -> None:
    """An unadjusted 95 % interval clear of zero beside a Holm null: the family-wise interval
    (Bonferroni, 1 - 0.05/m) contains zero, and a `better` one's unadjusted interval does not."""
    from pipeline.stats.comparisons import t_result
    from pipeline.stats.verdict import claim_of, judge, sentence
    # raw p-values 0.004, 0.03, 0.2 (t with 50 df): Holm rejects the first only
    results = [t_result(effect, 1.0, 50.0, 100, (5, 5), "t", "abstracts")
               for effect in (-3.0, -2.23, -1.3)]
    claims = [claim_of(r, report="results", family="variant", a=f"V{i}", b="B", metric="PPL",
                       effect_unit="% PPL") for i, r in enumerate(results)]
    verdicts = judge(claims)
    assert [v.verdict for v in verdicts] == ["better", "not distinguishable", "not distinguishable"]
    assert verdicts[0].ci[1] < 0
    assert verdicts[1].ci[1] < 0 < verdicts[1].ci_family[1]        # the case a reader trips on
    for v in verdicts[1:]:
        assert v.ci_family[0] < 0 < v.ci_family[1]
        assert "family-wise 98.33 % CI" in sentence(v) and "unadjusted" in sentence(v)
    assert verdicts[1].as_record()["ci_family"][0] < verdicts[1].as_record()["ci"][0]
