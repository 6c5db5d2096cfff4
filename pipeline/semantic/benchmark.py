"""The semantic-change benchmark: do the methods rank words of known graded change
in the right order?

Its words come from one of two sources:

* **pseudo-words** (:func:`pseudo_word_benchmark`): from the abstracts of the first and last group
  of periods, ``n_targets`` changed pseudo-words (b-share shifts spread evenly over
  ``(0, max_shift]``) and ``n_controls`` stable ones are made (:mod:`pipeline.corpus.pseudowords`);
  the truth is the Jensen-Shannon distance of the two groups' sense mixes;
* **a SemEval-2020 Task 1 folder** (:func:`semeval_benchmark`; Schlechtweg et al. 2020): its
  targets between its two corpora (``corpus1`` → ``corpus2``, one period each) and its graded
  truth (the task's subtask 2).

Every registered method (:mod:`pipeline.semantic.methods.registry`) scores the
words on those texts — the benchmark has no stage features, so the contextual method embeds the
texts with the encoder (:class:`~pipeline.semantic.methods.interface.EncoderSettings`)
— and each method's scores are correlated with the truth (:func:`score_benchmark`; Spearman and
Pearson, p-values, bootstrap intervals: :func:`pipeline.semantic.scores.truth_correlations`).

The stage's whole run is :func:`run_benchmark` (its words, every method on them); the stage writes
what it returns.

The truth moves a word's *mix of usages*; its frequency changes too (replaced b's add to it), so
the frequency baseline is not hopeless by construction — which is why it is reported beside.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.corpus.by_period import read_period
from pipeline.corpus.periods import in_time_order
from pipeline.corpus.pseudowords import choose_pairs, count_words, load_semeval, make_benchmark
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import (ChangeMethodsConfig, ContextualConfig,
                                          SemanticBenchmarkConfig)
from pipeline.semantic.methods import registry
from pipeline.semantic.methods.interface import ChangeInputs, EncoderSettings, MethodResult
from pipeline.semantic.scores import truth_correlations


def build(texts: pd.DataFrame, first: Sequence[str], last: Sequence[str], n_targets: int,
          n_controls: int, min_count: int, max_shift: float, seed: int,
          stopwords: frozenset[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rewritten texts (columns ``period``, ``abstract``) and the truth table."""
    group = {g: texts[texts["period"].isin(periods)]["abstract"] for g, periods in
             (("first", first), ("last", last))}
    pairs = choose_pairs(count_words(group["first"]), count_words(group["last"]), n_targets,
                         n_controls, min_count, seed, stopwords)
    shifts = [max_shift * (i + 1) / n_targets for i in range(n_targets)]
    return make_benchmark(texts, first, last, pairs, shifts, seed)


def pseudo_word_benchmark(abstracts: str, first: Sequence[str], last: Sequence[str],
                          n_targets: int, n_controls: int, min_count: int, max_shift: float,
                          seed: int, stopwords: frozenset[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`build` on the corpus table ``abstracts``' texts of the two groups' periods."""
    texts = pd.concat([read_period(abstracts, q, ["abstract", "period"])
                       for q in [*first, *last]], ignore_index=True)
    return build(texts, first, last, n_targets, n_controls, min_count, max_shift, seed, stopwords)


def semeval_benchmark(folder: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str]]:
    """A SemEval-2020 Task 1 folder as the benchmark: its texts (columns ``period``, ``abstract``),
    its targets with ``kind`` "target" and the graded ``truth``, and the two periods."""
    texts, truth = load_semeval(folder)
    return texts, truth.assign(kind="target"), ["corpus1"], ["corpus2"]


def benchmark_inputs(texts: pd.DataFrame, first: Sequence[str], last: Sequence[str],
                     encoder: str, encoding: EncoderSettings, learned: ChangeMethodsConfig,
                     seed: int, contextual: ContextualConfig = ContextualConfig(),
                     max_usages: int | None = None) -> ChangeInputs:
    """The methods' inputs: the table's texts (columns ``period``, ``abstract``) per period of
    each group; no stage features, so the encoder embeds texts (``encoding``, with the
    usage-vector methods' settings ``contextual``), the contextual method at most ``max_usages``
    sentences per word and period (None: every sentence holding a word — on a large corpus,
    thousands per pseudo-word of two frequent words)."""
    per_period = tuple([texts[texts["period"] == q]["abstract"].tolist() for q in g]
                       for g in (first, last))
    return ChangeInputs(tuple(first), tuple(last), per_period, encoder, learned, seed,
                        encoding=encoding, contextual=contextual, max_usages=max_usages)


def scores_frame(truth: pd.DataFrame, scores: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table: ``method``, ``word``, ``kind``, ``truth``, ``score`` (scored words only)."""
    frames = [truth[["word", "kind", "truth"]].assign(method=m, score=s) for m, s in scores.items()]
    frame = pd.concat(frames, ignore_index=True)
    return frame[np.isfinite(frame["score"])][["method", "word", "kind", "truth", "score"]]


@dataclass(frozen=True)
class BenchmarkRun:
    """Every method's result (table order), the long scores table and the correlations."""

    results: dict[str, MethodResult]
    frame: pd.DataFrame
    correlated: dict[str, dict]


def score_benchmark(inputs: ChangeInputs, truth: pd.DataFrame, seed: int) -> BenchmarkRun:
    """Every registered method on the truth table's words, correlated with its ``truth``
    (bootstrap seeded by ``seed``); every method has a row in the correlations."""
    results = registry.run(inputs, truth["word"].tolist())
    frame = scores_frame(truth, {m: r.scores for m, r in results.items()})
    correlated = truth_correlations(frame, dict(zip(truth["word"], truth["truth"])),
                                    list(results))
    return BenchmarkRun(results, frame, correlated)


def details(first: Sequence[str], last: Sequence[str], semeval: str | None, truth: pd.DataFrame,
            run: BenchmarkRun) -> dict:
    """``reports/semantic_benchmark.json``: the groups, each method's totals (top level) and
    details (under its name, ``-`` as ``_``), the correlations, the words and every score."""
    totals = {k: v for r in run.results.values() for k, v in r.totals.items()}
    words_key = "targets" if semeval else "pseudo_words"
    return {"first": first, "last": last, "semeval": semeval, **totals,
            **{m.replace("-", "_"): dict(r.details) for m, r in run.results.items() if r.details},
            "correlations": run.correlated,
            words_key: truth.astype(object).where(truth.notna(), None).to_dict(orient="records"),
            "scores": run.frame.to_dict(orient="records")}


@dataclass(frozen=True)
class Benchmark:
    """The semantic_benchmark stage's run: the groups (SemEval's are ``corpus1`` and ``corpus2``),
    the truth table and every method's ``run``; or, for a corpus with too few frequent words for
    pseudo-words, only the ``skipped`` message (the report says so; the stage does not fail)."""

    first: list[str]
    last: list[str]
    truth: pd.DataFrame | None = None
    run: BenchmarkRun | None = None
    skipped: str | None = None


def run_benchmark(first: Sequence[str], last: Sequence[str], semeval: str | None, abstracts: str,
                  stopwords: frozenset[str], encoder: str, encoding: EncoderSettings,
                  config: SemanticBenchmarkConfig, learned: ChangeMethodsConfig,
                  contextual: ContextualConfig = ContextualConfig(),
                  max_usages: int | None = None) -> Benchmark:
    """The semantic_benchmark stage from its files to the correlations: the words (a SemEval
    folder's, else pseudo-words of the corpus table ``abstracts``), the methods' inputs
    (:func:`benchmark_inputs`, the contextual method on at most ``max_usages`` sentences per word
    and period) and every registered method on them (:func:`score_benchmark`), with a line per
    method on stderr. Settings out of range and a broken SemEval folder are a
    :class:`UserError`; too few frequent words for pseudo-words is a :attr:`Benchmark.skipped`."""
    if not 0 < config.max_shift < 0.9 or config.n_targets < 3:
        raise UserError("semantic_benchmark needs 0 < max_shift < 0.9 and n_targets >= 3 "
                        f"(got {config.max_shift}, {config.n_targets})",
                        path="params.yaml: semantic_benchmark")
    if max_usages is not None and max_usages < 1:
        raise UserError(f"semantic_change.max_usages must be >= 1 or null (got {max_usages})",
                        path="params.yaml: semantic_change")
    first, last = in_time_order(first), in_time_order(last)
    try:
        if semeval:
            texts, truth, first, last = semeval_benchmark(semeval)
        else:
            texts, truth = pseudo_word_benchmark(
                abstracts, first, last, config.n_targets, config.n_controls, config.min_count,
                config.max_shift, config.seed, stopwords)
    except UserError as err:    # a small corpus: say so in the report, keep the pipeline going
        if semeval:
            raise               # a broken SemEval folder is the user's to fix
        return Benchmark(first, last, skipped=f"No benchmark: {err.what}. Fix: {err.fix}.")
    inputs = benchmark_inputs(texts, first, last, encoder, encoding, learned, config.seed,
                              contextual, max_usages)
    run = score_benchmark(inputs, truth, config.seed)
    for method, result in run.results.items():
        if result.log:
            print(f"{method}: {result.log}", file=sys.stderr)
    return Benchmark(first, last, truth, run)
