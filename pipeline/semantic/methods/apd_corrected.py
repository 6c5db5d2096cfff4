"""The ``apd-corrected`` method: APD minus its mean with the usages' group labels shuffled.

``score(w) = APD(A_w, B_w) - 1/R sum_r APD(A_w^r, B_w^r)``, where ``(A_w^r, B_w^r)`` is the r-th
random split of w's pooled usages into groups of the sizes of ``A_w`` and ``B_w``
(:func:`pipeline.semantic.shuffled.shuffle_corrected`, R = ``apd_permutations``, each word's
shuffles seeded by the stage's seed and the word). APD alone (:mod:`.apd`) is at least the
spread of a word's usages, so it is high for a frequent, polysemous word that did not change;
the shuffled mean is that spread, and what is left is the part due to the split by time: near 0
for a stable word, positive when the groups' usages differ (it can be slightly negative).

The same usage vectors as ``apd`` (encoded once: :mod:`pipeline.semantic.usage_sets`); cost
beyond them: R + 1 APDs of at most ``apd_usages`` × ``apd_usages`` pairs per word (R = 20 and
100 usages: 2 × 10⁵ cosines, milliseconds per word).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult
from pipeline.semantic.shuffled import shuffle_corrected, word_rng
from pipeline.semantic.usage_sets import usage_sets
from pipeline.semantic.vectors import average_pairwise_distance


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Each target's shuffle-corrected APD (no target: nothing encoded)."""
    settings = inputs.contextual
    totals = {"apd_usages": settings.apd_usages, "apd_permutations": settings.apd_permutations,
              "apd_skipped": 0}
    if not targets:
        return MethodResult(np.zeros(0, dtype=np.float64), totals=totals)
    sets = usage_sets(inputs, targets)
    scores = np.array([shuffle_corrected(average_pairwise_distance, a, b,
                                         settings.apd_permutations, word_rng(inputs.seed, word))
                       for word, a, b in zip(targets, sets.first, sets.last)], dtype=np.float64)
    return MethodResult(scores, *sets.counts(), totals={**totals, "apd_skipped": sets.skipped})


# Its place in the registry's table: the order of every report.
ORDER = 30

METHOD = ChangeMethod(
    name="apd-corrected",
    description="APD minus its mean over shuffles of the usages' group labels (frequency and "
                "polysemy corrected)",
    benchmark_note="APD minus its mean over {apd_permutations} random splits of the word's "
                   "pooled usages into groups of the same sizes (the same usages as *apd*)",
    reads=frozenset({"texts", "encoder", "encoding", "contextual", "seed"}),
    score=score)
