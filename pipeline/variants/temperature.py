"""Contextual temperature (paper 002 eq. 4-5, 7): ``z / τ``,
``τ = (σ(hᵀ W_τ1 W_τ2) + α) / β``, trained on eq. 7's loss-scaled cross-entropy
(:class:`pipeline.models.heads.TemperatureHead`; ``docs/temperature.md``). Time-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.variants._spec import VariantSpec, setting
from pipeline.variants import check_settings

TemperatureNorm = Literal["softmax", "sigmoid"]
LossScale = Literal["mean", "sum", "none"]


@dataclass(frozen=True)
class TemperatureSettings:
    """params ``variants.temperature.*`` (paper 002 eq. 5, 7)."""

    rank: int = setting(32, "rank Q of W_tau1 W_tau2 (paper 002 eq. 5; 280 in its PTB runs)")
    alpha: float = setting(1.0, "alpha of eq. 5, tau in [alpha/beta, (1+alpha)/beta]")
    beta: float = setting(0.5, "beta of eq. 5 (paper: (alpha, beta) = (1, 1/2), tau in [2, 4])")
    norm: TemperatureNorm = setting("softmax", "sigma of eq. 5, 'softmax' over the vocabulary "
                                               "(paper 002) or 'sigmoid' per word "
                                               "(docs/temperature.md)")
    loss_scale: LossScale = setting("mean", "eq. 7's loss scaling LS_t, 'mean' of tau_t (the "
                                            "paper's text), 'sum' (the equation as printed) or "
                                            "'none' (plain cross-entropy)")

    def __post_init__(self) -> None:
        check_settings(self, "rank")
        if not (self.beta > 0 and self.alpha >= 0):
            raise ValueError("the temperature needs beta > 0 and alpha >= 0, got "
                             f"{self.alpha}, {self.beta}")


DISPLAY = "Temperature"
ORDER = 50
VARIANT = VariantSpec(module="pipeline.models.heads:TemperatureHead", settings=TemperatureSettings,
                      own_objective=True)
