"""Forecasters worth beating: persistence adjusted by a model, and mean reversion.

Measured on the full export, no model beats plain persistence (period Y−1's smoothed unigram
distribution) at vocabulary perplexity, although the Frequency model ranks rising and falling
words better than chance and linear extrapolation ranks them worse than chance (trends revert).
The two forecasters here test whether those ranking signals are worth anything *as forecasts*.
Both are torch-free and read only what the forecast report already has: the observed counts of
the history periods and, for the first, a model's predicted change from its forecast stage.

**History-adjusted persistence** (one per model). Let ``p_k`` be period Y−1's add-one smoothed
distribution (:func:`pipeline.features.frequencies.log_frequencies`) and ``Δ̂_k = log p̂_Y(k) −
log p̂'_{Y−1}(k)`` the model's predicted change of token k (its forecast stage's ``log_prob −
log_prob_prev``, the Δ̂ whose Spearman ρ the backtests report)::

    p̃_k = p_k · exp(Δ̂_k) / Σ_j p_j · exp(Δ̂_j)

*Why*: a model's own forecast p̂_Y is its mean softmax over Y−1's abstracts, which carries how far
the LM's unigram distribution is from the data (an LM trained periods earlier); that error swamps
the small predicted changes, so p̂_Y loses to persistence even when Δ̂ ranks trends well. p̃ keeps
the observed level and applies only the model's *change*, so it beats persistence exactly when the
predicted changes are worth having. Δ̂ = 0 (Baseline) gives persistence itself; its ranking of
tokens (log p̃ − log p up to a constant) is the model's Δ̂.

**Mean-reverting forecaster**. With ``ℓ_{t,k}`` the smoothed log frequency of token k in period t
and ``ℓ̄_k = (1/m) Σ_{j=1..m} ℓ_{Y−j,k}`` its mean over the history window Y−m .. Y−1::

    log p̂_k = ℓ_{Y−1,k} + λ · (ℓ̄_k − ℓ_{Y−1,k}) − log Z,    λ ∈ [0, 1]

(Z renormalises over the vocabulary). λ = 0 is persistence, λ = 1 the (geometric) mean of the
window: the last period's deviation from the multi-period level is shrunk by λ. For m = 2,
``ℓ̄ − ℓ_{Y−1} = −(ℓ_{Y−1} − ℓ_{Y−2}) / 2``: a fraction λ/2 of the last change is undone, the
opposite ranking to linear extrapolation's. Its predicted change (ranked for ρ) is
``λ · (ℓ̄_k − ℓ_{Y−1,k})``. With m = 1 it is persistence.

*Why*: linear extrapolation's negative ρ says that words which just rose tend to fall back; mean
reversion is the forecaster that bets on it, with a strength fitted rather than assumed.

The forecaster of the registry: :mod:`pipeline.forecast.forecasters.mean_reversion`. **Fitting
λ** (and the smoothing): :mod:`pipeline.forecast.fits`, on training periods only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.corpus.periods import in_time_order
from pipeline.features.frequencies import log_frequencies
from pipeline.features.windows import history_periods

LAMBDA_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))   # 0, 0.05 .. 1


def _log_softmax(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    shifted = values - values.max()
    return shifted - np.log(np.exp(shifted).sum())


def history_adjusted_persistence(last_counts: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``log p̃`` ``float64 [|V|]``: period Y−1's add-one smoothed distribution times the model's
    predicted change ``exp(Δ̂)``, renormalised (module doc). ``delta`` must cover the |V| tokens
    of ``last_counts`` (an LM's padded outputs beyond them are cut by the caller)."""
    delta = np.asarray(delta, dtype=np.float64)
    if delta.shape != np.shape(last_counts):
        raise ValueError(f"delta {delta.shape} does not match the counts {np.shape(last_counts)}")
    return _log_softmax(log_frequencies(last_counts) + delta)


def mean_reversion_change(log_freq: np.ndarray, lam: float) -> np.ndarray:
    """``λ · (ℓ̄ − ℓ_{Y−1})`` ``[|V|]`` for ``log_freq`` ``[|V|, m]`` (columns: Y−m .. Y−1 in time
    order): the mean-reverting forecaster's predicted change, before renormalisation (exactly 0
    for λ = 0, so persistence has no ranking)."""
    log_freq = np.asarray(log_freq, dtype=np.float64)
    if log_freq.ndim != 2 or log_freq.shape[1] < 1:
        raise ValueError(f"log_freq must be [|V|, m] with m >= 1, got {log_freq.shape}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the mean-reversion strength must lie in [0, 1], got {lam}")
    return lam * (log_freq.mean(axis=1) - log_freq[:, -1])


def mean_reverting(log_freq: np.ndarray, lam: float) -> np.ndarray:
    """``log p̂`` ``float64 [|V|]`` of the mean-reverting forecaster with strength ``lam`` from the
    window's smoothed log frequencies ``log_freq`` ``[|V|, m]`` (columns in time order)."""
    log_freq = np.asarray(log_freq, dtype=np.float64)
    return _log_softmax(log_freq[:, -1] + mean_reversion_change(log_freq, lam))


def fit_targets(train_periods: Sequence[str], window: int) -> list[str]:
    """Training periods whose whole history window ``t−m .. t−1`` is also training periods: the
    targets of the one-step-ahead forecasts that fit λ (none if there are ≤ m of them)."""
    train = set(train_periods)
    return [t for t in in_time_order(train_periods)
            if all(h in train for h in history_periods(t, window))]
