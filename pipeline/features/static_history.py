"""The time-free history of a control: each word's features pooled over the training
periods, the same for every target period.

A time-free control (``<variant>-static``, :attr:`pipeline.variants._spec.VariantSpec.static_history`)
runs its variant's module on a history that carries no time: for every target period, the value
of each of the m window positions is the word's feature pooled over the *pooling periods* (the
split's training periods, ``train_first .. train_last``, which the model records):

* log frequency: the counts summed over the pooling periods, turned into a smoothed log frequency
  by the features' own rule (:func:`pipeline.features.frequencies.log_frequencies`);
* contextual embedding: the occurrence-weighted mean of the per-period pooled vectors (weights:
  each period's ``counts``, the occurrences that received a vector,
  :class:`pipeline.features.embeddings.PeriodEmbeddings`), i.e. the mean vector of all of the
  word's occurrences in the pooling periods; zeros for a word seen in none;
* seen: seen in any pooling period.

:func:`pipeline.features.history.load_history` with ``static_periods=`` reads the files (with the
same checks as a windowed history) and calls these.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from pipeline.features.embeddings import PeriodEmbeddings
from pipeline.features.frequencies import PeriodFrequencies, log_frequencies


def pooled_counts(periods: Sequence[PeriodFrequencies]) -> np.ndarray:
    """int64 ``[|V|]``: each token's count summed over ``periods``."""
    if not periods:
        raise ValueError("a static history needs at least one pooling period")
    return np.sum([f.counts for f in periods], axis=0, dtype=np.int64)


def pooled_log_freq(periods: Sequence[PeriodFrequencies]) -> np.ndarray:
    """float64 ``[|V|]``: the smoothed log frequency of the summed counts (module doc)."""
    return log_frequencies(pooled_counts(periods))


def pooled_embeddings(periods: Sequence[PeriodEmbeddings]) -> tuple[Tensor, Tensor]:
    """float32 ``[|V|, d]`` count-weighted mean vectors and bool ``[|V|]`` seen-in-any-period
    (module doc); sums in float64, periods in the order given."""
    if not periods:
        raise ValueError("a static history needs at least one pooling period")
    vocab, dim = periods[0].vocab_size, periods[0].dim
    sums = torch.zeros(vocab, dim, dtype=torch.float64)
    weights = torch.zeros(vocab, dtype=torch.float64)
    seen = torch.zeros(vocab, dtype=torch.bool)
    for pe in periods:
        if (pe.vocab_size, pe.dim) != (vocab, dim):
            raise ValueError(f"embeddings of {pe.period} have vocab_size={pe.vocab_size}, "
                             f"dim={pe.dim} but {periods[0].period} has {vocab}, {dim}")
        ids = torch.as_tensor(pe.token_ids, dtype=torch.long)
        counts = torch.as_tensor(pe.counts, dtype=torch.float64)
        sums.index_add_(0, ids, torch.as_tensor(pe.vectors).to(torch.float64) * counts[:, None])
        weights.index_add_(0, ids, counts)
        seen[ids] = True
    weighted = weights > 0
    mean = torch.zeros(vocab, dim, dtype=torch.float32)
    mean[weighted] = (sums[weighted] / weights[weighted, None]).to(torch.float32)
    return mean, seen


def repeated(values: Tensor, window: int) -> Tensor:
    """``values`` ``[|V|, ...]`` in each of ``window`` positions: ``[|V|, window, ...]``."""
    return values.unsqueeze(1).repeat(1, window, *([1] * (values.dim() - 1)))
