"""Significance of each model against Baseline-all (§4.7), with items that are really independent.

Two tests, one per kind of item:

* **Paired sign test** (PPL, CPL): the items are the abstracts of the scored period, which every
  model scores. For each abstract, count whether the model's per-token NLL is lower (better) or
  higher than the baseline's; ties carry no sign and are dropped. Under H0 "better and worse are
  equally likely" the number of "better" items is Binomial(n, 1/2), n = better + worse, and the
  p-value is the exact two-sided binomial tail (``scipy.stats.binomtest``). The reference
  scripts reported the point probability P(K = k) instead, which is not a p-value.
* **Exact Wilcoxon-Mann-Whitney rank-sum test** (CM): generated abstracts of two models are two
  independent samples (abstract ``i`` of one model has nothing to do with abstract ``i`` of
  another besides a shared random seed), so a paired test does not fit. The statistic is the sum
  of the model's mid-ranks in the pooled sample; its exact permutation distribution, conditional
  on the observed ties (CM is often exactly 0), is counted by dynamic programming
  (:func:`_rank_sum_distribution`), so the p-value is exact at any sample size, unlike scipy's
  ``method="exact"`` (no tie correction) or the normal approximation.

With several training seeds, each item's score is first averaged over seeds
(:func:`pipeline.reports.results.seed_mean_items`), so an abstract counts once, not once per seed: seeds
re-train the same model and are not new independent items.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import gammaln, logsumexp
from scipy.stats import binomtest, rankdata


@dataclass(frozen=True)
class SignTest:
    better: int     # items where the model beats the baseline
    worse: int      # items where the baseline beats the model
    ties: int       # dropped
    p_value: float  # exact two-sided binomial p-value; 1.0 when every item ties

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def sign_test_counts(better: int, worse: int, ties: int = 0) -> SignTest:
    """The two-sided exact sign test from counts of better/worse items."""
    if min(better, worse, ties) < 0:
        raise ValueError(f"counts must be non-negative, got better={better} worse={worse} ties={ties}")
    n = better + worse
    p = 1.0 if n == 0 else float(binomtest(better, n, 0.5, alternative="two-sided").pvalue)
    return SignTest(better=better, worse=worse, ties=ties, p_value=p)


def sign_test_log10_p(better: int, worse: int) -> float:
    """log10 of :func:`sign_test_counts`' p-value, computed in log space: finite where the p-value
    itself underflows a double (thousands of items all one way). Under H0 Binomial(n, 1/2) is
    symmetric, so the two-sided p-value is min(1, 2 P(K <= min(better, worse)))."""
    n, k = better + worse, min(better, worse)
    if n == 0 or 2 * k == n:
        return 0.0
    j = np.arange(k + 1)
    log_cdf = logsumexp(gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1)) - n * np.log(2.0)
    return float(min(0.0, (np.log(2.0) + log_cdf) / np.log(10.0)))


def paired_sign_test(model: np.ndarray, baseline: np.ndarray, higher_is_better: bool) -> SignTest:
    """Sign test of paired per-item scores; ``higher_is_better`` False for perplexities/NLLs."""
    model = np.asarray(model, dtype=np.float64)
    baseline = np.asarray(baseline, dtype=np.float64)
    if model.shape != baseline.shape or model.ndim != 1:
        raise ValueError(f"paired scores need two 1-d arrays of equal length, got shapes "
                         f"{model.shape} and {baseline.shape}")
    if np.isnan(model).any() or np.isnan(baseline).any():
        raise ValueError("paired scores contain NaN; drop items without a score on both sides first")
    diff = model - baseline if higher_is_better else baseline - model
    return sign_test_counts(int((diff > 0).sum()), int((diff < 0).sum()), int((diff == 0).sum()))


@dataclass(frozen=True)
class RankSumTest:
    """Exact two-sided Wilcoxon-Mann-Whitney test of two independent samples.

    ``better``/``worse``/``ties`` count all (model item, baseline item) *pairs* where the model's
    item is better/worse/equal (``better + ties / 2`` is the Mann-Whitney U of the model, oriented
    so that larger is better), so ``better / (better + worse + ties)`` is the probability that a
    random model item beats a random baseline item.
    """
    better: int
    worse: int
    ties: int
    p_value: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _rank_sum_distribution(doubled_ranks: np.ndarray, n_model: int) -> np.ndarray:
    """``ways[s]`` = number of ``n_model``-subsets of the pooled items whose doubled mid-ranks sum
    to ``s`` (float64 counts; exact up to float rounding of very large binomials).

    Doubled mid-ranks are integers, so the subset-sum table is a plain integer-indexed array; each
    item shifts the table of subsets one larger by its rank (one numpy operation per item).
    """
    total = int(doubled_ranks.sum())
    ways = np.zeros((n_model + 1, total + 1), dtype=np.float64)
    ways[0, 0] = 1.0
    for r in doubled_ranks.astype(np.int64):
        ways[1:, r:] += ways[:-1, :total + 1 - r].copy()
    return ways[n_model]


def rank_sum_test(model: np.ndarray, baseline: np.ndarray, higher_is_better: bool) -> RankSumTest:
    """Exact two-sided rank-sum test: do the model's items score differently from the baseline's?

    The p-value is the permutation probability, over all ways to split the pooled items into
    groups of the two sizes (ties kept at their mid-ranks), of a rank sum at least as far from its
    mean as the observed one.
    """
    model = np.asarray(model, dtype=np.float64)
    baseline = np.asarray(baseline, dtype=np.float64)
    if model.ndim != 1 or baseline.ndim != 1 or not len(model) or not len(baseline):
        raise ValueError(f"the rank-sum test needs two non-empty 1-d samples, got shapes "
                         f"{model.shape} and {baseline.shape}")
    if np.isnan(model).any() or np.isnan(baseline).any():
        raise ValueError("scores contain NaN; drop items without a score first")
    sign = 1.0 if higher_is_better else -1.0
    diff = sign * (model[:, None] - baseline[None, :])
    better, worse = int((diff > 0).sum()), int((diff < 0).sum())
    ties = diff.size - better - worse
    doubled = np.rint(2 * rankdata(np.concatenate([model, baseline]))).astype(np.int64)
    # The test is symmetric in the two groups: count subsets of the smaller one (a smaller table).
    n = min(len(model), len(baseline))
    group = doubled[:len(model)] if n == len(model) else doubled[len(model):]
    ways = _rank_sum_distribution(doubled, n)
    observed = int(group.sum())
    mean = n * doubled.sum() / len(doubled)
    sums = np.arange(len(ways))
    # Sums are integers and the mean a multiple of 1/N: a tolerance well below 1/N separates them.
    extreme = np.abs(sums - mean) >= abs(observed - mean) - 1e-9 / len(doubled)
    p = float(ways[extreme].sum() / ways.sum())
    return RankSumTest(better=better, worse=worse, ties=ties, p_value=min(1.0, p))
