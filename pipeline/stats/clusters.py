"""Abstracts in clusters: the document variance when abstracts of one group are not independent.

Papers of one proceedings volume share topics, style and often a template, so a model that
suits one venue's abstracts suits most of them: the per-abstract contributions ``u_j`` of a
comparison (:mod:`pipeline.stats.comparisons`) are correlated within a venue. Treating them as
independent understates the document variance by the **design effect**, about
``1 + (m_eff − 1) · ICC`` with ``m_eff = Σ m_g² / n`` the size-weighted cluster size and ICC the
intra-cluster correlation of ``u``. On the export, one year's test abstracts fall in ~120 venues
with ``m_eff`` ≈ 575 (the main conference and Findings volumes hold ~1,000 abstracts each), so
even an ICC of 0.01 multiplies the variance by about 7.

Where the corpus names each abstract's group, the document variance is the **cluster-robust**
one, with the small-sample corrections that keep it honest when a few volumes hold most abstracts
(Imbens & Kolesár 2016): CR2, ``Σ_g S_g² / (1 − m_g/n) / T²`` with ``S_g`` the group's sum of
``u`` (Bell & McCaffrey 2002: the ``1/(1 − m_g/n)`` undoes the shrinkage of a big group's
residuals towards the mean it helped fit), and Student's t with Bell and McCaffrey's degrees of
freedom under a working model of equicorrelated abstracts within a group at the estimated ICC.
Those degrees of freedom are about the number of groups that carry the weight, not ``G − 1``:
with CR1 and ``G − 1`` degrees of freedom, 6,000 simulated abstracts in 120 volumes of export-like
sizes gave false-positive rates of 9-14 % (200 simulations each); CR2 with these degrees of
freedom is within the bounds (``reports/calibration.json``). With every abstract its own group
it is the independent variance ``n/(n−1) Σ_j u_j² / T²`` with ``n − 1`` degrees of freedom
exactly. The run × abstract interaction stays an independent term (each run's noise on one
abstract is its own), so :mod:`pipeline.stats.comparisons` still subtracts it once.

Sums over abstracts are in fixed point (:mod:`pipeline.stats.fixed_point`), the sum over groups of
their squares is exactly rounded (``math.fsum``; squared sums of ~1,000 abstracts could leave
int64): the same bytes on any CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pipeline.stats.fixed_point import FIXED_POINT, fixed_sum, to_fixed

def group_codes(groups: Sequence[object] | np.ndarray) -> tuple[np.ndarray, int]:
    """``(codes [n], G)``: each item's group as an index ``0 .. G−1`` (in sorted group order)."""
    values = np.asarray(groups, dtype=object).astype(str)
    labels, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64), len(labels)


def cluster_sums(u: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """``Σ_{j∈g} u_j`` for each group ``g`` (exact: fixed-point integers, any order)."""
    fixed = np.zeros(n_groups, dtype=np.int64)
    np.add.at(fixed, codes, to_fixed(u))
    return fixed.astype(np.float64) / FIXED_POINT


def document_variance(u: np.ndarray, total: float, groups: np.ndarray | None = None
                      ) -> tuple[float, float]:
    """``(variance, df)`` of ``Σ_j u_j / total`` under resampling of abstracts (``groups``
    None: independent, ``n − 1`` df) or of their groups (``groups [n]``: the bias-reduced
    cluster-robust variance with its degrees of freedom, :func:`cluster_robust`)."""
    u = np.asarray(u, dtype=np.float64)
    n = len(u)
    if groups is None:
        return float(n / (n - 1) * fixed_sum(u * u) / (total * total)), n - 1.0
    variance, df = cluster_robust(u, groups)
    return variance / (total * total), df


def cluster_robust(u: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """``(variance, df)`` of ``Σ_j u_j`` (``u`` centred: a ratio estimator's linearised
    contributions) with the groups as the unit: CR2, ``Σ_g S_g² / (1 − m_g/n)`` with ``S_g`` the
    group's sum, and the degrees of freedom of Bell & McCaffrey (2002) under a working model of
    equicorrelated abstracts within a group at the estimated intra-cluster correlation
    (Imbens & Kolesár 2016, module doc)."""
    codes, g = group_codes(groups)
    if g < 2:
        raise ValueError("a cluster-robust variance needs at least two groups")
    n = len(u)
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    adjust = 1.0 / (1.0 - sizes / n)             # (I − H_gg)^{-1} of an intercept's hat matrix
    sums = cluster_sums(u, codes, g)
    variance = math.fsum(adjust * sums * sums)   # exactly rounded: any order, no overflow
    rho = intra_cluster_correlation(u, groups) if n > g else 0.0
    return variance, bell_mccaffrey_df(sizes, adjust, 0.0 if math.isnan(rho) else max(0.0, rho))


def bell_mccaffrey_df(sizes: np.ndarray, adjust: np.ndarray, rho: float) -> float:
    """The degrees of freedom of :func:`cluster_robust`'s variance, ``tr(A Q)² / tr((A Q)²)``.

    The estimator is ``e' M e`` with ``M = D A D'`` (``D = (I − H) C``, ``C`` the group
    indicators, ``A = diag(adjust)``); under the working covariance ``(1 − ρ) I + ρ C C'``,
    ``Q = (1 − ρ) P + ρ P²`` with ``P = diag(m) − m m'/n``. ``Q`` is a diagonal plus a rank-two
    term in ``m`` and ``q = m²``, so both traces take O(G) exactly rounded sums (no G × G
    matrix: a corpus may leave thousands of abstracts ungrouped, each a group of one)."""
    m = np.asarray(sizes, dtype=np.float64)
    a = np.asarray(adjust, dtype=np.float64)
    n, q = math.fsum(m), m * m
    # Q = diag(d) + c1 m m' + c2 (q m' + m q')
    c1 = -(1.0 - rho) / n + rho * math.fsum(q) / (n * n)
    c2 = -rho / n
    d = (1.0 - rho) * m + rho * q
    low = c1 * q + 2.0 * c2 * q * m                         # the rank-two term's diagonal
    w = np.array([[math.fsum(a * m * m), math.fsum(a * m * q)],
                  [math.fsum(a * q * m), math.fsum(a * q * q)]])
    cw = np.array([[c1, c2], [c2, 0.0]]) @ w
    first = math.fsum(a * (d + low))
    second = math.fsum(a * a * (d * d + 2.0 * d * low)) + float(np.trace(cw @ cw))
    return first * first / second


def intra_cluster_correlation(u: np.ndarray, groups: np.ndarray) -> float:
    """The one-way ANOVA estimate of the intra-cluster correlation of ``u`` (unequal sizes:
    ``n_0 = (n − Σ m_g²/n)/(G − 1)``); NaN with fewer than two groups or no spread."""
    u = np.asarray(u, dtype=np.float64)
    codes, g = group_codes(groups)
    n = len(u)
    if g < 2 or n <= g:
        return math.nan
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    means = cluster_sums(u, codes, g) / sizes
    grand = float(fixed_sum(u)) / n
    ms_between = float(fixed_sum(sizes * (means - grand) ** 2)) / (g - 1)
    within = u - means[codes]
    ms_within = float(fixed_sum(within * within)) / (n - g)
    n0 = (n - float((sizes * sizes).sum()) / n) / (g - 1)
    denom = ms_between + (n0 - 1) * ms_within
    return (ms_between - ms_within) / denom if denom > 0 else math.nan


def design_effect(u: np.ndarray, groups: np.ndarray) -> float:
    """The cluster-robust document variance of ``Σ u`` over the independent one (1: no
    clustering to speak of; the factor by which independence understates the variance)."""
    centred = np.asarray(u, dtype=np.float64)
    centred = centred - float(fixed_sum(centred)) / len(centred)
    clustered, _ = document_variance(centred, 1.0, groups)
    independent, _ = document_variance(centred, 1.0)
    return clustered / independent if independent > 0 else math.nan


def effective_size(groups: np.ndarray) -> float:
    """``Σ m_g² / n``: the size of the cluster an average abstract sits in."""
    codes, g = group_codes(groups)
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    return float((sizes * sizes).sum() / sizes.sum())
