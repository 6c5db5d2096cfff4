"""Temporal attention as a future LM (variant ``temporal-attention``; ours).

Paper 003 conditions self-attention on the time a text was written (eq. 2,
:mod:`pipeline.models.temporal_attention`) with one learned embedding per period. A future LM
must predict a period whose texts it has never seen, so a per-period lookup has no row for it.
Here the period's time vector is built from what is known *before* the period — its history,
the log frequencies of the ``m`` previous periods (:class:`PeriodHistory`, the same input as
Frequency's bias) — and from what *moves* in it::

    ℓ̃_t = ℓ_t − mean_w ℓ_t                               (each period's profile, centred)
    x_i = A · vec(ℓ̃_{i-m+1} − ℓ̃_{i-m}, …, ℓ̃_{i-1} − ℓ̃_{i-2}) + b        ∈ R^{D_t}
    T_i = x_i W_T^{(l)}                                    (one W_T per layer l, as in eq. 2)

``A`` is a learned ``(|V|·(m−1)) → D_t`` linear map (so ``features.window`` must be ≥ 2). Only the
period-to-period *changes* enter: the vocabulary's level is nearly the same in every period, and
a first version that read the levels through a ``tanh`` saturated — pre-activations of ±20-60,
so every period got the same time vector to the last bit and the variant forecast no change
(measured on the default run; ``docs/models.md``). Linear in the changes, a period's vector
moves exactly as its recent history does, and two periods with the same changes share it. The
training periods, the dev period, the test period and the forecast period all get their vector
the same way, from their own history, so nothing is extrapolated and nothing of the predicted
period is read.

Why the residual form ``Q (I + TᵀT/(‖T‖√n)) Kᵀ`` (``variants.temporal-attention.form: residual``) by default:
with one time point per sequence (every token of an abstract has its period's time) ``TᵀT`` has
rank 1, so eq. 2's scores become ``(q_i·t)(t·k_j)·√n/‖t‖``: every head can match queries to
keys along a single direction. For the paper's fine-tuned BERT that worked; a causal LM's next-
token prediction lives on content matching, which eq. 2 would remove. The residual form keeps
ordinary attention and adds the time-conditioned term ``‖t‖ (q·t̂)(t̂·k)``, whose size does not
grow with the position n, with ``W_T`` initialised at GPT-2's 0.02 so that training starts near
the plain LM; ``paper`` uses eq. 2 as printed (with the authors' ``/‖T‖``). Both are measured in
``docs/models.md``.

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

import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.infra.errors import UserError
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig
from pipeline.models.temporal_attention import PeriodTime, attach_temporal_attention, attention_layers

ATTENTION_FORMS = ("residual", "paper")
INIT_STD = 0.02   # W_T's initial scale (GPT-2's): the LM starts close to its plain attention


class TemporalAttentionLM(TemporalBias):
    """The ``temporal-attention`` variant's module: the period's time vector from its history and
    one ``W_T`` per attention layer (module doc). Call :meth:`attach` with the LM once."""

    adds_logits: ClassVar[bool] = False

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        if not config.vocab_size or not config.lm_dim:
            raise ValueError("temporal-attention needs vocab_size and lm_dim")
        if config.window < 2:
            raise UserError(f"temporal-attention reads the changes between history periods, so it "
                            f"needs a history of at least 2 periods (got {config.window})",
                            path="params.yaml: features.window", fix="set features.window >= 2")
        if config.settings.form not in ATTENTION_FORMS:
            raise ValueError(f"the attention form must be one of {ATTENTION_FORMS}, "
                             f"got {config.settings.form!r}")
        self.time_map = nn.Linear(config.vocab_size * (config.window - 1), config.settings.time_dim)
        self.projections = nn.ModuleList()   # W_T per layer, created by attach (needs the LM)
        self.source = PeriodTime()

    def attach(self, lm: nn.Module) -> None:
        """Make ``lm``'s self-attention temporal, reading this module's time vector."""
        if len(self.projections) == 0:
            for _ in attention_layers(lm):
                proj = nn.Linear(self.config.settings.time_dim, self.config.lm_dim, bias=False)
                nn.init.normal_(proj.weight, std=INIT_STD)
                self.projections.append(proj)
        attach_temporal_attention(lm, self.source, list(self.projections),
                                  residual=self.config.settings.form == "residual")

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        """The period's time vector ``x_i`` ``[D_t]`` (module doc)."""
        centred = history.log_freq - history.log_freq.mean(dim=0, keepdim=True)   # [|V|, m]
        changes = centred[:, 1:] - centred[:, :-1]                                  # [|V|, m-1]
        padded = F.pad(changes, (0, 0, 0, self.config.vocab_size - changes.shape[0]))
        return self.time_map(padded.t().reshape(-1).to(self.time_map.weight.dtype))

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        return logits   # the period enters through the attention layers, not the logits

    @contextlib.contextmanager
    def conditioned(self, terms: Tensor) -> Iterator[None]:
        previous, self.source.vector = self.source.vector, terms
        try:
            yield
        finally:
            self.source.vector = previous
