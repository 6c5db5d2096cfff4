"""Which sentences the contextual method encodes when a targets file names the words: each
period's sentences holding a target, at most ``cap`` per target (Algorithm 1 line 3 of paper 003:
n sentences sampled per time point and word; :func:`group_usages`); and which usages the apd
methods compare: at most ``cap`` per target and group (:func:`pooled_group_usages`).

Why: without a targets file the method pools the embeddings stage's vectors, which encode every
abstract of both groups; a targets file names a few dozen words, and encoding every abstract for
them (tens of minutes on a large corpus) buys little over a few hundred usages of each.

Why a hash: a sentence's draw is a seeded hash of its text, not an rng over positions, so the
same sentences are kept whatever order the corpus lists its abstracts in, and a sentence kept
under one cap is kept under every larger one. The kept sentences come in key order, so the
sums over them do not depend on the input order either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pipeline.corpus.pseudowords import word_pattern
from pipeline.semantic.word_vectors import target_sentences

# (sentences, for each sentence the lower-cased targets its occurrences count for)
Usages = tuple[list[str], list[frozenset[str]]]


def usage_key(sentence: str, seed: int) -> bytes:
    """The sentence's place in the seeded draw (smaller: drawn first)."""
    return hashlib.sha256(f"{seed}\n{sentence}".encode("utf-8")).digest()


def capped_usages(texts: Sequence[str], words: Sequence[str], cap: int | None,
                  seed: int) -> Usages:
    """The sentences of ``texts`` (one period) holding any of ``words``, each with the targets it
    counts for. ``cap`` None: every such sentence in text order, counting every target it holds
    (the whole computation). Else per target the ``cap`` sentences holding it with the smallest
    :func:`usage_key`, in key order; a sentence counts only for the targets it was drawn for,
    so no target gets more than ``cap`` sentences."""
    if cap is not None and cap < 1:
        raise ValueError(f"the usage cap must be >= 1 or None, got {cap}")
    pattern = word_pattern(words)
    sentences = target_sentences(texts, pattern)
    found = [frozenset(m.group(0).lower() for m in pattern.finditer(s)) for s in sentences]
    if cap is None:
        return sentences, found
    order = sorted(range(len(sentences)), key=lambda i: (usage_key(sentences[i], seed),
                                                         sentences[i]))
    taken = dict.fromkeys((w.lower() for w in words), 0)
    kept, counts_for = [], []
    for i in order:
        drawn = frozenset(w for w in found[i] if taken[w] < cap)
        for w in drawn:
            taken[w] += 1
        if drawn:
            kept.append(sentences[i])
            counts_for.append(drawn)
    return kept, counts_for


def group_usages(periods: Sequence[Sequence[str]], words: Sequence[str], cap: int | None,
                 seed: int) -> Usages:
    """:func:`capped_usages` of each period of a group (the cap holds per period), joined in
    time order."""
    sentences: list[str] = []
    counts_for: list[frozenset[str]] = []
    for texts in periods:
        s, c = capped_usages(texts, words, cap, seed)
        sentences += s
        counts_for += c
    return sentences, counts_for


def pooled_group_usages(periods: Sequence[Sequence[str]], words: Sequence[str], cap: int,
                        seed: int) -> Usages:
    """:func:`capped_usages` over every text of a group at once: at most ``cap`` sentences per
    target in the whole group (the apd methods' sample, whose cost grows with the product of the
    two groups' sizes), drawn by the same seeded hash; in key order, not time order."""
    return capped_usages([t for texts in periods for t in texts], words, cap, seed)
