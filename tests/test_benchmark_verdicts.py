"""The semantic-change benchmark's claims: each method's ρ with the planted truth against chance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.reports.semantic_benchmark_report import (POWER_AT, benchmark_claims, detectable,
                                                       power_lines, spearman_power, verdict_lines)
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


def test_power_is_the_level_at_no_effect_and_the_mde_is_found_with_80_percent() -> None:
    assert spearman_power(1e-12, 40) == pytest.approx(0.05)
    assert spearman_power(0.3, 20) < spearman_power(0.3, 40) < spearman_power(0.5, 40)
    verdicts = judge(benchmark_claims({"contextual": _corr(0.72, 0.0003)}))
    power = detectable({"contextual": _corr(0.72, 0.0003),
                        "broken": {"n": 3, "error": "too few words"}}, 1)
    assert power["contextual"]["mde_family"] == pytest.approx(verdicts[0].mde, abs=1e-6)
    assert power["broken"] == {"words": 3, "mde": None, "mde_family": None, "power_at": None}
    text = "\n".join(power_lines(power, 1))
    row = next(line for line in text.splitlines() if line.startswith("| contextual |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "20" and float(cells[2]) == pytest.approx(verdicts[0].mde, abs=5e-4)
    assert spearman_power(float(cells[2]), 20) == pytest.approx(0.8, abs=0.01)
    assert "| broken | 3 | – | – |" in text


def test_power_agrees_with_the_calibrations_simulation() -> None:
    """The report's power is Fisher z against the normal; the calibration simulates the test
    itself (t reference for p, ranks of bivariate normal draws). They agree to within 0.06 at
    every size it simulates (the t reference rejects a little more often)."""
    calibration = json.loads((Path(__file__).parents[1] / "reports" / "calibration.json")
                             .read_text())["tests"]["semantic-change ρ"]
    assert set(calibration) >= {"20 words", "40 words"}
    for row in calibration.values():
        for rho in POWER_AT:
            simulated = row["power"][f"ρ {rho}"]
            assert spearman_power(rho, row["settings"]["n_words"]) == pytest.approx(simulated,
                                                                                   abs=0.06)
