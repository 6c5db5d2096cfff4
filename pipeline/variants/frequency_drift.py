"""Frequency-drift (ours): eq. 6's LSTM over the drift of each word's log frequency from its
pooled level in the training periods, plus that level:
``B_iw = Aᵀ LSTM(x_{i-m,w}, …, x_{i-1,w})``, ``x_{y,w} = (log f_{y,w} − log f̄_w, log f̄_w)``
(:class:`pipeline.models.relative.FrequencyDriftBias`).

Its derived time-free control ``frequency-drift-static`` reads ``(0, log f̄_w)`` in every
position: the same module and parameter count, a per-word recalibration without time."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec
from pipeline.variants import check_settings, lstm_hidden


@dataclass(frozen=True)
class FrequencyDriftSettings:
    """params ``variants.frequency-drift.*``."""

    lstm_hidden: int = lstm_hidden()

    def __post_init__(self) -> None:
        check_settings(self, "lstm_hidden")


DISPLAY = "Frequency-drift"
ORDER = 26
VARIANT = VariantSpec(module="pipeline.models.relative:FrequencyDriftBias",
                      settings=FrequencyDriftSettings, reads=frozenset({"frequencies"}),
                      relative=True)
