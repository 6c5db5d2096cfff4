"""The ``time-token`` method: time masking (Rosin, Guy & Radinsky 2022).

The same masked LM and Algorithm 1 as the temporal-attention method
(:mod:`pipeline.evaluation.temporal_mlm`), *without* temporal attention: each training window and
each encoded sentence is prefixed (after ``[CLS]``) by a special token of its period, one new
vocabulary entry per period, never masked. Everything else (training, sentence sampling,
averaging, settings, seed) is shared, so the two methods differ only in how the period enters
the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.evaluation.change_methods.interface import ChangeInputs, ChangeMethod, MethodResult


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Train the time-token MLM on ``inputs.texts`` and score ``targets`` (no target: no
    training)."""
    from pipeline.evaluation.temporal_mlm import TIME_TOKEN, score_targets  # torch

    return score_targets(inputs, targets, TIME_TOKEN)


METHOD = ChangeMethod(
    name="time-token",
    description="the same masked LM without temporal attention, each text prefixed by its "
                "period's token, then Alg. 1 (Rosin et al. 2022)",
    benchmark_note="the same MLM with a period token before each text instead (Rosin et al. 2022)",
    reads=frozenset({"texts", "encoder", "learned", "seed"}),
    score=score)
