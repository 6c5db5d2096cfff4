"""Resampling documents (a cluster bootstrap) and exact sums, for descriptive intervals and the
calibration's simulations.

An abstract's tokens are not independent draws: resampling tokens gives intervals far too
narrow, so a replicate draws **documents** (:func:`document_weights`). The verdicts' tests are
closed-form (:mod:`pipeline.stats.comparisons`); what is resampled here describes, it does not
decide.

Sums over resampled documents are computed in **fixed point** (int64, :data:`FIXED_POINT` units
per nat): integer sums are exact in any order, so replicates are the same bytes on every CPU,
whatever BLAS or SIMD path numpy picks (floating-point matrix products are not).
"""

from __future__ import annotations

import numpy as np

N_BOOTSTRAP = 2000
SEED = 0
# 2^24 units per unit of the summed quantity: a document's NLL sum (≤ ~10^4 nats) times a
# replicate's document count (≤ ~10^5) stays far below int64's 9.2e18; resolution 6e-8.
FIXED_POINT = float(1 << 24)


def document_weights(n_documents: int, n_boot: int = N_BOOTSTRAP, seed: int = SEED) -> np.ndarray:
    """``int64 [n_boot, n_documents]``: how often each document is drawn in each replicate (a
    multinomial draw of ``n_documents`` with equal probabilities: the cluster bootstrap)."""
    if n_documents < 1:
        raise ValueError("cannot resample zero documents")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_documents, np.full(n_documents, 1.0 / n_documents),
                           size=n_boot).astype(np.int64)


def to_fixed(values: np.ndarray) -> np.ndarray:
    """``values`` (float) as int64 fixed-point numbers (round half to even: exact IEEE ops)."""
    return np.rint(np.asarray(values, dtype=np.float64) * FIXED_POINT).astype(np.int64)


def weighted_sums(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``float64 [n_boot, ...]``: ``weights [n_boot, n] @ values [n, ...]`` computed exactly in
    fixed point (module doc); the same bytes on every CPU."""
    fixed = to_fixed(values)
    flat = fixed.reshape(fixed.shape[0], -1)
    sums = np.asarray(weights, dtype=np.int64) @ flat        # integer matmul: exact, no BLAS
    return (sums.astype(np.float64) / FIXED_POINT).reshape((len(weights),) + fixed.shape[1:])


def per_token_rate(weights: np.ndarray, nll: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """``[n_boot, ...]``: Σ_d w_d·nll_d / Σ_d w_d·n_d per replicate (mean NLL per token of the
    resampled documents). ``nll [n, ...]`` per-document NLL sums, ``tokens [n]`` their tokens."""
    num = weighted_sums(weights, nll)
    den = np.asarray(weights, dtype=np.int64) @ np.asarray(tokens, dtype=np.int64)
    den = den.astype(np.float64).reshape((-1,) + (1,) * (num.ndim - 1))
    return num / den


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``samples`` (NaN, NaN if any replicate is undefined)."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.size == 0 or np.isnan(samples).any():
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(samples, [tail, 100 - tail])
    return float(lo), float(hi)
