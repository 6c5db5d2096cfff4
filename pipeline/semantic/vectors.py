"""Comparing a word's vectors between two groups of periods: the distance of semantic change.

* :func:`cosine_distance` — ``1 - cos(x_t1, x_t2)``, paper 003's Algorithm 1 line 12
  (``../shared/papers/003-temporal-attention.txt``, lines 155-168; Martinc et al. 2020), used by
  every vector method (contextual, temporal-attention, time-token, sgns): the distance of the
  groups' *prototypes* (mean vectors);
* :func:`average_pairwise_distance` — APD, the mean cosine distance between every usage of one
  group and every usage of the other (the apd methods);
* :func:`procrustes_align` and :func:`aligned_cosine_change` — for static vectors trained
  separately per group (SGNS): two such spaces are equal only up to a rotation, so the first is
  rotated onto the last by orthogonal Procrustes on their shared vocabulary before comparing
  (Hamilton et al., 2016).

Pure numpy, float64.
"""

from __future__ import annotations

import numpy as np


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``1 - cos(a_i, b_i)`` in float64; NaN where a row is all zeros (undefined)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", a, b) / norm
    return np.where(norm > 0, 1.0 - np.clip(cos, -1.0, 1.0), np.nan)


def average_pairwise_distance(first: np.ndarray, last: np.ndarray) -> float:
    """APD: ``1/(n m) sum_i sum_j (1 - cos(a_i, b_j))`` over the ``n`` usage vectors ``a_i`` of
    the first group (rows of ``first``, ``[n, d]``) and the ``m`` ``b_j`` of the last.

    Why beside the prototype distance (:func:`cosine_distance` of the two means): the mean of a
    word's usages blurs its senses, so a word whose usages split into two new senses can keep
    its mean; comparing the usages pair by pair keeps the spread. With the same encoder,
    APD ranked DWUG-EN's graded change far better than prototypes (Periti & Tahmasebi, NAACL
    2024: XL-LEXEME ρ 0.886 vs 0.676; Kutuzov & Giulianelli 2020 introduced APD for SemEval-2020
    Task 1). Float64; NaN when a group has no usage or a usage is the zero vector (cosine
    undefined)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(last, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"usage sets must be [n, d] and [m, d], got {a.shape} and {b.shape}")
    if not (len(a) and len(b)):
        return float("nan")
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    if not ((na > 0).all() and (nb > 0).all()):
        return float("nan")
    cos = np.clip((a / na[:, None]) @ (b / nb[:, None]).T, -1.0, 1.0)
    return float(1.0 - cos.mean())


def procrustes_align(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Orthogonal R minimising ``||source R - target||_F`` (Hamilton et al., 2016; Schönemann 1966).

    With ``U S V^T = svd(source^T target)``, ``R = U V^T``. Orthogonal, so it rotates (or
    reflects) one period's space onto the other's without changing distances within a period:
    independently trained SGNS spaces are identical only up to such a transform.
    """
    source, target = np.asarray(source, dtype=np.float64), np.asarray(target, dtype=np.float64)
    if source.shape != target.shape or source.ndim != 2:
        raise ValueError(f"source {source.shape} and target {target.shape} must be equal [n, d]")
    u, _, vt = np.linalg.svd(source.T @ target)
    return u @ vt


def aligned_cosine_change(first_vectors: np.ndarray, last_vectors: np.ndarray,
                          normalize: bool = True) -> np.ndarray:
    """Per row (one shared-vocabulary word per row, same order in both), the cosine distance
    between its first-period vector rotated onto the last period and its last-period vector.

    ``normalize``: rows are scaled to unit length before aligning (as in Hamilton et al.'s
    HistWords), so frequent words with long vectors do not dominate the fit. Zero rows: NaN.
    """
    a = np.asarray(first_vectors, dtype=np.float64)
    b = np.asarray(last_vectors, dtype=np.float64)
    if normalize:
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.nan_to_num(a / np.linalg.norm(a, axis=1, keepdims=True))
            b = np.nan_to_num(b / np.linalg.norm(b, axis=1, keepdims=True))
    return cosine_distance(a @ procrustes_align(a, b), b)
