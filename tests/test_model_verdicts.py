"""The results report's verdicts: Welch's t over runs with the abstracts' variance, Holm, the seed
rule, and an A/A simulation through the report's own comparison code."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from pipeline.models.registry import seeds_by_variant
from pipeline.reports.model_verdicts import compare_runs, model_claims, verdict_sections
from pipeline.stats.verdict import judge

N_ABSTRACTS = 200


@dataclass
class FakeRun:
    """What the verdicts read of a score folder: per-abstract NLL sums and generated CMs."""
    tokens: dict
    generations: dict


def _run(scale: float, seed: int, noise: float = 0.002, abstracts: int = 98) -> FakeRun:
    rng = np.random.default_rng(seed)
    n_tok = np.random.default_rng(99).integers(40, 200, N_ABSTRACTS)
    per_token = np.random.default_rng(abstracts).normal(6.0, 0.4, N_ABSTRACTS)   # shared abstracts
    per_token = per_token * (1 + rng.normal(0, 0.01, N_ABSTRACTS))       # abstract x run noise
    nll = n_tok * per_token * scale * (1 + rng.normal(0, noise))          # run-to-run shift
    tokens = pd.DataFrame({"key": [f"a{i:03d}" for i in range(N_ABSTRACTS)], "nll_sum": nll,
                           "n_tokens": n_tok, "content_nll_sum": nll * 0.6,
                           "n_content": n_tok // 2})
    gens = pd.DataFrame({"index": range(10), "cm": rng.uniform(0.0, 0.1, 10)})
    return FakeRun({"2021": tokens}, {"2021": gens})


def _runs(scales: dict[str, float], seeds: list[int]) -> dict:
    return {(v, s): _run(scale, 10 * i + s) for i, (v, scale) in enumerate(scales.items())
            for s in seeds}


def _claims(runs: dict, variants: list[str], seeds: list[int], period: str = "2021") -> list:
    """The claims when every variant ran ``seeds``."""
    return model_claims(runs, variants, dict.fromkeys(variants, seeds), period)


def test_three_runs_order_a_real_gap_and_not_a_null_one() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.97, "frequency-static": 1.0}, [0, 1, 2])
    verdicts = judge(_claims(runs, ["baseline", "frequency", "frequency-static"], [0, 1, 2],
                                  "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    assert by[("variant", "Frequency", "Baseline-all", "PPL")].verdict == "better"
    gain = by[("temporal-gain", "Frequency", "Frequency-static", "PPL")]
    # NLL x 0.97 at ~6 nats per token: log PPL -0.18, PPL -16.5 %
    assert gain.verdict == "better" and gain.effect == pytest.approx(-16.5, abs=1.0)
    null = by[("variant", "Frequency-static", "Baseline-all", "PPL")]
    assert null.verdict == "not distinguishable"
    assert all(v.unit in ("abstracts", "generated abstracts") for v in verdicts)


def test_one_run_is_untested_however_large_the_gap() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.8}, [0])
    (ppl, *_), = [judge(_claims(runs, ["baseline", "frequency"], [0], "2021"))]
    assert ppl.verdict == "untested" and "fewer than 3" in ppl.reason


def test_run_spread_widens_the_interval() -> None:
    """Three runs that scatter by ±5 % give a far wider interval than ones that scatter by 0.2 %,
    and its degrees of freedom come from the runs (Welch), not from the abstracts."""
    def width(noise: float):
        runs = {**{("frequency", s): _run(0.97, s, noise=noise) for s in range(3)},
                **{("baseline", s): _run(1.0, 10 + s, noise=noise) for s in range(3)}}
        c = compare_runs(runs, "frequency", "baseline", dict.fromkeys(("frequency", "baseline"),
                         [0, 1, 2]), "2021", "PPL")
        return c.ci[1] - c.ci[0], c.df
    (wide, df), (narrow, _) = width(0.05), width(0.002)
    assert wide > 3 * narrow and df < 10


def test_the_section_quotes_every_verdict() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.97}, [0, 1, 2])
    verdicts = judge(_claims(runs, ["baseline", "frequency"], [0, 1, 2], "2021"))
    text = "\n".join(verdict_sections(verdicts, {"baseline": [0, 1, 2]}, "year"))
    assert text.count("\n- ") == len(verdicts) == 3        # PPL, CPL, CM against the Baseline
    assert "reports/verdicts.json" in text and "Holm" in text


def test_a_null_says_how_large_an_effect_it_could_have_seen() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 1.0, "frequency-static": 1.0}, [0, 1, 2])
    verdicts = judge(_claims(runs, ["baseline", "frequency", "frequency-static"], [0, 1, 2],
                                  "2021"))
    nulls = [v for v in verdicts if v.verdict == "not distinguishable"]
    assert nulls and all(v.mde > 0 for v in nulls)
    assert all("detectable with 80% power" in v.reason for v in nulls)


def test_a_a_comparisons_rarely_say_better_or_worse() -> None:
    """Two variants with the same true mean, 3 runs a side with a run spread like the sample's
    (log PPL sd ~0.02), a new draw of abstracts each time, through model_claims and judge: the
    share of `better`/`worse` PPL verdicts stays within the engine's bound (≤ 7 %; the two-level
    bootstrap it replaced said so ~18 % of the time). 300 simulations: the Monte-Carlo sd of a
    5 % rate is 1.3 points."""
    ordered = 0
    for sim in range(300):
        runs = {(v, s): _run(1.0, 1000 * sim + 10 * i + s, noise=0.02, abstracts=5000 + sim)
                for i, v in enumerate(("baseline", "frequency")) for s in range(3)}
        verdicts = judge(c for c in _claims(runs, ["baseline", "frequency"], [0, 1, 2],
                                                 "2021") if c.metric == "PPL")
        ordered += verdicts[0].verdict in ("better", "worse")
    assert ordered / 300 <= 0.07, ordered


def test_the_adapted_baseline_is_judged_against_the_unadapted_lm_not_as_a_variant() -> None:
    """train.base: adapted: Baseline vs baseline-0 is the domain-gain family; baseline-0 is no
    row of the variant family, and the variants are judged against the adapted Baseline."""
    runs = _runs({"baseline": 0.9, "baseline-0": 1.0, "frequency": 0.9}, [0, 1, 2])
    verdicts = judge(_claims(runs, ["baseline", "baseline-0", "frequency"], [0, 1, 2], "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    gain = by[("domain-gain", "Baseline-all", "Baseline-unadapted", "PPL")]
    assert gain.verdict == "better" and gain.effect < -40   # NLL x 0.9 at ~6 nats per token
    assert not any(v.family == "variant" and "Baseline-unadapted" in (v.a, v.b) for v in verdicts)
    assert by[("variant", "Frequency", "Baseline-all", "PPL")].verdict == "not distinguishable"
    text = "\n".join(verdict_sections(verdicts, {"baseline": [0, 1, 2]}, "year"))
    assert "### Domain gain" in text


def test_the_practitioners_baselines_are_variant_claims_against_baseline_all() -> None:
    """continued-N and baseline-N are rows of the variant family, each judged against
    Baseline-all on PPL, CPL and CM, under their paper-style names; neither has a temporal-gain
    or output-layer claim (no module, no control)."""
    variants = ["baseline", "baseline-1", "continued-1", "frequency"]
    runs = _runs({"baseline": 1.0, "baseline-1": 1.05, "continued-1": 0.97, "frequency": 1.0},
                 [0, 1, 2])
    verdicts = judge(_claims(runs, variants, [0, 1, 2], "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    for name in ("Baseline-continued-1", "Baseline-1"):
        assert {m for f, a, b, m in by if (f, a, b) == ("variant", name, "Baseline-all")} == {
            "PPL", "CPL", "CM"}
    assert by[("variant", "Baseline-continued-1", "Baseline-all", "PPL")].verdict == "better"
    assert by[("variant", "Baseline-1", "Baseline-all", "PPL")].verdict == "worse"
    assert not any(v.family != "variant" for v in verdicts)


def test_the_output_layer_family_holds_the_comparisons_the_variant_modules_name() -> None:
    """A variant module's COMPARED_WITH (temporal temperature: the temperature) is an
    output-layer claim when both are run; a question against the Baseline is the first family's."""
    variants = ["baseline", "temperature", "temporal-temperature", "continuous-vmf"]
    runs = _runs(dict.fromkeys(variants, 1.0), [0, 1, 2])
    claims = _claims(runs, variants, [0, 1, 2], "2021")
    assert [(c.a, c.b, c.metric) for c in claims if c.family == "output-layer"] == [
        ("Temporal-Temperature", "Temperature", m) for m in ("PPL", "CPL", "CM")]
    alone = _claims(runs, ["baseline", "temporal-temperature"], [0, 1, 2], "2021")
    assert not any(c.family == "output-layer" for c in alone)


def test_the_sides_of_a_temporal_gain_claim_may_run_more_seeds_than_the_rest() -> None:
    """experiment.other_seeds: Frequency and its control with 5 runs, Context with 3; each claim
    counts each side's own runs, and the section names which variants ran which seeds."""
    variants = ["baseline", "context", "frequency", "frequency-static"]
    seeds = seeds_by_variant(variants, [0, 1, 2, 3, 4], [0, 1, 2])
    assert seeds == {"baseline": (0, 1, 2, 3, 4), "context": (0, 1, 2),
                     "frequency": (0, 1, 2, 3, 4), "frequency-static": (0, 1, 2, 3, 4)}
    runs = {(v, s): _run(scale, 10 * i + s) for i, (v, scale) in enumerate(
        {"baseline": 1.0, "context": 1.0, "frequency": 0.97, "frequency-static": 1.0}.items())
        for s in seeds[v]}
    verdicts = judge(model_claims(runs, variants, seeds, "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    assert by[("temporal-gain", "Frequency", "Frequency-static", "PPL")].verdict == "better"
    assert by[("variant", "Context", "Baseline-all", "PPL")].verdict == "not distinguishable"
    text = "\n".join(verdict_sections(verdicts, seeds, "year"))
    assert "Runs per variant here: 5 or 3 (seeds 0, 1, 2, 3, 4 (Baseline-all, Frequency, " \
           "Frequency-static) and 0, 1, 2 (Context))." in text


def test_a_continued_baseline_is_judged_against_the_widest_continued_window() -> None:
    """continued-2 beside continued-17: the same extra steps from the same Baseline, so their
    difference is the window's recency, a temporal-gain claim (and both run every seed); the
    widest window has no such claim, and neither has a lone continued Baseline."""
    variants = ["baseline", "continued-2", "continued-17", "word-bias"]
    seeds = seeds_by_variant(variants, [0, 1, 2, 3, 4], [0, 1, 2])
    assert seeds == {"baseline": (0, 1, 2, 3, 4), "continued-2": (0, 1, 2, 3, 4),
                     "continued-17": (0, 1, 2, 3, 4), "word-bias": (0, 1, 2)}
    runs = {(v, s): _run(scale, 10 * i + s) for i, (v, scale) in enumerate(
        {"baseline": 1.0, "continued-2": 0.6, "continued-17": 0.63, "word-bias": 1.0}.items())
        for s in seeds[v]}
    verdicts = judge(model_claims(runs, variants, seeds, "2021"))
    gains = {(v.a, v.b, v.metric): v.verdict for v in verdicts if v.family == "temporal-gain"}
    assert gains == {("Baseline-continued-2", "Baseline-continued-17", "PPL"): "better",
                     ("Baseline-continued-2", "Baseline-continued-17", "CPL"): "better"}
    alone = _claims(runs, ["baseline", "continued-2"], [0, 1, 2])
    assert not any(c.family == "temporal-gain" for c in alone)


def test_venues_group_the_abstracts_and_the_report_shows_their_clustering() -> None:
    from pipeline.reports.model_verdicts import clustering_section, venue_clustering
    variants = ["baseline", "frequency", "frequency-static"]
    runs = _runs({"baseline": 1.0, "frequency": 0.99, "frequency-static": 1.0}, [0, 1, 2])
    seeds = dict.fromkeys(variants, [0, 1, 2])
    # ten venues of 20 abstracts, and ten abstracts with no venue (each then a group of one)
    groups = {f"a{i:03d}": f"venue {i // 20}" for i in range(N_ABSTRACTS - 10)}
    grouped = model_claims(runs, variants, seeds, "2021", groups=groups)
    alone = model_claims(runs, variants, seeds, "2021")
    for g, a in zip(grouped, alone):
        assert (g.a, g.b, g.metric, g.effect) == (a.a, a.b, a.metric, a.effect)
        if g.metric in ("PPL", "CPL"):
            assert g.unit == "abstracts in venue clusters" and a.unit == "abstracts"
            assert g.ci != a.ci
    rows = venue_clustering(runs, variants, seeds, "2021", "baseline", groups)
    assert [(r["a"], r["b"]) for r in rows] == [("Frequency", "Baseline-all"),
                                                ("Frequency-static", "Baseline-all"),
                                                ("Frequency", "Frequency-static")]
    assert all(r["groups"] == 20 for r in rows)     # 10 venues and 10 abstracts alone
    text = "\n".join(clustering_section(rows, "year"))
    assert "### Venue clusters" in text and "| Frequency | Frequency-static |" in text
    assert venue_clustering(runs, variants, seeds, "2021", "baseline", {}) == []
    assert clustering_section([], "year") == []
