"""The semantic-change benchmark's claims: each method's ρ with the planted truth against chance."""

from __future__ import annotations

from pipeline.reports.semantic_benchmark_report import benchmark_claims, verdict_lines
from pipeline.stats.verdict import judge


def _corr(rho: float, p: float) -> dict:
    return {"n": 20, "spearman": rho, "spearman_p": p, "spearman_ci": [rho - 0.3, rho + 0.2],
            "spearman_se": (1.06 / 17) ** 0.5,
            "pearson": rho, "pearson_p": p, "pearson_ci": [rho - 0.3, rho + 0.2]}


def test_methods_are_judged_against_chance_with_holm() -> None:
    verdicts = judge(benchmark_claims({"contextual": _corr(0.72, 0.0003), "sgns": _corr(0.54, 0.013),
                                       "time-token": _corr(0.15, 0.53),
                                       "broken": {"n": 3, "error": "too few words"}}))
    got = {v.a: v for v in verdicts}
    assert got["contextual"].verdict == "better" and got["contextual"].seeds == (0, 0)
    # SGNS trains on a seed: one run has no known spread, so it is untested (not counted in m)
    assert got["sgns"].verdict == "untested" and got["sgns"].seeds == (1, 0)
    assert got["contextual"].family_size == 1                # the only tested claim
    assert got["time-token"].verdict == "untested"          # trains on a seed too
    assert got["broken"].verdict == "untested" and got["broken"].reason == "too few words"
    assert got["contextual"].mde > 0 and got["contextual"].mde < 1
    text = "\n".join(verdict_lines(verdicts))
    assert text.count("\n- ") == 4 and "semantic-change" in text
