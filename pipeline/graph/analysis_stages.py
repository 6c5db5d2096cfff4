"""Stages that read the corpus and its features but no model: the semantic-change report and its
pseudo-word benchmark."""

from __future__ import annotations

from typing import Any

from pipeline.graph.code_deps import Code
from pipeline.graph.files import (ABSTRACTS, SEMANTIC_BENCHMARK, SEMANTIC_METRICS,
                                  SEMANTIC_SCORES, STOPWORDS, TOKENIZER, VERDICT_SOURCES,
                                  VERDICTS, feature_files)
from pipeline.graph.plan import Plan
from pipeline.infra.interfaces import verdicts


# The learned methods' settings: params of semantic_benchmark, read by both stages (one source).
LEARNED = ["temporal_init", "temporal_epochs", "temporal_steps", "temporal_lr", "temporal_lr_new",
           "temporal_batch_size", "temporal_max_length", "temporal_hidden", "temporal_depth",
           "temporal_sentences", "temporal_layers", "sgns_dim", "sgns_epochs"]


def learned_options() -> str:
    """``--temporal-init ${semantic_benchmark.temporal_init} ...`` for every :data:`LEARNED` key."""
    return "".join(f"--{k.replace('_', '-')} ${{semantic_benchmark.{k}}} " for k in LEARNED)


def semantic_change_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """Both groups' frequency and embedding files, resolved into the cmd (like the forecast
    periods: semantic_change.first/last may be null or a range), the targets file if any, the
    learned methods' settings of the benchmark and the benchmark's JSON (its table)."""
    targets = [plan.semantic_targets] if plan.semantic_targets else []
    return {
        "cmd": "python -m stages.semantic_change --first " + " ".join(plan.semantic_first)
               + " --last " + " ".join(plan.semantic_last)
               + "".join(f" --targets {t}" for t in targets)
               + " --embeddings data/features/embeddings --frequencies data/features/frequencies "
               f"--tokenizer {TOKENIZER} --stopwords {STOPWORDS} --abstracts {ABSTRACTS} "
               "--n-targets ${semantic_change.n_targets} --min-count "
               "${semantic_change.min_count} --top ${semantic_change.top} "
               "--seed ${semantic_change.seed} --encoder ${embeddings.encoder} "
               + learned_options() + f"--benchmark {SEMANTIC_BENCHMARK} "
               f"--scores {SEMANTIC_SCORES} --out reports/semantic_change.md "
               f"--metrics {SEMANTIC_METRICS}",
        "deps": [*code("semantic_change"),
                 *feature_files(["frequencies", "embeddings"], plan.semantic_periods),
                 TOKENIZER, STOPWORDS, ABSTRACTS, SEMANTIC_BENCHMARK, *targets],
        # not first/last/targets: resolved into the cmd (forecast_stage says why)
        "params": ["semantic_change.n_targets", "semantic_change.min_count",
                   "semantic_change.top", "semantic_change.seed", "embeddings.encoder",
                   *(f"semantic_benchmark.{k}" for k in LEARNED)],
        "outs": [SEMANTIC_SCORES, {"reports/semantic_change.md": {"cache": False}}],
        "metrics": [{SEMANTIC_METRICS: {"cache": False}}],
    }


def semantic_benchmark_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The groups of semantic_change (resolved, as there), the encoder of the embeddings stage;
    a SemEval folder (semantic_benchmark.semeval), when set, resolved into the cmd and a dep."""
    semeval = [plan.semeval] if plan.semeval else []
    return {
        "cmd": "python -m stages.semantic_benchmark --first " + " ".join(plan.semantic_first)
               + " --last " + " ".join(plan.semantic_last)
               + "".join(f" --semeval {f}" for f in semeval)
               + f" --abstracts {ABSTRACTS} --stopwords {STOPWORDS} "
               "--encoder ${embeddings.encoder} --layer ${embeddings.layer} "
               "--max-length ${embeddings.max_length} --batch-size ${embeddings.batch_size} "
               "--n-targets ${semantic_benchmark.n_targets} "
               "--n-controls ${semantic_benchmark.n_controls} "
               "--min-count ${semantic_benchmark.min_count} "
               "--max-shift ${semantic_benchmark.max_shift} --seed ${semantic_benchmark.seed} "
               + learned_options() +
               f"--out reports/semantic_benchmark.md --details {SEMANTIC_BENCHMARK} "
               "--plot plots/semantic_benchmark.csv",
        "deps": [*code("semantic_benchmark"), ABSTRACTS, STOPWORDS, *semeval],
        # not semeval: resolved into the cmd (forecast_stage says why)
        "params": ["embeddings.encoder", "embeddings.layer", "embeddings.max_length",
                   "embeddings.batch_size",
                   *(f"semantic_benchmark.{k}" for k in ("n_targets", "n_controls", "min_count",
                                                         "max_shift", "seed", *LEARNED))],
        "outs": [{"reports/semantic_benchmark.md": {"cache": False}},
                 {SEMANTIC_BENCHMARK: {"cache": False}}],
        # each method's scores against the truth, changed words and controls in two colours
        "plots": [{"plots/semantic_benchmark.csv": {
                      "cache": False, "x": "truth", "y": "score",
                      "template": "scatter_by_method"}},
                  {"plots/semantic_benchmark.png": {"cache": False}}],
    }


def verdicts_stage(code: Code) -> dict[str, Any]:
    """Collects the report stages' verdict records into one file (stage `verdicts`)."""
    return verdicts.INTERFACE.entry({"inputs": list(VERDICT_SOURCES), "out": VERDICTS},
                                    code=code("verdicts"))
