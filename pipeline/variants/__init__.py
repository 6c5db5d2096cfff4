"""One module per variant of the future LM, found by the registry (:mod:`pipeline.models.registry`):
the variant ``<name>`` is the module ``<name with _ for ->.py``. A module declares ``VARIANT``, a
:class:`pipeline.variants._spec.VariantSpec`: its typed settings (params ``variants.<name>.*``),
the history it reads, what its ``torch`` module does to the LM and the ``module:Class`` holding
its equations; and its registry row: ``DISPLAY`` (the paper's name), ``ORDER`` (its place in
listings) and, optionally, ``COMPARED_WITH`` (the variant of its output-layer question). A
variant that reads a history gets its time-free control ``<name>-static`` from the registry: no
module of its own. These modules import no torch, so the stage graph and the reports read them
for free.

The settings fields several variants share are written once here.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any, Literal

from pipeline.variants._spec import setting

ContextInput = Literal["flagged", "paper"]


def lstm_hidden() -> Any:
    """The hidden size of a variant's history LSTM: 32, the default run's (a 128-wide LM on two
    cores; paper: 768 for the contextual models, profiles/paper.yaml)."""
    return setting(32, "hidden size of the history LSTM (paper: 768 for the contextual models)")


def context_input() -> Any:
    """What the contextual LSTMs read per period (:func:`pipeline.models.temporal.context_inputs`)."""
    return setting("flagged", "input of the contextual LSTM: 'paper' = eq. 8's V only, zeros for a "
                              "period in which the word does not occur; 'flagged' = V plus a "
                              "seen-in-that-period flag, carrying the latest earlier vector forward")


def check_settings(settings: Any, *sizes: str) -> None:
    """Refuse a size setting below 1, and any choice setting (a ``Literal`` field) outside its
    choices: a ValueError the train stage shows as a user error."""
    for name in sizes:
        if getattr(settings, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(settings, name)}")
    hints = typing.get_type_hints(type(settings))
    for f in fields(settings):
        if typing.get_origin(hints[f.name]) is Literal:
            choices = typing.get_args(hints[f.name])
            if getattr(settings, f.name) not in choices:
                raise ValueError(f"{f.name} must be one of {choices}, got "
                                 f"{getattr(settings, f.name)!r}")
