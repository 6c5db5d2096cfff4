"""Temporal attention as a future LM (ours, after paper 003 eq. 2): the LM's self-attention is
conditioned on a time vector built from the period's history (the changes of the centred log
frequencies), ``Q (I + TᵀT/(‖T‖√n)) Kᵀ`` (``residual``) or eq. 2 as printed (``paper``)
(:class:`pipeline.models.attention_time.TemporalAttentionLM`). It changes the LM's hidden states,
so a frozen LM's cached states cannot train it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.variants._spec import VariantSpec, setting
from pipeline.variants import check_settings

AttentionForm = Literal["residual", "paper"]


@dataclass(frozen=True)
class TemporalAttentionSettings:
    """params ``variants.temporal-attention.*``."""

    time_dim: int = setting(16, "size D_t of the period's time vector, built from its history "
                                "(pipeline/models/attention_time.py)")
    form: AttentionForm = setting("residual", "'residual' = scores Q (I + T^T T/(|T| sqrt n)) K^T, "
                                              "ordinary attention plus the time term; 'paper' = "
                                              "paper 003's eq. 2, Q (T^T T/|T|) K^T (rank 1 per "
                                              "head with one period per text)")

    def __post_init__(self) -> None:
        check_settings(self, "time_dim")


DISPLAY = "Temporal-Attention"
ORDER = 110
VARIANT = VariantSpec(module="pipeline.models.attention_time:TemporalAttentionLM",
                      settings=TemporalAttentionSettings, reads=frozenset({"frequencies"}),
                      in_body=True)
