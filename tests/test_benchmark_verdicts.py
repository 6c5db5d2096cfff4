"""The semantic-change benchmark's claims: each method's ρ with the planted truth against chance."""

from __future__ import annotations

from pipeline.reports.semantic_benchmark_report import benchmark_claims, verdict_lines
from pipeline.stats.verdict import judge


def _corr(rho: float, p: float) -> dict:
    return {"n": 20, "spearman": rho, "spearman_p": p, "spearman_ci": [rho - 0.3, rho + 0.2],
            "pearson": rho, "pearson_p": p, "pearson_ci": [rho - 0.3, rho + 0.2]}


def test_methods_are_judged_against_chance_with_holm() -> None:
    verdicts = judge(benchmark_claims({"contextual": _corr(0.72, 0.0003), "sgns": _corr(0.54, 0.013),
                                       "time-token": _corr(0.15, 0.53),
                                       "broken": {"n": 3, "error": "too few words"}}))
    got = {v.a: v for v in verdicts}
    assert got["contextual"].verdict == "better" and got["contextual"].family_size == 3
    assert got["sgns"].verdict == "better"                 # 0.013 x 2 after Holm < 0.05
    assert got["time-token"].verdict == "not distinguishable"
    assert got["broken"].reason == "not tested: too few words"
    text = "\n".join(verdict_lines(verdicts))
    assert text.count("\n- ") == 4 and "semantic-change" in text
