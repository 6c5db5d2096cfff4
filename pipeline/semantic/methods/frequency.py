"""The ``frequency`` method: |Δ mean log frequency|, the naive baseline of semantic change.

Did the word merely get more or less frequent? ``score = |f_last - f_first|`` (:func:`change`,
the one place it is computed), with ``f`` a group's log frequency of the word, estimated from
what the stage has:

* **per-period LM-token counts** (the semantic_change stage, :func:`log_frequency_change`): ``f``
  is the mean over the group's periods of each period's add-one-smoothed log frequency
  (:func:`pipeline.features.frequencies.log_frequencies`, the LM's history feature,
  ``log((c + 1) / (N + |V|))``), so a period's size does not count, and unseen tokens are finite;
* **texts** (the benchmark, :func:`text_frequency_change`): ``f = log((count + 1) / (running
  words + 1))`` of the whole word in the group's texts; running words are ASCII words
  (:data:`pipeline.corpus.pseudowords.WORD`) plus the targets themselves (pseudo-words hold
  digits, which WORD skips).

A method that does no better than this is detecting frequency shifts, not meaning change; the
report prints every method's agreement with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from pipeline.corpus.pseudowords import WORD, word_pattern
from pipeline.semantic.methods.interface import (ChangeInputs, ChangeMethod, ChangeScores,
                                                 MethodResult)


def change(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``|f_last - f_first|``, elementwise: the frequency method's score."""
    return np.abs(last - first)


def group_log_frequencies(counts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A group's mean per-period log frequency of every token id, and its summed counts."""
    from pipeline.features.frequencies import log_frequencies  # its module imports transformers

    if not counts:
        raise ValueError("a group needs at least one period")
    if len({np.asarray(c).shape for c in counts}) != 1:
        raise ValueError("count arrays differ in vocabulary size")
    mean = np.mean([log_frequencies(np.asarray(c)) for c in counts], axis=0)
    return mean, np.sum([np.asarray(c, dtype=np.int64) for c in counts], axis=0)


def log_frequency_change(first: Sequence[np.ndarray], last: Sequence[np.ndarray]) -> ChangeScores:
    """The score of every token id from per-period count arrays over the whole vocabulary
    (``first`` / ``last``: each group's periods), with each group's summed counts."""
    f1, c1 = group_log_frequencies(first)
    f2, c2 = group_log_frequencies(last)
    if f1.shape != f2.shape:
        raise ValueError(f"the groups' vocabularies differ: {f1.size} vs {f2.size}")
    return ChangeScores(np.arange(f1.size, dtype=np.int64), change(f1, f2), c1, c2)


def text_log_frequencies(texts: Sequence[str], words: Sequence[str]) -> np.ndarray:
    """``log((count + 1) / (running words + 1))`` of each of ``words`` (whole words, any case)."""
    pattern = word_pattern(words)
    counts = Counter(m.group(0).lower() for t in texts for m in pattern.finditer(t))
    total = sum(len(WORD.findall(t)) for t in texts) + sum(counts.values())
    return np.log((np.array([counts[w.lower()] for w in words]) + 1.0) / (total + 1.0))


def text_frequency_change(first: Sequence[str], last: Sequence[str],
                          words: Sequence[str]) -> np.ndarray:
    """The score of each of ``words`` between two groups' texts (:func:`text_log_frequencies`)."""
    return change(text_log_frequencies(first, words), text_log_frequencies(last, words))


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """By LM token from the counts where the stage has them, else from the texts."""
    if inputs.counts is None:
        return MethodResult(text_frequency_change(*inputs.group_texts, list(targets)))
    scores = log_frequency_change(*inputs.counts)
    ids = inputs.token_ids or {}
    at = np.array([ids.get(w, -1) for w in targets], dtype=np.int64)
    known = (at >= 0) & (at < len(scores))
    pick = np.where(known, at, 0)
    return MethodResult(np.where(known, scores.scores[pick], np.nan),
                        np.where(known, scores.first_counts[pick], 0),
                        np.where(known, scores.last_counts[pick], 0))


# Its place in the registry's table: the order of every report.
ORDER = 70

METHOD = ChangeMethod(
    name="frequency",
    description="|change of mean log frequency| (naive baseline)",
    benchmark_note="|Δ log relative frequency|",
    reads=frozenset({"counts", "token_ids", "texts"}),
    score=score)
