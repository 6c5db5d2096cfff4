"""Frequency (paper 001 eq. 6): ``B_iw = Aᵀ LSTM(log f_{i-m,w}, …, log f_{i-1,w})``
(:class:`pipeline.models.temporal.FrequencyBias`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec
from pipeline.variants import check_settings, lstm_hidden


@dataclass(frozen=True)
class FrequencySettings:
    """params ``variants.frequency.*``."""

    lstm_hidden: int = lstm_hidden()

    def __post_init__(self) -> None:
        check_settings(self, "lstm_hidden")


DISPLAY = "Frequency"
ORDER = 20
VARIANT = VariantSpec(module="pipeline.models.temporal:FrequencyBias", settings=FrequencySettings,
                      reads=frozenset({"frequencies"}))
