"""Stage `forecast_skill`: rolling-origin backtests of every forecaster of next period's words
(a stage of reports/dvc.yaml, `make forecast-skill`; not in the default graph)."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Switch, Value

INTERFACE = StageInterface("forecast_skill", (
    Input("--abstracts", "corpus table (key, date, abstract): the filter stage's abstracts.parquet"),
    Input("--stopwords", "stopword list: the trend claims rank content words only, and "
          "--drop-stopwords removes these words (default: data/reference/stopwords.txt)",
          required=False),
    Output("--out-dir", "report folder to write (README.md, verdicts.json, words.json, skill.png, "
           "timing.json)"),
    Value("--period", "period kind (default: year)", default="year",
          choices=("year", "half", "quarter", "month")),
    Value("--first", "the first target period (default: 2008)", default="2008"),
    Value("--last", "the last target period (default: the corpus's last complete period)",
          default=None),
    Value("--horizons", "steps ahead (default: 1 2)", type=int, many=True, default=(1, 2)),
    Value("--forecasters", "forecaster names (default: every one of the registry)",
          many=True, default=None),
    Value("--min-count", "words seen fewer times share one id (default: "
          "pipeline.forecast.words.MIN_COUNT)", type=int, default=None),
    Switch("--drop-stopwords", "remove stopwords before counting (default: keep them)"),
    Switch("--no-warmup", "no warm-up origins: the first target chooses settings and reference "
           "without earlier origins"),
))
