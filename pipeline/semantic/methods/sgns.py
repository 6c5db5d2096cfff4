"""The ``sgns`` method: skip-gram with negative sampling per group, Procrustes-aligned, cosine
distance (Hamilton et al. 2016; the SemEval-2020 Task 1 winner's recipe).

One SGNS model per group of periods, trained on the group's texts
(:func:`pipeline.semantic.sgns.sgns_change`, seeds ``2·seed`` and ``2·seed + 1``), the first
space rotated onto the last by orthogonal Procrustes on their shared vocabulary, and a word
scored by the cosine distance of its two vectors; NaN where a word is too rare in either group.
Its settings are the learned methods' (params ``semantic_benchmark.sgns_*``) and the seed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Train SGNS on each group's texts and score ``targets`` (no target: no training)."""
    if not targets:
        return MethodResult.empty()
    from pipeline.semantic.sgns import sgns_change   # torch: only when it trains

    first, last = inputs.group_texts
    return MethodResult(sgns_change(first, last, list(targets), dim=inputs.learned.sgns_dim,
                                    epochs=inputs.learned.sgns_epochs, seed=inputs.seed))


# Its place in the registry's table: the order of every report.
ORDER = 60

METHOD = ChangeMethod(
    name="sgns",
    description="skip-gram with negative sampling per group, Procrustes-aligned, cosine "
                "distance (Hamilton et al. 2016)",
    benchmark_note="skip-gram with negative sampling per group, Procrustes-aligned "
                   "(`pipeline/semantic/sgns.py`)",
    reads=frozenset({"texts", "learned", "seed"}),
    score=score)
