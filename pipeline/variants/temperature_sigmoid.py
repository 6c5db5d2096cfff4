"""Contextual temperature with a per-word sigmoid σ centred at τ = 1: eq. 5's
``τ = (σ(hᵀ W_τ1 W_τ2) + α) / β`` with ``σ`` the sigmoid, ``α = ½`` and ``β = 1``, so
``τ ∈ [½, 3/2]`` and ``τ = 1`` where ``μ = 0``. ``W_τ2`` starts small (``μ ≈ 0``), so the
variant starts as the Baseline (``z / 1``) and every word's temperature can move both ways.
Paper 002's softmax σ (variant ``temperature``) keeps each ``τ_k`` within ~1/|V| of ``α/β``.
Same module as ``temperature`` (:class:`pipeline.models.heads.TemperatureHead`); only the
defaults differ."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec, setting
from pipeline.variants.temperature import LossScale, TemperatureNorm, TemperatureSettings


@dataclass(frozen=True)
class SigmoidTemperatureSettings(TemperatureSettings):
    """params ``variants.temperature-sigmoid.*``: the temperature's, centred at τ = 1."""

    alpha: float = setting(0.5, "alpha of eq. 5: tau in [alpha/beta, (1+alpha)/beta] = [0.5, 1.5]")
    beta: float = setting(1.0, "beta of eq. 5: tau = 1 where the sigmoid is 1/2")
    norm: TemperatureNorm = setting("sigmoid", "sigma of eq. 5: 'sigmoid' per word (centred "
                                               "at tau = 1) or 'softmax' (paper 002)")
    loss_scale: LossScale = setting("mean", "eq. 7's loss scaling LS_t: 'mean' of tau_t, 'sum' "
                                            "or 'none'")


DISPLAY = "Temperature-σ"
ORDER = 60
VARIANT = VariantSpec(module="pipeline.models.heads:TemperatureHead",
                      settings=SigmoidTemperatureSettings, own_objective=True)
