"""Temporal temperature (ours, ``docs/temperature.md``): paper 002's temperature with a history
term per word, ``τ_k = (σ(hᵀ W_τ1 W_τ2 + u_k) + α) / β``, ``u_k`` from an LSTM over word k's log
frequencies (:class:`pipeline.models.heads.TemporalTemperatureHead`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants import check_settings, lstm_hidden
from pipeline.variants._spec import VariantSpec, setting
from pipeline.variants.temperature import TemperatureNorm, TemperatureSettings


@dataclass(frozen=True)
class TemporalTemperatureSettings(TemperatureSettings):
    """params ``variants.temporal-temperature.*``: the temperature's, plus its LSTM's size. The
    sigmoid form lets the history move tau per word, centred at tau = 1 (alpha 0.5, beta 1: the
    variant starts as the LM); a softmax would ignore a shift shared by all words."""

    alpha: float = setting(0.5, "alpha of eq. 5: tau in [alpha/beta, (1+alpha)/beta] = [0.5, 1.5]")
    beta: float = setting(1.0, "beta of eq. 5: tau = 1 where the sigmoid is 1/2")
    norm: TemperatureNorm = setting("sigmoid", "sigma of eq. 5: 'sigmoid' per word (centred "
                                               "at tau = 1) or 'softmax' (paper 002)")
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
