"""Semantic change between a first and a last group of periods (issue 19 §3; paper 003 §4).

Paper 003's Algorithm 1 (``../shared/papers/003-temporal-attention.txt``, lines 155-168) follows
Martinc et al. (2020): embed each occurrence of w in a time point (lines 4-8), average them into
one time-specific vector x_t (line 10), score = cos_dist(x_t1, x_t2) (line 12). The embeddings
stage already stores lines 4-10 per period: V_iw, the mean contextual vector of LM token w with
its occurrence count (:mod:`pipeline.features.embeddings`). So :func:`averaged_embedding_change`
only pools those over each group of periods (count-weighted, i.e. the mean over every occurrence
in the group, exactly line 10 over the group's union) and applies line 12. Differences from the
paper: all occurrences, not n sampled sentences (line 3: we have them all, sampling only adds
noise); the layer is the embeddings stage's, not an average of the last h (line 7).

Baselines: :func:`log_frequency_change` (did the word merely get more or less frequent?) and
:func:`aligned_cosine_change` after orthogonal Procrustes (Hamilton et al., 2016), for static
per-period vectors. Training SGNS per period is left to a later change (gensim is not yet a
dependency); the alignment and scoring here are ready for its matrices.

Targets are words, vectors are per LM token: :func:`word_token_ids` maps a word to its single
word-starting token (" word") and rejects, with a reason, words that are not one such token.
All scoring is numpy over arrays; only :func:`read_group` touches files (and imports torch).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.evaluation.semantic_scores import ChangeScores
from pipeline.features.words import starts_word

# one period's (token_ids int [n], counts int [n], vectors float [n, d])
PeriodArrays = tuple[np.ndarray, np.ndarray, np.ndarray]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract, split after ``.``, ``!`` or ``?`` and whitespace (Algorithm 1
    embeds sentences; the reports quote them)."""
    return _SENTENCE_END.split(text)


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


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``1 - cos(a_i, b_i)`` in float64; NaN where a row is all zeros (undefined)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", a, b) / norm
    return np.where(norm > 0, 1.0 - np.clip(cos, -1.0, 1.0), np.nan)


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


def log_frequency_change(first: Sequence[np.ndarray], last: Sequence[np.ndarray]) -> ChangeScores:
    """Naive baseline: ``|mean_i f_iw (last) - mean_i f_iw (first)|`` for every token id.

    ``first`` / ``last``: per-period count arrays over the whole vocabulary; f_iw is each
    period's add-one-smoothed log frequency (:func:`pipeline.features.frequencies.log_frequencies`,
    the LM's history feature), so a period's size does not count, and unseen tokens are finite.
    A method that does no better than this is detecting frequency shifts, not meaning change.
    """
    from pipeline.features.frequencies import log_frequencies  # its module imports transformers

    def group(counts: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        if not counts:
            raise ValueError("a group needs at least one period")
        if len({np.asarray(c).shape for c in counts}) != 1:
            raise ValueError("count arrays differ in vocabulary size")
        mean = np.mean([log_frequencies(np.asarray(c)) for c in counts], axis=0)
        return mean, np.sum([np.asarray(c, dtype=np.int64) for c in counts], axis=0)

    f1, c1 = group(first)
    f2, c2 = group(last)
    if f1.shape != f2.shape:
        raise ValueError(f"the groups' vocabularies differ: {f1.size} vs {f2.size}")
    return ChangeScores(np.arange(f1.size, dtype=np.int64), np.abs(f2 - f1), c1, c2)


def procrustes_align(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Orthogonal R minimising ``||source R - target||_F`` (Hamilton et al., 2016; Schönemann 1966).

    With ``U S V^T = svd(source^T target)``, ``R = U V^T``. Orthogonal, so it rotates (or
    reflects) one period's space onto the other's without changing distances within a period:
    independently trained SGNS spaces are identical only up to such a transform.
    """
    source, target = np.asarray(source, dtype=np.float64), np.asarray(target, dtype=np.float64)
    if source.shape != target.shape or source.ndim != 2:
        raise ValueError(f"source {source.shape} and target {target.shape} must be equal [n, d]")
    u, _, vt = np.linalg.svd(source.T @ target)
    return u @ vt


def aligned_cosine_change(first_vectors: np.ndarray, last_vectors: np.ndarray,
                          normalize: bool = True) -> np.ndarray:
    """Per row (one shared-vocabulary word per row, same order in both), the cosine distance
    between its first-period vector rotated onto the last period and its last-period vector.

    ``normalize``: rows are scaled to unit length before aligning (as in Hamilton et al.'s
    HistWords), so frequent words with long vectors do not dominate the fit. Zero rows: NaN.
    """
    a = np.asarray(first_vectors, dtype=np.float64)
    b = np.asarray(last_vectors, dtype=np.float64)
    if normalize:
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.nan_to_num(a / np.linalg.norm(a, axis=1, keepdims=True))
            b = np.nan_to_num(b / np.linalg.norm(b, axis=1, keepdims=True))
    return cosine_distance(a @ procrustes_align(a, b), b)


@dataclass(frozen=True)
class WordTokens:
    """Target words mapped to single LM tokens; ``rejected``: word -> why it cannot be scored."""

    ids: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)


def word_token_ids(words: Iterable[str], tokenizer: Any) -> WordTokens:
    """Map each target word to the id of the one token " word" encodes to.

    Only a single word-starting token (:func:`pipeline.features.words.starts_word`) has a V_iw of
    its own: a word split into k tokens would need its pieces' vectors combined, which the
    stored per-token means cannot do per occurrence. Such words are rejected with a reason
    ("splits into k tokens"), never dropped silently, so a report can state its coverage.
    """
    out = WordTokens()
    for word in words:
        ids = tokenizer.encode(" " + word.strip(), add_special_tokens=False)
        if len(ids) != 1:
            out.rejected[word] = f"splits into {len(ids)} tokens"
        elif not starts_word(text := tokenizer.decode(ids)):
            out.rejected[word] = f"token {text!r} does not start a word"
        else:
            out.ids[word] = int(ids[0])
    return out


def word_token_ids_from_texts(words: Iterable[str], texts: Sequence[str]) -> WordTokens:
    """Pure variant of :func:`word_token_ids` over token texts (``texts[i]`` = text of id i, from
    :func:`pipeline.features.words.token_texts`): the id whose text is exactly " word" and starts
    a word. Without the tokenizer the number of pieces is unknown, so the reason is generic."""
    index: dict[str, int] = {}
    for i, text in enumerate(texts):
        if starts_word(text):
            index.setdefault(text, i)   # the lowest id if a text repeats (deterministic)
    out = WordTokens()
    for word in words:
        tid = index.get(" " + word.strip())
        if tid is None:
            out.rejected[word] = "not a single word-starting token"
        else:
            out.ids[word] = tid
    return out
