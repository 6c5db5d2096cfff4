"""Stage `parse`: the corpus copy -> papers.parquet and the rejected rows."""

from __future__ import annotations

import os

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import ColumnsConfig

INTERFACE = StageInterface("parse", (
    Input("--raw", "the corpus copy to parse (stage download)"),
    Params(ColumnsConfig, "data.columns", "column mapping, ignored for BibTeX "
           "(params data.columns)", unpack=True, whole=True),
    Output("--papers", "output Parquet of parsed papers"),
    Output("--rejects", "output Parquet of rejected rows (key, line, reason, raw)"),
    Value("--workers", "processes parsing parts of a BibTeX file; the output does not depend "
          "on it (default: min(2, CPUs))", type=int, default=min(2, os.cpu_count() or 1),
          graph=False),
))
