"""Test helper: a variant's settings with a small history LSTM (the tests' tiny models)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pipeline.models.registry import lookup


def sized(variant: str, lstm_hidden: int, **settings: Any) -> Any:
    """``variant``'s settings (its settings class) with ``lstm_hidden`` where it has a history
    LSTM and ``settings`` on top; ``None`` for a variant without settings (then ``settings``
    must be empty)."""
    cls = lookup(variant).settings
    if cls is None:
        if settings:
            raise ValueError(f"the {variant} variant has no settings, got {sorted(settings)}")
        return None
    if "lstm_hidden" in {f.name for f in fields(cls)}:
        settings = {"lstm_hidden": lstm_hidden, **settings}
    return cls(**settings)
