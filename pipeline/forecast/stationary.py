"""Additive smoothing of the count forecasters, and the grid its α is fitted over.

A forecast from counts must give every word some mass: the held-out documents it is scored on may
hold a word the past never did. Each count forecaster of the registry
(:mod:`pipeline.forecast.forecasters`) smooths additively,
``log p̂(w) = log((c_w + α) / (N + α|V|))`` (α = 1 is the frequency features' add-one rule;
mean reversion smooths each period before averaging). The forecast report fits α once on the
training periods over :data:`ALPHA_GRID` (:mod:`pipeline.forecast.fits`); the rolling engine
chooses it per origin from the forecasters' own, shorter grids.
"""

from __future__ import annotations

import numpy as np

ALPHA_GRID: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def smoothed(counts: np.ndarray, alpha: float) -> np.ndarray:
    """``log((c + α) / (N + α|V|))`` float64 ``[|V|]``."""
    counts = np.asarray(counts, dtype=np.float64)
    return np.log(counts + alpha) - np.log(counts.sum() + alpha * counts.shape[0])
