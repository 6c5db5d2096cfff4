"""Learned global forecaster: one gradient-boosted regressor across words, fitted on their pasts.

Each (word, origin r) of the past is one example. **Features** at origin r, from the add-α
smoothed log frequencies ``y`` and log document shares ``z = log((df + α) / (n_docs + 2α))``:
``y`` and ``z`` at r, r−1, …, r−K+1 (NaN before the first period: the regressor routes missing
values itself), the period-to-period changes of ``y`` over the same lags, and the age (periods
since the word was first counted, up to r; 0: never yet). **Target**: ``y_{r+h} − y_r``, the change
of log frequency ``h`` steps ahead. **Pairs** are built from ``past`` only, for every r with
``r + h`` inside it (r ≥ 1, so each example has one change), which makes leakage impossible by
construction: the forecast reads nothing the engine did not hand it.

Examples count in proportion to the word's count at r plus one: a word's share of the held-out
NLL grows with its frequency, and the changes of rare words are mostly sampling noise. The
weighting is done by sampling, not by ``sample_weight`` (whose weighted binning alone costs
seconds per fit): :data:`MAX_EXAMPLES` examples (or as many as the past has, if fewer) are drawn
with replacement, with probability proportional to that weight and a fixed seed (the same past
always gives the same sample), which also keeps a fit for V ≈ 30,000 words × 15 periods within a
few seconds on 2 cores. The regressor is scikit-learn's ``HistGradientBoostingRegressor``
with a fixed ``random_state`` and early stopping off, so a fit is deterministic given its seed.
**Fits**: the sample and the regressor's seed are ``SEED + k`` for fit ``k`` of :data:`FITS`;
the engine forecasts every fit, and the claims take the fit-to-fit spread in as a trained
model's runs (:attr:`Forecaster.fits`). It fits and predicts
on one OpenMP thread, since on a busy 2-core machine OpenMP's waiting threads made a fit ~5× slower
(the engine can run forecasts side by side instead). The forecast is
``y_T + c · predicted change``, renormalised; c (the grid's shrinkage) reuses the last fit.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from pipeline.forecast.forecasters.base import (DEFAULT_ALPHA, FIT, Forecaster, PeriodCounts,
                                                 SKILL_ONLY, log_frequency_series, log_normalise)
from pipeline.infra.errors import UserError

ORDER = 70
LAGS = 4                      # K: periods of history per feature
MAX_EXAMPLES = 100_000
SEED = 0
FITS = 3                      # independent fits (seeds SEED .. SEED + 2): their spread is tested
KEPT_PASTS = 64               # pasts whose fits are kept: every origin × horizon of a backtest
SHRINKAGES: tuple[float, ...] = (1.0, 0.5)
REGRESSOR: Mapping[str, Any] = {"max_iter": 100, "learning_rate": 0.1, "max_leaf_nodes": 31,
                                "min_samples_leaf": 40, "l2_regularization": 1.0,
                                "early_stopping": False, "random_state": SEED}


def _series(past: PeriodCounts, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``y``, ``z`` float64 ``[n, V]`` and the first period (row) each word was counted in
    (``n``: never)."""
    y = log_frequency_series(past.counts, alpha)
    z = (np.log(past.doc_counts + alpha)
         - np.log(past.n_docs.astype(np.float64) + 2.0 * alpha)[:, None])
    seen = past.counts > 0
    first = np.where(seen.any(axis=0), seen.argmax(axis=0), past.n_periods)
    return y, z, first


def features(y: np.ndarray, z: np.ndarray, first: np.ndarray, row: int) -> np.ndarray:
    """float64 ``[V, 3K + 1]``: the module doc's features of every word at origin ``row``."""
    lagged = np.full((3 * LAGS, y.shape[1]), np.nan)
    for lag in range(LAGS):
        r = row - lag
        if r >= 0:
            lagged[lag], lagged[LAGS + lag] = y[r], z[r]
        if r >= 1:
            lagged[2 * LAGS + lag] = y[r] - y[r - 1]
    age = np.maximum(row - first + 1, 0)[None, :]
    return np.concatenate([lagged, age]).T


def training_pairs(past: PeriodCounts, horizon: int, alpha: float,
                   seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Features and targets of the (origin, word) examples of ``past``, origins rows 1 .. n−1−h,
    drawn in proportion to their weights with ``seed`` (module doc)."""
    y, z, first = _series(past, alpha)
    origins = range(1, past.n_periods - horizon)
    if not origins:
        raise UserError(f"forecaster 'learned' needs a past of at least {horizon + 2} periods for "
                        f"horizon {horizon}, got {past.n_periods}",
                        fix="start the forecasts later or give the corpus more periods")
    x = np.concatenate([features(y, z, first, r) for r in origins])
    target = np.concatenate([y[r + horizon] - y[r] for r in origins])
    weight = np.concatenate([past.counts[r] + 1.0 for r in origins])
    drawn = np.sort(np.random.default_rng(seed).choice(
        len(target), min(len(target), MAX_EXAMPLES), replace=True, p=weight / weight.sum()))
    return x[drawn], target[drawn]


class Learned(Forecaster):
    name = "learned"
    kind = "learned"
    description = "gradient-boosted change of log frequency from each word's recent past"
    min_periods = 4               # horizon 2 needs rows r = 1 and r + 2 = 3
    backtests = SKILL_ONLY
    fits = FITS

    def __init__(self) -> None:
        # the fits of the latest pasts, horizons and α: {key: {fit: change}}, oldest first (the
        # grid reuses them, and the trend claims ask again for the origins already forecast)
        self._fits: OrderedDict[tuple[Any, ...], dict[int, np.ndarray]] = OrderedDict()

    def grid(self) -> list[Mapping[str, Any]]:
        return [{"alpha": DEFAULT_ALPHA, "shrinkage": c} for c in SHRINKAGES]

    def predicted_change(self, past: PeriodCounts, horizon: int, alpha: float,
                         fit: int = 0) -> np.ndarray:
        """float64 ``[V]``: fit ``fit``'s change of each word's log frequency ``horizon``
        periods after ``past``, fitted on ``past``'s pairs (the fits of the latest
        :data:`KEPT_PASTS` pasts, horizons and α are reused)."""
        key = (past.periods, horizon, alpha, past.counts.shape,
               hash(past.counts.tobytes()), hash(past.doc_counts.tobytes()),
               hash(past.n_docs.tobytes()))
        fits = self._fits.setdefault(key, {})
        self._fits.move_to_end(key)
        while len(self._fits) > KEPT_PASTS:
            self._fits.popitem(last=False)
        if fit not in fits:
            fits[fit] = self._fit(past, horizon, alpha, SEED + fit)
        return fits[fit]

    def _fit(self, past: PeriodCounts, horizon: int, alpha: float, seed: int) -> np.ndarray:
        x, target = training_pairs(past, horizon, alpha, seed)
        y, z, first = _series(past, alpha)
        # a short past leaves the deepest lags without a value in every pair: such a column
        # cannot be binned, and carries nothing to learn from
        known = ~np.isnan(x).all(axis=0)
        with threadpool_limits(limits=1, user_api="openmp"):
            model = HistGradientBoostingRegressor(**{**REGRESSOR, "random_state": seed}).fit(
                x[:, known], target)
            return model.predict(features(y, z, first, past.n_periods - 1)[:, known])

    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        self.check(past, horizon)
        alpha = float(setting.get("alpha", DEFAULT_ALPHA))
        last = log_frequency_series(past.counts[-1:], alpha)[0]
        shrinkage = float(setting.get("shrinkage", SHRINKAGES[0]))
        change = self.predicted_change(past, horizon, alpha, int(setting.get(FIT, 0)))
        return log_normalise(last + shrinkage * change)


FORECASTER = Learned()
