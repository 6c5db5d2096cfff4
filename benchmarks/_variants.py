"""A variant's settings for the benchmarks' models: its defaults, with the history LSTM's size."""

from __future__ import annotations

from typing import Any

from pipeline.models.registry import lookup
from pipeline.variants._spec import setting_fields


def sized(variant: str, lstm_hidden: int) -> Any:
    """``variant``'s settings (its settings class's defaults) with ``lstm_hidden`` where it has
    a history LSTM; ``None`` for a variant without settings."""
    settings = lookup(variant).settings
    if settings is None:
        return None
    names = {f.name for f in setting_fields(settings)}
    return settings(**({"lstm_hidden": lstm_hidden} if "lstm_hidden" in names else {}))
