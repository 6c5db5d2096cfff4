"""Stage `forecast_report`: reports/forecast.md from every model's forecast."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Value
from pipeline.infra.shared_options import EXPERIMENT, TOKENIZER

INTERFACE = StageInterface("forecast_report", (
    Input("--forecasts", "folder of forecast folders (data/forecast)"),
    EXPERIMENT,
    Value("--forecast-seeds", "the seeds whose runs forecast, a subset of --seeds "
          "(forecast.seeds, resolved by the graph; none: every seed)", type=int, many=True,
          default=[]),
    Value("--period", "the forecast period, a label (forecast.period, resolved by the graph)"),
    Value("--backtest-periods", "periods with known text to score the forecasts on "
          "(forecast.backtest_periods)", many=True, default=[]),
    Value("--window", "history periods m (features.window)", type=int, param="features.window"),
    Value("--train-periods", "the training periods (split.train_first..train_last): the only "
          "ones the stationary baselines' smoothing is fitted on", many=True, default=[]),
    Value("--dev-period", "the dev period (split.dev): with the training periods, what the "
          "models' training read; a model makes no tested trend claim for a backtest whose "
          "previous period it read", default=None),
    Input("--frequencies", "per-period frequency folder (observed counts)"),
    TOKENIZER,
    Input("--stopwords", "the paper's stopword list (content tokens)"),
    Input("--abstracts", "corpus (data/corpus/abstracts.parquet)"),
    Output("--out", "Markdown report (reports/forecast.md)", dvc={"cache": False}),
    Output("--json", "the backtest numbers as JSON (reports/forecast.json)",
           dvc={"cache": False}),
    Output("--plot", "PNG of the risers (plots/forecast_risers.png)", kind="plots",
           dvc={"cache": False}),
))
