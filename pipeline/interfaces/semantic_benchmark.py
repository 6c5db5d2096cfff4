"""Stage `semantic_benchmark`: the pseudo-word benchmark of the semantic-change methods."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import SemanticBenchmarkConfig, SemanticChangeConfig
from pipeline.infra.shared_options import (ABSTRACTS, CONTEXTUAL, LEARNED, RUNTIME,
                                              group_periods)

# Where the DVC graph writes the stage's report; the semantic-change report links it.
REPORT = "reports/semantic_benchmark.md"

INTERFACE = StageInterface("semantic_benchmark", (
    # the groups of semantic_change and the SemEval folder: resolved by the graph into the
    # command, not params
    *group_periods("semantic_change"),
    Input("--semeval", "SemEval-2020 Task 1 language folder (semantic_benchmark.semeval)",
          required=False),
    ABSTRACTS,
    Input("--stopwords", "stopword list (never merged)"),
    # the encoder of the embeddings stage
    Value("--encoder", "encoder (embeddings.encoder)", param="embeddings.encoder"),
    Value("--layer", "hidden layer (embeddings.layer)", type=int, param="embeddings.layer"),
    Value("--max-length", "encoder tokens per sentence (embeddings.max_length)", type=int,
          param="embeddings.max_length"),
    Value("--batch-size", "sentences per encoder batch (embeddings.batch_size)", type=int,
          param="embeddings.batch_size"),
    Params(SemanticBenchmarkConfig, "semantic_benchmark",
           "pseudo-word benchmark (params semantic_benchmark.*)"),
    # the benchmark's words are given targets: the contextual method's cap on their sentences is
    # the one semantic_change uses for a targets file
    Params(SemanticChangeConfig, "semantic_change", "usage cap (params semantic_change.*)",
           keys=("max_usages",)),
    LEARNED,
    CONTEXTUAL,
    *RUNTIME,
    Output("--out", "Markdown report (reports/semantic_benchmark.md)", dvc={"cache": False}),
    Output("--details", "JSON (reports/semantic_benchmark.json)", dvc={"cache": False}),
    # each method's scores against the truth, changed words and controls in two colours
    Output("--plot", "CSV of the scores (plots/semantic_benchmark.csv; + .png beside it)",
           kind="plots", dvc={"cache": False, "x": "truth", "y": "score",
                              "template": "scatter_by_method"},
           beside={".png": {"cache": False}}),
), torch=True)
