"""The ``time-token`` method: TempoBERT's time masking (Rosin, Guy & Radinsky 2022).

The same masked LM and Algorithm 1 as the temporal-attention method
(:mod:`pipeline.semantic.temporal_mlm`), *without* temporal attention: each training window and
each encoded sentence is prefixed (after ``[CLS]``) by a special token of its period, one new
vocabulary entry per period. In training the time token is masked with its own probability
(``time_mask_prob``, :data:`~pipeline.semantic.temporal_mlm.TIME_MASK_PROB`, above the words'
15 %), so the model also learns to predict the period from the text; the encoded sentences keep
theirs. Everything else (training, sentence sampling, averaging, settings, seed) is shared, so
the two methods differ only in how the period enters the model. ``time-token-unmasked``
(:mod:`.time_token_unmasked`) is this method with the time token never masked.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Train the time-token MLM with time masking on ``inputs.texts`` and score ``targets`` (no
    target: no training)."""
    from pipeline.semantic.temporal_mlm import TIME_TOKEN, score_targets  # torch

    return score_targets(inputs, targets, TIME_TOKEN)


# Its place in the registry's table: the order of every report.
ORDER = 50

METHOD = ChangeMethod(
    name="time-token",
    description="the same masked LM without temporal attention, each text prefixed by its "
                "period's token, masked more often than words (time masking), then Alg. 1 "
                "(Rosin et al. 2022)",
    benchmark_note="the same MLM with a period token before each text instead, the token masked "
                   "more often than words (time masking; Rosin et al. 2022)",
    reads=frozenset({"texts", "encoder", "learned", "seed"}),
    score=score)
