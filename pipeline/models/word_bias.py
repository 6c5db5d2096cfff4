"""Word-bias: ``B_w = b_w``, one free learned value per vocabulary entry, the same in every period.

It reads no history: the bias is a per-word recalibration of the base LM's logits and nothing
else. It is the control for the reading "a contextual or temporal bias is, in effect, per-word
recalibration": a temporal variant that does not beat it has learned no more than a fixed shift
per word. ``b`` starts at 0, so training starts from the base LM; with the base LM frozen it
trains on the base's cached final hidden states (it leaves them alone). Having no history it has
no time-free control.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig


class WordBias(TemporalBias):
    """``B_w = b_w`` (module doc): ``b`` has one entry per output row of the LM (``vocab_size``)."""

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        if not config.vocab_size:
            raise ValueError("the word-bias module needs vocab_size (the LM's output rows)")
        self.b = nn.Parameter(torch.zeros(config.vocab_size))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return self.b   # reads no history (the future LM passes None)
