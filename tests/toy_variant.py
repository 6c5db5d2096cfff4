"""A toy variant, written as a user would add one: this one module.

``tests/test_variant_seam.py`` copies it into a throw-away project as
``pipeline/variants/toy_shift.py`` (the variant ``toy-shift``); nothing else changes.
Its bias is the latest change of each word's log frequency, scaled by a learned ``a`` (0 at
start, so training starts from the base LM) and a fixed ``scale`` from params.yaml:
``B_iw = scale · a · (log f_{i-1,w} − log f_{i-2,w})``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig, VariantSpec, setting


@dataclass(frozen=True)
class ToyShiftSettings:
    scale: float = setting(1.0, "factor on the latest change of log frequency")


class ToyShiftBias(TemporalBias):
    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        self.a = nn.Parameter(torch.zeros(()))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        change = history.log_freq[:, -1] - history.log_freq[:, -2]
        return self.config.settings.scale * self.a * change


DISPLAY = "Toy-Shift"
ORDER = 200   # listed after the built-in variants
VARIANT = VariantSpec(module="pipeline.variants.toy_shift:ToyShiftBias",
                      settings=ToyShiftSettings, reads=frozenset({"frequencies"}))
