"""Biases that read a word's window relative to its pooled level in the training periods.

Under a shared base (``train.base: shared``) the base LM was trained on all training periods
pooled, so its logits already hold each word's pooled unigram level ``log f̄_w``, the
*reference* (:attr:`pipeline.features.history.PeriodHistory.reference`: the log frequency of the
counts summed over the training periods). A bias that reads only the window's log frequencies
cannot tell "recent minus pooled" apart from the level itself; these read the reference too
(their variants are ``relative``, :attr:`pipeline.variants._spec.VariantSpec.relative`):

=====================  ========================================================================
variant                bias
=====================  ========================================================================
``recency``            ``B_iw = λ · (1/m Σ_{j=1..m} log f_{i-j,w} − log f̄_w)``  (:class:`RecencyBias`)
``frequency-drift``    ``B_iw = Aᵀ LSTM(x_{i-m,w}, …, x_{i-1,w})``,
                       ``x_{y,w} = (log f_{y,w} − log f̄_w, log f̄_w)``        (:class:`FrequencyDriftBias`)
=====================  ========================================================================

A time-free control's history is pooled over the same training periods, so its window equals
the reference: ``recency-static`` has shift 0 (it is the base LM), and ``frequency-drift-static``
reads ``(0, log f̄_w)`` — the same module and parameter count, a per-word recalibration without
time.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import CompactRows, PeriodLSTM, TemporalBias, compact_rows
from pipeline.variants._spec import BiasConfig


def reference_of(history: PeriodHistory) -> Tensor:
    """The history's reference level ``log f̄`` ``[|V|]``, or a ValueError saying how to load it."""
    if history.reference is None:
        raise ValueError("this bias reads the window relative to the training periods' pooled "
                         "level: load the history with reference_periods= (the training "
                         "periods; pipeline.features.history.load_history)")
    return history.reference


def recency_shift(history: PeriodHistory) -> Tensor:
    """``1/m Σ_j log f_{i-j,w} − log f̄_w`` ``[|V|]``: how far the window's mean log frequency
    of each word sits from its pooled level."""
    return history.log_freq.mean(dim=1) - reference_of(history)


def drift_inputs(history: PeriodHistory) -> Tensor:
    """The drift LSTM's input ``[|V|, m, 2]``: per period ``(log f_{y,w} − log f̄_w, log f̄_w)``."""
    level = reference_of(history).unsqueeze(1).expand_as(history.log_freq)
    return torch.stack([history.log_freq - level, level], dim=-1)


def drift_rows(history: PeriodHistory) -> CompactRows:
    """:func:`drift_inputs` with the identical rows folded into one (the observed-token saving).

    A word unseen in the window has the log frequency of a zero count in every period; a word
    unseen in the training periods has the reference of a zero pooled count, the reference's
    floor (a count >= 1 gives more). Words that are both have identical inputs: the LSTM runs
    them once."""
    reference = reference_of(history)
    observed = (None if history.observed is None
                else history.observed | (reference > reference.min()))
    return compact_rows(drift_inputs(history), observed)


class RecencyBias(TemporalBias):
    """Recency-shift (module doc): one learned scalar ``λ``, starting at 0 (the base LM)."""

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        self.scale = nn.Parameter(torch.zeros(()))   # λ

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return self.scale * self._cache.get(history, lambda: recency_shift(history))


class FrequencyDriftBias(TemporalBias):
    """Frequency-drift (module doc): eq. 6's LSTM over the drift from the pooled level and the
    level itself."""

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        hidden = config.settings.lstm_hidden
        self.lstm = PeriodLSTM(2, hidden, config.dropout)
        self.A = nn.Linear(hidden, 1, bias=False)

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        rows = self._cache.get(history, lambda: drift_rows(history))
        return self.A(self.lstm.run(rows)).squeeze(-1)
