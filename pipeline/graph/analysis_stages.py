"""Stages that read the corpus and its features but no model: the signal (the unigram yardstick
of a temporal gain), the semantic-change report and its pseudo-word benchmark; and the verdicts
stage, which collects every report's records."""

from __future__ import annotations

from typing import Any

from pipeline.graph.code_deps import CHANGE_METHODS, Code
from pipeline.graph.files import (ABSTRACTS, SEMANTIC_BENCHMARK, SEMANTIC_METRICS,
                                  SEMANTIC_SCORES, SIGNAL_DETAILS, STOPWORDS, TOKENIZER,
                                  VERDICT_SOURCES, VERDICTS, feature_files)
from pipeline.graph.plan import Plan
from pipeline.interfaces import semantic_benchmark, semantic_change, signal, verdicts


def signal_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The test period and the training periods are params (split.*), the context length
    train.max_length; it reads the documents of the corpus table itself, no feature file."""
    return signal.INTERFACE.entry(
        {"abstracts": ABSTRACTS, "tokenizer": TOKENIZER, "json": SIGNAL_DETAILS,
         "out": "reports/signal.md"}, code=code("signal"))


def semantic_change_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """Both groups' frequency and embedding files, the groups resolved into the cmd (like the
    forecast periods: semantic_change.first/last may be null or a range), the targets file if
    any and the learned methods' settings of the benchmark, but not the benchmark itself: its
    report is linked, so that scoring targets does not wait for the benchmark's MLMs.
    With a targets file no embeddings: the stage encodes the targets' sentences itself."""
    targets = plan.semantic_targets or None
    features = ("frequencies",) if targets else ("embeddings", "frequencies")
    return semantic_change.INTERFACE.entry(
        {"first": plan.semantic_first, "last": plan.semantic_last, "targets": targets,
         "embeddings": None if targets else "data/features/embeddings",
         "frequencies": "data/features/frequencies", "tokenizer": TOKENIZER,
         "stopwords": STOPWORDS, "abstracts": ABSTRACTS,
         "scores": SEMANTIC_SCORES, "out": "reports/semantic_change.md",
         "metrics": SEMANTIC_METRICS},
        files={k: feature_files([k], plan.semantic_periods) for k in features},
        code=code("semantic_change", discovered=CHANGE_METHODS))


def semantic_benchmark_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The groups of semantic_change (resolved, as there), the encoder of the embeddings stage;
    a SemEval folder (semantic_benchmark.semeval), when set, resolved into the cmd and a dep."""
    return semantic_benchmark.INTERFACE.entry(
        {"first": plan.semantic_first, "last": plan.semantic_last,
         "semeval": plan.semeval or None, "abstracts": ABSTRACTS, "stopwords": STOPWORDS,
         "out": semantic_benchmark.REPORT, "details": SEMANTIC_BENCHMARK,
         "plot": "plots/semantic_benchmark.csv"},
        code=code("semantic_benchmark", discovered=CHANGE_METHODS))


def verdicts_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """Collects the report stages' verdict records into one file (stage `verdicts`); the
    benchmark's only when the semantic-change stages run (semantic_change.run)."""
    sources = [s for s in VERDICT_SOURCES if plan.semantic or s != SEMANTIC_BENCHMARK]
    return verdicts.INTERFACE.entry({"inputs": sources, "out": VERDICTS}, code=code("verdicts"))
