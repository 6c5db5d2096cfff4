"""The ``temporal-attention`` method: paper 003's own (§4, eq. 2, Algorithm 1).

A masked LM whose self-attention is eq. 2's temporal attention is trained on the two groups'
texts, each text at its period's time point; then Algorithm 1 with every sentence at its
period's time point: up to n sentences per period and word, the mean of the last h layers at the
word's sub-tokens, a group's vector the mean of its periods', cosine distance. The model, its
training and Algorithm 1 are :mod:`pipeline.semantic.temporal_mlm`
(:func:`~pipeline.semantic.temporal_mlm.score_targets`), shared with the time-token method;
its settings are the learned methods' (params ``semantic_benchmark.temporal_*``) and the seed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Train the temporal-attention MLM on ``inputs.texts`` and score ``targets`` (no target: no
    training)."""
    from pipeline.semantic.temporal_mlm import TEMPORAL_ATTENTION, score_targets  # torch

    return score_targets(inputs, targets, TEMPORAL_ATTENTION)


# Its place in the registry's table: the order of every report.
ORDER = 40

METHOD = ChangeMethod(
    name="temporal-attention",
    description="masked LM with temporal attention trained on the two groups, then Alg. 1 at "
                "each period's time point (paper 003 §4)",
    benchmark_note="Algorithm 1 on a masked LM with paper 003's temporal attention trained on "
                   "the two groups (`pipeline/semantic/temporal_mlm.py`)",
    reads=frozenset({"texts", "encoder", "learned", "seed"}),
    score=score)
