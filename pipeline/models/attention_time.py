"""Temporal attention as a future LM (variant ``temporal-attention``; ours, issue 19 §6).

Paper 003 conditions self-attention on the time a text was written (eq. 2,
:mod:`pipeline.models.temporal_attention`) with one learned embedding per period. A future LM
must predict a period whose texts it has never seen, so a per-period lookup has no row for it.
Here the period's time vector is built from what is known *before* the period — its history,
the log frequencies of the ``m`` previous periods (:class:`PeriodHistory`, the same input as
Frequency's bias)::

    x_i = tanh(A · vec(ℓ_{i-m..i-1} − mean_w ℓ))          ∈ R^{D_t}
    T_i = x_i W_T^{(l)}                                    (one W_T per layer l, as in eq. 2)

``ℓ`` is the smoothed log frequency of every token in each history period, centred per period so
that only the *shape* of the vocabulary distribution enters (not the corpus size); ``A`` is a
learned ``(|V|·m) → D_t`` map. The training periods, the dev period, the test period and the
forecast period all get their vector the same way, from their own history, so nothing is
extrapolated and nothing of the predicted period is read.

Why the residual form ``Q (I + TᵀT/‖T‖) Kᵀ`` (``train.time_attention: residual``) by default:
with one time point per sequence (every token of an abstract has its period's time) ``TᵀT`` has
rank 1, so eq. 2's scores become ``(q_i·t)(t·k_j)·√n/‖t‖``: every head can match queries to
keys along a single direction. For the paper's fine-tuned BERT that worked; a causal LM's next-
token prediction lives on content matching, which eq. 2 would remove. The residual form keeps
ordinary attention and adds the time-conditioned term; ``paper`` uses eq. 2 as printed (with the
authors' ``/‖T‖``). Both are measured in ``docs/design.md``.

The module owns ``A`` and every layer's ``W_T``, so the optimiser gives them ``train.lr_new`` and
``train.base: shared`` (the LM frozen) still trains them; the LM's own parameters and state dict
are unchanged. Its "word terms" are the time vector ``x_i`` (not per-word logits terms): the
future LM computes them once per step / history as for every other module, and
:meth:`conditioned` puts them in the attention layers for the block in which the LM runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import BiasConfig, TemporalBias
from pipeline.models.temporal_attention import PeriodTime, attach_temporal_attention, attention_layers

ATTENTION_FORMS = ("residual", "paper")
INIT_STD = 0.02   # W_T's initial scale (GPT-2's): the LM starts close to its plain attention


class TemporalAttentionLM(TemporalBias):
    """The ``temporal-attention`` variant's module: the period's time vector from its history and
    one ``W_T`` per attention layer (module doc). Call :meth:`attach` with the LM once."""

    kinds = frozenset({"frequencies"})
    adds_logits: ClassVar[bool] = False

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        if not config.vocab_size or not config.time_dim or not config.lm_dim:
            raise ValueError("temporal-attention needs vocab_size, lm_dim and time_dim")
        if config.attention_form not in ATTENTION_FORMS:
            raise ValueError(f"attention_form must be one of {ATTENTION_FORMS}, "
                             f"got {config.attention_form!r}")
        self.time_map = nn.Linear(config.vocab_size * config.window, config.time_dim)
        self.projections = nn.ModuleList()   # W_T per layer, created by attach (needs the LM)
        self.source = PeriodTime()

    def attach(self, lm: nn.Module) -> None:
        """Make ``lm``'s self-attention temporal, reading this module's time vector."""
        if len(self.projections) == 0:
            for _ in attention_layers(lm):
                proj = nn.Linear(self.config.time_dim, self.config.lm_dim, bias=False)
                nn.init.normal_(proj.weight, std=INIT_STD)
                self.projections.append(proj)
        attach_temporal_attention(lm, self.source, list(self.projections),
                                  residual=self.config.attention_form == "residual")

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        """The period's time vector ``x_i`` ``[D_t]`` (module doc)."""
        centred = history.log_freq - history.log_freq.mean(dim=0, keepdim=True)   # [|V|, m]
        padded = F.pad(centred, (0, 0, 0, self.config.vocab_size - centred.shape[0]))
        return torch.tanh(self.time_map(padded.t().reshape(-1).to(self.time_map.weight.dtype)))

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        return logits   # the period enters through the attention layers, not the logits

    @contextlib.contextmanager
    def conditioned(self, terms: Tensor) -> Iterator[None]:
        previous, self.source.vector = self.source.vector, terms
        try:
            yield
        finally:
            self.source.vector = previous
