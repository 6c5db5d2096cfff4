"""Context (paper 001 eq. 8): ``B_iw = Aᵀ LSTM(V_{i-m,w}, …, V_{i-1,w})``, ``V`` the per-period
pooled contextual embeddings of eq. 7 (:class:`pipeline.models.temporal.ContextBias`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec
from pipeline.variants import ContextInput, check_settings, context_input, lstm_hidden


@dataclass(frozen=True)
class ContextSettings:
    """params ``variants.context.*``."""

    lstm_hidden: int = lstm_hidden()
    context_input: ContextInput = context_input()

    def __post_init__(self) -> None:
        check_settings(self, "lstm_hidden")


DISPLAY = "Context"
ORDER = 30
VARIANT = VariantSpec(module="pipeline.models.temporal:ContextBias", settings=ContextSettings,
                      reads=frozenset({"embeddings"}))
