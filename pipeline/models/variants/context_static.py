"""context-static: the time-free control of ``context`` (GUIDE §12). Its module, settings and
parameter count are context's; its history is the same for every period, pooled over the training
periods (:mod:`pipeline.features.static_history`)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.models.variants import context

VARIANT = replace(context.VARIANT, static_history=True)
