"""One module per variant of the future LM (the registry, :mod:`pipeline.models.registry`, has one
row naming each). A module declares ``VARIANT``, a :class:`pipeline.models.variant.VariantSpec`:
its typed settings (params ``variants.<name>.*``), the history it reads, what its ``torch``
module does to the LM and the ``module:Class`` holding its equations. These modules import no
torch, so the stage graph and the reports read them for free.

The settings fields several variants share are written once here.
"""

from __future__ import annotations

from typing import Any, Literal

from pipeline.models.variant import setting

ContextInput = Literal["flagged", "paper"]


def lstm_hidden() -> Any:
    """The hidden size of a variant's history LSTM (paper: 768 for the contextual models)."""
    return setting(768, "hidden size of the history LSTM (paper: 768 for the contextual models)")


def context_input() -> Any:
    """What the contextual LSTMs read per period (:func:`pipeline.models.temporal.context_inputs`)."""
    return setting("flagged", "input of the contextual LSTM: 'paper' = eq. 8's V only, zeros for a "
                              "period in which the word does not occur; 'flagged' = V plus a "
                              "seen-in-that-period flag, carrying the latest earlier vector forward")


def at_least_one(settings: Any, *names: str) -> None:
    """Refuse a size setting below 1 (a ValueError the train stage shows as a user error)."""
    for name in names:
        if getattr(settings, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(settings, name)}")
