"""temporal-temperature-static: the time-free control of ``temporal-temperature`` (GUIDE §12). Its module, settings and
parameter count are temporal-temperature's; its history is the same for every period, pooled over the training
periods (:mod:`pipeline.features.static_history`)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.models.variants import temporal_temperature

VARIANT = replace(temporal_temperature.VARIANT, static_history=True)
