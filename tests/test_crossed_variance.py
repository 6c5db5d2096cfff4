"""Each variance once: the run × abstract interaction of a crossed design enters a rate
comparison's standard error once, and the minimal detectable effect has its stated power."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.stats import calibration as scal
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.power import POWER, t_mde, t_power


def _crossed_variance_by_hand(diff: np.ndarray, tokens: np.ndarray) -> float:
    """Var of the mean log-PPL difference of a crossed (abstract x seed) design, from the two-way
    ANOVA mean squares of the linearised contributions, written out with loops."""
    n, r = diff.shape
    total = tokens.sum()
    effect = diff.sum() / total / r
    w = [[diff[j, s] - effect * tokens[j] for s in range(r)] for j in range(n)]
    row = [sum(w[j]) / r for j in range(n)]
    col = [sum(w[j][s] for j in range(n)) / n for s in range(r)]
    grand = sum(row) / n
    ms_doc = r * sum((m - grand) ** 2 for m in row) / (n - 1)
    ms_seed = n * sum((c - grand) ** 2 for c in col) / (r - 1)
    ms_int = sum((w[j][s] - row[j] - col[s] + grand) ** 2
                 for j in range(n) for s in range(r)) / ((n - 1) * (r - 1))
    return (ms_doc + ms_seed - ms_int) / (n * r) * n * n / (total * total)


def test_paired_standard_error_is_the_crossed_designs() -> None:
    rng = np.random.default_rng(3)
    n, r = 40, 5
    tokens = rng.integers(50, 300, n).astype(float)
    base = tokens[:, None] * (6 + rng.normal(0, 0.3, n))[:, None]
    a = base + tokens[:, None] * (rng.normal(0, 0.05, (n, r)) + rng.normal(0, 0.02, r)
                                  + rng.normal(0, 0.1, n)[:, None])
    b = base + tokens[:, None] * rng.normal(0, 0.05, (n, r))
    seeds = tuple(range(r))
    result = compare_rates(Side(a, True, seeds), Side(b, True, seeds), tokens)
    assert result.se ** 2 == pytest.approx(_crossed_variance_by_hand(a - b, tokens), rel=1e-6)


def test_when_the_seed_part_is_estimated_below_zero_the_document_part_alone_is_the_variance(
) -> None:
    rng = np.random.default_rng(4)
    n, r = 60, 5
    tokens = rng.integers(50, 300, n).astype(float)
    diff = tokens[:, None] * (rng.normal(0, 0.2, (n, 1)) + rng.normal(0, 0.1, (n, r)))
    diff -= (diff.sum(0) - diff.sum(0).mean())[None, :] / n   # every seed the same rate
    b = tokens[:, None] * (6 + rng.normal(0, 0.3, (n, 1))) + np.zeros((n, r))
    seeds = tuple(range(r))
    result = compare_rates(Side(b + diff, True, seeds), Side(b, True, seeds), tokens)
    u = diff.mean(axis=1) - result.effect * tokens
    doc_var = n / (n - 1) * (u * u).sum() / tokens.sum() ** 2
    assert result.se ** 2 == pytest.approx(doc_var, rel=1e-6)
    assert result.df < n - 1       # the subtracted interaction's uncertainty is counted


@pytest.mark.parametrize("shared_sd", [0.07, None])
def test_standard_error_is_the_true_one_when_the_interaction_dominates(shared_sd) -> None:
    """Counted twice, the interaction made the reported standard error 1.37x the true one."""
    model = dict(scal.RATE_MODEL, run_doc_sd=0.3)
    rng = np.random.default_rng(5)
    effects, ses = [], []
    for _ in range(300):
        a, b, tokens = scal.simulate_rates(rng, 800, 5, 0.0005, 0.0, model, shared_sd=shared_sd)
        result = compare_rates(a, b, tokens)
        effects.append(result.effect)
        ses.append(result.se)
    ratio = np.sqrt(np.mean(np.square(ses))) / np.std(effects, ddof=1)
    assert 0.88 <= ratio <= 1.12, ratio            # 300 draws: the sd itself is known to ±4 %


@pytest.mark.parametrize("df,level", [(4, 0.05), (4, 0.05 / 21), (10, 0.05 / 21), (math.inf, 0.05)])
def test_the_mde_is_found_with_the_stated_power(df, level) -> None:
    mde = t_mde(1.0, df, level)
    assert t_power(mde, df, level) == pytest.approx(POWER, abs=1e-6)
    rng = np.random.default_rng(6)
    z = rng.standard_normal(400_000) + mde
    t = z if math.isinf(df) else z / np.sqrt(rng.chisquare(df, z.size) / df)
    from scipy import stats as sps
    crit = sps.norm.ppf(1 - level / 2) if math.isinf(df) else sps.t.ppf(1 - level / 2, df)
    assert np.mean(np.abs(t) > crit) == pytest.approx(POWER, abs=0.004)


def test_the_shortcut_mde_has_less_power_than_stated_at_few_degrees_of_freedom() -> None:
    from scipy import stats as sps
    level = 0.05 / 21
    shortcut = sps.t.ppf(1 - level / 2, 4) + sps.t.ppf(POWER, 4)
    assert t_power(shortcut, 4, level) < 0.75 and t_mde(1.0, 4, level) > shortcut
