"""Stage `split`: abstracts.parquet -> the train, dev and test splits and documents per period."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import SplitConfig

INTERFACE = StageInterface("split", (
    Input("--abstracts", "kept abstracts Parquet (stage filter)"),
    Output("--out-dir", "folder for train.parquet, dev.parquet and test.parquet"),
    Params(SplitConfig, "split", "periods (params split.*)",
           keys=("period", "train_first", "train_last", "dev", "test", "min_documents"),
           whole=True),
    Value("--window", "history window m in periods (params features.window)", type=int,
          param="features.window"),
    Value("--needs", "other periods some stage reads (scored, forecast, report periods and "
          "their histories); the stage graph lists them", many=True, default=[],
          metavar="LABEL"),
    Output("--rejects", "output Parquet: key, date, reason of documents without a period"),
    # rows in time order; labels of one kind also sort alphabetically in time (zero-padded:
    # 2020-09 < 2020-10, 2020H2 < 2021H1), which is how vega-lite orders the bars
    Output("--counts-plot", "output CSV: period, abstracts, split (train/dev/test/history, "
           "read: only by a later stage, e.g. scored; unused)", kind="plots",
           dvc={"cache": False, "x": "abstracts", "y": "period", "template": "bar_horizontal"}),
))
