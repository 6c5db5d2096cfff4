"""The ``apd`` method: the average pairwise distance between a word's usages in the two groups.

``APD(w) = 1/(n m) sum_i sum_j cos_dist(a_i, b_j)`` over the ``n`` sampled usage vectors of w in
the first group and the ``m`` in the last (:func:`pipeline.semantic.vectors.
average_pairwise_distance`; Kutuzov & Giulianelli 2020). It replaces the last step of paper
003's Algorithm 1 (line 10's mean per time point, line 12's cosine of the two means, the
``contextual`` method) by the mean over every cross-group pair: a mean blurs a word's senses, so
two groups with the same mean but different senses look alike to the prototype distance and not
to APD. With the same encoder APD ranked DWUG-EN's graded change far better (Periti &
Tahmasebi, NAACL 2024: XL-LEXEME ρ 0.886 with APD, 0.676 with prototypes).

The usages: each group's sentences holding the word, at most ``apd_usages`` per group (a seeded
sample), encoded with the embeddings stage's encoder at ``embeddings.layer`` or the mean of the
``contextual_layers`` layers ending there (:mod:`pipeline.semantic.usage_sets`). Both stages run
the encoder on the texts for it: the stored embeddings files pool a token's occurrences into one
mean per period, and APD needs them one by one. NaN where a group has no usage of the word.

APD is biased towards frequent, polysemous words; ``apd-corrected``
(:mod:`.apd_corrected`) removes that part.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult
from pipeline.semantic.usage_sets import usage_sets
from pipeline.semantic.vectors import average_pairwise_distance


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """APD of each target between the groups' sampled usages (no target: nothing encoded)."""
    totals = {"apd_usages": inputs.contextual.apd_usages, "apd_skipped": 0}
    if not targets:
        return MethodResult(np.zeros(0, dtype=np.float64), totals=totals)
    sets = usage_sets(inputs, targets)
    scores = np.array([average_pairwise_distance(a, b) for a, b in zip(sets.first, sets.last)],
                      dtype=np.float64)
    return MethodResult(scores, *sets.counts(), totals={**totals, "apd_skipped": sets.skipped})


# Its place in the registry's table: the order of every report.
ORDER = 20

METHOD = ChangeMethod(
    name="apd",
    description="average pairwise cosine distance between the two groups' usages (Kutuzov & "
                "Giulianelli 2020; Periti & Tahmasebi 2024)",
    benchmark_note="the mean cosine distance over every pair of a usage of the first group and "
                   "one of the last, with `{encoder}`, at most {apd_usages} usages per group "
                   "({apd_skipped} occurrences past the encoder's window had no vector)",
    reads=frozenset({"texts", "encoder", "encoding", "contextual", "seed"}),
    score=score)
