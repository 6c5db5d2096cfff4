"""The ``contextual`` method: averaged contextual embeddings (Martinc et al. 2020), paper 003's
Algorithm 1 without temporal attention (paper 003 §4).

Paper 003's Algorithm 1 (``../shared/papers/003-temporal-attention.txt``, lines 155-168) follows
Martinc et al. (2020): embed each occurrence of w in a time point (lines 4-8), average them into
one time-specific vector x_t (line 10), score = cos_dist(x_t1, x_t2) (line 12). Two sources of
the occurrence vectors, one per stage:

* **the embeddings files** (the semantic_change stage): the embeddings stage already stores lines
  4-10 per period: V_iw, the mean contextual vector of LM token w with its occurrence count
  (:mod:`pipeline.features.embeddings`). So :func:`averaged_embedding_change` only pools those
  over each group of periods (count-weighted, i.e. the mean over every occurrence in the group,
  exactly line 10 over the group's union) and applies line 12. Differences from the paper: all
  occurrences, not n sampled sentences (line 3: we have them all, sampling only adds noise); the
  layer is the embeddings stage's one layer, not an average of the last h (line 7);
* **the texts** (the benchmark, whose pseudo-words are several LM tokens and whose texts are
  rewritten; the semantic_change stage with a targets file, which then needs no embeddings
  stage): each group's sentences holding a target are embedded with the encoder
  (:func:`pipeline.semantic.word_vectors.sentence_sums`, the embeddings stage's encoder and
  layer, or line 7's mean of the ``contextual_layers`` layers ending there), at most
  ``max_usages`` per target and period, a seeded sample (:mod:`pipeline.semantic.usages`; line
  3's n sentences), and :func:`occurrence_change` compares the two groups' mean vectors.

The prototype distance compares the groups' means only; the ``apd`` methods (:mod:`.apd`) compare
the usages pair by pair.

All scoring is numpy over arrays; only :func:`read_group` touches files (and imports torch).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from pipeline.semantic.methods.interface import (ChangeInputs, ChangeMethod, ChangeScores,
                                                 MethodResult)
from pipeline.semantic.vectors import cosine_distance

# one period's (token_ids int [n], counts int [n], vectors float [n, d])
PeriodArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def pool_group(periods: Sequence[PeriodArrays]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count-weighted mean of each token's per-period vectors over a group of periods.

    ``sum_i c_iw V_iw / sum_i c_iw`` is the mean over every occurrence of w in the group
    (Algorithm 1 line 10 over the group); an unweighted mean of period means would let a period
    with one occurrence weigh as much as one with a thousand. Accumulated in float64 (the files
    are fp16; sums of thousands of rows would lose digits). Returns ``(token_ids, counts,
    vectors)`` for tokens with a positive total count, ids sorted.
    """
    if not periods:
        raise ValueError("a group needs at least one period")
    dims = {np.asarray(v).shape[1] for _, _, v in periods}
    if len(dims) != 1:
        raise ValueError(f"periods of one group have vectors of different sizes: {sorted(dims)}")
    ids = np.unique(np.concatenate([np.asarray(t, dtype=np.int64).reshape(-1) for t, _, _ in periods]))
    sums = np.zeros((ids.size, dims.pop()), dtype=np.float64)
    counts = np.zeros(ids.size, dtype=np.int64)
    for tok, cnt, vec in periods:
        tok = np.asarray(tok, dtype=np.int64).reshape(-1)
        cnt = np.asarray(cnt, dtype=np.int64).reshape(-1)
        vec = np.asarray(vec, dtype=np.float64)
        if not tok.size == cnt.size == vec.shape[0] or np.unique(tok).size != tok.size:
            raise ValueError("token_ids, counts and vectors of a period must line up, ids unique")
        row = np.searchsorted(ids, tok)
        sums[row] += cnt[:, None] * vec
        counts[row] += cnt
    seen = counts > 0
    return ids[seen], counts[seen], sums[seen] / counts[seen, None]


def averaged_embedding_change(first: Sequence[PeriodArrays],
                              last: Sequence[PeriodArrays]) -> ChangeScores:
    """Algorithm 1 on stored V_iw: cosine distance (line 12) between each token's pooled vector
    over the ``first`` and over the ``last`` group of periods (:func:`pool_group`, line 10).

    Only tokens seen in both groups are scored: a token absent from one group has no x_t, and
    substituting zeros or an older vector would invent a change. NaN where a pooled vector is 0.
    """
    ids1, cnt1, vec1 = pool_group(first)
    ids2, cnt2, vec2 = pool_group(last)
    if vec1.shape[1] != vec2.shape[1]:
        raise ValueError(f"the groups' vectors differ in size: {vec1.shape[1]} vs {vec2.shape[1]}")
    both, i1, i2 = np.intersect1d(ids1, ids2, assume_unique=True, return_indices=True)
    return ChangeScores(both, cosine_distance(vec1[i1], vec2[i2]), cnt1[i1], cnt2[i2])


def period_paths(folder: str | os.PathLike[str], labels: Iterable[str]) -> list[Path]:
    """``<folder>/<label>.safetensors`` for each label (``data/features/embeddings``)."""
    return [Path(folder) / f"{label}.safetensors" for label in labels]


def read_group(paths: Iterable[str | os.PathLike[str]],
               tokenizer_id: str | None = None) -> list[PeriodArrays]:
    """Read embeddings files as numpy ``(token_ids, counts, vectors)``; ``tokenizer_id`` as in
    :func:`pipeline.features.embeddings.read_period` (refuses files of another tokenizer).
    Imported here, not at the top: it imports torch, which the pure functions do not need."""
    from pipeline.features.embeddings import read_period

    out = []
    for path in paths:
        p = read_period(path, tokenizer_id=tokenizer_id)
        out.append((p.token_ids.numpy(), p.counts.numpy(), p.vectors.numpy()))
    return out


def embedding_change_from_files(first_paths: Iterable[str | os.PathLike[str]],
                                last_paths: Iterable[str | os.PathLike[str]],
                                tokenizer_id: str | None = None) -> ChangeScores:
    """:func:`averaged_embedding_change` over period files (:func:`period_paths`)."""
    return averaged_embedding_change(read_group(first_paths, tokenizer_id),
                                     read_group(last_paths, tokenizer_id))


def occurrence_change(first: tuple[np.ndarray, np.ndarray], last: tuple[np.ndarray, np.ndarray]
                      ) -> np.ndarray:
    """Cosine distance between each word's mean vector in the two groups, from ``(sums,
    counts)`` (a mean and its sum point the same way); NaN for a word unseen in a group."""
    (s1, c1), (s2, c2) = first, last
    return np.where((c1 > 0) & (c2 > 0), cosine_distance(s1, s2), np.nan)


def _from_embeddings(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Each target's score and counts by its LM token (NaN where not seen in both groups)."""
    change = embedding_change_from_files(*inputs.embeddings)
    index = {int(t): k for k, t in enumerate(change.token_ids)}
    scores = np.full(len(targets), np.nan)
    counts = np.zeros((2, len(targets)), dtype=np.int64)
    ids = inputs.token_ids or {}
    for i, word in enumerate(targets):
        k = index.get(ids.get(word, -1))
        if k is not None:
            scores[i] = change.scores[k]
            counts[:, i] = change.first_counts[k], change.last_counts[k]
    return MethodResult(scores, counts[0], counts[1])


def _from_texts(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """Each target's occurrences in each group's texts, embedded by the encoder: only the
    sentences holding a target, at most ``max_usages`` per target and period (all when None)."""
    from pipeline.models.hub import load_encoder, load_tokenizer_for
    from pipeline.semantic.usages import group_usages             # torch: only when needed
    from pipeline.semantic.word_vectors import sentence_sums

    how = inputs.encoding
    encoder = load_encoder(inputs.encoder).to(how.device)
    tokenizer = load_tokenizer_for(inputs.encoder)
    groups, skipped = [], 0
    for periods in inputs.texts:
        sentences, counts_for = group_usages(periods, targets, inputs.max_usages, inputs.seed)
        sums, counts, missed = sentence_sums(encoder, tokenizer, sentences, list(targets),
                                             how.layer, how.max_length, how.batch_size,
                                             how.device, counts_for,
                                             inputs.contextual.contextual_layers)
        groups.append((sums, counts))
        skipped += missed
    return MethodResult(occurrence_change(groups[0], groups[1]), groups[0][1], groups[1][1],
                        totals={"skipped_occurrences": skipped})


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    """From the embeddings files where the stage has them, else from the texts (``encoding``)."""
    if inputs.embeddings is not None:
        return _from_embeddings(inputs, targets)
    if inputs.encoding is None:
        raise ValueError("the contextual method needs embeddings files or encoder settings")
    return _from_texts(inputs, targets)


# Its place in the registry's table: the order of every report.
ORDER = 10

METHOD = ChangeMethod(
    name="contextual",
    description="averaged contextual embeddings (Martinc et al. 2020; paper 003 Alg. 1 on the "
                "embeddings stage's vectors, no temporal attention)",
    benchmark_note="Algorithm 1 with `{encoder}` (cosine distance of the mean occurrence "
                   "vectors; {skipped_occurrences} occurrences past the encoder's window had no "
                   "vector)",
    reads=frozenset({"embeddings", "token_ids", "texts", "encoder", "encoding", "max_usages",
                     "contextual", "seed"}),
    score=score)
