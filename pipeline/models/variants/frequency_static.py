"""frequency-static: the time-free control of ``frequency`` (GUIDE §12). Its module, settings and
parameter count are frequency's; its history is the same for every period, pooled over the training
periods (:mod:`pipeline.features.static_history`)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.models.variants import frequency

VARIANT = replace(frequency.VARIANT, static_history=True)
