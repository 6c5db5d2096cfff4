"""The shuffled-period correction of a change score: a word's score minus its mean score with
the usages' group labels shuffled.

Why: a distance between two groups of usages is not 0 for a word that did not change. APD
(:func:`pipeline.semantic.vectors.average_pairwise_distance`) is at least the spread of the
word's usages, so it grows with the word's number of senses and, through the encoder, with its
frequency, when nothing changed; a polysemous stable word can outrank a changed monosemous one.
If the word did not change, its usages in the two groups are exchangeable: any split of the
pooled usages into groups of the two sizes is as likely as the split by time. The mean score
over random such splits is what the word scores unchanged, and the score minus it is the part
due to the split by time — near 0 for a stable word, whatever its spread (this is the
permutation null of Liu, Medlar & Glowacka 2021, "Statistically significant detection of
semantic shifts using contextual word embeddings", applied to usages rather than corpora as in
Dubossarsky, Weinshall & Grossman 2017's shuffled control; Periti & Tahmasebi, NAACL 2024, on
APD's frequency and polysemy bias).

Generic over the distance (:data:`Distance`, any function of the two groups' usage vectors):
the ``apd-corrected`` method applies it to APD. Cost: ``permutations + 1`` distances per word,
no encoding (the same vectors). Each word's shuffles are drawn from its own generator
(:func:`word_rng`: the seed and the word), so a word's score does not depend on which other
words are scored or in which order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

# a distance between two groups' usage vectors ([n, d] and [m, d]) -> one score
Distance = Callable[[np.ndarray, np.ndarray], float]


def word_rng(seed: int, word: str) -> np.random.Generator:
    """The generator of ``word``'s shuffles: seeded by the run's ``seed`` and a hash of the
    lower-cased word (Python's ``hash`` of a string changes between processes)."""
    key = int.from_bytes(hashlib.sha256(word.lower().encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng([seed, key])


def shuffled_scores(distance: Distance, first: np.ndarray, last: np.ndarray, permutations: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``distance`` of ``permutations`` random splits of the pooled usages into groups of
    ``len(first)`` and ``len(last)`` (the group labels shuffled, the sizes kept)."""
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    pooled = np.concatenate([np.asarray(first), np.asarray(last)])
    n = len(first)
    out = np.empty(permutations, dtype=np.float64)
    for r in range(permutations):
        order = rng.permutation(len(pooled))
        out[r] = distance(pooled[order[:n]], pooled[order[n:]])
    return out


def shuffle_corrected(distance: Distance, first: np.ndarray, last: np.ndarray,
                      permutations: int, rng: np.random.Generator) -> float:
    """``distance(first, last)`` minus its mean over :func:`shuffled_scores`; NaN when a group
    has no usage (nothing to compare, nothing to shuffle)."""
    if not (len(first) and len(last)):
        return float("nan")
    observed = distance(first, last)
    return float(observed - shuffled_scores(distance, first, last, permutations, rng).mean())
