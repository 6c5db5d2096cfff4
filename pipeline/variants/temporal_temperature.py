"""Temporal temperature (ours, ``docs/temperature.md``): paper 002's temperature with a history
term per word, ``τ_k = (σ(hᵀ W_τ1 W_τ2 + u_k) + α) / β``, ``u_k`` from an LSTM over word k's log
frequencies (:class:`pipeline.models.heads.TemporalTemperatureHead`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec
from pipeline.variants import check_settings, lstm_hidden
from pipeline.variants.temperature import TemperatureSettings


@dataclass(frozen=True)
class TemporalTemperatureSettings(TemperatureSettings):
    """params ``variants.temporal-temperature.*``: the temperature's, plus its LSTM's size."""

    lstm_hidden: int = lstm_hidden()

    def __post_init__(self) -> None:
        super().__post_init__()
        check_settings(self, "lstm_hidden")


DISPLAY = "Temporal-Temperature"
ORDER = 70
# the output-layer question it answers: does history add anything over context alone?
COMPARED_WITH = "temperature"
VARIANT = VariantSpec(module="pipeline.models.heads:TemporalTemperatureHead",
                      settings=TemporalTemperatureSettings, reads=frozenset({"frequencies"}),
                      own_objective=True)
