"""The results report's verdicts: two-level bootstrap (abstracts, runs), Holm, and the seed rule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation.model_comparison import compare_nll
from pipeline.reports.model_verdicts import model_claims, verdict_sections
from pipeline.stats.verdict import judge

N_ABSTRACTS = 200


@dataclass
class FakeRun:
    """What the verdicts read of a score folder: per-abstract NLL sums and generated CMs."""
    tokens: dict
    generations: dict


def _run(scale: float, seed: int, noise: float = 0.002) -> FakeRun:
    rng = np.random.default_rng(seed)
    n_tok = np.random.default_rng(99).integers(40, 200, N_ABSTRACTS)
    per_token = np.random.default_rng(98).normal(6.0, 0.4, N_ABSTRACTS)   # shared abstracts
    nll = n_tok * per_token * scale * (1 + rng.normal(0, noise))          # run-to-run shift
    tokens = pd.DataFrame({"key": [f"a{i:03d}" for i in range(N_ABSTRACTS)], "nll_sum": nll,
                           "n_tokens": n_tok, "content_nll_sum": nll * 0.6,
                           "n_content": n_tok // 2})
    gens = pd.DataFrame({"index": range(10), "cm": rng.uniform(0.0, 0.1, 10)})
    return FakeRun({"2021": tokens}, {"2021": gens})


def _runs(scales: dict[str, float], seeds: list[int]) -> dict:
    return {(v, s): _run(scale, 10 * i + s) for i, (v, scale) in enumerate(scales.items())
            for s in seeds}


def test_three_runs_order_a_real_gap_and_not_a_null_one() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.97, "frequency-static": 1.0}, [0, 1, 2])
    verdicts = judge(model_claims(runs, ["baseline", "frequency", "frequency-static"], [0, 1, 2],
                                  "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    assert by[("variant", "Frequency", "Baseline-all", "PPL")].verdict == "better"
    gain = by[("temporal-gain", "Frequency", "Frequency-static", "PPL")]
    # NLL x 0.97 at ~6 nats per token: log PPL -0.18, PPL -16.5 %
    assert gain.verdict == "better" and gain.effect == pytest.approx(-16.5, abs=1.0)
    null = by[("variant", "Frequency-static", "Baseline-all", "PPL")]
    assert null.verdict == "not distinguishable"
    assert all(v.unit in ("abstracts", "generated abstracts") for v in verdicts)


def test_one_run_is_never_ordered_however_large_the_gap() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.8}, [0])
    (ppl, *_), = [judge(model_claims(runs, ["baseline", "frequency"], [0], "2021"))]
    assert ppl.p < 0.01 and ppl.verdict == "not distinguishable" and "fewer than 3" in ppl.reason


def test_run_spread_widens_the_interval() -> None:
    """Three runs that scatter by ±5 % give a far wider interval than the document noise alone."""
    runs = {**{("a", s): _run(0.97, s, noise=0.05) for s in range(3)},
            **{("b", s): _run(1.0, 10 + s, noise=0.05) for s in range(3)}}
    def nll(v: str, seeds: list[int]) -> np.ndarray:
        return np.stack([runs[(v, s)].tokens["2021"]["nll_sum"].to_numpy() for s in seeds], 1)
    tok = runs[("a", 0)].tokens["2021"]["n_tokens"].to_numpy()
    three = compare_nll({"a": nll("a", [0, 1, 2]), "b": nll("b", [0, 1, 2])}, tok, "a", "b")
    one = compare_nll({"a": nll("a", [0]), "b": nll("b", [0])}, tok, "a", "b")
    assert (three.ci[1] - three.ci[0]) > 3 * (one.ci[1] - one.ci[0])


def test_the_section_quotes_every_verdict() -> None:
    runs = _runs({"baseline": 1.0, "frequency": 0.97}, [0, 1, 2])
    verdicts = judge(model_claims(runs, ["baseline", "frequency"], [0, 1, 2], "2021"))
    text = "\n".join(verdict_sections(verdicts, [0, 1, 2], "year"))
    assert text.count("\n- ") == len(verdicts) == 3        # PPL, CPL, CM against the Baseline
    assert "reports/verdicts.json" in text and "Holm" in text


def test_history_sensitivity_detects_a_model_that_reads_its_history() -> None:
    """The wrong-history pass: 2 % worse with the previous period's history is `better` for the
    real one; a model whose wrong-history NLL equals its real NLL is not distinguishable."""
    def with_shift(factor: float) -> dict:
        runs = _runs({"baseline": 1.0, "frequency": 0.97}, [0, 1, 2])
        for s in range(3):
            tokens = runs[("frequency", s)].tokens["2021"]
            tokens["nll_sum_shifted"] = tokens["nll_sum"] * factor
        return runs
    for factor, expected in ((1.02, "better"), (1.0, "not distinguishable")):
        verdicts = judge(model_claims(with_shift(factor), ["baseline", "frequency"], [0, 1, 2],
                                      "2021"))
        (check,) = [v for v in verdicts if v.family == "history-sensitivity"]
        assert check.verdict == expected, (factor, check)
        assert check.b == "Frequency (previous period's history)"


def test_the_adapted_baseline_is_judged_against_the_unadapted_lm_not_as_a_variant() -> None:
    """train.base: adapted: Baseline vs baseline-0 is the domain-gain family; baseline-0 is no
    row of the variant family, and the variants are judged against the adapted Baseline."""
    runs = _runs({"baseline": 0.9, "baseline-0": 1.0, "frequency": 0.9}, [0, 1, 2])
    verdicts = judge(model_claims(runs, ["baseline", "baseline-0", "frequency"], [0, 1, 2], "2021"))
    by = {(v.family, v.a, v.b, v.metric): v for v in verdicts}
    gain = by[("domain-gain", "Baseline-all", "Baseline-unadapted", "PPL")]
    assert gain.verdict == "better" and gain.effect < -40   # NLL x 0.9 at ~6 nats per token
    assert not any(v.family == "variant" and "Baseline-unadapted" in (v.a, v.b) for v in verdicts)
    assert by[("variant", "Frequency", "Baseline-all", "PPL")].verdict == "not distinguishable"
    text = "\n".join(verdict_sections(verdicts, [0, 1, 2], "year"))
    assert "### Domain gain" in text
