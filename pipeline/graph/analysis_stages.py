"""Stages that read the corpus and its features but no model: the semantic-change report."""

from __future__ import annotations

from typing import Any

from pipeline.graph.code_deps import Code
from pipeline.graph.files import (ABSTRACTS, SEMANTIC_METRICS, SEMANTIC_SCORES, STOPWORDS,
                                  TOKENIZER, feature_files)
from pipeline.graph.plan import Plan


def semantic_change_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """Both groups' frequency and embedding files, resolved into the cmd (like the forecast
    periods: semantic_change.first/last may be null or a range), and the targets file if any."""
    targets = [plan.semantic_targets] if plan.semantic_targets else []
    return {
        "cmd": "python -m stages.semantic_change --first " + " ".join(plan.semantic_first)
               + " --last " + " ".join(plan.semantic_last)
               + "".join(f" --targets {t}" for t in targets)
               + " --embeddings data/features/embeddings --frequencies data/features/frequencies "
               f"--tokenizer {TOKENIZER} --stopwords {STOPWORDS} --abstracts {ABSTRACTS} "
               "--n-targets ${semantic_change.n_targets} --min-count "
               "${semantic_change.min_count} --top ${semantic_change.top} "
               "--seed ${semantic_change.seed} "
               f"--scores {SEMANTIC_SCORES} --out reports/semantic_change.md "
               f"--metrics {SEMANTIC_METRICS}",
        "deps": [*code("semantic_change"),
                 *feature_files(["frequencies", "embeddings"], plan.semantic_periods),
                 TOKENIZER, STOPWORDS, ABSTRACTS, *targets],
        # not first/last/targets: resolved into the cmd (forecast_stage says why)
        "params": ["semantic_change.n_targets", "semantic_change.min_count",
                   "semantic_change.top", "semantic_change.seed"],
        "outs": [SEMANTIC_SCORES, {"reports/semantic_change.md": {"cache": False}}],
        "metrics": [{SEMANTIC_METRICS: {"cache": False}}],
    }
