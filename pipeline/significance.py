"""Paired two-sided sign test (§4.7: each model against Baseline-all, per metric).

For paired per-item scores (the same abstract scored by two models, or the i-th generated
abstract of each), count the items where the model is better and where it is worse; ties carry
no sign and are dropped. Under H0 "better and worse are equally likely" the number of "better"
items is Binomial(n, 1/2), n = better + worse, and the p-value is the exact two-sided binomial
tail (``scipy.stats.binomtest``). The reference scripts reported the point probability
P(K = k) instead, which is not a p-value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import binomtest


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
