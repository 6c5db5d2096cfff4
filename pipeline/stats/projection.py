"""Partialling covariates out of a vector: the part of it that no shared covariate explains.

Items that share a covariate move together (a topic whose share of the papers grew lifts all of
its words), so a weighting of the items that has the covariates' structure lines up with that
movement by chance, as often as the structure is coarse, whatever the weighting's skill. A
weighting with the covariates' span projected out cannot: what is left of it is orthogonal to
every shared direction (Frisch–Waugh–Lovell: the same as adding the covariates to a regression).
"""

from __future__ import annotations

import numpy as np


def covariate_basis(covariates: np.ndarray) -> np.ndarray:
    """An orthonormal basis ``[n, q]`` of the intercept and the columns of ``covariates``
    (``[n, c]``); columns that add nothing (rank deficiency) are dropped."""
    n = len(covariates)
    design = np.column_stack([np.ones(n), np.asarray(covariates, dtype=np.float64).reshape(n, -1)])
    q, r = np.linalg.qr(design)
    diag = np.abs(np.diag(r))
    return q[:, diag > 1e-10 * max(float(diag.max()), 1e-300)]


def residual(basis: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x`` less its projection on ``basis``; exactly 0 where nothing is left beyond rounding."""
    x = np.asarray(x, dtype=np.float64)
    out = x - basis @ (basis.T @ x)
    return out if float(out @ out) > 1e-20 * max(float(x @ x), 1e-300) else np.zeros_like(x)
