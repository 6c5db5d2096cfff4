"""Backtests: how good a vocabulary forecast for period Y was, once Y's text is known (issue 10 §2).

* **Vocabulary forecast error**: the cross-entropy of period Y's observed token counts ``c`` under
  the predicted distribution ``p̂``, ``H = −Σ_w c_w log p̂_w / Σ_w c_w`` (nats per token), reported
  as the unigram perplexity ``exp(H)`` (:func:`pipeline.models.perplexity.cross_entropy`). Lower
  is better.
* **Trend detection**: over the *trend tokens*, the content tokens seen at least
  :data:`MIN_COUNT` times in both Y and Y−1, compare the predicted change Δ̂ (:mod:`pipeline.forecast.vocabulary`)
  with the observed change ``Δ = log f_Y − log f_{Y−1}`` (smoothed log frequencies):
  Spearman's ρ, and precision@k: the share of the predicted top-k risers (k = :data:`TOP_K`, or
  all trend tokens if fewer) that are among the observed top :data:`TOP_FRACTION` risers (the
  ``ceil(0.1 n)`` largest Δ). Ties are broken by token id. A forecaster that predicts no change
  (persistence, Baseline) has no ranking: both are undefined (NaN) for it.
* **Uncertainty**: percentile bootstrap 95 % intervals over tokens, :data:`N_BOOTSTRAP`
  replicates with a fixed seed. For the forecast error the period's token occurrences are resampled
  (a multinomial draw of N tokens from the observed counts); for trends the trend tokens are
  resampled. Every forecaster is scored on the same replicates, so differences between them have
  paired intervals too.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import rankdata

from pipeline.models.perplexity import cross_entropy, perplexity

MIN_COUNT = 20
TOP_K = 50
TOP_FRACTION = 0.10
N_BOOTSTRAP = 1000
SEED = 0


def unigram_perplexity(counts: np.ndarray, log_p: np.ndarray) -> float:
    """The forecast error as a perplexity: ``exp(H)`` of the period's ``counts`` under ``log_p``."""
    return perplexity(cross_entropy(counts, log_p))


def trend_tokens(counts_prev: np.ndarray, counts_period: np.ndarray, content: np.ndarray,
                 min_count: int = MIN_COUNT) -> np.ndarray:
    """bool ``[|V|]``: content tokens seen >= ``min_count`` times in both periods."""
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


def bootstrap_cross_entropy(counts: np.ndarray, log_ps: np.ndarray,
                            n_boot: int = N_BOOTSTRAP, seed: int = SEED) -> np.ndarray:
    """``[n_boot, F]`` cross-entropies of ``F`` forecasts (rows of ``log_ps``) on resampled
    token occurrences of the period (multinomial with the observed proportions)."""
    counts = np.asarray(counts, dtype=np.int64)
    log_ps = np.asarray(log_ps, dtype=np.float64)[:, :len(counts)]
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, log_ps.shape[0]))
    chunk = max(1, (1 << 22) // max(1, len(counts)))       # bounded memory: ~32 MB per chunk
    for lo in range(0, n_boot, chunk):
        draws = rng.multinomial(n, counts / n, size=min(chunk, n_boot - lo)).astype(np.float64)
        out[lo:lo + len(draws)] = -(draws @ log_ps.T) / n
    return out


def bootstrap_trends(predicted: np.ndarray, observed: np.ndarray, k: int = TOP_K,
                     top_fraction: float = TOP_FRACTION, n_boot: int = N_BOOTSTRAP,
                     seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """``(rho, precision)``, each ``[n_boot, F]``: the trend metrics of ``F`` forecasts (rows of
    ``predicted``, ``[F, n]``) on trend tokens resampled with replacement."""
    predicted = np.asarray(predicted, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    if observed.shape[0] == 0:                      # no trend token: nothing to rank
        nan = np.full((n_boot, predicted.shape[0]), np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, observed.shape[0], size=(n_boot, observed.shape[0]))
    obs = observed[idx]
    rho = np.empty((n_boot, predicted.shape[0]))
    prec = np.empty_like(rho)
    for f, pred in enumerate(predicted):
        rho[:, f] = _spearman_rows(pred[idx], obs)
        prec[:, f] = _precision_rows(pred[idx], obs, k, top_fraction)
    return rho, prec


def interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval (NaN, NaN) if any replicate is undefined."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.size == 0 or np.isnan(samples).any():
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)
