"""The ``forecast`` variant's module: ``B_iw = a · \\hat{log f}_{i,w} + b`` (docs/equations.md).

Frequency-NoLSTM (:class:`pipeline.models.temporal.FrequencyNoLSTMBias`) reads the previous
period's observed log frequency ``log f_{i-1,w}``; this module reads instead a forecaster's
predicted log frequency of the target period i itself, ``\\hat{log f}_{i,w}``, made from the
periods before i only (the history feature ``forecasts``:
:attr:`pipeline.features.history.PeriodHistory.forecast`, stage ``forecast_features``). Its
time-free control (``forecast-static``) reads the mean of the training periods' forecasts.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig


class ForecastBias(TemporalBias):
    """``B_iw = a · \\hat{log f}_{i,w} + b``. ``a`` starts at 0, so training starts from the base
    LM; ``b``, the same for every word, cannot change the softmax (kept as Frequency-NoLSTM keeps
    it)."""

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        self.a = nn.Parameter(torch.zeros(()))
        self.b = nn.Parameter(torch.zeros(()))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        if history.forecast is None:
            raise ValueError("the forecast bias needs the history's forecast: "
                             "load_history(..., kinds={'frequencies', 'forecasts'})")
        return self.a * history.forecast + self.b
