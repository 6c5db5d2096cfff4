"""context2-static: the time-free control of ``context2`` (GUIDE §12). Its module, settings and
parameter count are context2's; its history is the same for every period, pooled over the training
periods (:mod:`pipeline.features.static_history`)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.models.variants import context2

VARIANT = replace(context2.VARIANT, static_history=True)
