"""The ``time-token-unmasked`` method: the ``time-token`` method without time masking.

:mod:`.time_token` with ``time_mask_prob`` 0: each text is still prefixed by its period's
token, but the token is never a training target, so the model is told the period and never
asked to predict it (the time-token method of this pipeline before time masking, draw for
draw). It isolates what Rosin et al.'s (2022) time masking adds. Opt-in (one more MLM to train):
a row of the registry's ``OPTIONAL`` table, run after ``registry.enable(NAME)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult

NAME = "time-token-unmasked"


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Train the time-token MLM without time masking on ``inputs.texts`` and score ``targets``
    (no target: no training)."""
    from pipeline.semantic.temporal_mlm import TIME_TOKEN, score_targets  # torch

    return score_targets(inputs, targets, TIME_TOKEN, time_mask_prob=0.0)


# Its place in the registry's table: the order of every report.
ORDER = 80
# Not run by default: a row of the table after registry.enable(NAME).
OPTIONAL = True

METHOD = ChangeMethod(
    name=NAME,
    description="the time-token masked LM with its period tokens never masked (no time "
                "masking), then Alg. 1",
    benchmark_note="the time-token MLM without time masking (the period token never a target)",
    reads=frozenset({"texts", "encoder", "learned", "seed"}),
    score=score)
