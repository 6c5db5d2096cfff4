"""The directions along which a corpus's words move together: principal components of their
document incidence.

A period that holds more papers on one topic raises the document frequency of every word of that
topic at once, whether the topic's share drifted or the period's sample happened to hold more of
it. The words' shared movements therefore lie (mostly) in the span of the topics' word profiles,
and those profiles are what the leading principal components of the documents' word incidence
(each word's 0/1 column standardised by its binomial standard deviation, the same scaling as the
standardised change of :func:`pipeline.forecast.claims.standardised_change`) recover: the
between-topic covariance has rank below the number of topics and dominates the leading
eigenvalues. The trend test partials these directions out of its weights (:mod:`pipeline.stats.projection`).

The trend test reads the predictor's side only: half A of Y−1 and up to :data:`HISTORY` periods
before it. Each period's incidence is centred on its own mean before the periods are pooled: a
word that moved from one period to the next would otherwise co-occur with every other mover (the
later period's documents hold more of all of them), and their movement would become a direction
and be projected out. Half A alone is too few documents: with more trend tokens than documents
the leading components are mostly noise, and a forecast guessing at the topics' moves kept most of
its topic structure after the projection (``reports/calibration.json``, the drifting-topic rows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg

from pipeline.forecast.documents import PeriodDocuments

WORDS_PER_DIRECTION = 10     # a direction for every 10 trend tokens ...
MAX_DIRECTIONS = 50          # ... at most 50
HISTORY = 4                  # predictor-side periods before Y−1 read besides half A


def n_directions(n_words: int) -> int:
    """How many topic directions a test over ``n_words`` words partials out."""
    return int(max(1, min(MAX_DIRECTIONS, n_words // WORDS_PER_DIRECTION)))


def topic_directions(documents: Sequence[PeriodDocuments], ids: np.ndarray,
                     k: int | None = None) -> np.ndarray:
    """float64 ``[len(ids), k]``: the ``k`` leading eigenvectors (default :func:`n_directions`)
    of the correlation matrix of the words' document incidence within each of ``documents``'
    periods, pooled (module doc). A word in no or every document has a zero variance and loads on
    none."""
    ids = np.asarray(ids)
    n = len(ids)
    k = n_directions(n) if k is None else k
    k = max(0, min(k, n - 2))
    if k == 0:
        return np.zeros((n, 0))
    cov, docs = np.zeros((n, n)), 0
    for d in documents:
        x = (d.matrix(ids) > 0).astype(np.float64)
        mean = np.asarray(x.sum(axis=0)).ravel() / max(d.n_documents, 1)
        cov += (x.T @ x).toarray() - d.n_documents * np.outer(mean, mean)
        docs += d.n_documents
    cov /= max(docs, 1)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = np.where(sd > 0, 1 / np.where(sd > 0, sd, 1.0), 0.0)
    _, vectors = linalg.eigh(cov * np.outer(scale, scale), subset_by_index=[n - k, n - 1])
    return vectors[:, ::-1]
