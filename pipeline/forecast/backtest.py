"""Backtest metrics: how good a vocabulary forecast for period Y was, once Y's text is known.

* **Vocabulary forecast error**: the cross-entropy of period Y's tokens under the predicted
  distribution ``p̂``, ``H = −Σ_w c_w log p̂_w / Σ_w c_w`` (nats per token), reported as the
  unigram perplexity ``exp(H)``. Lower is better.
* **Trend detection**: over the *trend tokens* (:func:`trend_tokens`), Spearman's ρ between a
  predicted and the observed change in smoothed log frequency, and precision@k: the share of the
  predicted top-k risers (k = :data:`TOP_K`, or all trend tokens if fewer) among the observed top
  :data:`TOP_FRACTION` risers (the ``ceil(0.1 n)`` largest changes). Ties by token id. A
  forecaster that predicts no change has no ranking: both are undefined (NaN).

Which periods' counts enter each side, and how the intervals and tests resample documents, is
:mod:`pipeline.forecast.claims`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import rankdata

from pipeline.models.perplexity import cross_entropy, perplexity

MIN_COUNT = 20
TOP_K = 50
TOP_FRACTION = 0.10


def unigram_perplexity(counts: np.ndarray, log_p: np.ndarray) -> float:
    """The forecast error as a perplexity: ``exp(H)`` of the period's ``counts`` under ``log_p``."""
    return perplexity(cross_entropy(counts, log_p))


def trend_tokens(counts_prev: np.ndarray, counts_period: np.ndarray, content: np.ndarray,
                 min_count: int = MIN_COUNT) -> np.ndarray:
    """bool ``[|V|]``: content tokens seen >= ``min_count`` times in both count vectors (the
    backtests pass period Y and half B of Y−1)."""
    return (np.asarray(content, bool) & (np.asarray(counts_prev) >= min_count)
            & (np.asarray(counts_period) >= min_count))


def spearman(predicted: np.ndarray, observed: np.ndarray) -> float:
    """Spearman's ρ (Pearson correlation of mid-ranks); NaN if either side is constant."""
    return float(_spearman_rows(np.asarray(predicted, float)[None], np.asarray(observed, float)[None])[0])


def precision_at_k(predicted: np.ndarray, observed: np.ndarray, k: int = TOP_K,
                   top_fraction: float = TOP_FRACTION) -> float:
    """Share of the ``min(k, n)`` largest ``predicted`` among the ``ceil(top_fraction·n)`` largest
    ``observed`` (ties by position); NaN when ``predicted`` is constant (no ranking)."""
    return float(_precision_rows(np.asarray(predicted, float)[None],
                                 np.asarray(observed, float)[None], k, top_fraction)[0])


def _spearman_rows(pred: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Row-wise ρ of ``[R, n]`` arrays (NaN for fewer than 2 items or a constant row)."""
    if pred.shape[1] < 2:
        return np.full(pred.shape[0], np.nan)
    a = rankdata(pred, axis=1)
    b = rankdata(obs, axis=1)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (a * b).sum(axis=1) / denom, np.nan)


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """bool mask of the ``k`` largest entries per row, ties broken by position (stable)."""
    order = np.argsort(-values, axis=1, kind="stable")[:, :k]
    mask = np.zeros(values.shape, dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def _precision_rows(pred: np.ndarray, obs: np.ndarray, k: int, top_fraction: float) -> np.ndarray:
    n = pred.shape[1]
    if n == 0:
        return np.full(pred.shape[0], np.nan)
    k = min(k, n)
    hits = (_top(pred, k) & _top(obs, math.ceil(top_fraction * n))).sum(axis=1) / k
    constant = (pred == pred[:, :1]).all(axis=1)
    return np.where(constant, np.nan, hits)
