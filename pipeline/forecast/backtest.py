"""Backtest metrics: how good a vocabulary forecast for period Y was, once Y's text is known.

* **Vocabulary forecast error**: the cross-entropy of period Y's tokens under the predicted
  distribution ``p̂``, ``H = −Σ_w c_w log p̂_w / Σ_w c_w`` (nats per token), reported as the
  unigram perplexity ``exp(H)``. Lower is better.
* **Trend tokens** (:func:`trend_tokens`): the content tokens a trend test ranks, chosen on the
  predictor's side of the split only (half A of Y−1), never on the counts the observed change is
  measured on.

Which periods' counts enter each side, and how the claims are tested, is
:mod:`pipeline.forecast.claims`.
"""

from __future__ import annotations

import numpy as np

from pipeline.models.perplexity import cross_entropy, perplexity

MIN_COUNT = 20


def unigram_perplexity(counts: np.ndarray, log_p: np.ndarray) -> float:
    """The forecast error as a perplexity: ``exp(H)`` of the period's ``counts`` under ``log_p``."""
    return perplexity(cross_entropy(counts, log_p))


def trend_tokens(counts: np.ndarray, content: np.ndarray, min_count: int = MIN_COUNT) -> np.ndarray:
    """bool ``[|V|]``: content tokens seen >= ``min_count`` times in ``counts`` (the backtests
    pass half A of Y−1: the predictors' side)."""
    return np.asarray(content, bool) & (np.asarray(counts) >= min_count)
