"""Topic clusters of documents, for the trend claims' null of no skill.

A period whose mix of topics moves by chance moves every word of a topic together, and a
forecaster whose predictions have topic structure lines up with that move, or against it, by
luck. The trend claims therefore compare the two periods **within topic clusters** of their
documents (post-stratification, :mod:`pipeline.forecast.claims`): each cluster's change counts
with the cluster's pooled share of both periods, so a change of the topic mix, which one period
cannot tell from luck, is not part of the claim — as far as the clusters find the topics.

The clusters are spherical k-means over the documents of both periods, each a unit vector of its
trend tokens (incidence weighted by idf): :data:`DOCS_PER_CLUSTER` documents a cluster on
average, at most :data:`MAX_CLUSTERS`, seeded by k-means++ from a fixed seed. The arithmetic is
sparse products and sums in a fixed order, so the clusters are the same on every CPU.

**A known limit**: k-means finds the topics only in part (on the calibration's synthetic corpora
with drifting topics, a forecaster without skill is still called better or worse than chance
more often than 5 %: ``reports/calibration.json``, rows "topic drift").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

# documents a cluster on average: a cluster's half-B side then holds ~100, enough for the t
# reference of a sparse top-k sum (a skewed per-document value)
DOCS_PER_CLUSTER = 300
MAX_CLUSTERS = 40
ITERATIONS = 12


def _unit_rows(incidence: sparse.spmatrix) -> sparse.csr_matrix:
    """Each document as a unit vector of its words' incidence, each word weighted by its smoothed
    idf ``1 + log((1 + n)/(1 + df))`` (rounded to 1e-9: a logarithm's last bit differs between
    CPUs)."""
    x = sparse.csr_matrix(incidence, dtype=np.float64, copy=True)
    x.data[:] = 1.0
    n, df = x.shape[0], np.asarray(x.sum(axis=0)).ravel()
    x = x @ sparse.diags(np.round(1.0 + np.log((1.0 + n) / (1.0 + df)), 9))
    norm = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    return sparse.diags(np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 0.0)) @ x


def n_clusters(n_docs: int) -> int:
    """How many clusters ``n_docs`` documents get (module doc)."""
    return int(max(1, min(MAX_CLUSTERS, n_docs // DOCS_PER_CLUSTER)))


def topic_clusters(incidence: sparse.spmatrix, k: int | None = None, seed: int = 0
                   ) -> np.ndarray:
    """int64 ``[documents]``: each document's cluster (module doc); ``incidence``: documents ×
    trend tokens (counts or 0/1)."""
    x = _unit_rows(incidence)
    n = x.shape[0]
    k = n_clusters(n) if k is None else k
    if k <= 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    centres = [int(rng.integers(n))]
    nearest = np.asarray(x @ x[centres[0]].T.toarray()).ravel()
    for _ in range(1, k):                      # k-means++ on the cosine distance
        cumulative = np.cumsum(np.maximum(1.0 - nearest, 0.0))    # sequential: exact order
        total = float(cumulative[-1])
        pick = int(rng.integers(n)) if total <= 0 else int(np.searchsorted(
            cumulative, rng.random() * total, side="right"))
        centres.append(min(pick, n - 1))
        nearest = np.maximum(nearest, np.asarray(x @ x[centres[-1]].T.toarray()).ravel())
    c = x[centres].toarray()
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(ITERATIONS):
        new = np.asarray(np.argmax(x @ c.T, axis=1)).ravel().astype(np.int64)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = labels == j
            if members.any():
                centre = np.asarray(x[members].sum(axis=0)).ravel()
                norm = math.sqrt(math.fsum(centre * centre))
                c[j] = centre / norm if norm > 0 else c[j]
    _, labels = np.unique(labels, return_inverse=True)     # drop empty clusters
    return labels.astype(np.int64)
