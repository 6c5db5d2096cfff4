"""Each target's usage vectors in each group, as the apd methods compare them: at most
``apd_usages`` usages per target and group, a seeded sample (:func:`~pipeline.semantic.usages.
pooled_group_usages`), each the encoder's vector of that occurrence
(:func:`~pipeline.semantic.word_vectors.sentence_usages`, with the embeddings stage's encoder,
layer, max length and batch size and the ``contextual_layers`` setting).

Why a cap per group: APD compares every usage of one group with every usage of the other, so its
cost and the encoding grow with the groups' sizes; a hundred usages a group estimate the mean
distance closely (its standard error shrinks like the usages' number), and the seeded hash
keeps the same usages whatever order the abstracts come in.

Encoded once per run: ``apd`` and ``apd-corrected`` score the same vectors, so
:func:`usage_sets` keeps the last result for the same inputs object and targets (one slot, the
inputs compared by identity: a :class:`~pipeline.semantic.methods.interface.ChangeInputs` is
frozen), and the second method reads it instead of running the encoder again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.semantic.methods.interface import ChangeInputs


@dataclass(frozen=True)
class UsageSets:
    """Per group (first, last), per target (in target order), its usage vectors ``[n, d]``
    (float64; ``n`` 0 where the group's texts do not hold it); ``skipped``: occurrences past the
    encoder's window (no vector)."""

    first: list[np.ndarray]
    last: list[np.ndarray]
    skipped: int

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The usages each target's score rests on in each group."""
        return (np.array([len(v) for v in self.first], dtype=np.int64),
                np.array([len(v) for v in self.last], dtype=np.int64))


_LAST: tuple[ChangeInputs, tuple[str, ...], UsageSets] | None = None


def encode_usage_sets(inputs: ChangeInputs, targets: Sequence[str]) -> UsageSets:
    """Encode each group's sampled usages of ``targets`` (``inputs.encoding``; ValueError when
    the stage gave no encoder settings)."""
    from pipeline.models.hub import load_encoder, load_tokenizer_for   # torch: only when needed
    from pipeline.semantic.usages import pooled_group_usages
    from pipeline.semantic.word_vectors import sentence_usages

    how = inputs.encoding
    if how is None:
        raise ValueError("the apd methods need encoder settings (ChangeInputs.encoding)")
    encoder = load_encoder(inputs.encoder).to(how.device)
    tokenizer = load_tokenizer_for(inputs.encoder)
    groups, skipped = [], 0
    for periods in inputs.texts:
        sentences, counts_for = pooled_group_usages(periods, targets,
                                                    inputs.contextual.apd_usages, inputs.seed)
        vectors, missed = sentence_usages(encoder, tokenizer, sentences, list(targets),
                                          how.layer, how.max_length, how.batch_size, how.device,
                                          counts_for, inputs.contextual.contextual_layers)
        groups.append(vectors)
        skipped += missed
    return UsageSets(groups[0], groups[1], skipped)


def usage_sets(inputs: ChangeInputs, targets: Sequence[str]) -> UsageSets:
    """:func:`encode_usage_sets`, or the last call's result for the same inputs and targets."""
    global _LAST
    key = tuple(targets)
    if _LAST is not None and _LAST[0] is inputs and _LAST[1] == key:
        return _LAST[2]
    sets = encode_usage_sets(inputs, targets)
    _LAST = (inputs, key, sets)
    return sets
