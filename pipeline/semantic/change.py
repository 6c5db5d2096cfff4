"""The semantic-change analysis (paper 003 §4-5): which target words changed
meaning between a first and a last group of periods, by every registered method, and how each
agrees with a graded truth.

The semantic_change stage's pipeline: each group's per-period LM-token counts
(:func:`period_counts`, the frequencies stage) choose the targets (:func:`report_targets`: a
file's words, or the most frequent words seen often in both groups; :mod:`.targets`); the
methods' inputs (:func:`feature_inputs`) are the groups' abstracts per period *and* the stage
features (counts, embeddings files, the targets' LM token ids), so the contextual and frequency
methods score per LM token while the learned ones train on the texts (with a targets file the
contextual method encodes the targets' sentences instead, a capped sample per period:
:mod:`.usages`); every method of the registry (:mod:`pipeline.semantic.methods.registry`)
scores the targets that are one LM token (:func:`score_targets`), and the long table
(:func:`scores_frame`) ranks them per method, with each target's occurrences in each group. With a graded ``truth`` in the targets
file, every method is correlated with it (Pearson and Spearman, p-values, seeded bootstrap
intervals: :func:`pipeline.semantic.scores.truth_correlations`). :func:`analyse` is the stage's
whole run, from its files to the scores; the stage writes what it returns.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.by_period import period_abstracts
from pipeline.features.frequencies import read_period
from pipeline.features.tokenizer import load_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import ChangeMethodsConfig, ContextualConfig, SemanticChangeConfig
from pipeline.semantic.methods import registry
from pipeline.semantic.methods.contextual import period_paths
from pipeline.semantic.methods.interface import ChangeInputs, EncoderSettings, MethodResult
from pipeline.semantic.scores import truth_correlations
from pipeline.semantic.targets import Targets, choose_targets

SCORE_COLUMNS = ["method", "word", "token_id", "score", "rank", "first_count", "last_count"]
GroupCounts = tuple[list[np.ndarray], list[np.ndarray]]


def period_counts(folder: str | os.PathLike[str], first: Sequence[str],
                  last: Sequence[str]) -> GroupCounts:
    """Each group's per-period LM-token count arrays (``<folder>/<label>.parquet``)."""
    first_counts, last_counts = ([read_period(Path(folder) / f"{q}.parquet").counts for q in g]
                                 for g in (first, last))
    return first_counts, last_counts


def report_targets(counts: GroupCounts, tokenizer: str | os.PathLike[str],
                   stopwords: frozenset[str], n_targets: int, min_count: int,
                   path: str | None) -> Targets:
    """The run's targets (:func:`pipeline.semantic.targets.choose_targets`) over the
    LM tokenizer's token texts and the groups' summed counts; a targets file none of whose words
    is one LM token is a :class:`UserError`."""
    summed = [sum(c) for c in counts]
    texts = token_texts(load_tokenizer(tokenizer), summed[0].size)
    targets = choose_targets(texts, *summed, stopwords, n_targets, min_count, path)
    if not targets.ids and path:
        raise UserError(f"no target word is one LM token ({len(targets.words)} given, "
                        f"{len(targets.rejected)} rejected)", path=path or "params.yaml",
                        fix="list words that the tokenizer keeps whole (one per line)")
    return targets


def feature_inputs(first: Sequence[str], last: Sequence[str], counts: GroupCounts,
                   embeddings: str | os.PathLike[str] | None, abstracts: str | os.PathLike[str],
                   targets: Targets, encoder: str, learned: ChangeMethodsConfig,
                   seed: int, encoding: EncoderSettings | None = None,
                   max_usages: int | None = None,
                   contextual: ContextualConfig = ContextualConfig()) -> ChangeInputs:
    """The methods' inputs: the corpus's abstracts per period of each group, the count arrays,
    the embeddings files (``<embeddings>/<label>.safetensors``; None: the contextual method
    encodes the targets' sentences instead, by ``encoding``, at most ``max_usages`` per target
    and period), the targets' token ids and the usage-vector methods' settings (``contextual``).
    ``encoding`` is passed either way: the apd methods always encode the targets' usages."""
    texts = tuple([period_abstracts(abstracts, q) for q in g] for g in (first, last))
    files = (None if embeddings is None
             else (period_paths(embeddings, first), period_paths(embeddings, last)))
    return ChangeInputs(tuple(first), tuple(last), texts, encoder, learned, seed, counts=counts,
                        embeddings=files, token_ids=targets.ids, encoding=encoding,
                        max_usages=max_usages, contextual=contextual)


def scores_frame(targets: Targets, words: Sequence[str], results: Mapping[str, MethodResult],
                 counts: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """One row per (method, scored target): the score and its rank (1 = most changed; ties by
    word), with the target's occurrences in each group — the method's own counts where it has
    them (the contextual method's embedded occurrences), else the groups' LM-token ``counts``
    (summed, per token id), else -1. ``results[m].scores[k]`` scores ``words[k]``; a target a
    method cannot score (NaN) has no row for that method."""
    index = {w: k for k, w in enumerate(words)}
    rows = []
    for method, result in results.items():
        own = (result.first_counts, result.last_counts)
        part = []
        for word in targets.words:
            k = index.get(word)
            if k is None or not math.isfinite(result.scores[k]):
                continue
            tid = targets.ids[word]
            seen = [int(c[k]) if c is not None else int(g[tid]) if g is not None else -1
                    for c, g in zip(own, counts or (None, None))]
            part.append([method, word, tid, float(result.scores[k]), 0, *seen])
        part.sort(key=lambda r: (-r[3], r[1]))
        for rank, row in enumerate(part, start=1):
            row[4] = rank
        rows += part
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).astype({"token_id": "int64", "rank": "int64"})


@dataclass(frozen=True)
class ChangeRun:
    """Every method's result (table order), the scores table and the correlations with truth
    (empty without a graded truth)."""

    results: dict[str, MethodResult]
    frame: pd.DataFrame
    correlated: dict[str, dict]


def score_targets(inputs: ChangeInputs, targets: Targets, seed: int) -> ChangeRun:
    """Every registered method on the targets that are one LM token (sorted: the learned methods
    see them in one order whatever the file's), ranked (:func:`scores_frame`) and, with a graded
    truth, correlated with it (bootstrap seeded by ``seed``)."""
    words = sorted(targets.ids)
    results = registry.run(inputs, words)
    summed = None if inputs.counts is None else (sum(inputs.counts[0]), sum(inputs.counts[1]))
    frame = scores_frame(targets, words, results, summed)
    correlated = (truth_correlations(frame, targets.truth, list(results))
                  if targets.truth else {})
    return ChangeRun(results, frame, correlated)


@dataclass(frozen=True)
class ChangeAnalysis:
    """The semantic_change stage's run: its ``targets``, the methods' ``inputs`` (their texts give
    the report's example sentences) and every method's ``run``."""

    targets: Targets
    inputs: ChangeInputs
    run: ChangeRun


def analyse(first: Sequence[str], last: Sequence[str], frequencies: str | os.PathLike[str],
            embeddings: str | os.PathLike[str] | None, abstracts: str | os.PathLike[str],
            tokenizer: str | os.PathLike[str], stopwords: frozenset[str], targets_path: str | None,
            encoder: str, config: SemanticChangeConfig, learned: ChangeMethodsConfig,
            encoding: EncoderSettings | None = None,
            contextual: ContextualConfig = ContextualConfig()) -> ChangeAnalysis:
    """The semantic_change stage from its files to the scores: the groups' counts
    (:func:`period_counts`), the targets (:func:`report_targets`), the methods' inputs
    (:func:`feature_inputs`) and every registered method on them (:func:`score_targets`), with a
    line per step and method on stderr. With a targets file the contextual method encodes their
    sentences (``encoding``, ``config.max_usages``) and ``embeddings`` is not read: a few dozen
    words do not need every abstract of both groups encoded. The apd methods encode a sample of
    the targets' usages either way (``encoding``, ``contextual``). Settings out of range are a
    :class:`UserError`."""
    if config.n_targets < 1 or config.min_count < 1 or config.top < 1:
        raise UserError("semantic_change.n_targets, min_count and top must be >= 1",
                        path="params.yaml: semantic_change")
    if config.max_usages is not None and config.max_usages < 1:
        raise UserError("semantic_change.max_usages must be >= 1 or null",
                        path="params.yaml: semantic_change")
    if encoding is None:
        raise UserError("the apd methods need encoder settings", path="semantic_change",
                        fix="pass --layer/--max-length/--batch-size")
    from_texts = targets_path is not None
    if not from_texts and embeddings is None:
        raise UserError("the contextual method needs the embeddings folder here",
                        path="semantic_change", fix="pass --embeddings, or --targets")
    counts = period_counts(frequencies, first, last)
    targets = report_targets(counts, tokenizer, stopwords, config.n_targets, config.min_count,
                             targets_path)
    print(f"scoring {len(targets.ids)} targets, {' '.join(first)} -> {' '.join(last)}",
          file=sys.stderr)
    inputs = feature_inputs(first, last, counts, None if from_texts else embeddings, abstracts,
                            targets, encoder, learned, config.seed, encoding, config.max_usages,
                            contextual)
    run = score_targets(inputs, targets, config.seed)
    for method, result in run.results.items():
        if result.log:
            print(f"{method}: {result.log}", file=sys.stderr)
    return ChangeAnalysis(targets, inputs, run)
