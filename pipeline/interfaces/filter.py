"""Stage `filter`: papers.parquet -> the abstracts kept, the rows dropped and their counts."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import FilterConfig

INTERFACE = StageInterface("filter", (
    Input("--papers", "input papers Parquet (stage parse)"),
    Output("--kept", "output Parquet of kept abstracts"),
    Output("--dropped", "output Parquet of dropped rows with a 'reason' column"),
    Output("--metrics", "output DVC metrics JSON: papers, kept, dropped (metrics/corpus.json)",
           kind="metrics", dvc={"cache": False}),
    Output("--counts", "output JSON of the counts by reason, language and year "
           "(reports/corpus.json)", dvc={"cache": False}),
    Params(FilterConfig, "filter", "filters (params filter.*)",
           keys=("language", "acl_rules", "seed", "min_words", "permute_first", "permute_last",
                 "permute_seed")),
    Value("--workers", "processes for language detection; the result does not depend on it "
          "(default: the runtime setting `workers`, runtime.yaml or FUTURELM_WORKERS)",
          type=int, default=None, graph=False),
))
