"""Resampling by the right unit: documents (a cluster bootstrap) and, across training runs, seeds.

An abstract's tokens are not independent draws (GUIDE §12): resampling tokens gives intervals far
too narrow. Every interval and test here resamples **documents**, and two forecasters or models
that score the same documents are **paired**: each replicate draws one multiset of documents and
scores every forecaster on it. Where a claim is about *variants* (trained models), each replicate
also draws the trained runs of each variant with replacement (a two-level bootstrap), so the
run-to-run spread enters the interval; a variant with one run has no measured spread, and
:mod:`pipeline.stats.verdict` refuses to order it.

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


def run_draws(n_runs: int, n_boot: int = N_BOOTSTRAP, seed: int = SEED) -> np.ndarray:
    """``int64 [n_boot, n_runs]``: the runs (seeds) drawn with replacement in each replicate."""
    rng = np.random.default_rng([seed, n_runs])
    return rng.integers(0, n_runs, size=(n_boot, n_runs))


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


def bootstrap_p(samples: np.ndarray, null: float = 0.0) -> float:
    """Two-sided bootstrap p-value of "the effect is ``null``": twice the smaller share of
    replicates on either side of it, counted as (k + 1) / (B + 1) so that it is never 0."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.size == 0 or np.isnan(samples).any():
        return float("nan")
    below = int((samples <= null).sum())
    above = int((samples >= null).sum())
    return float(min(1.0, 2 * (min(below, above) + 1) / (samples.size + 1)))


def two_sample_mean_differences(a: np.ndarray, b: np.ndarray, n_boot: int = N_BOOTSTRAP,
                                seed: int = SEED) -> np.ndarray:
    """``float64 [n_boot]``: mean(a*) − mean(b*) where each side's items are resampled on their
    own (two independent samples, e.g. generated abstracts of a model and of a reference; nothing
    pairs item i of one side with item i of the other). Sums in fixed point, as
    :func:`weighted_sums`: the same bytes on every CPU."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"two 1-d samples expected, got shapes {a.shape} and {b.shape}")
    mean_a = weighted_sums(document_weights(len(a), n_boot, seed), a) / len(a)
    mean_b = weighted_sums(document_weights(len(b), n_boot, seed + 1), b) / len(b)
    return mean_a - mean_b
