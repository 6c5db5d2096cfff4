"""Does a fixed weighting of items line up with their observed values beyond what shared
covariates explain? The partial-regression t test.

``observed`` (one value per item, e.g. a word's standardised change) is regressed on an intercept,
the ``covariates`` (e.g. the word's frequency and its topic directions) and the ``weights`` (e.g.
a forecaster's centred ranks); the test is the ordinary least-squares t of the weights'
coefficient, ``n − q − 1`` degrees of freedom with ``q`` the intercept and covariate columns.
Equivalently (Frisch–Waugh–Lovell) both sides are residualised on the covariates and their
partial correlation is tested.

Why adjust: items that share a covariate move together (a topic whose share of the papers grew
lifts all of its words), so a weighting that has the covariates' structure lines up with that
movement by chance as often as the structure is coarse, whatever the weighting's skill. Once the
shared directions are partialled out the residual values are close to independent items, and the
null is "no skill beyond the covariates". The price: skill that lies only along the covariates
(foreseeing which topic grows) is not credited.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from pipeline.stats.comparisons import LEVEL, TestResult, t_result

ADJUSTED_TEST = "partial-regression t over words (topic directions and frequency partialled out)"


def _residual(basis: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x`` less its projection on ``basis``; exactly 0 where nothing is left beyond rounding."""
    x = np.asarray(x, dtype=np.float64)
    out = x - basis @ (basis.T @ x)
    return out if float(out @ out) > 1e-20 * max(float(x @ x), 1e-300) else np.zeros_like(x)


def covariate_basis(covariates: np.ndarray) -> np.ndarray:
    """An orthonormal basis ``[n, q]`` of the intercept and the columns of ``covariates``
    (``[n, c]``); columns that add nothing (rank deficiency) are dropped."""
    n = len(covariates)
    design = np.column_stack([np.ones(n), np.asarray(covariates, dtype=np.float64).reshape(n, -1)])
    q, r = np.linalg.qr(design)
    diag = np.abs(np.diag(r))
    return q[:, diag > 1e-10 * max(float(diag.max()), 1e-300)]


def adjusted_correlation(observed: np.ndarray, weights: np.ndarray, basis: np.ndarray,
                         unit: str = "words", level: float = LEVEL) -> TestResult:
    """The partial correlation of ``weights`` with ``observed`` given ``basis``
    (:func:`covariate_basis`): its t test (``n − q − 2`` degrees of freedom, the correlation's
    null standard error ``1/sqrt(df)``) and Fisher-z interval."""
    zr, ar = _residual(basis, observed), _residual(basis, weights)
    df = len(observed) - basis.shape[1] - 1
    zz, aa = float(zr @ zr), float(ar @ ar)
    if df < 2 or zz <= 0 or aa <= 0:
        return t_result(math.nan, math.nan, df, len(observed), (0, 0), ADJUSTED_TEST, unit, level)
    r = float(ar @ zr) / math.sqrt(aa * zz)
    r = min(max(r, -1 + 1e-12), 1 - 1e-12)
    t = r * math.sqrt(df / (1 - r * r))
    p = float(2 * sps.t.sf(abs(t), df))
    z, q = math.atanh(r), float(sps.norm.ppf(0.5 + level / 2)) / math.sqrt(df - 1)
    return TestResult(r, (math.tanh(z - q), math.tanh(z + q)), p, 1 / math.sqrt(df), df,
                      len(observed), (0, 0), ADJUSTED_TEST, unit)


def adjusted_sum(observed: np.ndarray, weights: np.ndarray, basis: np.ndarray,
                 unit: str = "words", level: float = LEVEL) -> TestResult:
    """``T = Σ weights · residual(observed)``, the weighted sum of the observed values once the
    covariates' part is removed, with the regression t test of the weights' coefficient: its
    standard error ``s · |residual(weights)|``, ``s²`` the residual variance of ``observed`` after
    the covariates and the weights (``n − q − 1`` degrees of freedom)."""
    zr, ar = _residual(basis, observed), _residual(basis, weights)
    df = len(observed) - basis.shape[1] - 1
    total, aa = float(np.asarray(weights) @ zr), float(ar @ ar)
    if df < 1 or aa <= 0:
        return t_result(total, math.nan, df, len(observed), (0, 0), ADJUSTED_TEST, unit, level)
    s2 = max(float(zr @ zr) - float(ar @ zr) ** 2 / aa, 0.0) / df
    return t_result(total, math.sqrt(s2 * aa), df, len(observed), (0, 0), ADJUSTED_TEST, unit,
                    level)
