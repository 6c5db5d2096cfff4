"""Stage `download`: fetch data.source to data/raw/corpus, with a record of what was fetched."""

from __future__ import annotations

from pipeline.infra.interface import Output, Params, StageInterface, Value
from pipeline.infra.schema.params import ColumnsConfig

INTERFACE = StageInterface("download", (
    Value("--source", "http(s) URL or local path of the corpus (params data.source)",
          param="data.source"),
    Params(ColumnsConfig, "data.columns", "column mapping, checked for tables "
           "(params data.columns)", unpack=True, whole=True),
    # persist: DVC would delete the previous export before the command runs; kept, a failed
    # download (atomic write) leaves the last good copy in place.
    Output("--out", "where to write the copy (atomically)", dvc={"persist": True}),
    Output("--info", "JSON file recording source, format, sha256, size and uncompressed size",
           dvc={"cache": False}),
    Value("--timeout", "network timeout in seconds for URL sources (default: 60)", type=float,
          default=60.0, graph=False),
))
