"""The unigram reference perplexity: how far above a context-free model each future LM is.

A unigram LM predicts every token with the same distribution, the training periods' token
frequencies with add-one smoothing over the vocabulary — the same estimate as the per-period
features (:func:`pipeline.features.frequencies.log_frequencies`), here from the counts of all training
periods summed::

    log p(w) = log((c_w + 1) / (N + |V|)),   c_w = sum over training periods of count_i[w]

It is scored on exactly the tokens a model was scored on: the ``target_id`` column of the score
stage's ``positions_<label>.parquet`` (one row per predicted token, after the model's context
length cut), so its perplexity is directly comparable with that model's PPL.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from pipeline.infra.errors import UserError
from pipeline.features.frequencies import log_frequencies, read_period
from pipeline.models.perplexity import Perplexity, cross_entropy


def summed_counts(paths: Iterable[str | os.PathLike[str]]) -> np.ndarray:
    """Token counts of several per-period frequency files, summed (all must share one vocabulary)."""
    total: np.ndarray | None = None
    for path in paths:
        counts = read_period(path).counts
        if total is not None and counts.shape != total.shape:
            raise UserError(f"the frequency file has a vocabulary of {counts.shape[0]} tokens, the "
                            f"other training periods' have {total.shape[0]}", path=path,
                            fix="recompute the frequencies with one tokenizer (`dvc repro`)")
        total = counts.astype(np.int64) if total is None else total + counts
    if total is None:
        raise ValueError("no frequency files given")
    return total


def unigram_perplexity(counts: np.ndarray, target_ids: np.ndarray) -> Perplexity:
    """Perplexity of the add-one-smoothed unigram model of ``counts`` on ``target_ids``."""
    log_p = log_frequencies(counts)
    targets = np.asarray(target_ids, dtype=np.int64)
    if targets.size and (targets.min() < 0 or targets.max() >= log_p.shape[0]):
        raise ValueError(f"target ids outside the vocabulary of {log_p.shape[0]} tokens")
    # the cross-entropy (nats per token) of the targets' counts, as in the forecast backtests,
    # times their number
    n = int(targets.size)
    if n == 0:
        return Perplexity(0.0, 0)
    target_counts = np.bincount(targets, minlength=log_p.shape[0])
    return Perplexity(cross_entropy(target_counts, log_p) * n, n)
