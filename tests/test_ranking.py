"""An ordering of variants is stated only where seeds and CPUs cannot flip it."""

from __future__ import annotations

from pipeline.reports.ranking import distinguishable, ordered_pairs, ranking_markdown


def test_one_seed_is_never_distinguishable() -> None:
    assert not distinguishable([400.0], [500.0], tolerance=0.0)
    text = ranking_markdown({("Test 2021", "ppl"): {"baseline": [430.0], "frequency": [420.0]}}, 1)
    assert "not distinguishable" in text and "orders no variants" in text


def test_overlapping_seeds_or_a_gap_within_the_cpu_tolerance_are_not_distinguishable() -> None:
    assert not distinguishable([420.0, 432.0], [430.0, 436.0], tolerance=0.0)   # seeds overlap
    assert not distinguishable([420.0, 421.0], [430.0, 431.0], tolerance=0.036)  # 2.3 % < 3.6 %
    assert distinguishable([420.0, 421.0], [430.0, 431.0], tolerance=0.01)
    assert distinguishable([400.0, 401.0], [430.0, 431.0], tolerance=0.036)     # 7 % > 3.6 %


def test_pairs_are_ordered_by_the_metric_direction() -> None:
    values = {"baseline": [430.0, 431.0], "frequency": [400.0, 401.0], "context": [429.0, 432.0]}
    assert ordered_pairs(values, "ppl", 0.036) == [("frequency", "baseline"),
                                                   ("frequency", "context")]
    cm = {"baseline": [0.10, 0.11], "context": [0.20, 0.21]}
    assert ordered_pairs(cm, "cm", 0.036) == [("context", "baseline")]
    text = ranking_markdown({("Test 2021", "ppl"): values, ("Test 2021", "cm"): cm}, 2)
    assert "Frequency better than Baseline-all" in text and "Context better than Baseline-all" in text
