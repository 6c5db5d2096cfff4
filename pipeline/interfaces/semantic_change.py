"""Stage `semantic_change`: which words changed meaning between two groups of periods."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import SemanticChangeConfig
from pipeline.infra.shared_options import (ABSTRACTS, CONTEXTUAL, LEARNED, NUMERICS,
                                              TOKENIZER, group_periods)

INTERFACE = StageInterface("semantic_change", (
    # the groups and targets: resolved by the graph into the command, not params
    # (semantic_change.first/last may be null or a range)
    *group_periods("semantic_change"),
    Input("--targets", "targets file (semantic_change.targets); default: the most frequent words",
          required=False),
    Input("--embeddings", "per-period embeddings folder (data/features/embeddings); not read "
          "with --targets (the contextual method encodes the targets' sentences)",
          required=False),
    Input("--frequencies", "per-period frequency folder (data/features/frequencies)"),
    TOKENIZER,
    Input("--stopwords", "stopword list (default targets skip them)"),
    Input("--abstracts", ABSTRACTS.help + ": the learned methods' texts, example sentences"),
    Params(SemanticChangeConfig, "semantic_change", "semantic change (params semantic_change.*)"),
    Value("--encoder", "tokenizer of a scratch temporal-attention MLM; the apd methods' "
          "encoder, and with --targets the contextual method's (embeddings.encoder)",
          param="embeddings.encoder"),
    # how the apd methods (and with --targets the contextual method) encode the targets' sentences
    Value("--layer", "hidden layer (embeddings.layer)", type=int, param="embeddings.layer"),
    Value("--max-length", "encoder tokens per sentence (embeddings.max_length)", type=int,
          param="embeddings.max_length"),
    Value("--batch-size", "sentences per encoder batch (embeddings.batch_size)", type=int,
          param="embeddings.batch_size"),
    LEARNED,
    CONTEXTUAL,
    NUMERICS,
    Input("--benchmark", "the benchmark's JSON (reports/semantic_benchmark.json): its table in "
          "the report; without it the report links the benchmark's report (the DVC stage does "
          "not pass it, so that scoring targets never waits for the benchmark)", required=False),
    Output("--scores", "Parquet of every score (data/semantic_change/scores.parquet)"),
    Output("--out", "Markdown report (reports/semantic_change.md)", dvc={"cache": False}),
    Output("--metrics", "DVC metrics (metrics/semantic_change.json)", kind="metrics",
           dvc={"cache": False}),
), torch=True)
